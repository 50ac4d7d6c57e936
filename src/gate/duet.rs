//! Two runs made at the same time, side by side (a *duet*: two kernels,
//! each in its own VM on its own host CPU, measuring the same fixed plan
//! at once; `cargo xtask vmtest KERNEL --against KERNEL_B`), judged as an
//! in-run comparison: B against A from the pairs of their rounds.
//!
//! Round r of B is paired with round r of A of the same session: they
//! were measured at the same moment, so what the host does then weighs on
//! both. The pairs of every session are pooled; the A and B figures are
//! the medians over every session's rounds. The rule is the in-run gate's
//! ([`crate::gate::against`]) with the threshold by trigger of the
//! cross-run gate (two guests differ by more than two sides of one run),
//! and Holm's correction over the mechanisms: a duet of a kernel against
//! itself judges some 20 mechanisms at once, each of which would otherwise
//! cry wolf once in 20.

use crate::document::{Document, MechanismResult, Status, Variant};
use crate::gate::against::{compare_with, holm, Correction, Speed};
use crate::gate::{warnings, Comparison, Findings, Threshold, Verdict, ALPHA};
use crate::stats::{student_upper_tail, Summary};

/// One document shaped as an `--against` run: A's mechanisms with their B
/// side in `against` and the pooled B - A pairs in `pairs_ns`, from
/// sessions `a[i]` and `b[i]` measured together. `against_label` names B
/// (`kernel 6.1.0-44-amd64`). Errors: no sessions, unequal counts, or a
/// session pair that did not measure the same plan.
pub fn pair_sessions(
    a: &[Document],
    b: &[Document],
    against_label: &str,
) -> Result<Document, String> {
    if a.is_empty() || a.len() != b.len() {
        return Err(format!(
            "{} A result(s) and {} B result(s): give one of each per session, in the same order",
            a.len(),
            b.len()
        ));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x.iterations != y.iterations || x.batch != y.batch || x.prog_work != y.prog_work {
            return Err(format!(
                "session {}: A and B ran different plans ({} and {} events per run, batch {} \
                 and {}, prog-work {} and {}): a duet measures the same fixed plan on both",
                i + 1,
                x.iterations,
                y.iterations,
                x.batch,
                y.batch,
                x.prog_work,
                y.prog_work
            ));
        }
        if x.variant.is_some() || y.variant.is_some() {
            return Err(format!(
                "session {}: an --against run; give plain runs",
                i + 1
            ));
        }
    }
    let mut doc = a[0].clone();
    doc.variant = Some(Variant::Kernel(against_label.to_owned()));
    doc.repeats = a.iter().map(|d| d.repeats).sum();
    for m in doc.mechanisms.iter_mut().filter(|m| !m.is_base()) {
        let side_a: Vec<Option<&MechanismResult>> =
            a.iter().map(|d| d.mechanism(&m.name)).collect();
        let side_b: Vec<Option<&MechanismResult>> =
            b.iter().map(|d| d.mechanism(&m.name)).collect();
        *m = pooled(&side_a).unwrap_or_else(|| m.clone());
        m.side_b = pooled(&side_b).map(Box::new);
        if m.is_ok() {
            m.pairs_ns = pairs(&side_a, &side_b);
        }
    }
    Ok(doc)
}

/// One mechanism over every session: the first session's result with the
/// rounds of all (its overhead and rate pooled), or the first session in
/// which it was not ok. `None` where a session lacks it.
fn pooled(sessions: &[Option<&MechanismResult>]) -> Option<MechanismResult> {
    let all: Vec<&MechanismResult> = sessions.iter().copied().collect::<Option<_>>()?;
    if let Some(bad) = all.iter().find(|m| m.status != Status::Ok) {
        return Some((*bad).clone());
    }
    let mut m = all[0].clone();
    let pool = |f: fn(&MechanismResult) -> Option<&Summary>| -> Option<Summary> {
        let samples: Vec<f64> = all
            .iter()
            .map(|m| f(m).map(|s| s.samples.clone()))
            .collect::<Option<Vec<_>>>()?
            .concat();
        Summary::of(&samples)
    };
    m.overhead_ns = pool(|m| m.overhead_ns.as_ref());
    m.k_events_per_sec = pool(|m| m.k_events_per_sec.as_ref());
    m.ratio_to_base = pool(|m| m.ratio_to_base.as_ref());
    m.overhead_steps = None;
    m.detectable_ns = None;
    m.detectable = None;
    Some(m)
}

/// Round r of B minus round r of A, session by session, pooled: the rounds
/// both sides of a session have.
fn pairs(a: &[Option<&MechanismResult>], b: &[Option<&MechanismResult>]) -> Option<Summary> {
    let mut diffs = Vec::new();
    for (x, y) in a.iter().zip(b) {
        let (Some(x), Some(y)) = (
            x.and_then(|m| m.overhead_ns.as_ref()),
            y.and_then(|m| m.overhead_ns.as_ref()),
        ) else {
            return None;
        };
        diffs.extend(x.samples.iter().zip(&y.samples).map(|(x, y)| y - x));
    }
    Summary::of(&diffs)
}

/// B against A over the paired sessions: the findings, with what differs
/// between the two sides' machines and plans as warnings (a kernel's
/// release aside: that is what is compared).
pub fn compare(a: &[Document], b: &[Document], doc: &Document, threshold: Threshold) -> Findings {
    let mut findings = compare_with(doc, threshold, Correction::Holm, Speed::AsMeasured);
    across_sessions(a, b, &mut findings);
    // What B measures and A does not (a mechanism newer than A's kernel).
    for m in doc.mechanisms.iter().filter(|m| !m.is_base() && !m.is_ok()) {
        if let Some(b) = m.side_b.as_deref().filter(|b| b.is_ok()) {
            let o = b.overhead_ns.as_ref().map_or(f64::NAN, |o| o.median);
            findings.comparisons.push(Comparison::plain(
                &m.name,
                Verdict::New,
                format!(
                    "A {}: {}; B {o:+.1} {} over {}",
                    if m.status == Status::Skipped {
                        "skipped"
                    } else {
                        "failed"
                    },
                    m.reason.as_deref().unwrap_or("no reason given"),
                    doc.per_event(),
                    b.base
                ),
            ));
        }
    }
    for (x, y) in a.iter().zip(b) {
        for w in warnings(x, y) {
            if !findings.warnings.contains(&w) {
                findings.warnings.push(w);
            }
        }
    }
    findings
}

/// A REGRESSED or improved stands only when the sessions agree beyond
/// what boots differ by. The rounds of one session share its two boots
/// (where each kernel's code and programs landed, what the emulator made
/// of them), so pooled pairs alone take a difference between two boots for
/// one between the kernels: seen once in 5 duets of 6.12 against itself
/// under TCG (fentry-loop B +18.5%, every session's B slower). So each
/// session's own estimate (the median of its pairs) is a sample, and the
/// change must pass Student's one-sided t-test on them, Holm-corrected over
/// the mechanisms too; else UNSURE. One session cannot tell: never
/// REGRESSED.
fn across_sessions(a: &[Document], b: &[Document], findings: &mut Findings) {
    let judged: Vec<usize> = (0..findings.comparisons.len())
        .filter(|&i| findings.comparisons[i].diff_ns.is_some())
        .collect();
    let p: Vec<f64> = judged
        .iter()
        .map(|&i| {
            let c = &findings.comparisons[i];
            let per: Vec<f64> = a
                .iter()
                .zip(b)
                .filter_map(|(x, y)| {
                    pairs(&[x.mechanism(&c.name)], &[y.mechanism(&c.name)]).map(|s| s.median)
                })
                .collect();
            session_p(&per, c.diff_ns.unwrap_or(0.0) >= 0.0)
        })
        .collect();
    let adjusted = holm(&p);
    for (&i, p) in judged.iter().zip(adjusted) {
        let c = &mut findings.comparisons[i];
        if matches!(c.verdict, Verdict::Regressed | Verdict::Improved) && p > ALPHA {
            c.verdict = Verdict::Inconclusive;
            c.detail.push_str(&format!(
                "; across the {} sessions p={p:.3} (t-test, Holm): not beyond what two boots \
                 differ by; more --sessions would tell",
                a.len()
            ));
        }
    }
}

/// One-sided p of Student's t-test that the sessions' estimates lie above
/// zero (`up`) or below it; 1 for fewer than two.
fn session_p(estimates: &[f64], up: bool) -> f64 {
    let n = estimates.len();
    if n < 2 {
        return 1.0;
    }
    let mean = crate::stats::mean(estimates);
    let sd = crate::stats::stddev(estimates);
    let t = if sd > 0.0 {
        mean / (sd / (n as f64).sqrt())
    } else if mean == 0.0 {
        0.0
    } else {
        mean.signum() * f64::INFINITY
    };
    student_upper_tail(if up { t } else { -t }, (n - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of one mechanism, raw_tp-loop over base-loop, with these
    /// per-round overheads.
    fn run(overheads: &[f64]) -> Document {
        let mut doc = crate::document::fixtures::document();
        doc.mechanisms.retain(|m| m.name == "raw_tp" || m.is_base());
        for m in doc.mechanisms.iter_mut().filter(|m| !m.is_base()) {
            m.overhead_ns = Summary::of(overheads);
        }
        doc
    }

    #[test]
    fn rounds_pair_within_a_session_and_sessions_pool() {
        let a = [run(&[50.0, 60.0, 55.0]), run(&[40.0, 41.0, 42.0])];
        let b = [run(&[51.0, 62.0, 58.0]), run(&[44.0, 46.0, 48.0])];
        let doc = pair_sessions(&a, &b, "kernel B").unwrap();
        let m = doc.mechanism("raw_tp").unwrap();
        assert_eq!(
            m.pairs_ns.as_ref().unwrap().samples,
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        assert_eq!(m.overhead_ns.as_ref().unwrap().samples.len(), 6);
        assert_eq!(doc.variant, Some(Variant::Kernel("kernel B".into())));
        assert!(pair_sessions(&a, &b[..1], "B").is_err());
        assert!(pair_sessions(&[], &[], "B").is_err());
    }

    #[test]
    fn a_steady_cost_is_regressed_and_a_kernel_against_itself_is_not() {
        let base: Vec<f64> = (0..12).map(|i| 100.0 + (i % 5) as f64).collect();
        let worse: Vec<f64> = base.iter().map(|v| v * 1.3).collect();
        let judge = |b: &[f64]| {
            let (a, b) = (
                [run(&base), run(&base)],
                [run(b), run(&b.iter().map(|v| v + 1.0).collect::<Vec<_>>())],
            );
            let doc = pair_sessions(&a, &b, "B").unwrap();
            compare(&a, &b, &doc, Threshold::ByTrigger)
                .find("raw_tp")
                .unwrap()
                .verdict
        };
        assert_eq!(judge(&worse), Verdict::Regressed);
        assert_eq!(judge(&base), Verdict::Unchanged);
    }

    #[test]
    fn what_only_b_measures_is_new_and_what_only_a_measures_is_not_run() {
        let a = run(&[100.0, 101.0, 102.0]);
        let mut b = a.clone();
        let mut a_skips = a.clone();
        for m in a_skips.mechanisms.iter_mut().filter(|m| m.name == "raw_tp") {
            m.status = Status::Skipped;
            m.reason = Some("too old".into());
            m.overhead_ns = None;
        }
        let (xa, xb) = ([a_skips], [b.clone()]);
        let doc = pair_sessions(&xa, &xb, "B").unwrap();
        let c = compare(&xa, &xb, &doc, Threshold::ByTrigger);
        let raw_tp = c.find("raw_tp").unwrap();
        assert_eq!(raw_tp.verdict, Verdict::New);
        assert!(raw_tp.detail.contains("A skipped: too old"), "{raw_tp:?}");
        for m in b.mechanisms.iter_mut().filter(|m| m.name == "raw_tp") {
            m.status = Status::Skipped;
            m.reason = Some("too new".into());
        }
        let (xa, xb) = ([a], [b]);
        let doc = pair_sessions(&xa, &xb, "B").unwrap();
        let c = compare(&xa, &xb, &doc, Threshold::ByTrigger);
        assert_eq!(c.find("raw_tp").unwrap().verdict, Verdict::NotRun);
    }

    #[test]
    fn pooled_pairs_of_one_session_or_of_disagreeing_sessions_do_not_regress() {
        let base: Vec<f64> = (0..12).map(|i| 100.0 + (i % 5) as f64).collect();
        let worse: Vec<f64> = base.iter().map(|v| v * 1.3).collect();
        let verdict = |a: &[Document], b: &[Document]| {
            let doc = pair_sessions(a, b, "B").unwrap();
            let c = compare(a, b, &doc, Threshold::ByTrigger);
            c.find("raw_tp").unwrap().clone()
        };
        // One session: every pair says +30%, but one boot of each.
        let one = verdict(&[run(&base)], &[run(&worse)]);
        assert_eq!(one.verdict, Verdict::Inconclusive, "{one:?}");
        assert!(one.detail.contains("more --sessions"), "{one:?}");
        // Three sessions, one far off the others: the mean is +30% or so,
        // the sessions' spread as wide.
        let wild: Vec<f64> = base.iter().map(|v| v * 2.5).collect();
        let b = [run(&base), run(&wild), run(&base)];
        let a = [run(&base), run(&base), run(&base)];
        assert_eq!(verdict(&a, &b).verdict, Verdict::Inconclusive);
    }
}
