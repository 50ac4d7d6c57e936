//! The cross-run gate against a saved baseline of one run or several
//! (`--baseline DIR`, filled by `--save DIR/`), which must know how far
//! runs minutes or days apart differ before it may say REGRESSED: the
//! rounds of one run say nothing of another moment of a shared machine.
//!
//! The candidate is judged as [`compare`](super::compare) judges it
//! against the baseline runs' rounds pooled; then a REGRESSED or improved
//! verdict stands only
//! * with several baseline runs, beyond their spread: the candidate's
//!   median lies outside the one-sided 95% prediction interval of one
//!   more run from the baseline runs' medians (Student's t over their
//!   stddev), and outside their range;
//! * with one, or several saved within [`MIN_SET_SPAN`] of each other,
//!   beyond [`ONE_RUN_DRIFT`], the largest drift between runs seen on this
//!   machine kind;
//! * and under the same conditions as the baseline's (time stolen, other
//!   work on the measuring CPU, the machine's speed), within the range
//!   of the baseline runs' own.
//!
//! Otherwise it is UNSURE, with a line saying what would answer: an
//! in-run comparison (`--against`) or a longer baseline.

use super::{compare, speed_of, Findings, Threshold, Verdict, Warning};
use crate::document::Document;
use crate::stats::{mean, median, stddev, Summary};

/// The largest change of a mechanism's overhead between two runs of one
/// kernel seen on machines of this kind: raw_tp-loop at +16.5 ns in one
/// run and +8.2 ns a few minutes later, as the host jumped between speed
/// states (REFERENCE.md, "Drift"; docs/gate-power.md). Against one run, a
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

/// One-sided 95% quantiles of Student's t by degrees of freedom (1 to
/// 10), then the normal's.
fn t95(df: usize) -> f64 {
    const T: [f64; 10] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.645)
}

/// Judges `current` against the saved runs `baselines` (at least one).
pub fn compare_set(baselines: &[Document], current: &Document, threshold: Threshold) -> Findings {
    assert!(!baselines.is_empty(), "a baseline has at least one run");
    let pooled = pool(baselines);
    let mut report = compare(&pooled, current, threshold);
    let conditions = conditions_differ(baselines, current);
    for c in &mut report.comparisons {
        if !matches!(c.verdict, Verdict::Regressed | Verdict::Improved) {
            continue;
        }
        let why = if let Some(why) = &conditions {
            Some(format!(
                "this run's conditions differ from the baseline's ({why}), and could explain \
                 the change: --against would answer, in one run"
            ))
        } else if baselines.len() == 1 {
            (c.change.unwrap_or(0.0).abs() <= ONE_RUN_DRIFT).then(|| {
                format!(
                    "against a one-run baseline, a change within ±{:.0}% may be the machine's \
                     drift between runs: --against, or a baseline of several runs (--save DIR/, \
                     three or more), would answer",
                    ONE_RUN_DRIFT * 100.0
                )
            })
        } else if span(baselines).is_none_or(|s| s < MIN_SET_SPAN) {
            (c.change.unwrap_or(0.0).abs() <= ONE_RUN_DRIFT).then(|| {
                format!(
                    "the baseline's {} runs were saved within {} minutes of each other, too \
                     close to know the drift between runs, and a change within ±{:.0}% may be \
                     the machine's: --against, or baseline runs saved over an hour or more, \
                     would answer",
                    baselines.len(),
                    MIN_SET_SPAN.as_secs() / 60,
                    ONE_RUN_DRIFT * 100.0
                )
            })
        } else {
            within_spread(baselines, current, &c.name)
        };
        if let Some(why) = why {
            c.verdict = Verdict::Inconclusive;
            c.detail.push_str(&format!("; UNSURE: {why}"));
        }
    }
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

/// Why the candidate's median of `name` is within what the baseline
/// runs' medians would give for one more run, if it is.
fn within_spread(baselines: &[Document], current: &Document, name: &str) -> Option<String> {
    let medians: Vec<f64> = baselines
        .iter()
        .filter_map(|d| d.mechanism(name)?.overhead_ns.as_ref().map(|s| s.median))
        .collect();
    let now = current.mechanism(name)?.overhead_ns.as_ref()?.median;
    if medians.len() < 2 {
        return Some(format!(
            "only {} of the baseline's runs measured it: too few to know the spread between runs",
            medians.len()
        ));
    }
    let k = medians.len() as f64;
    let centre = mean(&medians);
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let margin = t95(medians.len() - 1) * stddev(&medians) * (1.0 + 1.0 / k).sqrt();
    let outside = now > (centre + margin).max(hi) || now < (centre - margin).min(lo);
    (!outside).then(|| {
        format!(
            "{now:+.1} ns is within what the baseline's {} runs (medians {lo:+.1} to {hi:+.1} ns) \
             give for one more run ({centre:+.1} ± {margin:.1} ns): --against, or more baseline \
             runs, would answer",
            medians.len()
        )
    })
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
