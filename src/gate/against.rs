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
use crate::paired::paired;

/// What B must cost more than A, as a share of A's own cost, to be a
/// regression, on every trigger.
pub const IN_RUN_THRESHOLD: f64 = crate::pipeline::Precision::IN_RUN.other;

/// The gate's rule on per-round differences B - A in ns, against
/// `reference_ns` (A's own cost, or the floor): **regressed** beyond
/// `threshold` when the signed-rank test says so at p ≤ [`ALPHA`],
/// **improved** symmetrically, **unchanged** when the 90% interval lies
/// within ± `threshold`, else **inconclusive**. `None` without pairs.
pub fn judge(pairs: &[f64], reference_ns: f64, threshold: f64) -> Option<Judgement> {
    let p = paired(pairs)?;
    let reference = reference_ns.abs().max(f64::MIN_POSITIVE);
    let change = p.estimate / reference;
    let significant = p.p_value <= ALPHA;
    let verdict = if change > threshold && significant {
        Verdict::Regressed
    } else if change < -threshold && significant {
        Verdict::Improved
    } else if p.low / reference >= -threshold && p.high / reference <= threshold {
        Verdict::Unchanged
    } else {
        Verdict::Inconclusive
    };
    Some(Judgement {
        verdict,
        change,
        diff_ns: p.estimate,
        p_value: p.p_value,
        detectable: p.detectable / reference,
    })
}

/// Judges every mechanism's B side against its A side in `doc`, a run
/// made with `--against`.
pub fn compare(doc: &Document, threshold: f64) -> Findings {
    let comparisons = doc
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .filter_map(|a| Some(compared(doc, a, a.against.as_deref()?, threshold)))
        .collect();
    Findings {
        threshold: Threshold::Fixed(threshold),
        warnings: Vec::new(),
        comparisons,
    }
}

fn compared(
    doc: &Document,
    a: &MechanismResult,
    b: &MechanismResult,
    threshold: f64,
) -> Comparison {
    let plain = |verdict, detail: String| Comparison::plain(&a.name, verdict, detail);
    let why = || b.reason.as_deref().unwrap_or("no reason given").to_string();
    match b.status {
        Status::Failed => {
            return plain(Verdict::Missing, format!("A measured, B failed: {}", why()))
        }
        Status::Skipped => return plain(Verdict::NotRun, format!("B skipped: {}", why())),
        Status::Ok => {}
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
    let Some(j) = judge(&pairs.samples, reference, threshold) else {
        return plain(Verdict::Inconclusive, "no pairs to judge".into());
    };
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
}
