//! The cross-run gate against a saved baseline of one run or several
//! (`--baseline DIR`, filled by `--save DIR/`), which must know how far
//! runs minutes or days apart differ before it may say REGRESSED or ok: the
//! rounds of one run say nothing of another moment of a shared machine.
//!
//! The candidate is judged as [`compare`](super::compare) judges it
//! against the baseline runs' rounds pooled, with the drift between runs
//! allowed for on both sides ([`super::verdict`]): a change within the
//! drift may be the machine's, not REGRESSED (or improved), and `ok`
//! needs the change's 90% interval, widened by the drift, within the
//! threshold. The drift allowed:
//! * with several baseline runs spanning [`MIN_SET_SPAN`] or more, their
//!   spread: where one more run's median may fall, the two-sided 90%
//!   prediction interval from the baseline runs' medians (Student's t
//!   over their stddev) widened to their range, as ns below and above
//!   the pooled median;
//! * with one, or several saved within [`MIN_SET_SPAN`] of each other,
//!   ± [`ONE_RUN_DRIFT`], the largest drift between runs seen on this
//!   machine kind: more than any default threshold, so such a baseline
//!   never says `ok`;
//! * any, when this run's conditions (time stolen, other work on the
//!   measuring CPU, the machine's speed) fall outside the range of the
//!   baseline runs' own, or fewer than two baseline runs measured the
//!   mechanism.
//!
//! A comparison the drift alone makes UNSURE says so on its line, and
//! what would answer: an in-run comparison (`--against`) or a baseline
//! set spanning more time or more runs.

use super::{compare_drifting, speed_of, Allowance, Drift, Findings, Threshold, Warning};
use crate::document::Document;
use crate::stats::{mean, median, stddev, student_quantile, Summary};

/// The largest change of a mechanism's overhead between two runs of one
/// kernel seen on machines of this kind: raw_tp-loop at +16.5 ns in one
/// run and +8.2 ns a few minutes later, as the host jumped between speed
/// states (docs/gate-power.md). Against one run, a
/// smaller change may be the machine's.
pub const ONE_RUN_DRIFT: f64 = 1.0;

/// How long a baseline set's runs must span for their spread to stand for
/// the drift between runs. Three quiet runs saved within 3 minutes spread
/// by 3% (uprobe-ret: 9099 to 9401 ns), and A/A runs in the 40 minutes
/// after them ran 5 to 8% costlier on every mechanism: judged by that
/// spread, 12 of 480 comparisons came out REGRESSED
/// (docs/gate-power.md). Runs minutes apart say as little of another
/// moment as one run does.
pub const MIN_SET_SPAN: std::time::Duration = std::time::Duration::from_secs(3600);

/// Conditions count as the baseline's within these margins of the
/// baseline runs' own range: points of stolen time and of other work on
/// the measuring CPU, and a share of the speed reference.
const STEAL_POINTS: f64 = 2.0;
const OTHER_POINTS: f64 = 5.0;
const SPEED_SHARE: f64 = 0.05;

/// Judges `current` against the saved runs `baselines` (at least one).
pub fn compare_set(baselines: &[Document], current: &Document, threshold: Threshold) -> Findings {
    assert!(!baselines.is_empty(), "a baseline has at least one run");
    let pooled = pool(baselines);
    let conditions = conditions_differ(baselines, current);
    let mut report = compare_drifting(&pooled, current, threshold, |name| {
        allowance(baselines, &pooled, name, conditions.as_deref())
    });
    if baselines.len() > 1 {
        let stamps = baselines.iter().map(|d| d.timestamp.as_str());
        report.warnings.insert(
            0,
            Warning::BaselineSet {
                runs: baselines.len(),
                first: stamps.clone().min().unwrap_or("").into(),
                last: stamps.max().unwrap_or("").into(),
            },
        );
    }
    report
}

/// The drift between runs allowed for `name` against `baselines`
/// (`pooled`: their rounds pooled), and why: the spread of a set's runs,
/// [`ONE_RUN_DRIFT`] where that is not known, any drift where this run's
/// `conditions` differ from the baseline's.
fn allowance(
    baselines: &[Document],
    pooled: &Document,
    name: &str,
    conditions: Option<&str>,
) -> Allowance {
    spread_unusable(baselines, conditions).unwrap_or_else(|| spread(baselines, pooled, name))
}

/// An allowance of `drift`, `what` it is, and the `answer` to it.
fn allow(drift: Drift, what: String, answer: &str) -> Allowance {
    Allowance {
        drift,
        what,
        answer: answer.into(),
    }
}

/// The drift allowed on every mechanism where the baseline runs' spread
/// cannot stand for it: this run's `conditions` differ from theirs, or
/// the runs are one, or were saved within [`MIN_SET_SPAN`].
fn spread_unusable(baselines: &[Document], conditions: Option<&str>) -> Option<Allowance> {
    if let Some(why) = conditions {
        return Some(allow(
            Drift::Unknown,
            format!(
                "this run's conditions differ from the baseline's ({why}), so how far it may \
                 have drifted from the baseline is not known"
            ),
            "--against would answer, in one run",
        ));
    }
    if baselines.len() == 1 {
        return Some(allow(
            Drift::Share(ONE_RUN_DRIFT),
            format!(
                "against a one-run baseline, runs of one kernel may differ by up to ±{:.0}% on \
                 this machine kind",
                ONE_RUN_DRIFT * 100.0
            ),
            "--against, or a baseline set (--save DIR/, three or more runs over an hour or \
             more), would answer",
        ));
    }
    if span(baselines).is_none_or(|s| s < MIN_SET_SPAN) {
        return Some(allow(
            Drift::Share(ONE_RUN_DRIFT),
            format!(
                "the baseline's {} runs were saved within {} minutes of each other, too close \
                 to know the drift between runs, which may be up to ±{:.0}% on this machine kind",
                baselines.len(),
                MIN_SET_SPAN.as_secs() / 60,
                ONE_RUN_DRIFT * 100.0
            ),
            "--against, or baseline runs saved over an hour or more, would answer",
        ));
    }
    None
}

/// The drift allowed for `name` from the spread of the baseline runs'
/// medians about the `pooled` one; unknown if fewer than two measured it.
fn spread(baselines: &[Document], pooled: &Document, name: &str) -> Allowance {
    let medians: Vec<f64> = baselines
        .iter()
        .filter_map(|d| d.mechanism(name)?.overhead_ns.as_ref().map(|s| s.median))
        .collect();
    let Some(measured) = pooled
        .mechanism(name)
        .and_then(|m| m.overhead_ns.as_ref())
        .map(|s| s.median)
        .filter(|_| medians.len() >= 2)
    else {
        return allow(
            Drift::Unknown,
            format!(
                "only {} of the baseline's runs measured it: too few to know the spread between \
                 runs",
                medians.len()
            ),
            "--against, or more baseline runs, would answer",
        );
    };
    let (lo, hi) = one_more_run(&medians);
    let unit = pooled.unit_word();
    allow(
        Drift::Ns {
            below: measured - lo,
            above: hi - measured,
        },
        format!(
            "the baseline's {} runs (medians {:+.1} to {:+.1} {unit}) give {lo:+.1} to {hi:+.1} \
             {unit} for one more run of the same kernel, {:+.1} to {:+.1} {unit} from their \
             pooled median {measured:+.1}",
            medians.len(),
            medians.iter().copied().fold(f64::INFINITY, f64::min),
            medians.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            lo - measured,
            hi - measured,
        ),
        "--against, or more baseline runs, would answer",
    )
}

/// Where one more run's median may fall, given the baseline runs'
/// `medians` (two or more): the two-sided 90% prediction interval
/// (Student's t over their stddev), widened to their range.
fn one_more_run(medians: &[f64]) -> (f64, f64) {
    let k = medians.len() as f64;
    let centre = mean(medians);
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let margin = student_quantile(0.95, k - 1.0) * stddev(medians) * (1.0 + 1.0 / k).sqrt();
    ((centre - margin).min(lo), (centre + margin).max(hi))
}

/// How long the baseline runs span, first to last (`None` if a timestamp
/// does not parse).
fn span(baselines: &[Document]) -> Option<std::time::Duration> {
    let times: Vec<std::time::SystemTime> = baselines
        .iter()
        .map(|d| humantime::parse_rfc3339(&d.timestamp).ok())
        .collect::<Option<_>>()?;
    let first = times.iter().min()?;
    let last = times.iter().max()?;
    last.duration_since(*first).ok()
}

/// The newest baseline run, with each mechanism's rounds those of every
/// run that measured it.
fn pool(baselines: &[Document]) -> Document {
    let newest = baselines
        .iter()
        .max_by(|a, b| a.timestamp.cmp(&b.timestamp))
        .expect("at least one");
    let mut pooled = newest.side_a();
    for m in &mut pooled.mechanisms {
        let rounds: Vec<f64> = baselines
            .iter()
            .filter_map(|d| d.mechanism(&m.name)?.overhead_ns.as_ref())
            .flat_map(|s| s.samples.iter().copied())
            .collect();
        if m.overhead_ns.is_some() {
            m.overhead_ns = Summary::of(&rounds);
        }
    }
    pooled
}

/// How `current`'s conditions fall outside the baseline runs', if they do.
fn conditions_differ(baselines: &[Document], current: &Document) -> Option<String> {
    let mut why = Vec::new();
    let range = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    if let Some(now) = &current.context {
        let then: Vec<_> = baselines
            .iter()
            .filter_map(|d| d.context.as_ref())
            .collect();
        if !then.is_empty() {
            for (what, now, values, margin) in [
                (
                    "stolen time",
                    now.steal_pct,
                    then.iter().map(|c| c.steal_pct).collect::<Vec<_>>(),
                    STEAL_POINTS,
                ),
                (
                    "other work on the CPU",
                    now.other_pct,
                    then.iter().map(|c| c.other_pct).collect(),
                    OTHER_POINTS,
                ),
            ] {
                let (lo, hi) = range(&values);
                if now > hi + margin || now < lo - margin {
                    why.push(format!("{what} {now:.1}%, baseline {lo:.1}–{hi:.1}%"));
                }
            }
        }
    }
    let speeds: Vec<f64> = baselines.iter().filter_map(speed_of).collect();
    if let (Some(now), false) = (speed_of(current), speeds.is_empty()) {
        let (lo, hi) = range(&speeds);
        if now > hi * (1.0 + SPEED_SHARE) || now < lo * (1.0 - SPEED_SHARE) {
            why.push(format!(
                "speed reference {now:.2} ns, baseline {lo:.2}–{hi:.2} ns (median {:.2})",
                median(&speeds)
            ));
        }
    }
    (!why.is_empty()).then(|| why.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;
    use crate::gate::Verdict;
    use crate::render::gate_report;
    use crate::stats::Summary;

    /// A baseline run at `at` whose raw_tp overhead is around `ns`.
    fn run_at(at: &str, ns: f64) -> Document {
        let mut d = document();
        d.timestamp = at.into();
        let m = d
            .mechanisms
            .iter_mut()
            .find(|m| m.name == "raw_tp")
            .unwrap();
        m.overhead_ns = Summary::of(&[ns - 1.0, ns, ns + 1.0, ns - 0.5, ns + 0.5]);
        d
    }

    fn verdict(baselines: &[Document], now: f64) -> Verdict {
        let current = run_at("2026-05-02T12:00:00Z", now);
        compare_set(baselines, &current, Threshold::Fixed(0.06))
            .find("raw_tp")
            .unwrap()
            .verdict
    }

    fn detail(baselines: &[Document], now: f64) -> String {
        let current = run_at("2026-05-02T12:00:00Z", now);
        compare_set(baselines, &current, Threshold::Fixed(0.06))
            .find("raw_tp")
            .unwrap()
            .detail
            .clone()
    }

    /// Three runs two hours apart whose medians lie within 1 ns of 100:
    /// one more run falls within ±3.4 ns of their mean (t 2.92 over a
    /// stddev of 1 ns, times √(4/3)).
    fn tight_hours() -> [Document; 3] {
        [
            run_at("2026-05-01T08:00:00Z", 100.0),
            run_at("2026-05-01T10:00:00Z", 101.0),
            run_at("2026-05-01T12:00:00Z", 99.0),
        ]
    }

    #[test]
    fn one_more_run_falls_within_the_prediction_interval_or_the_range() {
        let (lo, hi) = one_more_run(&[100.0, 101.0, 99.0]);
        let margin = 2.920 * 1.0 * (4.0f64 / 3.0).sqrt();
        assert!((lo - (100.0 - margin)).abs() < 1e-3 && (hi - (100.0 + margin)).abs() < 1e-3);
        // Two runs: t of 1 degree of freedom (6.31) makes the interval
        // far wider than their range.
        let (lo, hi) = one_more_run(&[90.0, 110.0]);
        assert!(lo < 90.0 - 80.0 && hi > 110.0 + 80.0, "{lo} {hi}");
    }

    #[test]
    fn twelve_runs_get_students_t_of_eleven_degrees_not_the_normals() {
        // 100 ± 1 alternating: stddev 1.044, so t(11) = 1.796 gives a
        // margin of 1.952 where the normal's 1.645 gave 1.788.
        let medians: Vec<f64> = (0..12).map(|i| 100.0 + [-1.0, 1.0][i % 2]).collect();
        let (lo, hi) = one_more_run(&medians);
        let margin = 1.7959 * stddev(&medians) * (13.0f64 / 12.0).sqrt();
        assert!((hi - 100.0 - margin).abs() < 1e-3, "{hi}");
        assert!((100.0 - lo - margin).abs() < 1e-3, "{lo}");
    }

    /// The same run measured again: never ok against one run, whose
    /// drift (±100%) could hide any change of the threshold; ok against a
    /// set whose spread (±3.4%) and the runs' noise leave it within 6%.
    #[test]
    fn an_unchanged_run_is_ok_only_against_a_set_that_allows_it() {
        let one = [run_at("2026-05-01T12:00:00Z", 100.0)];
        assert_eq!(verdict(&one, 100.0), Verdict::Inconclusive);
        let line = detail(&one, 100.0);
        assert!(
            line.ends_with(
                "; UNSURE: against a one-run baseline, runs of one kernel may differ by up to \
                 ±100% on this machine kind, and the change's interval widened by it, -100.8% to \
                 +100.8%, reaches beyond ±6.0%, so it could hide a change of the threshold: \
                 --against, or a baseline set (--save DIR/, three or more runs over an hour or \
                 more), would answer"
            ),
            "{line}"
        );
        let current = run_at("2026-05-02T12:00:00Z", 100.0);
        let report = gate_report(
            &compare_set(&one, &current, Threshold::Fixed(0.06)),
            "b.json",
        );
        assert!(
            report.contains(
                "(raw_tp, tp): the drift between runs the baseline allows could hide a change of \
                 the threshold or make one: compare inside one run (--against), or against a \
                 baseline set"
            ),
            "{report}"
        );
        assert_eq!(verdict(&tight_hours(), 100.0), Verdict::Unchanged);
        assert!(!detail(&tight_hours(), 100.0).contains("UNSURE"));
        // Saved within minutes: the one-run drift again.
        let minutes = [
            run_at("2026-05-01T12:00:00Z", 100.0),
            run_at("2026-05-01T12:01:00Z", 101.0),
            run_at("2026-05-01T12:02:00Z", 99.0),
        ];
        assert_eq!(verdict(&minutes, 100.0), Verdict::Inconclusive);
        assert!(detail(&minutes, 100.0).contains("too close to know the drift between runs"));
    }

    /// A candidate 3% costlier: within the threshold, but not once the
    /// set's spread is allowed for on the side that hides a regression.
    #[test]
    fn an_interval_within_the_threshold_but_within_the_spread_is_unsure() {
        assert_eq!(verdict(&tight_hours(), 103.0), Verdict::Inconclusive);
        let line = detail(&tight_hours(), 103.0);
        assert!(
            line.contains(
                "; UNSURE: the baseline's 3 runs (medians +99.0 to +101.0 ns) give +96.6 to \
                 +103.4 ns for one more run of the same kernel, -3.4 to +3.4 ns from their pooled \
                 median +100.0, and the change's interval widened by it"
            ) && line.ends_with("--against, or more baseline runs, would answer"),
            "{line}"
        );
        // Runs that spread by ±5 ns: even no change is UNSURE.
        let wide = [
            run_at("2026-05-01T08:00:00Z", 95.0),
            run_at("2026-05-01T10:00:00Z", 105.0),
            run_at("2026-05-01T12:00:00Z", 100.0),
        ];
        assert_eq!(verdict(&wide, 100.0), Verdict::Inconclusive);
    }

    /// Other conditions than the baseline's: the drift is not known, so
    /// neither REGRESSED nor ok.
    #[test]
    fn other_conditions_leave_nothing_ok() {
        let mut current = run_at("2026-05-02T12:00:00Z", 100.0);
        for m in &mut current.mechanisms {
            m.speed_ns = Summary::of(&[2.5, 2.5, 2.5]);
        }
        let c = compare_set(&tight_hours(), &current, Threshold::Fixed(0.06));
        let raw_tp = c.find("raw_tp").unwrap();
        assert_eq!(raw_tp.verdict, Verdict::Inconclusive);
        assert!(
            raw_tp.detail.contains(
                "UNSURE: this run's conditions differ from the baseline's (speed reference 2.50 \
                 ns, baseline 2.00–2.00 ns (median 2.00))"
            ) && raw_tp.detail.ends_with(
                "is not known, and a change of the threshold could hide in it: --against would \
                 answer, in one run"
            ),
            "{}",
            raw_tp.detail
        );
    }

    /// Three tight runs and a candidate 30% costlier: REGRESSED when the
    /// runs span hours, UNSURE when they were saved minutes apart.
    #[test]
    fn a_set_saved_within_minutes_is_judged_as_one_run() {
        let hours = [
            run_at("2026-05-01T08:00:00Z", 100.0),
            run_at("2026-05-01T10:00:00Z", 101.0),
            run_at("2026-05-01T12:00:00Z", 99.0),
        ];
        assert_eq!(verdict(&hours, 130.0), Verdict::Regressed);
        let minutes = [
            run_at("2026-05-01T12:00:00Z", 100.0),
            run_at("2026-05-01T12:01:00Z", 101.0),
            run_at("2026-05-01T12:02:00Z", 99.0),
        ];
        assert_eq!(verdict(&minutes, 130.0), Verdict::Inconclusive);
        assert_eq!(span(&minutes), Some(std::time::Duration::from_secs(120)));
    }
}
