//! KTAP, for kselftest's runner and kernel CI: the whole result as one
//! document, and the line helpers the suite's own KTAP uses.

use std::fmt::Write as _;

use super::{attach_line, exact_figures_line, figures_line, heading, one_line};
use crate::document::{Document, Status};
use crate::gate::{Findings, Verdict};

/// What a KTAP test result line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KtapResult<'a> {
    /// `ok N name`
    Pass,
    /// `ok N name # SKIP reason`: what the kernel lacks.
    Skip(&'a str),
    /// `not ok N name`
    Fail,
}

/// The start of a KTAP document: the version line and, right after it as
/// the spec (Documentation/dev-tools/ktap.rst) and older parsers want it,
/// the plan. A parser that knows the plan catches output cut short.
pub fn ktap_header(tests: usize) -> String {
    format!("KTAP version 1\n1..{tests}\n")
}

/// One KTAP result line, without its newline: `ok 3 raw_tp`,
/// `ok 2 kprobe # SKIP kernel has no kprobes`, `not ok 4 tp`. The
/// description is the name with any `#` (which would start a directive)
/// replaced; a reason is kept on one line.
pub fn ktap_result(n: usize, name: &str, result: KtapResult) -> String {
    let name = name.replace('#', "_");
    match result {
        KtapResult::Pass => format!("ok {n} {name}"),
        KtapResult::Skip(reason) => format!("ok {n} {name} # SKIP {}", one_line(reason)),
        KtapResult::Fail => format!("not ok {n} {name}"),
    }
}

/// A KTAP diagnostic line, without its newline: `# text` on one line.
pub fn ktap_diagnostic(text: &str) -> String {
    format!("# {}", one_line(text))
}

/// KTAP version 1, as kselftest runners read it: the version line, the
/// plan, what was measured where as `#` diagnostics, then one test per
/// mechanism, `ok N name`, `ok N name # SKIP reason` for what this kernel
/// lacks, `not ok N name` for a failure — and, with a gate report, for a
/// regression — with the figures as `#` diagnostic lines, and kselftest's
/// `# Totals:` line.
pub fn ktap(doc: &Document, gate: Option<&Findings>) -> String {
    let mut out = ktap_header(doc.mechanisms.len());
    for line in heading(doc) {
        let _ = writeln!(out, "{}", ktap_diagnostic(&line));
    }
    let (mut pass, mut fail, mut skip) = (0, 0, 0);
    for (i, m) in doc.mechanisms.iter().enumerate() {
        let n = i + 1;
        let line = if doc.exact() {
            exact_figures_line(m)
        } else {
            figures_line(m)
        };
        if let Some(line) = line {
            let _ = writeln!(out, "# {line}");
        }
        if let Some(a) = &m.attach {
            let _ = writeln!(out, "# {}", attach_line(&m.name, a));
        }
        let gated = gate.and_then(|g| g.find(&m.name));
        if let Some(c) = gated.filter(|c| c.verdict != Verdict::NotRun) {
            let _ = writeln!(out, "# gate {}: {}", m.name, one_line(&c.detail));
        }
        let regressed = gated.is_some_and(|c| c.verdict.is_regression());
        let result = match m.status {
            Status::Ok if !regressed => {
                pass += 1;
                KtapResult::Pass
            }
            Status::Skipped if !regressed => {
                skip += 1;
                KtapResult::Skip(m.reason.as_deref().unwrap_or("not supported"))
            }
            _ => {
                fail += 1;
                if let Some(reason) = &m.reason {
                    let _ = writeln!(out, "# {}: {}", m.name, one_line(reason));
                }
                if regressed {
                    let _ = writeln!(out, "# {}: regression against the baseline", m.name);
                }
                KtapResult::Fail
            }
        };
        let _ = writeln!(out, "{}", ktap_result(n, &m.name, result));
    }
    let _ = writeln!(
        out,
        "# Totals: pass:{pass} fail:{fail} xfail:0 xpass:0 skip:{skip} error:0"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;
    use crate::gate::{compare, Threshold, DEFAULT_THRESHOLD};
    #[test]
    fn ktap_numbers_tests_and_skips() {
        let text = ktap(&document(), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "KTAP version 1");
        // The plan follows the version line (ktap.rst; a 6.1-era
        // kunit_parser loses a later plan), the heading comes after it.
        assert_eq!(lines[1], "1..4", "{text}");
        assert!(
            lines[2].starts_with("# bpf-overhead 0.1.0: kernel 6.18.0"),
            "{text}"
        );
        assert!(lines.contains(&"ok 1 base"));
        assert!(lines.contains(&"ok 2 kprobe # SKIP kernel has no kprobes"));
        assert!(lines.contains(&"ok 3 raw_tp"));
        assert!(lines.contains(&"ok 4 tp"));
        assert_eq!(
            *lines.last().unwrap(),
            "# Totals: pass:3 fail:0 xfail:0 xpass:0 skip:1 error:0"
        );
        // Every line is a KTAP line: a plan, a result or a diagnostic.
        for line in &lines[1..] {
            assert!(
                line.starts_with("# ") || line.starts_with("ok ") || line.starts_with("1.."),
                "{line}"
            );
        }
        assert!(
            text.contains("# raw_tp: 945K events per sec (median of 3"),
            "{text}"
        );
    }

    #[test]
    fn ktap_result_lines() {
        assert_eq!(ktap_result(3, "raw_tp", KtapResult::Pass), "ok 3 raw_tp");
        assert_eq!(ktap_result(4, "tp", KtapResult::Fail), "not ok 4 tp");
        assert_eq!(
            ktap_result(2, "kprobe", KtapResult::Skip("no\nkprobes  here")),
            "ok 2 kprobe # SKIP no kprobes here"
        );
        // A '#' in the description would start a directive.
        assert_eq!(ktap_result(1, "a#b", KtapResult::Pass), "ok 1 a_b");
        assert_eq!(ktap_header(18), "KTAP version 1\n1..18\n");
        assert_eq!(ktap_diagnostic("two\nlines"), "# two lines");
    }

    #[test]
    fn ktap_marks_regressions_not_ok() {
        let mut baseline = document();
        let raw_tp = baseline.mechanism_mut("raw_tp").unwrap();
        let overhead = raw_tp.overhead_ns.as_mut().unwrap();
        *overhead = crate::stats::Summary::of(&[50.0, 55.0, 45.0]).unwrap();
        raw_tp.overhead_steps = crate::stats::Summary::of(&[25.0, 27.5, 22.5]);
        let findings = compare(&baseline, &document(), Threshold::Fixed(DEFAULT_THRESHOLD));
        let text = ktap(&document(), Some(&findings));
        assert!(text.contains("\nnot ok 3 raw_tp\n"), "{text}");
        assert!(
            text.contains("# gate raw_tp: overhead over base +50.0 -> +100.0 ns/event"),
            "{text}"
        );
        assert!(text.contains("\nok 4 tp\n"), "{text}");
        assert!(text.ends_with("# Totals: pass:2 fail:1 xfail:0 xpass:0 skip:1 error:0\n"));
    }
}
