//! The in-run gate (`--against VARIANT`): each mechanism's B side against
//! its A side, measured in the same rounds of one run.
//!
//! A and B alternate round by round (A first in odd rounds, B in even
//! ones), each run bracketed by the same base runs, so a pair is a few
//! tens of ms apart: what drifts slowly on a shared machine (its speed
//! state, a neighbour's load, the page cache) is common to both and
//! cancels in the pair's difference. The rule is the cross-run gate's
//! four verdicts (see [`crate::gate`]) on the per-round differences B − A
//! of the overhead over base, with the signed-rank test and the
//! Hodges–Lehmann interval ([`crate::paired`]) in place of the rank test
//! over two runs' rounds, and one threshold on every trigger,
//! [`IN_RUN_THRESHOLD`], from the in-run A/A spread.
//!
//! A mechanism whose A side was measured and whose B side failed is
//! MISSING (a regression: the variant broke it); one whose B side was
//! skipped (the kernel lacks what the variant needs) is not compared.

use crate::document::{Document, MechanismResult, Status};
use crate::gate::{Comparison, Findings, Judgement, Threshold, Verdict, ALPHA, FLOOR_OF_BASE};
use crate::paired::{paired, speed_adjusted, Interval, Paired};
use bpf_overhead_common::exact_rule::{judge_counts, ExactChange};

/// What B must cost more than A, as a share of A's own cost, to be a
/// regression, on every trigger: pairs a few ms apart carry none of the
/// drift between runs that sets the defaults (the in-run A/A spread,
/// docs/gate-power.md).
pub const IN_RUN_THRESHOLD: f64 = 0.05;

/// The gate's rule on per-round differences B - A in ns, against
/// `reference_ns` (A's own cost, or the floor): **regressed** when the
/// difference's 90% interval lies wholly above + `threshold` (its
/// one-sided 95% bound beyond it) and the signed-rank test says so at
/// p ≤ [`ALPHA`], **improved** symmetrically, **unchanged** when the
/// interval lies within ± `threshold`, else **inconclusive**. `None`
/// without pairs. The interval, not the estimate, must clear the
/// threshold: A/A pairs beside a hog came out +8.1% at p = 0.016
/// (docs/gate-power.md).
pub fn judge(pairs: &[f64], reference_ns: f64, threshold: f64) -> Option<Judgement> {
    let p = paired(pairs)?;
    Some(rule(&p, p.p_value, reference_ns, threshold))
}

/// [`judge`]'s rule on pairs already summed up, with the p-value to test
/// given: the signed-rank test's own, or that p corrected for the other
/// mechanisms compared at the same time ([`holm`]).
pub fn rule(p: &Paired, p_value: f64, reference_ns: f64, threshold: f64) -> Judgement {
    let reference = reference_ns.abs().max(f64::MIN_POSITIVE);
    let change = p.estimate / reference;
    let significant = p_value <= ALPHA;
    let verdict = match p.interval(reference, threshold) {
        Interval::Above if significant => Verdict::Regressed,
        Interval::Below if significant => Verdict::Improved,
        Interval::Within => Verdict::Unchanged,
        _ => Verdict::Inconclusive,
    };
    Judgement {
        verdict,
        change,
        diff_ns: p.estimate,
        p_value,
        detectable: p.detectable / reference,
    }
}

/// Holm's step-down correction of `p` (one p-value per mechanism judged
/// at the same time): each p-value adjusted, in the same order, so that
/// testing every one at [`ALPHA`] keeps the chance of any false alarm
/// among them at most [`ALPHA`]. The i-th smallest of m is multiplied by
/// m - i + 1 (from i = 1), made no smaller than the one before it, and
/// capped at 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (i, &at) in order.iter().enumerate() {
        running = running.max(((m - i) as f64 * p[at]).min(1.0));
        adjusted[at] = running;
    }
    adjusted
}

/// How the p-values of one comparison's mechanisms are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Correction {
    /// Each at [`ALPHA`] alone: in-run variants, as the cross-run gate.
    None,
    /// Holm's ([`holm`]) over every mechanism judged.
    Holm,
}

/// Whether a pair's speed difference is taken out of it
/// ([`speed_adjusted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speed {
    /// In one run, where B cannot move the speed reference.
    Adjusted,
    /// Two kernels: one may move even user-space work (its mitigations).
    AsMeasured,
}

/// The in-run threshold where the figures are counts of instructions
/// ([`Document::exact`]): they do not drift, so a change of 1% is one.
pub const EXACT_THRESHOLD: f64 = 0.01;

/// Judges every mechanism's B side against its A side in `doc`, a run
/// made with `--against`: counts by the threshold alone.
pub fn compare(doc: &Document, threshold: f64) -> Findings {
    if doc.exact() {
        return compare_counts(doc, threshold);
    }
    compare_with(
        doc,
        Threshold::Fixed(threshold),
        Correction::None,
        Speed::Adjusted,
    )
}

/// The pairs of `a`, B - A, as they are judged.
pub fn judged_pairs(a: &MechanismResult, speed: Speed) -> Option<Vec<f64>> {
    let pairs = &a.pairs_ns.as_ref()?.samples;
    let speeds = |m: &MechanismResult| m.speed_ns.as_ref().map(|s| s.samples.clone());
    match (speed, speeds(a), a.side_b.as_deref().and_then(speeds)) {
        (Speed::Adjusted, Some(a_speed), Some(b_speed)) => {
            Some(speed_adjusted(pairs, &a_speed, &b_speed))
        }
        _ => Some(pairs.clone()),
    }
}

/// [`compare`] with a threshold by trigger, a correction for judging
/// many mechanisms at once and the pairs as measured (kernels side by
/// side: `bpf-overhead compare`).
pub fn compare_with(
    doc: &Document,
    threshold: Threshold,
    correction: Correction,
    speed: Speed,
) -> Findings {
    let sides: Vec<(&MechanismResult, &MechanismResult)> = doc
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .filter_map(|a| Some((a, a.side_b.as_deref()?)))
        .collect();
    // The pairs of every mechanism with two measured sides, and their p.
    let summed: Vec<Option<Paired>> = sides
        .iter()
        .map(|(a, b)| match (b.status, judged_pairs(a, speed)) {
            (Status::Ok, Some(pairs)) => paired(&pairs),
            _ => None,
        })
        .collect();
    let raw: Vec<f64> = summed.iter().flatten().map(|p| p.p_value).collect();
    let mut tested = match correction {
        Correction::None => raw.clone(),
        Correction::Holm => holm(&raw),
    }
    .into_iter();
    let comparisons = sides
        .iter()
        .zip(&summed)
        .map(|((a, b), p)| {
            let p = p.as_ref().map(|p| (p, tested.next().unwrap_or(1.0)));
            compared(doc, a, b, threshold.of_label(&a.trigger), p)
        })
        .collect();
    Findings {
        threshold,
        warnings: Vec::new(),
        comparisons,
    }
}

/// Under an instruction clock each side's overhead is one count, the
/// same in every run of the same build: B's against A's by the threshold
/// alone, as `cargo xtask vmtest --against --exact` judges two kernels.
/// Never inconclusive.
fn compare_counts(doc: &Document, threshold: f64) -> Findings {
    let comparisons = doc
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .filter_map(|a| Some(counted(a, a.side_b.as_deref()?, threshold)))
        .collect();
    Findings {
        threshold: Threshold::Fixed(threshold),
        warnings: Vec::new(),
        comparisons,
    }
}

fn counted(a: &MechanismResult, b: &MechanismResult, threshold: f64) -> Comparison {
    if let Some(c) = unmeasured(a, b) {
        return c;
    }
    let (Some(ca), Some(cb)) = (&a.overhead_ns, &b.overhead_ns) else {
        return Comparison::plain(
            &a.name,
            Verdict::Missing,
            "both sides ok but a count is missing".into(),
        );
    };
    let diff = cb.median - ca.median;
    let (change, verdict) = match judge_counts(ca.median, cb.median, threshold) {
        (c, ExactChange::Regressed) => (c, Verdict::Regressed),
        (c, ExactChange::Improved) => (c, Verdict::Improved),
        (c, ExactChange::Unchanged) => (c, Verdict::Unchanged),
    };
    Comparison {
        name: a.name.clone(),
        verdict,
        change: Some(change),
        diff_ns: Some(diff),
        p_value: None,
        detectable: None,
        detail: format!(
            "instructions per event over {} A {:+.1} B {:+.1} (B-A {diff:+.1}, {:+.2}%)",
            a.base,
            ca.median,
            cb.median,
            change * 100.0
        ),
        by_drift: false,
    }
}

/// A B side that was not measured: MISSING where it failed (the variant
/// broke the mechanism), not run where the kernel lacks what it needs.
fn unmeasured(a: &MechanismResult, b: &MechanismResult) -> Option<Comparison> {
    let why = || b.reason.as_deref().unwrap_or("no reason given");
    let (verdict, detail) = match b.status {
        Status::Failed => (Verdict::Missing, format!("A measured, B failed: {}", why())),
        Status::Skipped => (Verdict::NotRun, format!("B skipped: {}", why())),
        Status::Ok => return None,
    };
    Some(Comparison::plain(&a.name, verdict, detail))
}

fn compared(
    doc: &Document,
    a: &MechanismResult,
    b: &MechanismResult,
    threshold: f64,
    p: Option<(&Paired, f64)>,
) -> Comparison {
    let plain = |verdict, detail: String| Comparison::plain(&a.name, verdict, detail);
    if let Some(c) = unmeasured(a, b) {
        return c;
    }
    let (Some(oa), Some(ob), Some(pairs)) = (&a.overhead_ns, &b.overhead_ns, &a.pairs_ns) else {
        return plain(
            Verdict::Missing,
            "both sides ok but a figure is missing".into(),
        );
    };
    let base_ns = doc
        .mechanism(&a.base)
        .and_then(|m| m.ns_per_event)
        .unwrap_or(0.0);
    let reference = oa.median.abs().max(FLOOR_OF_BASE * base_ns);
    let Some((summed, p_value)) = p else {
        return plain(Verdict::Inconclusive, "no pairs to judge".into());
    };
    let j = rule(summed, p_value, reference, threshold);
    let sees = Comparison::sees(&j, "pair");
    Comparison::judged(
        &a.name,
        &j,
        format!(
            "overhead over {} A {:+.1} B {:+.1} ns/event (B-A {:+.1} ns, {:+.1}%, p={:.3}{sees}, {} pairs)",
            a.base,
            oa.median,
            ob.median,
            j.diff_ns,
            j.change * 100.0,
            j.p_value,
            pairs.samples.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_ten_percent_is_regressed_and_noise_is_unchanged() {
        // A's cost 50 ns; B 5 ns more in every round, with 1 ns of noise.
        let worse = [5.2, 4.8, 5.5, 4.6, 5.1, 4.9, 5.3];
        assert_eq!(
            judge(&worse, 50.0, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Regressed
        );
        let same = [0.4, -0.3, 0.2, -0.5, 0.1, 0.3, -0.2];
        assert_eq!(
            judge(&same, 50.0, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Unchanged
        );
        let better: Vec<f64> = worse.iter().map(|d| -d).collect();
        assert_eq!(
            judge(&better, 50.0, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Improved
        );
    }

    /// Beside a CPU hog: significant and beyond the threshold, but smaller
    /// than what pairs this wide can tell from noise; the same pairs
    /// without their outlier are regressed.
    #[test]
    fn a_change_within_its_pairs_spread_is_unsure_not_regressed() {
        let wide = [-0.48, 5.01, 3.15, 8.06, 2.77, 3.84, 19.36];
        let j = judge(&wide, 52.27, IN_RUN_THRESHOLD).unwrap();
        assert!(j.change > IN_RUN_THRESHOLD && j.p_value <= ALPHA, "{j:?}");
        assert!(j.detectable > j.change, "{j:?}");
        assert_eq!(j.verdict, Verdict::Inconclusive);
        let steady = [5.01, 3.15, 8.06, 2.77, 3.84, 5.5, 4.2];
        assert_eq!(
            judge(&steady, 52.27, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Regressed
        );
    }

    /// Beside apt-get: every pair positive, the estimate beyond the
    /// threshold and beyond `sees`, p = 0.001, but the interval reaching
    /// well below the threshold: not sure of a change beyond it.
    #[test]
    fn all_positive_pairs_must_be_sure_of_the_threshold() {
        let pairs = [0.3, 0.5, 0.8, 1.0, 1.4, 1.6, 2.0, 2.5, 3.0, 4.0];
        let j = judge(&pairs, 22.7, IN_RUN_THRESHOLD).unwrap();
        assert!(
            j.change > IN_RUN_THRESHOLD && j.change > j.detectable && j.p_value <= ALPHA,
            "{j:?}"
        );
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        // The same spread around a change twice as large is sure of it.
        let twice: Vec<f64> = pairs.iter().map(|d| d + 1.6).collect();
        assert_eq!(
            judge(&twice, 22.7, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Regressed
        );
    }

    #[test]
    fn wide_pairs_are_unsure_not_unchanged() {
        let wide = [6.0, -5.0, 4.0, -6.0, 5.0, -4.0, 1.0];
        assert_eq!(
            judge(&wide, 50.0, IN_RUN_THRESHOLD).unwrap().verdict,
            Verdict::Inconclusive
        );
        // Beyond the threshold but in too few rounds to be significant.
        assert_eq!(
            judge(&[6.0, 7.0, 6.5], 50.0, IN_RUN_THRESHOLD)
                .unwrap()
                .verdict,
            Verdict::Inconclusive
        );
    }

    /// raw_tp's counts: A `a`, B `b` instructions per event over base.
    fn counts(a: f64, b: f64) -> Document {
        use crate::stats::Summary;
        let mut doc = crate::document::fixtures::document();
        doc.unit = crate::document::Unit::Instructions;
        doc.mechanisms.retain(|m| m.name == "raw_tp" || m.is_base());
        let m = doc.mechanism_mut("raw_tp").unwrap();
        m.overhead_ns = Summary::of(&[a]);
        let mut b_side = m.clone();
        b_side.overhead_ns = Summary::of(&[b]);
        m.side_b = Some(Box::new(b_side));
        doc
    }

    #[test]
    fn counts_are_judged_by_the_threshold_alone_never_unsure() {
        let verdict = |a, b| compare(&counts(a, b), EXACT_THRESHOLD).comparisons[0].verdict;
        assert_eq!(verdict(121.0, 122.3), Verdict::Regressed);
        assert_eq!(verdict(121.0, 122.2), Verdict::Unchanged);
        assert_eq!(verdict(121.0, 121.0), Verdict::Unchanged);
        assert_eq!(verdict(121.0, 119.7), Verdict::Improved);
        let c = &compare(&counts(100.0, 102.0), EXACT_THRESHOLD).comparisons[0];
        assert_eq!(
            (c.change, c.diff_ns, c.p_value),
            (Some(0.02), Some(2.0), None)
        );
    }

    #[test]
    fn holm_multiplies_the_smallest_p_by_the_count_and_keeps_the_order() {
        let adjusted = holm(&[0.04, 0.01, 0.03, 0.5]);
        let want = [0.09, 0.04, 0.09, 0.5];
        for (a, w) in adjusted.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adjusted:?}");
        }
        assert_eq!(holm(&[0.6, 0.9]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }
}
