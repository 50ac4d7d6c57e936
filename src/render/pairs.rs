//! The paired comparisons side by side, as `veristat -C` puts two
//! builds: B against A inside one run (`--against`), and two runs made at
//! the same time (`bpf-overhead compare`, kernels in a duet).

use std::fmt::Write as _;

use super::{aligned, conclusion};
use crate::document::{Document, MechanismResult};
use crate::gate::{Comparison, Findings, Warning, FLOOR_OF_BASE};
use crate::measure::Mechanism;

/// An in-run comparison (`--against`) side by side, as `veristat -C`
/// puts two builds: per mechanism A's and B's overhead over base, the
/// difference of the pairs, what they could see, and the verdict.
pub fn against_report(doc: &Document, report: &Findings, variant: &str) -> String {
    if doc.exact() {
        let head = format!(
            "against: B ({variant}) against A (this run's settings), counted under an \
             instruction clock: a regression is B's instructions per event over base more than \
             A's by more than {}; improved, fewer by more; else unchanged (counts do not \
             drift: no statistics, never UNSURE)",
            report.threshold.describe()
        );
        return paired_report(doc, report, &head, "against", "");
    }
    let head = format!(
        "against: B ({variant}) against A (this run's settings), in the same rounds: a \
         regression is B's overhead over base higher than A's by more than {}, sure from the \
         rounds' pairs (their 90% interval above it, signed-rank p <= 0.05; what the machine's \
         speed explains taken out); unchanged, when the interval lies within the threshold; \
         else UNSURE",
        report.threshold.describe()
    );
    // The kernel-loop trigger is the built-ins': no help to an object.
    let builtin = report
        .comparisons
        .iter()
        .any(|c| Mechanism::by_name(&c.name).is_none_or(|m| m.object().is_none()));
    let advice = if builtin {
        "rerun on a quieter machine or with a longer --budget, or measure the kernel-loop \
         trigger (-m raw_tp-loop,tp-loop,...), whose overheads stand out of the noise"
    } else {
        "rerun on a quieter machine, or with a longer --budget or more --repeat"
    };
    paired_report(doc, report, &head, "against", advice)
}

/// Two runs made at the same time (`bpf-overhead compare`, a duet of two
/// kernels), shaped as an in-run comparison by
/// [`crate::gate::duet::pair_sessions`]: the same table as
/// [`against_report`], with `a` and `b` naming the sides.
pub fn duet_report(doc: &Document, report: &Findings, a: &str, b: &str) -> String {
    let mut head = format!(
        "compare: B ({b}) against A ({a}), measured at the same time, round by round: a \
         regression is B's overhead over base higher than A's by more than {}, sure from the \
         rounds' pairs (their 90% interval above it, signed-rank p <= 0.05 Holm-corrected over \
         the {} mechanisms); unchanged, when the interval lies within the threshold; else \
         UNSURE",
        report.threshold.describe(),
        report.comparisons.len()
    );
    for w in &report.warnings {
        let _ = write!(head, "\ncompare: warning: {}", duet_warning(w));
    }
    paired_report(
        doc,
        report,
        &head,
        "compare",
        "more sessions or rounds, or the kernel-loop trigger (-m raw_tp-loop,tp-loop,...), \
         whose overheads stand out of the noise",
    )
}

/// A warning of a kernel-against-kernel comparison: the gate's words,
/// which name the sides as a baseline and this run, with A and B.
pub fn duet_warning(w: &Warning) -> String {
    super::warning(w)
        .replace("the baseline", "A")
        .replace("this run", "B")
}

/// A paired comparison's table under `head`, and its conclusion.
fn paired_report(doc: &Document, report: &Findings, head: &str, who: &str, advice: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{head}");
    let unit = if doc.exact() { "ins" } else { "ns" };
    let mut rows = vec![[
        "mechanism",
        &format!("A {unit}"),
        &format!("B {unit}"),
        &format!("B-A {unit}"),
        "B-A",
        "p",
        "sees",
        "pairs",
        "verdict",
    ]
    .map(String::from)
    .to_vec()];
    let mut notes = Vec::new();
    let mut floored = false;
    for c in &report.comparisons {
        match paired_row(doc, c) {
            Some((row, of_floor)) => {
                floored |= of_floor;
                rows.push(row);
            }
            None => notes.push(format!(
                "  {:<9} {}  {}",
                c.verdict.label(),
                c.name,
                c.detail
            )),
        }
    }
    for line in aligned(&rows) {
        let _ = writeln!(out, "{line}");
    }
    if floored {
        let _ = writeln!(
            out,
            "* of {:.0}% of the base's time per event, not of A's overhead, which is less: \
             a share of a cost near zero would mean nothing",
            FLOOR_OF_BASE * 100.0
        );
    }
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    out.push_str(&conclusion(who, report, advice));
    out
}

/// `c`'s row of the table, and whether its share is of the floor rather
/// than of A's overhead; `None` where the gate did not compare it (its
/// note under the table says why).
fn paired_row(doc: &Document, c: &Comparison) -> Option<(Vec<String>, bool)> {
    let (Some(diff), Some(change)) = (c.diff_ns, c.change) else {
        return None;
    };
    let a = doc.mechanism(&c.name);
    let b = a.and_then(|a| a.side_b.as_deref());
    let median = |m: Option<&MechanismResult>| {
        m.and_then(|m| m.overhead_ns.as_ref())
            .map_or("-".into(), |s| format!("{:+.1}", s.median))
    };
    let floored = of_floor(doc, a);
    let mark = if floored { "*" } else { "" };
    let row = vec![
        c.name.clone(),
        median(a),
        median(b),
        format!("{diff:+.1}"),
        format!("{:+.1}%{mark}", change * 100.0),
        c.p_value.map_or("-".into(), |p| format!("{p:.3}")),
        c.detectable
            .map_or("-".into(), |d| format!("±{:.1}%", d * 100.0)),
        a.and_then(|a| a.pairs_ns.as_ref())
            .map_or("-".into(), |p| p.samples.len().to_string()),
        c.verdict.label().into(),
    ];
    Some((row, floored))
}

/// Whether a change is a share of the floor, as the gate judges it, not
/// of A's own cost, which is less: a share of a near-zero cost would mean
/// nothing.
fn of_floor(doc: &Document, a: Option<&MechanismResult>) -> bool {
    let base_ns = a
        .and_then(|a| doc.mechanism(&a.base))
        .and_then(|m| m.ns_per_event)
        .unwrap_or(0.0);
    let a_ns = a
        .and_then(|m| m.overhead_ns.as_ref())
        .map_or(0.0, |s| s.median.abs());
    // Counts are judged against A's own, however small.
    !doc.exact() && a_ns < FLOOR_OF_BASE * base_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    /// raw_tp over base, A costing `a_ns` and B one ns more in each round.
    fn against(a_ns: f64) -> Document {
        let mut doc = crate::document::fixtures::document();
        doc.mechanisms.retain(|m| m.name == "raw_tp" || m.is_base());
        doc.variant = Some(crate::document::Variant::ProgWork(1));
        let m = doc.mechanism_mut("raw_tp").unwrap();
        let rounds = [a_ns - 0.1, a_ns, a_ns + 0.1, a_ns, a_ns - 0.1, a_ns + 0.1];
        m.overhead_ns = Summary::of(&rounds);
        let mut b = m.clone();
        b.overhead_ns = Summary::of(&rounds.map(|v| v + 1.0));
        m.pairs_ns = Summary::of(&[1.0, 1.1, 0.9, 1.0, 1.05, 0.95]);
        m.side_b = Some(Box::new(b));
        doc
    }

    #[test]
    fn counts_side_by_side_are_instructions_and_never_unsure() {
        let mut doc = against(0.3);
        doc.unit = crate::document::Unit::Instructions;
        let findings = crate::gate::against::compare(&doc, 0.01);
        let text = against_report(&doc, &findings, "x");
        assert!(
            text.contains("A ins") && text.contains("never UNSURE"),
            "{text}"
        );
        assert!(!text.contains('*'), "{text}");
    }

    /// A share of an overhead near zero is of the floor the gate judges
    /// against, and says so; of a real overhead it is plain.
    #[test]
    fn a_share_of_the_floor_is_marked() {
        let near_zero = against(0.3);
        let text = against_report(
            &near_zero,
            &crate::gate::against::compare(&near_zero, 0.05),
            "x",
        );
        assert!(text.contains("%*"), "{text}");
        assert!(
            text.contains("* of 5% of the base's time per event"),
            "{text}"
        );
        let costly = against(500.0);
        let text = against_report(&costly, &crate::gate::against::compare(&costly, 0.05), "x");
        assert!(!text.contains('*'), "{text}");
    }
}
