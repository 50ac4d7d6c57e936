//! SQUAD submissions (LKFT's dashboard) of one or more results: per
//! result one line of JSON, `{"metrics": ..., "metadata": ...}`, the two
//! form fields of SQUAD's `/api/submit/<team>/<project>/<build>/<env>`,
//! and `tests`, each mechanism's pass, skip or fail (fail too when the
//! gate found it REGRESSED). `metrics` maps `suite/name` to `{"value",
//! "unit"}`, the value a number or an array of numbers (SQUAD shows an
//! array's mean and range): `bpf_overhead/raw_tp.overhead` is the
//! overhead's per-round values, or the one count of an exact run.
//! Printed; never sent.

use serde_json::{json, Map, Value};

use super::metrics::{figures, named, EXACT_RATE_UNIT, RATE_UNIT, SUITE};
use crate::document::{Document, Status};
use crate::gate::Findings;

/// One line per document, each a submission's `metrics` and `metadata`.
pub fn squad(docs: &[&Document]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str(&submission(doc, None).to_string());
        out.push('\n');
    }
    out
}

/// One result's submission line, with the gate's findings if it was judged.
pub fn judged(doc: &Document, findings: Option<&Findings>) -> String {
    submission(doc, findings).to_string() + "\n"
}

/// One result's submission: its figures as `metrics`, each mechanism's
/// verdict as `tests`, and as `metadata` what they were measured on.
pub fn submission(doc: &Document, findings: Option<&Findings>) -> Value {
    json!({
        "metrics": metrics(doc),
        "tests": tests(doc, findings),
        "metadata": metadata(doc),
    })
}

/// `{"bpf_overhead/<mechanism>": "pass" | "skip" | "fail"}`: fail for a
/// mechanism that failed or that the gate found REGRESSED or MISSING.
fn tests(doc: &Document, findings: Option<&Findings>) -> Map<String, Value> {
    let regressed = |name: &str| {
        findings.is_some_and(|f| {
            f.comparisons
                .iter()
                .any(|c| c.name == name && c.verdict.is_regression())
        })
    };
    named(doc)
        .into_iter()
        .map(|(name, m)| {
            let result = match m.status {
                _ if regressed(&m.name) => "fail",
                Status::Ok => "pass",
                Status::Skipped => "skip",
                Status::Failed => "fail",
            };
            (format!("{SUITE}/{name}"), json!(result))
        })
        .collect()
}

/// `{"bpf_overhead/<mechanism>.<figure>": {"value": number | [numbers],
/// "unit"}}`: an array
/// where a figure is the median of several values, in the order measured.
pub fn metrics(doc: &Document) -> Map<String, Value> {
    let mut metrics = Map::new();
    for (name, m) in named(doc) {
        for figure in figures(doc, m) {
            let values = figure.values();
            let value = match values.as_slice() {
                [one] => json!({ "value": one, "unit": figure.unit }),
                many => json!({ "value": many, "unit": figure.unit }),
            };
            metrics.insert(format!("{SUITE}/{name}.{}", figure.metric), value);
        }
    }
    metrics
}

/// What SQUAD keeps beside the metrics, flat: the kernel, the machine, the
/// emulator and the units; nothing that is null.
fn metadata(doc: &Document) -> Map<String, Value> {
    let time = doc.unit_word();
    let rate = if doc.exact() {
        EXACT_RATE_UNIT
    } else {
        RATE_UNIT
    };
    let mut meta = Map::new();
    for (key, value) in [
        ("kernel_release", json!(doc.kernel_release)),
        ("arch", json!(doc.arch)),
        ("cpu_model", json!(doc.cpu_model)),
        ("cpu", json!(doc.cpu)),
        ("unit", json!(doc.unit)),
        ("overhead_unit", json!(format!("{time} per event"))),
        ("rate_unit", json!(rate)),
        ("prog_ns_unit", json!(format!("{time} per program run"))),
        ("timestamp", json!(doc.timestamp)),
        ("tool_version", json!(doc.tool_version)),
        ("iterations", json!(doc.iterations)),
        ("repeats", json!(doc.repeats)),
        ("prog_work", json!(doc.prog_work)),
    ] {
        meta.insert(key.into(), value);
    }
    if let Some(e) = &doc.emulated {
        meta.insert("emulated".into(), json!(e));
    }
    if let Some(e) = &doc.emulator {
        meta.insert("emulator".into(), json!(e));
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    #[test]
    fn metrics_are_suite_slash_name_to_a_number_or_numbers() {
        let doc = document();
        let m = metrics(&doc);
        assert_eq!(
            m["bpf_overhead/raw_tp.overhead"],
            json!({ "value": [100.0, 101.0, 99.0], "unit": "ns" })
        );
        assert_eq!(m["bpf_overhead/raw_tp.prog_ns"]["value"], json!(20.5));
        assert_eq!(
            m["bpf_overhead/base.rate"],
            json!({ "value": [1000.0, 1100.0, 1050.0], "unit": "K events/s" })
        );
        assert!(!m.contains_key("bpf_overhead/kprobe.overhead"), "{m:?}");
        assert!(!m.contains_key("bpf_overhead/base.overhead"), "{m:?}");
    }

    /// A measured mechanism the gate found REGRESSED is a failed test.
    #[test]
    fn a_regression_is_a_failed_test() {
        let doc = document();
        let findings = super::super::raw_tp_regressed();
        let t = tests(&doc, Some(&findings));
        assert_eq!(
            (&t["bpf_overhead/raw_tp"], &t["bpf_overhead/tp"]),
            (&json!("fail"), &json!("pass"))
        );
    }

    #[test]
    fn a_result_is_one_line_with_its_metadata() {
        let mut doc = document();
        doc.emulated = Some("tcg".into());
        let text = squad(&[&doc, &document()]);
        assert_eq!(text.lines().count(), 2, "{text}");
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["metadata"]["kernel_release"], "6.18.0");
        assert_eq!(first["metadata"]["cpu_model"], "Test CPU");
        assert_eq!(first["metadata"]["emulated"], "tcg");
        assert_eq!(first["metadata"]["overhead_unit"], "ns per event");
        assert!(!text.contains("null"), "{text}");
    }
}
