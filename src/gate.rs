//! The regression gate: this run against an earlier result (`--baseline`).
//!
//! What is compared is each mechanism's **ratio to base**: its rate divided
//! by the rate of its base (the trigger alone) measured in the same pass of
//! the same run. A machine that is uniformly faster or slower, or busier
//! today, moves both alike and leaves the ratio be; a mechanism that got
//! more expensive lowers it.
//!
//! The rule, for a mechanism measured in both runs, with `old` and `new`
//! the median ratios and `σ` each run's sample standard deviation of the
//! per-pass ratios:
//!
//! * **regressed** when the ratio fell by more than the threshold
//!   (`(new - old) / old < -threshold`) **and** by more than the noise of
//!   both runs (`old - new > σ_old + σ_new`). Both are needed: the first
//!   says the change matters, the second that it is not what two runs of
//!   the same kernel would show anyway. With one repeat a run has no
//!   measurable noise and only the threshold applies.
//! * **improved** symmetrically; **within noise** when the change passes
//!   the threshold but not the noise; **unchanged** otherwise.
//! * **missing** — a regression too — when the mechanism was measured in
//!   the baseline and is skipped or failed now.
//!
//! Mechanisms that this run did not select are listed as not compared.
//! Bases are not gated: they are the reference (a base that fails fails
//! the run, and takes its mechanisms with it).

use std::fmt::Write as _;

use crate::document::{Document, MechanismResult, Status};
use crate::stats::Summary;

/// Default `--threshold`, as a fraction.
pub const DEFAULT_THRESHOLD: f64 = 0.10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Regressed,
    /// Measured in the baseline, skipped or failed now. A regression.
    Missing,
    Improved,
    /// Changed by more than the threshold, but within the runs' noise.
    WithinNoise,
    Unchanged,
    /// Measured now, not in the baseline (new, or unsupported there).
    New,
    /// In the baseline, not selected in this run.
    NotRun,
}

impl Verdict {
    pub fn is_regression(self) -> bool {
        matches!(self, Verdict::Regressed | Verdict::Missing)
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Missing => "MISSING",
            Verdict::Improved => "improved",
            Verdict::WithinNoise => "noise",
            Verdict::Unchanged => "ok",
            Verdict::New => "new",
            Verdict::NotRun => "not run",
        }
    }
}

/// One mechanism's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub name: String,
    pub verdict: Verdict,
    /// Relative change of the median ratio, `(new - old) / old`.
    pub change: Option<f64>,
    /// What the difference had to exceed: `σ_old + σ_new`.
    pub noise: Option<f64>,
    /// One line for humans: old and new figures, or why not compared.
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub threshold: f64,
    /// Differences between the runs worth knowing (other CPU, other
    /// iteration count...). They do not fail the gate.
    pub warnings: Vec<String>,
    pub comparisons: Vec<Comparison>,
}

impl Report {
    pub fn regressions(&self) -> impl Iterator<Item = &Comparison> {
        self.comparisons
            .iter()
            .filter(|c| c.verdict.is_regression())
    }

    pub fn passed(&self) -> bool {
        self.regressions().next().is_none()
    }

    pub fn find(&self, name: &str) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.name == name)
    }
}

/// The rule on two series of ratios to base (see the module
/// documentation). Returns the verdict, the relative change and the noise.
pub fn judge(old: &Summary, new: &Summary, threshold: f64) -> (Verdict, f64, f64) {
    let change = (new.median - old.median) / old.median;
    let noise = old.stddev + new.stddev;
    let diff = new.median - old.median;
    let verdict = if change < -threshold && -diff > noise {
        Verdict::Regressed
    } else if change > threshold && diff > noise {
        Verdict::Improved
    } else if change.abs() > threshold {
        Verdict::WithinNoise
    } else {
        Verdict::Unchanged
    };
    (verdict, change, noise)
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

/// Differences between the runs that make the comparison weaker but not
/// meaningless: the gate still runs, and prints them.
pub fn warnings(baseline: &Document, current: &Document) -> Vec<String> {
    let mut warnings = Vec::new();
    if baseline.iterations != current.iterations {
        warnings.push(format!(
            "the baseline ran {} events per run, this run {}: ratios compare, but the noise differs",
            baseline.iterations, current.iterations
        ));
    }
    if baseline.cpu_model != current.cpu_model {
        warnings.push(format!(
            "the baseline ran on another CPU model ({:?}, now {:?}): ratios to base shift \
             between CPU models",
            baseline.cpu_model, current.cpu_model
        ));
    }
    if baseline.emulated != current.emulated {
        warnings.push(format!(
            "emulation differs (baseline {}, now {}): the comparison means little",
            baseline.emulated.as_deref().unwrap_or("none"),
            current.emulated.as_deref().unwrap_or("none")
        ));
    }
    if baseline.repeats < 2 || current.repeats < 2 {
        warnings
            .push("a run with 1 repeat has no measurable noise: only the threshold applies".into());
    }
    warnings
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

fn figures(m: &MechanismResult) -> String {
    let ratio = m.ratio_to_base.as_ref().map_or(f64::NAN, |r| r.median);
    let mut s = format!("ratio {}", fmt_ratio(ratio));
    if let Some(o) = &m.overhead_ns {
        let _ = write!(s, ", {:+.1} ns/event", o.median);
    }
    s
}

/// A ratio with 3 significant digits: `0.877`, `0.00193`.
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() || r == 0.0 {
        return format!("{r}");
    }
    let decimals = (2 - r.abs().log10().floor() as i32).max(3) as usize;
    format!("{r:.decimals$}")
}

/// Compares `current` against `baseline` with `threshold` (a fraction).
pub fn compare(baseline: &Document, current: &Document, threshold: f64) -> Report {
    let mut comparisons = Vec::new();
    for old in baseline.mechanisms.iter().filter(|m| !m.is_base()) {
        let new = current.mechanism(&old.name);
        let comparison = match (old.is_ok(), new) {
            (true, None) => Comparison {
                name: old.name.clone(),
                verdict: Verdict::NotRun,
                change: None,
                noise: None,
                detail: "measured in the baseline, not selected in this run".into(),
            },
            (true, Some(new)) if !new.is_ok() => Comparison {
                name: old.name.clone(),
                verdict: Verdict::Missing,
                change: None,
                noise: None,
                detail: format!(
                    "measured in the baseline ({}), {} now: {}",
                    figures(old),
                    if new.status == Status::Skipped {
                        "skipped"
                    } else {
                        "failed"
                    },
                    new.reason.as_deref().unwrap_or("no reason given")
                ),
            },
            (true, Some(new)) => match (&old.ratio_to_base, &new.ratio_to_base) {
                (Some(o), Some(n)) => {
                    let (verdict, change, noise) = judge(o, n, threshold);
                    Comparison {
                        name: old.name.clone(),
                        verdict,
                        change: Some(change),
                        noise: Some(noise),
                        detail: format!(
                            "ratio to {} {} -> {} ({:+.1}%, noise ±{}){}",
                            new.base,
                            fmt_ratio(o.median),
                            fmt_ratio(n.median),
                            change * 100.0,
                            fmt_ratio(noise),
                            overhead_change(old, new)
                        ),
                    }
                }
                // A baseline edited by hand, say: nothing to judge on.
                _ => Comparison {
                    name: old.name.clone(),
                    verdict: Verdict::Missing,
                    change: None,
                    noise: None,
                    detail: "ok in both runs but a ratio to base is missing".into(),
                },
            },
            (false, Some(new)) if new.is_ok() => Comparison {
                name: old.name.clone(),
                verdict: Verdict::New,
                change: None,
                noise: None,
                detail: format!("not measured in the baseline; now {}", figures(new)),
            },
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
        comparisons.push(Comparison {
            name: new.name.clone(),
            verdict: Verdict::New,
            change: None,
            noise: None,
            detail: format!("not in the baseline; now {}", figures(new)),
        });
    }
    Report {
        threshold,
        warnings: warnings(baseline, current),
        comparisons,
    }
}

fn overhead_change(old: &MechanismResult, new: &MechanismResult) -> String {
    let k = |m: &MechanismResult| m.k_events_per_sec.as_ref().map(|r| r.median);
    let mut s = String::new();
    if let (Some(o), Some(n)) = (&old.overhead_ns, &new.overhead_ns) {
        let _ = write!(
            s,
            "; overhead {:+.1} -> {:+.1} ns/event",
            o.median, n.median
        );
    }
    if let (Some(o), Some(n)) = (k(old), k(new)) {
        let _ = write!(s, "; {o:.0}K -> {n:.0}K events/s");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::tests::document;
    use crate::render::gate_report;

    fn series(values: &[f64]) -> Summary {
        Summary::of(values).unwrap()
    }

    #[test]
    fn a_large_drop_beyond_noise_regresses() {
        let old = series(&[0.90, 0.91, 0.89]);
        let new = series(&[0.70, 0.71, 0.69]);
        let (verdict, change, noise) = judge(&old, &new, 0.10);
        assert_eq!(verdict, Verdict::Regressed);
        assert!((change - (0.70 - 0.90) / 0.90).abs() < 1e-9);
        assert!((noise - 0.02).abs() < 1e-9);
    }

    #[test]
    fn a_drop_under_the_threshold_passes() {
        // 5% lower and far outside the (tiny) noise: still not a regression.
        let old = series(&[0.900, 0.901, 0.899]);
        let new = series(&[0.855, 0.856, 0.854]);
        assert_eq!(judge(&old, &new, 0.10).0, Verdict::Unchanged);
        // ...unless the threshold is lower.
        assert_eq!(judge(&old, &new, 0.04).0, Verdict::Regressed);
    }

    #[test]
    fn a_drop_within_the_noise_passes() {
        // 20% lower, but each run's ratios spread over ±0.15.
        let old = series(&[0.75, 0.90, 1.05]);
        let new = series(&[0.57, 0.72, 0.87]);
        let (verdict, change, noise) = judge(&old, &new, 0.10);
        assert!(change < -0.10);
        assert!(noise > 0.18);
        assert_eq!(verdict, Verdict::WithinNoise);
        assert!(!verdict.is_regression());
    }

    #[test]
    fn the_noise_is_the_sum_of_both_stddevs() {
        // old σ = 0.01, new σ = 0.1: a drop of 0.10 is within 0.11.
        let old = series(&[0.99, 1.00, 1.01]);
        let new = series(&[0.80, 0.90, 1.00]);
        assert_eq!(judge(&old, &new, 0.05).0, Verdict::WithinNoise);
        let new = series(&[0.78, 0.88, 0.98]);
        assert_eq!(judge(&old, &new, 0.05).0, Verdict::Regressed);
    }

    #[test]
    fn one_repeat_means_only_the_threshold() {
        let (verdict, _, noise) = judge(&series(&[0.9]), &series(&[0.8]), 0.10);
        assert_eq!((verdict, noise), (Verdict::Regressed, 0.0));
        assert_eq!(
            judge(&series(&[0.9]), &series(&[0.85]), 0.10).0,
            Verdict::Unchanged
        );
    }

    #[test]
    fn improvements_are_not_regressions() {
        let (verdict, ..) = judge(&series(&[0.5, 0.5, 0.5]), &series(&[0.9, 0.9, 0.9]), 0.10);
        assert_eq!(verdict, Verdict::Improved);
        assert!(!verdict.is_regression());
    }

    #[test]
    fn the_same_result_passes() {
        let doc = document();
        assert_eq!(check_overlap(&doc, &["raw_tp"]), Ok(()));
        let report = compare(&doc, &doc, DEFAULT_THRESHOLD);
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.find("raw_tp").unwrap().verdict, Verdict::Unchanged);
        assert_eq!(report.find("tp").unwrap().change, Some(0.0));
        // Skipped in both: not compared, not a regression.
        assert!(report.find("kprobe").is_none());
        assert!(gate_report(&report, "b.json").contains("gate: PASSED (2 mechanisms compared)"));
    }

    /// The doctored baseline: raw_tp's ratio 30% better than measured.
    fn better_baseline() -> Document {
        let mut baseline = document();
        let raw_tp = baseline.mechanism_mut("raw_tp").unwrap();
        let ratio = raw_tp.ratio_to_base.as_mut().unwrap();
        ratio.samples.iter_mut().for_each(|v| *v *= 1.3);
        *ratio = Summary::of(&ratio.samples).unwrap();
        baseline
    }

    #[test]
    fn a_30_percent_better_baseline_fails_naming_the_mechanism() {
        let report = compare(&better_baseline(), &document(), DEFAULT_THRESHOLD);
        assert!(!report.passed());
        let names: Vec<&str> = report.regressions().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["raw_tp"]);
        let raw_tp = report.find("raw_tp").unwrap();
        assert!((raw_tp.change.unwrap() - (1.0 / 1.3 - 1.0)).abs() < 1e-9);
        let text = gate_report(&report, "b.json");
        assert!(
            text.contains("gate: FAILED: 1 of 2 mechanisms regressed: raw_tp"),
            "{text}"
        );
        // Old and new figures are named.
        assert!(
            text.contains("ratio to base 1.170 -> 0.900 (-23.1%"),
            "{text}"
        );
        // Only raw_tp: tp is unchanged.
        assert_eq!(report.find("tp").unwrap().verdict, Verdict::Unchanged);
    }

    #[test]
    fn supported_then_skipped_now_is_a_regression() {
        let baseline = document();
        let mut current = document();
        let tp = current.mechanism_mut("tp").unwrap();
        tp.status = Status::Skipped;
        tp.reason = Some("no tracefs".into());
        tp.ratio_to_base = None;
        let report = compare(&baseline, &current, DEFAULT_THRESHOLD);
        let tp = report.find("tp").unwrap();
        assert_eq!(tp.verdict, Verdict::Missing);
        assert!(
            tp.detail.contains("skipped now: no tracefs"),
            "{}",
            tp.detail
        );
        assert!(!report.passed());
    }

    #[test]
    fn skipped_then_supported_now_is_new() {
        let mut baseline = document();
        let raw_tp = baseline.mechanism_mut("raw_tp").unwrap();
        raw_tp.status = Status::Skipped;
        let report = compare(&baseline, &document(), DEFAULT_THRESHOLD);
        assert_eq!(report.find("raw_tp").unwrap().verdict, Verdict::New);
        assert!(report.passed());
    }

    #[test]
    fn not_selected_now_is_not_compared() {
        let baseline = document();
        let mut current = document();
        current.mechanisms.retain(|m| m.name != "tp");
        let report = compare(&baseline, &current, DEFAULT_THRESHOLD);
        assert_eq!(report.find("tp").unwrap().verdict, Verdict::NotRun);
        assert!(report.passed());
        assert!(gate_report(&report, "b").contains("gate: PASSED (1 mechanisms compared)"));
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
        let warnings = warnings(&baseline, &current);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("100000 events per run, this run 2000"));
        // The kernel differing is the point of the gate: no warning.
        current = document();
        current.kernel_release = "6.19.0".into();
        assert_eq!(super::warnings(&baseline, &current), Vec::<String>::new());
        assert!(compare(&baseline, &current, DEFAULT_THRESHOLD)
            .warnings
            .is_empty());
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(fmt_ratio(0.8771), "0.877");
        assert_eq!(fmt_ratio(1.04), "1.040");
        assert_eq!(fmt_ratio(0.001934), "0.00193");
        assert_eq!(fmt_ratio(0.0), "0");
    }
}
