//! Every reader of result documents (`report`, `compare`, `--baseline`
//! with one file or a set) reads through the same checks: a doctored
//! document is refused by each, with one line naming the file and the
//! field, and exit 2.

use std::fs;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::cli::*;

/// Per-round figures, all `v`.
fn constant(v: f64) -> Value {
    serde_json::json!({"samples": [v, v, v], "median": v, "mean": v, "stddev": 0.0,
                       "min": v, "max": v})
}

type Edit = fn(&mut Value);

/// The doctored documents of issue 63: what each changes, and what the
/// refusal must say. Mechanism 0 is the base, 2 raw_tp.
const DOCTORED: [(&str, Edit); 12] = [
    ("(base): ns_per_event is -1", |d| {
        d["mechanisms"][0]["ns_per_event"] = (-1.0).into()
    }),
    ("(base): events_per_run is 18446744073709551615", |d| {
        d["mechanisms"][0]["events_per_run"] = u64::MAX.into()
    }),
    ("(raw_tp): k_events_per_sec.samples[0] is 0", |d| {
        d["mechanisms"][2]["k_events_per_sec"] = constant(0.0)
    }),
    ("(raw_tp): overhead_ns.min is 200", |d| {
        d["mechanisms"][2]["overhead_ns"]["min"] = 200.0.into()
    }),
    ("(raw_tp): speed_ns.samples[0] is -1.5", |d| {
        d["mechanisms"][2]["speed_ns"] = constant(-1.5)
    }),
    (
        "(raw_tp): ratio_to_base.median is 0.5, but its samples give 0.9",
        |d| d["mechanisms"][2]["ratio_to_base"]["median"] = 0.5.into(),
    ),
    (
        "unit is \"instructions\", but a run emulated null counts ns",
        |d| d["unit"] = "instructions".into(),
    ),
    ("run_secs is 1e300", |d| d["run_secs"] = 1e300.into()),
    ("timestamp \"9999-12-31T23:59:59Z\" is in the future", |d| {
        d["timestamp"] = "9999-12-31T23:59:59Z".into()
    }),
    ("iterations 0 and repeats 3", |d| d["iterations"] = 0.into()),
    // The two the issue implies: a negative duration, a share over 100%.
    ("cpu_wait_s is -5", |d| d["cpu_wait_s"] = (-5.0).into()),
    ("context.steal_pct is 250", |d| {
        d["context"]["steal_pct"] = 250.0.into()
    }),
];

/// Refused with exit 2 and one line naming `file` and saying `expected`.
#[track_caller]
fn one_line(out: &Output, file: &str, expected: &str, what: &str) {
    assert_refused(out, expected, what);
    assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
    assert!(out.stderr.contains(file), "{what}: {}", out.stderr);
    assert!(out.stdout.is_empty(), "{what}: {}", out.stdout);
}

#[test]
fn doctored_documents_are_refused_by_every_reader() {
    let good = TempFile::new("doc-good.json");
    fs::write(&good.0, fixture().to_string()).unwrap();
    let bad = TempFile::new("doc-bad.json");
    let set = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(20);
    for (expected, edit) in DOCTORED {
        let mut doc = fixture();
        edit(&mut doc);
        fs::write(&bad.0, doc.to_string()).unwrap();
        let within = |args: &[&str]| output_within(command(args), limit);
        let out = within(&["report", good.path(), bad.path()]);
        one_line(&out, bad.path(), expected, &format!("report: {expected}"));
        let out = within(&["compare", good.path(), "--against", bad.path()]);
        one_line(&out, bad.path(), expected, &format!("compare: {expected}"));
        let out = within(&["compare", bad.path(), "--against", good.path()]);
        one_line(
            &out,
            bad.path(),
            expected,
            &format!("compare A: {expected}"),
        );
        // refused_early checks the one line and exit 2 itself.
        refused_early(&["--baseline", bad.path()], expected);
        // A set with a good run and this one.
        fs::write(set.path().join("a.json"), fixture().to_string()).unwrap();
        let in_set = set.path().join("b.json");
        fs::write(&in_set, doc.to_string()).unwrap();
        refused_early(&["--baseline", set.path().to_str().unwrap()], expected);
        let named = format!("{}: ", in_set.display());
        refused_early(&["--baseline", set.path().to_str().unwrap()], &named);
    }
}

/// The fixture itself reads everywhere: what the doctored ones are
/// refused for is their edit.
#[test]
fn the_undoctored_document_is_read() {
    let good = TempFile::new("doc-undoctored.json");
    fs::write(&good.0, fixture().to_string()).unwrap();
    run_ok(&["report", good.path()]);
    let out = run(&["compare", good.path(), "--against", good.path()]);
    assert_ne!(out.code, 2, "{}", out.stderr);
}
