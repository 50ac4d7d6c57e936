//! The gate's findings in words: the report of a comparison across runs
//! (`--baseline`) and of one inside a run (`--against`), and every
//! [`Warning`] the gate gives.

use std::fmt::Write as _;

use crate::gate::{Comparison, Condition, Findings, Setting, Verdict, Warning};

/// One warning, as the gate report prints it after `gate: warning: `.
pub fn warning(w: &Warning) -> String {
    match w {
        Warning::Setting {
            setting,
            baseline: then,
            current: now,
        } => setting_warning(setting, then, now),
        Warning::OneRepeat => {
            "a run with 1 repeat has no measurable noise: only the threshold applies".into()
        }
        Warning::TwoRepeats => "with 2 repeats the noise test cannot reach p ≤ 0.05: nothing \
                                can regress; use --repeat 5 or more"
            .into(),
        Warning::Speed {
            baseline_ns: then,
            current_ns: now,
        } => format!(
            "the machine ran {:.0}% {} than in the baseline (speed reference {then:.2} -> \
             {now:.2} ns): overheads in ns move with it",
            100.0 * (now / then - 1.0).abs(),
            if now > then { "slower" } else { "faster" }
        ),
        Warning::Conditions {
            condition,
            baseline_pct: a,
            current_pct: b,
        } => {
            let what = match condition {
                Condition::Steal => "time stolen by the hypervisor",
                Condition::OtherWork => "other work on the CPU",
            };
            format!(
                "the runs ran under different conditions: {what} {a:.1}% in the baseline, \
                 {b:.1}% now"
            )
        }
        Warning::BaselineSet { runs, first, last } => format!(
            "the baseline is {runs} runs ({first} to {last}), judged with the spread between them"
        ),
    }
}

/// A warning that the baseline ran with another `setting`: `then` in the
/// baseline, `now` in this run.
fn setting_warning(setting: &Setting, then: &str, now: &str) -> String {
    match setting {
        Setting::Iterations => format!(
            "the baseline ran {then} events per run, this run {now}: ratios compare, but \
             the noise differs"
        ),
        Setting::Arch => format!(
            "the baseline ran on {then}, this run on {now}: uprobes, trampolines and \
             fprobes work differently there, so the comparison means little"
        ),
        Setting::CpuModel => format!(
            "the baseline ran on another CPU model ({then:?}, now {now:?}): ratios to base \
             shift between CPU models"
        ),
        Setting::Emulated => {
            format!("emulation differs (baseline {then}, now {now}): the comparison means little")
        }
        Setting::ProgWork => format!(
            "the programs did {then} steps of extra work in the baseline, {now} now: \
             overheads differ by that"
        ),
        Setting::Counting => format!(
            "the comm and call triggers' programs counted {then} in the baseline, {now} \
             now: their overheads differ by that (a lock-prefixed add costs more than a \
             plain one)"
        ),
        Setting::Stacktrace => format!(
            "the programs took the kernel stack on each hit: {then} in the baseline, {now} \
             now (--stacktrace): overheads differ by that"
        ),
        Setting::Batch => {
            format!("the kernel loop ran batches of {then} in the baseline, {now} now")
        }
        Setting::Objects => format!(
            "the baseline measured other object files ({then}; now {now}): its programs \
             are another build"
        ),
        Setting::Packet => {
            format!("the baseline's test runs ran on another packet ({then}; now {now})")
        }
        Setting::RunLength => format!(
            "the baseline's timed runs were sized to {then}, this run's to {now}: \
             shorter runs measure a few % more overhead (an --against run's 10 ms runs \
             2-3% more than the default 50 ms, docs/gate-power.md)"
        ),
    }
}

/// The gate's report for humans: one line per mechanism, and the verdict.
pub fn gate_report(findings: &Findings, baseline_label: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gate: this run against {baseline_label}: a regression is an overhead over base \
         higher by more than {} and beyond the noise (Mann-Whitney p <= 0.05) and the drift \
         between runs; unchanged, when the change's 90% interval, widened by that drift, lies \
         within the threshold; else UNSURE",
        findings.threshold.describe()
    );
    for w in &findings.warnings {
        let _ = writeln!(out, "gate: warning: {}", warning(w));
    }
    let width = findings
        .comparisons
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    for c in &findings.comparisons {
        let _ = writeln!(
            out,
            "  {:<9} {:<width$}  {}",
            c.verdict.label(),
            c.name,
            c.detail
        );
    }
    out.push_str(&conclusion("gate", findings, &advice(findings)));
    out
}

/// What would decide the gate's UNSURE comparisons: where the drift
/// between runs alone left them UNSURE, a comparison that knows it or has
/// none; where the runs' noise did, better runs.
fn advice(findings: &Findings) -> String {
    const NOISE: &str = "rerun on a quieter machine, with a longer --budget, or measure the \
                         kernel-loop trigger (-m raw_tp-loop,tp-loop,...), whose overheads \
                         stand out of the noise; or compare inside one run (--against)";
    const DRIFT: &str = "the drift between runs the baseline allows could hide a change of the \
                         threshold or make one: compare inside one run (--against), or against \
                         a baseline set of three or more runs saved over an hour or more \
                         (--save DIR/, then --baseline DIR)";
    let (drift, noise): (Vec<&Comparison>, Vec<&Comparison>) =
        findings.inconclusive().partition(|c| c.by_drift);
    match (drift.is_empty(), noise.is_empty()) {
        (true, _) => NOISE.into(),
        (false, true) => DRIFT.into(),
        (false, false) => format!(
            "for {}, {DRIFT}; for the others, {NOISE}",
            drift
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The last line of a report: FAILED, INCONCLUSIVE (with `advice`) or
/// PASSED.
pub(super) fn conclusion(who: &str, report: &Findings, advice: &str) -> String {
    let regressed: Vec<&str> = report.regressions().map(|c| c.name.as_str()).collect();
    let unsure: Vec<&str> = report.inconclusive().map(|c| c.name.as_str()).collect();
    let compared = report
        .comparisons
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::New | Verdict::NotRun))
        .count();
    if !regressed.is_empty() {
        format!(
            "{who}: FAILED: {} of {compared} mechanisms regressed: {}\n",
            regressed.len(),
            regressed.join(", ")
        )
    } else if !unsure.is_empty() {
        format!(
            "{who}: INCONCLUSIVE: no regression seen, but {} of {compared} comparisons could not \
             see a change of the threshold ({}): {advice}\n",
            unsure.len(),
            unsure.join(", ")
        )
    } else {
        format!(
            "{who}: PASSED ({compared} mechanisms compared, each precisely enough to see a \
             change of the threshold)\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advice_names_what_the_drift_decided() {
        let c = |name: &str, verdict, by_drift| Comparison {
            name: name.into(),
            verdict,
            change: Some(0.0),
            diff_ns: Some(0.0),
            p_value: Some(1.0),
            detectable: Some(0.01),
            detail: String::new(),
            by_drift,
        };
        let findings = |comparisons| Findings {
            threshold: crate::gate::Threshold::ByTrigger,
            warnings: vec![],
            comparisons,
        };
        let drift = advice(&findings(vec![c("a", Verdict::Inconclusive, true)]));
        assert!(drift.starts_with("the drift between runs"), "{drift}");
        let noise = advice(&findings(vec![c("a", Verdict::Inconclusive, false)]));
        assert!(noise.starts_with("rerun on a quieter machine"), "{noise}");
        let both = advice(&findings(vec![
            c("a", Verdict::Inconclusive, true),
            c("b", Verdict::Inconclusive, false),
            c("c", Verdict::Unchanged, false),
        ]));
        assert!(
            both.starts_with("for a, the drift between runs")
                && both.contains("; for the others, rerun on a quieter machine"),
            "{both}"
        );
    }

    #[test]
    fn warnings_in_words() {
        let setting = |setting, baseline: &str, current: &str| {
            warning(&Warning::Setting {
                setting,
                baseline: baseline.into(),
                current: current.into(),
            })
        };
        assert_eq!(
            setting(Setting::Iterations, "100000", "2000"),
            "the baseline ran 100000 events per run, this run 2000: ratios compare, but the \
             noise differs"
        );
        assert!(setting(Setting::CpuModel, "A", "B").contains("(\"A\", now \"B\")"));
        assert_eq!(
            warning(&Warning::TwoRepeats),
            "with 2 repeats the noise test cannot reach p ≤ 0.05: nothing can regress; use \
             --repeat 5 or more"
        );
        assert!(warning(&Warning::Speed {
            baseline_ns: 10.0,
            current_ns: 13.0
        })
        .starts_with(
            "the machine ran 30% slower than in the baseline (speed reference 10.00 -> 13.00 ns)"
        ));
        assert!(warning(&Warning::Conditions {
            condition: Condition::Steal,
            baseline_pct: 0.5,
            current_pct: 4.0
        })
        .ends_with("time stolen by the hypervisor 0.5% in the baseline, 4.0% now"));
        assert_eq!(
            warning(&Warning::BaselineSet {
                runs: 3,
                first: "a".into(),
                last: "c".into()
            }),
            "the baseline is 3 runs (a to c), judged with the spread between them"
        );
    }
}
