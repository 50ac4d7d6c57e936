//! The regression gate: this run against an earlier result (`--baseline`).
//!
//! What is compared is what a change to BPF would change: each mechanism's
//! **own cost**, its ns per event over its base (the same trigger with
//! nothing attached) in the base runs just before and after it, per round.
//! This is right on every base: a ratio to base hides a mechanism's cost
//! behind a 240 ns syscall and inflates it over a 1 ns call.
//!
//! The gate compares ns. Each run also times a fixed piece of user-space
//! work (src/measure/running/speed.rs), and an earlier gate compared the overhead
//! divided by it, to take out the machine's speed; on a noisy machine that
//! reference added more noise than it took out (docs/gate-power.md), so it
//! is recorded, and a speed difference is only warned about.
//!
//! The rule, for a mechanism measured in both runs, with `old` and `new`
//! its per-round overheads:
//!
//! * **regressed** when the median grew by more than the threshold
//!   (`--threshold`; by default 6%, 15% on the comm and syscall triggers) of the old
//!   median **and** a one-sided Mann–Whitney test says the new rounds are
//!   costlier than the old ones at p ≤ 0.05. The first says the change
//!   matters, the second that it is not what two runs of the same kernel
//!   show anyway; the test assumes nothing of the noise's shape, and a
//!   disturbed round counts by its rank, not by how far off it is. A
//!   mechanism that is almost free over its base is judged against 5% of
//!   the base's own time instead of its near-zero overhead.
//! * **improved** symmetrically.
//! * **unchanged** (`ok`) when the change's 90% confidence interval lies
//!   within ± the threshold: the runs were precise enough to rule out a
//!   change of the threshold.
//! * Against a saved baseline, the drift between runs ([`Drift`], from
//!   [`set`]) counts on both sides: a change within it is not regressed
//!   (or improved), and `ok` needs the interval widened by it within the
//!   threshold ([`verdict`]).
//! * **inconclusive** (`UNSURE`) otherwise: the runs were too noisy to tell.
//!   The gate then exits 3, and says what to do. Every comparison says
//!   what it could see: the smallest change the two runs tell from noise
//!   4 times in 5 ([`crate::stats::detectable_ns`]).
//! * **missing**, a regression too, when the mechanism was measured in
//!   the baseline and is skipped or failed now.
//!
//! Mechanisms that this run did not select are listed as not compared.
//! Bases are not gated: they are the reference (a base that fails fails
//! the run, and takes its mechanisms with it). research/gate_power.rs
//! measures the rule's false alarms and power with real runs.

pub mod against;
mod drift;
pub mod duet;
pub mod set;
mod warning;

pub use drift::{Allowance, Drift, DriftEffect};

pub use warning::{warnings, Condition, Setting, Warning, SETTINGS, SPEED_WARNING};

use crate::document::{Document, MechanismResult, Status};
use crate::stats::{ci_z, detect_z, detectable_ns, mann_whitney_greater, Summary};

pub use crate::pipeline::{Threshold, COMM_THRESHOLD, DEFAULT_THRESHOLD};

/// The noise test's significance level.
pub const ALPHA: f64 = 0.05;
pub use crate::pipeline::FLOOR_OF_BASE;

pub use bpf_overhead_common::verdict::Verdict;

/// One mechanism's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub name: String,
    pub verdict: Verdict,
    /// Change of the median overhead, as a fraction of the old one.
    pub change: Option<f64>,
    /// Change of the median overhead in ns per event.
    pub diff_ns: Option<f64>,
    /// The noise test's p-value for the direction of the change.
    pub p_value: Option<f64>,
    /// The smallest change the two runs could tell from noise, as a share
    /// of the old cost (see [`crate::stats::detectable_ns`]).
    pub detectable: Option<f64>,
    /// One line for humans: old and new figures, or why not compared.
    pub detail: String,
    /// UNSURE by the drift between runs alone: with no drift allowed,
    /// the same figures were decided.
    pub by_drift: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Findings {
    pub threshold: Threshold,
    /// Differences between the runs worth knowing (other CPU, other
    /// iteration count...). They do not fail the gate.
    pub warnings: Vec<Warning>,
    pub comparisons: Vec<Comparison>,
}

impl Findings {
    pub fn regressions(&self) -> impl Iterator<Item = &Comparison> {
        self.comparisons
            .iter()
            .filter(|c| c.verdict.is_regression())
    }

    pub fn passed(&self) -> bool {
        self.regressions().next().is_none()
    }

    /// Comparisons the runs were too noisy to decide.
    pub fn inconclusive(&self) -> impl Iterator<Item = &Comparison> {
        self.comparisons
            .iter()
            .filter(|c| c.verdict == Verdict::Inconclusive)
    }

    /// Passed, and every comparison was decided.
    pub fn conclusive_pass(&self) -> bool {
        self.passed() && self.inconclusive().next().is_none()
    }

    pub fn find(&self, name: &str) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.name == name)
    }
}

/// What [`judge`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// `diff_ns` as a fraction of the old median (or of the floor).
    pub change: f64,
    pub diff_ns: f64,
    /// One-sided p-value in the direction of the change.
    pub p_value: f64,
    /// The smallest change the runs could tell from noise, as a fraction
    /// like `change`; infinite with fewer than two rounds on a side.
    pub detectable: f64,
}

/// The rule on one comparison's figures, as shares of the old cost:
/// `change`, the `margin` of its 90% interval, whether the noise test
/// found it `significant`, and how far the baseline may have drifted
/// `below` and `above` its measured median. The true change then lies in
/// `change - above ..= change + below`, give or take the margin:
///
/// * **regressed**: beyond `threshold`, beyond the noise, and beyond what
///   the drift alone could make of no change (`change > above`);
/// * **improved** symmetrically;
/// * **unchanged** (`ok`): the interval widened by the drift on both sides
///   lies within ± `threshold`;
/// * else **inconclusive**.
pub fn verdict(
    change: f64,
    margin: f64,
    significant: bool,
    threshold: f64,
    below: f64,
    above: f64,
) -> Verdict {
    if change > threshold && significant && change > above {
        Verdict::Regressed
    } else if change < -threshold && significant && change < -below {
        Verdict::Improved
    } else if change + margin + below <= threshold && change - margin - above >= -threshold {
        Verdict::Unchanged
    } else {
        Verdict::Inconclusive
    }
}

/// The rule on two series of per-round overheads in ns measured at the
/// same moment (see the module documentation). `floor_ns`: the least the
/// change is measured against.
pub fn judge(old: &Summary, new: &Summary, floor_ns: f64, threshold: f64) -> Judgement {
    judge_drifting(old, new, floor_ns, threshold, Drift::None).0
}

/// [`judge`] with the baseline's `drift` allowed for.
pub fn judge_drifting(
    old: &Summary,
    new: &Summary,
    floor_ns: f64,
    threshold: f64,
    drift: Drift,
) -> (Judgement, DriftEffect) {
    let diff_ns = new.median - old.median;
    let reference = old.median.abs().max(floor_ns).max(f64::MIN_POSITIVE);
    let change = diff_ns / reference;
    let p_value = if diff_ns >= 0.0 {
        mann_whitney_greater(&new.samples, &old.samples)
    } else {
        mann_whitney_greater(&old.samples, &new.samples)
    };
    let detectable =
        detectable_ns(&old.samples, &new.samples).map_or(f64::INFINITY, |d| d / reference);
    // The 90% interval of the change: 1.645 standard errors each side.
    let margin = detectable * ci_z() / detect_z();
    let significant = p_value <= ALPHA;
    let (below, above) = drift.shares(reference);
    let judgement = Judgement {
        verdict: verdict(change, margin, significant, threshold, below, above),
        change,
        diff_ns,
        p_value,
        detectable,
    };
    let effect = DriftEffect {
        undrifted: verdict(change, margin, significant, threshold, 0.0, 0.0),
        widened: (change - margin - above, change + margin + below),
    };
    (judgement, effect)
}

/// Checks, before running, that the baseline has something to compare
/// with the mechanisms this run will measure (`planned`, bases left out).
/// An error is bad input (exit 2).
pub fn check_overlap<S: AsRef<str>>(baseline: &Document, planned: &[S]) -> Result<(), String> {
    let measured_then: Vec<&str> = baseline
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .map(|m| m.name.as_str())
        .collect();
    let planned_now: Vec<&str> = planned.iter().map(AsRef::as_ref).collect();
    if measured_then.iter().any(|n| planned_now.contains(n)) {
        Ok(())
    } else {
        Err(format!(
            "nothing to compare: the baseline measured {} and this run selects {}",
            list_or_none(&measured_then),
            list_or_none(&planned_now)
        ))
    }
}

/// Other work or stolen time above this share of the measuring CPU's time
/// in a run: its rounds then time other tasks along with the kernel, in a
/// way that can differ from run to run (seen: raw_tp +113 ns, then +331 ns,
/// each run steady within itself, at 66% other work), so the gate does
/// not judge it.
pub const MAX_DISTURBANCE_PCT: f64 = 10.0;

/// Why `doc`'s run cannot be judged, if it cannot.
fn disturbance(doc: &Document) -> Option<String> {
    let c = doc.context.as_ref()?;
    let other = (c.other_pct > MAX_DISTURBANCE_PCT)
        .then(|| format!("{:.0}% of CPU {} went to other work", c.other_pct, c.cpu));
    let steal = (c.steal_pct > MAX_DISTURBANCE_PCT).then(|| {
        format!(
            "{:.0}% of CPU {} was stolen by the hypervisor",
            c.steal_pct, c.cpu
        )
    });
    let why: Vec<String> = other.into_iter().chain(steal).collect();
    (!why.is_empty()).then(|| why.join(", "))
}

fn list_or_none<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        "no mechanism".into()
    } else {
        names
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `+100.0 ns/event over base`, in the unit of `doc`, `m`'s run.
fn figures(doc: &Document, m: &MechanismResult) -> String {
    match &m.overhead_ns {
        Some(o) => format!("{:+.1} {} over {}", o.median, doc.per_event(), m.base),
        None => "no overhead figure".into(),
    }
}

/// A ratio with 3 significant digits: `0.877`, `0.00193`.
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() || r == 0.0 {
        return format!("{r}");
    }
    let decimals = (2 - r.abs().log10().floor() as i32).max(3) as usize;
    format!("{r:.decimals$}")
}

impl Comparison {
    /// A comparison with no figures to judge: `detail` says why.
    fn plain(name: &str, verdict: Verdict, detail: String) -> Self {
        Comparison {
            name: name.to_owned(),
            verdict,
            change: None,
            diff_ns: None,
            p_value: None,
            detectable: None,
            detail,
            by_drift: false,
        }
    }

    /// A judged comparison: `j`'s figures, and `detail` (which takes what
    /// the comparison could see, from [`Comparison::sees`]).
    fn judged(name: &str, j: &Judgement, detail: String) -> Self {
        Comparison {
            name: name.to_owned(),
            verdict: j.verdict,
            change: Some(j.change),
            diff_ns: Some(j.diff_ns),
            p_value: Some(j.p_value),
            detectable: Some(j.detectable).filter(|d| d.is_finite()),
            detail,
            by_drift: false,
        }
    }

    /// `, sees ±2.1%`, or, where nothing can be seen, `, one <unit>: sees
    /// nothing` (a round across runs, a pair in one).
    fn sees(j: &Judgement, unit: &str) -> String {
        if j.detectable.is_finite() {
            format!(", sees ±{:.1}%", j.detectable * 100.0)
        } else {
            format!(", one {unit}: sees nothing")
        }
    }
}

/// Compares `current` against `baseline` with `threshold`, both measured
/// at the same moment (no drift between them).
pub fn compare(baseline: &Document, current: &Document, threshold: Threshold) -> Findings {
    compare_drifting(baseline, current, threshold, |_| Allowance::none())
}

/// Compares `current` against `baseline` with `threshold`, allowing each
/// mechanism the drift `allowance(name)` gives.
pub fn compare_drifting(
    baseline: &Document,
    current: &Document,
    threshold: Threshold,
    allowance: impl Fn(&str) -> Allowance,
) -> Findings {
    let mut comparisons = Vec::new();
    for old in baseline.mechanisms.iter().filter(|m| !m.is_base()) {
        let name = old.name.as_str();
        let comparison = match (old.is_ok(), current.mechanism(name)) {
            (true, None) => Comparison::plain(
                name,
                Verdict::NotRun,
                "measured in the baseline, not selected in this run".into(),
            ),
            (true, Some(new)) if !new.is_ok() => Comparison::plain(
                name,
                Verdict::Missing,
                format!(
                    "measured in the baseline ({}), {} now: {}",
                    figures(baseline, old),
                    if new.status == Status::Skipped {
                        "skipped"
                    } else {
                        "failed"
                    },
                    new.reason.as_deref().unwrap_or("no reason given")
                ),
            ),
            (true, Some(new)) => judged(old, new, baseline, current, threshold, &allowance(name)),
            (false, Some(new)) if new.is_ok() => Comparison::plain(
                name,
                Verdict::New,
                format!(
                    "not measured in the baseline; now {}",
                    figures(current, new)
                ),
            ),
            // Not measured then, and not measured (or not run) now.
            (false, _) => continue,
        };
        comparisons.push(comparison);
    }
    for new in current
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok() && baseline.mechanism(&m.name).is_none())
    {
        comparisons.push(Comparison::plain(
            &new.name,
            Verdict::New,
            format!("not in the baseline; now {}", figures(current, new)),
        ));
    }
    Findings {
        threshold,
        warnings: warnings(baseline, current),
        comparisons,
    }
}

/// A mechanism measured in both runs, judged by [`judge`].
fn judged(
    old: &MechanismResult,
    new: &MechanismResult,
    baseline: &Document,
    current: &Document,
    threshold: Threshold,
    allowance: &Allowance,
) -> Comparison {
    let (Some(o), Some(n)) = (&old.overhead_ns, &new.overhead_ns) else {
        // A baseline edited by hand, say: nothing to judge on.
        return Comparison::plain(
            &old.name,
            Verdict::Missing,
            "ok in both runs but an overhead figure is missing".into(),
        );
    };
    let base_ns = current
        .mechanism(&new.base)
        .and_then(|b| b.ns_per_event)
        .unwrap_or(0.0);
    let threshold = threshold.of_label(&new.trigger);
    let (mut j, effect) = judge_drifting(o, n, FLOOR_OF_BASE * base_ns, threshold, allowance.drift);
    let drifting = if j.verdict == Verdict::Inconclusive && effect.undrifted != j.verdict {
        format!("; {}", allowance.why(effect.undrifted, &effect, threshold))
    } else {
        String::new()
    };
    let disturbed = [("the baseline", baseline), ("this run", current)]
        .iter()
        .find_map(|(which, doc)| {
            disturbance(doc).map(|why| format!("; {which} was disturbed: {why}"))
        })
        .unwrap_or_default();
    if !disturbed.is_empty() && j.verdict != Verdict::Missing {
        j.verdict = Verdict::Inconclusive;
    }
    let sees = Comparison::sees(&j, "round");
    let mut comparison = Comparison::judged(
        &old.name,
        &j,
        format!(
            "overhead over {} {:+.1} -> {:+.1} {} ({:+.1} {}, {:+.1}%, p={:.3}{sees}){}{disturbed}{drifting}",
            new.base,
            o.median,
            n.median,
            current.per_event(),
            j.diff_ns,
            current.unit_word(),
            j.change * 100.0,
            j.p_value,
            rate_change(old, new)
        ),
    );
    comparison.by_drift = !drifting.is_empty();
    comparison
}

/// The median speed reference over every run of a document.
fn speed_of(doc: &Document) -> Option<f64> {
    let all: Vec<f64> = doc
        .mechanisms
        .iter()
        .filter_map(|m| m.speed_ns.as_ref())
        .flat_map(|s| s.samples.iter().copied())
        .collect();
    (!all.is_empty()).then(|| crate::stats::median(&all))
}

fn rate_change(old: &MechanismResult, new: &MechanismResult) -> String {
    let k = |m: &MechanismResult| m.k_events_per_sec.as_ref().map(|r| r.median);
    match (k(old), k(new)) {
        (Some(o), Some(n)) => format!("; {o:.0}K -> {n:.0}K events/s"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;
    use crate::render::gate_report;

    fn series(values: &[f64]) -> Summary {
        Summary::of(values).unwrap()
    }

    const FLOOR: f64 = 0.0;

    #[test]
    fn a_large_rise_beyond_noise_regresses() {
        let old = series(&[20.0, 20.5, 19.5, 20.2, 19.8]);
        let new = series(&[24.0, 24.5, 23.5, 24.2, 23.8]);
        let j = judge(&old, &new, FLOOR, 0.05);
        assert_eq!(j.verdict, Verdict::Regressed);
        assert!((j.change - 0.2).abs() < 1e-9);
        assert!((j.diff_ns - 4.0).abs() < 1e-9);
        // Every new round above every old one: 1 ordering of 252.
        assert!((j.p_value - 1.0 / 252.0).abs() < 1e-12);
    }

    #[test]
    fn a_rise_under_the_threshold_passes() {
        // 3% costlier, every round: significant, but under 5%.
        let old = series(&[20.0, 20.1, 19.9, 20.05, 19.95]);
        let new = series(&[20.6, 20.7, 20.5, 20.65, 20.55]);
        assert_eq!(judge(&old, &new, FLOOR, 0.05).verdict, Verdict::Unchanged);
        // ...unless the threshold is lower.
        assert_eq!(judge(&old, &new, FLOOR, 0.02).verdict, Verdict::Regressed);
    }

    #[test]
    fn a_rise_within_the_noise_is_inconclusive() {
        // The median 10% higher, but the rounds overlap (U = 15.5 of 25).
        let old = series(&[16.0, 18.0, 20.0, 22.0, 24.0]);
        let new = series(&[17.0, 19.0, 22.0, 23.0, 25.0]);
        let j = judge(&old, &new, FLOOR, 0.05);
        assert!(j.change > 0.05 && j.p_value > 0.3, "{j:?}");
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(!j.verdict.is_regression());
        assert!(j.detectable > 0.05, "could not have seen 5%: {j:?}");
    }

    #[test]
    fn no_change_in_noisy_runs_is_inconclusive_not_unchanged() {
        // The same median, but rounds spread by ±20%: a 5% change would
        // have gone unseen.
        let old = series(&[16.0, 24.0, 20.0, 18.0, 22.0, 20.0, 21.0]);
        let new = series(&[24.0, 16.0, 20.0, 22.0, 18.0, 19.0, 20.0]);
        let j = judge(&old, &new, FLOOR, 0.05);
        assert!(j.change.abs() < 0.01, "{j:?}");
        assert_eq!(j.verdict, Verdict::Inconclusive);
        // The same spread at a wider threshold is seen through.
        assert_eq!(judge(&old, &new, FLOOR, 0.40).verdict, Verdict::Unchanged);
    }

    /// The rule on fixed shares: a change of +1% seen to ±2%, at a
    /// threshold of 6%.
    #[test]
    fn the_drift_counts_on_both_sides() {
        let v = |change, margin, significant, below, above| {
            verdict(change, margin, significant, 0.06, below, above)
        };
        // No drift: within the threshold, and precise enough to say so.
        assert_eq!(v(0.01, 0.02, false, 0.0, 0.0), Verdict::Unchanged);
        // A baseline that may have drifted ±100% (one run): the same
        // interval, widened to -101%..+103%, could hide a change of 6%.
        assert_eq!(v(0.01, 0.02, false, 1.0, 1.0), Verdict::Inconclusive);
        // A set whose runs spread ±2%: -3%..+5% lies within ±6%.
        assert_eq!(v(0.01, 0.02, false, 0.02, 0.02), Verdict::Unchanged);
        // ...but ±3% above it reaches +6.0001%: UNSURE.
        assert_eq!(v(0.01, 0.02, false, 0.0301, 0.0), Verdict::Inconclusive);
        // The drift below the baseline's median widens the interval
        // upwards (the true change may be larger than seen), and the one
        // above widens it downwards.
        assert_eq!(v(-0.01, 0.02, false, 0.0, 0.0301), Verdict::Inconclusive);
        assert_eq!(v(-0.01, 0.02, false, 0.0301, 0.0), Verdict::Unchanged);
        // The same drift makes a regression within it UNSURE, and one
        // beyond it stands; likewise an improvement.
        assert_eq!(v(0.20, 0.02, true, 0.0, 0.0), Verdict::Regressed);
        assert_eq!(v(0.20, 0.02, true, 0.0, 0.25), Verdict::Inconclusive);
        assert_eq!(v(0.20, 0.02, true, 0.25, 0.10), Verdict::Regressed);
        assert_eq!(v(-0.20, 0.02, true, 0.25, 0.0), Verdict::Inconclusive);
        assert_eq!(v(-0.20, 0.02, true, 0.10, 0.25), Verdict::Improved);
        // Not known: nothing is ok, nothing regressed.
        let any = f64::INFINITY;
        assert_eq!(v(0.0, 0.0, false, any, any), Verdict::Inconclusive);
        assert_eq!(v(5.0, 0.02, true, any, any), Verdict::Inconclusive);
    }

    #[test]
    fn judged_with_a_drift_an_interval_within_the_threshold_is_unsure() {
        // 3% costlier in every round: ok with no drift (a_rise_under_the_
        // threshold_passes), UNSURE against a one-run baseline's ±100%
        // and against 2 ns (10% of 20 ns) of drift either way.
        let old = series(&[20.0, 20.1, 19.9, 20.05, 19.95]);
        let new = series(&[20.6, 20.7, 20.5, 20.65, 20.55]);
        let judge = |drift| judge_drifting(&old, &new, FLOOR, 0.05, drift);
        let (j, effect) = judge(Drift::None);
        assert_eq!(
            (j.verdict, effect.undrifted),
            (Verdict::Unchanged, Verdict::Unchanged)
        );
        for drift in [
            Drift::Share(1.0),
            Drift::Ns {
                below: 2.0,
                above: 2.0,
            },
            Drift::Unknown,
        ] {
            let (j, effect) = judge(drift);
            assert_eq!(j.verdict, Verdict::Inconclusive, "{drift:?}");
            assert_eq!(effect.undrifted, Verdict::Unchanged, "{drift:?}");
        }
        // 2 ns of drift below: the widened interval's top is the change
        // (+3%), its margin and 10%.
        let (j, effect) = judge(Drift::Ns {
            below: 2.0,
            above: 0.0,
        });
        let margin = j.detectable * ci_z() / detect_z();
        assert!(
            (effect.widened.1 - (0.03 + margin + 0.1)).abs() < 1e-9,
            "{effect:?}"
        );
        assert!(
            (effect.widened.0 - (0.03 - margin)).abs() < 1e-9,
            "{effect:?}"
        );
        // 0.2 ns (1%) either way leaves it ok.
        let (j, _) = judge(Drift::Ns {
            below: 0.2,
            above: 0.2,
        });
        assert_eq!(j.verdict, Verdict::Unchanged);
    }

    #[test]
    fn a_disturbed_round_counts_by_rank_not_size() {
        let new = series(&[24.0, 24.5, 23.5, 24.2, 23.8]);
        let slightly = series(&[20.0, 20.5, 19.5, 20.2, 24.6]);
        let wildly = series(&[20.0, 20.5, 19.5, 20.2, 600.0]);
        let p = |old: &Summary| judge(old, &new, FLOOR, 0.05).p_value;
        assert_eq!(p(&slightly), p(&wildly));
    }

    #[test]
    fn one_round_sees_nothing() {
        let j = judge(&series(&[20.0]), &series(&[22.0]), FLOOR, 0.05);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.detectable.is_infinite());
        let j = judge(&series(&[20.0]), &series(&[20.5]), FLOOR, 0.05);
        assert_eq!(j.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn improvements_are_not_regressions() {
        let old = series(&[30.0, 31.0, 29.0, 30.5, 29.5]);
        let new = series(&[20.0, 21.0, 19.0, 20.5, 19.5]);
        let j = judge(&old, &new, FLOOR, 0.05);
        assert_eq!(j.verdict, Verdict::Improved);
        assert!(!j.verdict.is_regression());
    }

    #[test]
    fn a_near_free_mechanism_is_judged_against_the_floor() {
        // ~0 ns over a 145 ns base: a 0.2 ns rise is 2.8% of the 7.25 ns
        // floor, not +inf%; 1 ns is 13.8%.
        let old = series(&[0.1, -0.2, 0.0, 0.2, -0.1]);
        let floor = FLOOR_OF_BASE * 145.0;
        let small = series(&[0.3, 0.0, 0.2, 0.4, 0.1]);
        assert_eq!(judge(&old, &small, floor, 0.05).verdict, Verdict::Unchanged);
        let big = series(&[1.0, 1.2, 0.8, 1.1, 0.9]);
        let j = judge(&old, &big, floor, 0.05);
        assert_eq!(j.verdict, Verdict::Regressed);
        assert!((j.change - 1.0 / 7.25).abs() < 1e-9);
    }

    #[test]
    fn the_same_result_passes() {
        let doc = document();
        assert_eq!(check_overlap(&doc, &["raw_tp"]), Ok(()));
        let findings = compare(&doc, &doc, Threshold::Fixed(DEFAULT_THRESHOLD));
        assert!(findings.passed(), "{findings:?}");
        assert_eq!(findings.find("raw_tp").unwrap().verdict, Verdict::Unchanged);
        assert_eq!(findings.find("tp").unwrap().change, Some(0.0));
        // Skipped in both: not compared, not a regression.
        assert!(findings.find("kprobe").is_none());
        assert!(gate_report(&findings, "b.json")
            .contains("gate: PASSED (2 mechanisms compared, each precisely"));
    }

    /// The doctored baseline: raw_tp's overhead 30% lower than measured.
    fn better_baseline() -> Document {
        let mut baseline = document();
        let raw_tp = baseline.mechanism_mut("raw_tp").unwrap();
        scale(&mut raw_tp.overhead_ns, 0.7);
        scale(&mut raw_tp.overhead_steps, 0.7);
        baseline
    }

    /// Every sample of `summary` (if any) times `factor`, statistics anew.
    fn scale(summary: &mut Option<Summary>, factor: f64) {
        if let Some(s) = summary {
            let samples: Vec<f64> = s.samples.iter().map(|v| v * factor).collect();
            *s = Summary::of(&samples).unwrap();
        }
    }

    /// `doc` as if the whole machine ran `factor` times slower.
    fn slowed(mut doc: Document, factor: f64) -> Document {
        for m in &mut doc.mechanisms {
            scale(&mut m.overhead_ns, factor);
            scale(&mut m.speed_ns, factor);
        }
        doc
    }

    #[test]
    fn the_default_threshold_is_wider_on_the_comm_trigger() {
        // raw_tp 10% costlier in every round: over 6%, under 15%.
        let with_steps = |mut doc: Document, steps: [f64; 3]| {
            let raw_tp = doc.mechanism_mut("raw_tp").unwrap();
            raw_tp.overhead_steps = Summary::of(&steps);
            raw_tp.overhead_ns = Summary::of(&steps.map(|s| 2.0 * s));
            doc
        };
        let baseline = with_steps(document(), [50.0, 50.5, 49.5]);
        let current = with_steps(document(), [55.0, 55.5, 54.5]);
        let verdict = |doc: &Document, threshold| {
            compare(&baseline, doc, threshold)
                .find("raw_tp")
                .unwrap()
                .verdict
        };
        assert_eq!(verdict(&current, Threshold::ByTrigger), Verdict::Unchanged);
        assert_eq!(
            verdict(&current, Threshold::Fixed(DEFAULT_THRESHOLD)),
            Verdict::Regressed
        );
        let mut looped = current.clone();
        looped.mechanism_mut("raw_tp").unwrap().trigger = "kernel_loop".into();
        assert_eq!(verdict(&looped, Threshold::ByTrigger), Verdict::Regressed);
        // A syscall's overheads are judged as the comm's, as the plan aims.
        let mut syscall = current.clone();
        syscall.mechanism_mut("raw_tp").unwrap().trigger = "syscall_getpid".into();
        assert_eq!(verdict(&syscall, Threshold::ByTrigger), Verdict::Unchanged);
        assert_eq!(
            Threshold::ByTrigger.describe(),
            "6% (15% on the comm and syscall triggers)"
        );
    }

    #[test]
    fn a_slower_machine_is_compared_in_ns_with_a_warning() {
        let findings = compare(
            &document(),
            &slowed(document(), 1.3),
            Threshold::Fixed(DEFAULT_THRESHOLD),
        );
        assert_eq!(findings.find("raw_tp").unwrap().verdict, Verdict::Regressed);
        assert!(
            matches!(
                findings.warnings[..],
                [Warning::Speed { baseline_ns, current_ns }] if current_ns / baseline_ns > 1.29
            ),
            "{:?}",
            findings.warnings
        );
    }

    #[test]
    fn a_disturbed_run_is_not_judged() {
        let mut busy = document();
        busy.context = Some(crate::measure::running::context::Context {
            cpu: 0,
            secs: 10.0,
            steal_pct: 0.0,
            other_pct: 66.0,
            involuntary_switches: 4000,
            load_start: 6.0,
            load_end: 7.0,
            mhz: None,
        });
        // A regression as clear as can be, in a run that timed other work.
        let findings = compare(
            &better_baseline(),
            &busy,
            Threshold::Fixed(DEFAULT_THRESHOLD),
        );
        let raw_tp = findings.find("raw_tp").unwrap();
        assert_eq!(raw_tp.verdict, Verdict::Inconclusive);
        assert!(
            raw_tp
                .detail
                .ends_with("; this run was disturbed: 66% of CPU 0 went to other work"),
            "{}",
            raw_tp.detail
        );
        assert!(findings.passed() && !findings.conclusive_pass());
    }

    #[test]
    fn different_conditions_are_warned_about() {
        let quiet = crate::measure::running::context::Context {
            cpu: 0,
            secs: 10.0,
            steal_pct: 0.5,
            other_pct: 1.0,
            involuntary_switches: 10,
            load_start: 0.1,
            load_end: 0.2,
            mhz: None,
        };
        let mut baseline = document();
        baseline.context = Some(quiet.clone());
        let mut current = document();
        current.context = Some(crate::measure::running::context::Context {
            steal_pct: 4.0,
            other_pct: 20.0,
            ..quiet
        });
        let conditions = |condition, baseline_pct, current_pct| Warning::Conditions {
            condition,
            baseline_pct,
            current_pct,
        };
        assert_eq!(
            warnings(&baseline, &current),
            [
                conditions(Condition::Steal, 0.5, 4.0),
                conditions(Condition::OtherWork, 1.0, 20.0)
            ]
        );
        assert!(warnings(&baseline, &baseline).is_empty());
    }

    #[test]
    fn a_30_percent_better_baseline_fails_naming_the_mechanism() {
        let findings = compare(
            &better_baseline(),
            &document(),
            Threshold::Fixed(DEFAULT_THRESHOLD),
        );
        assert!(!findings.passed());
        let names: Vec<&str> = findings.regressions().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["raw_tp"]);
        let raw_tp = findings.find("raw_tp").unwrap();
        assert!((raw_tp.change.unwrap() - (1.0 / 0.7 - 1.0)).abs() < 1e-9);
        let text = gate_report(&findings, "b.json");
        assert!(
            text.contains("gate: FAILED: 1 of 2 mechanisms regressed: raw_tp"),
            "{text}"
        );
        // Old and new figures are named.
        assert!(
            text.contains(
                "overhead over base +70.0 -> +100.0 ns/event (+30.0 ns, +42.9%, p=0.050, sees ±3.8%)"
            ),
            "{text}"
        );
        // Only raw_tp: tp is unchanged.
        assert_eq!(findings.find("tp").unwrap().verdict, Verdict::Unchanged);
    }

    #[test]
    fn supported_then_skipped_now_is_a_regression() {
        let baseline = document();
        let mut current = document();
        let tp = current.mechanism_mut("tp").unwrap();
        tp.status = Status::Skipped;
        tp.reason = Some("no tracefs".into());
        tp.overhead_ns = None;
        let findings = compare(&baseline, &current, Threshold::Fixed(DEFAULT_THRESHOLD));
        let tp = findings.find("tp").unwrap();
        assert_eq!(tp.verdict, Verdict::Missing);
        assert!(
            tp.detail.contains("skipped now: no tracefs"),
            "{}",
            tp.detail
        );
        assert!(!findings.passed());
    }

    #[test]
    fn skipped_then_supported_now_is_new() {
        let mut baseline = document();
        let raw_tp = baseline.mechanism_mut("raw_tp").unwrap();
        raw_tp.status = Status::Skipped;
        let findings = compare(&baseline, &document(), Threshold::Fixed(DEFAULT_THRESHOLD));
        assert_eq!(findings.find("raw_tp").unwrap().verdict, Verdict::New);
        assert!(findings.passed());
    }

    #[test]
    fn not_selected_now_is_not_compared() {
        let baseline = document();
        let mut current = document();
        current.mechanisms.retain(|m| m.name != "tp");
        let findings = compare(&baseline, &current, Threshold::Fixed(DEFAULT_THRESHOLD));
        assert_eq!(findings.find("tp").unwrap().verdict, Verdict::NotRun);
        assert!(findings.passed());
        assert!(gate_report(&findings, "b")
            .contains("gate: PASSED (1 mechanisms compared, each precisely"));
    }

    #[test]
    fn nothing_in_common_is_incompatible() {
        let baseline = document();
        let err = check_overlap(&baseline, &["kprobe"]).unwrap_err();
        assert!(err.contains("the baseline measured raw_tp, tp"), "{err}");
        assert!(err.contains("this run selects kprobe"), "{err}");
        let err = check_overlap::<&str>(&baseline, &[]).unwrap_err();
        assert!(err.contains("this run selects no mechanism"), "{err}");
        // A mechanism the baseline did not know counts as nothing either.
        assert!(check_overlap(&baseline, &["fentry"]).is_err());
    }

    #[test]
    fn differences_that_only_warn() {
        let baseline = document();
        let mut current = document();
        current.iterations = 2000;
        current.cpu_model = "Other CPU".into();
        current.repeats = 1;
        let setting = |setting, baseline: &str, current: &str| Warning::Setting {
            setting,
            baseline: baseline.into(),
            current: current.into(),
        };
        assert_eq!(
            warnings(&baseline, &current),
            [
                setting(Setting::Iterations, "100000", "2000"),
                setting(Setting::CpuModel, &baseline.cpu_model, "Other CPU"),
                Warning::OneRepeat,
            ]
        );
        current.arch = "aarch64".into();
        assert_eq!(
            warnings(&baseline, &current)[1],
            setting(Setting::Arch, "x86_64", "aarch64")
        );
        // The kernel differing is the point of the gate: no warning.
        current = document();
        current.kernel_release = "6.19.0".into();
        assert_eq!(warnings(&baseline, &current), []);
        assert!(
            compare(&baseline, &current, Threshold::Fixed(DEFAULT_THRESHOLD))
                .warnings
                .is_empty()
        );
    }

    /// Other object files or another packet in the baseline warn; a
    /// baseline that recorded no files (older, or of built-ins) does not.
    #[test]
    fn other_object_files_and_packets_warn() {
        use crate::document::InputFile;
        let file = |bytes: &[u8]| InputFile::of(std::path::Path::new("agent.bpf.o"), bytes);
        let mut baseline = document();
        let mut current = document();
        current.objects = vec![file(b"new")];
        assert_eq!(warnings(&baseline, &current), []);
        baseline.objects = vec![file(b"old")];
        let w = warnings(&baseline, &current);
        assert!(
            matches!(
                &w[..],
                [Warning::Setting {
                    setting: Setting::Objects,
                    ..
                }]
            ),
            "{w:?}"
        );
        baseline.objects = current.objects.clone();
        current.packet = Some(file(b"packet"));
        let w = warnings(&baseline, &current);
        assert!(
            matches!(
                &w[..],
                [Warning::Setting {
                    setting: Setting::Packet,
                    ..
                }]
            ),
            "{w:?}"
        );
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(fmt_ratio(0.8771), "0.877");
        assert_eq!(fmt_ratio(1.04), "1.040");
        assert_eq!(fmt_ratio(0.001934), "0.00193");
        assert_eq!(fmt_ratio(0.0), "0");
    }
}
