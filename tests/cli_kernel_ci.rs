//! Kernel CI's records (`--format kcidb`, `--format squad`, and `report`'s):
//! KCIDB's validated by the real schema (`kcidb-io`'s
//! `kcidb_io.schema.LATEST.validate`, run by the Python that
//! `BPF_OVERHEAD_KCIDB_PYTHON` names: `cargo xtask ci` gives its venv's),
//! SQUAD's held to the shape of its metrics, for a host run, an exact run
//! of one kernel (tests/fixtures/exact/6.12.json) and a report over
//! several kernels' exact runs (tests/fixtures/exact/). Bad input is one
//! line and exit 2.

use std::fs;
use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;
use serial_test::serial;

mod common;
use bpf_overhead::env_vars::KCIDB_PYTHON_ENV;
use common::cli::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/exact");

/// The exact results of several kernels: CI's five (`ci/kernels`' exact
/// lines), as `cargo xtask vmtest --exact` wrote them.
fn exact_files() -> Vec<String> {
    ["5.10", "6.1", "6.12", "7.3", "arm64-6.12"]
        .iter()
        .map(|k| format!("{FIXTURES}/{k}.json"))
        .collect()
}

/// Validates stdin with kcidb-io's latest schema; says which version.
const VALIDATE: &str = r#"
import json, sys
import kcidb_io
data = json.load(sys.stdin)
latest = kcidb_io.schema.LATEST
version = data.get("version", {})
if (version.get("major"), version.get("minor")) != (latest.major, latest.minor):
    sys.exit(f"records of version {version}, the schema's latest is {latest.major}.{latest.minor}")
latest.validate(data)
print(f"valid KCIDB v{latest.major}.{latest.minor}: {len(data.get('tests', []))} tests")
"#;

/// The Python with kcidb-io, or None (the validation skipped, saying so)
/// outside CI. In CI (`CI` set) its absence fails.
fn validator() -> Option<String> {
    match std::env::var(KCIDB_PYTHON_ENV) {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var_os("CI").is_some() => panic!(
            "{KCIDB_PYTHON_ENV} is not set: CI validates the KCIDB records \
             (cargo xtask ci sets it to its venv's Python, which has kcidb-io)"
        ),
        _ => {
            eprintln!(
                "not validated: {KCIDB_PYTHON_ENV} names no Python with kcidb-io \
                 (cargo xtask ci sets it)"
            );
            None
        }
    }
}

/// kcidb-io's verdict on `records`: Ok with its line, or Err with why.
fn validate(python: &str, records: &str) -> Result<String, String> {
    let mut child = Command::new(python)
        .args(["-c", VALIDATE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(records.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(said)
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(why.lines().last().unwrap_or_default().to_string())
    }
}

/// Records the schema accepts: checked when a validator is at hand.
#[track_caller]
fn assert_valid(records: &str) {
    if let Some(python) = validator() {
        match validate(&python, records) {
            Ok(said) => {
                assert!(said.starts_with("valid KCIDB v5.3"), "{said}");
                eprintln!("{said}");
            }
            Err(why) => panic!("kcidb-io refused the records: {why}\n{records}"),
        }
    }
}

/// The test at `path`.
#[track_caller]
fn test<'a>(records: &'a Value, path: &str) -> &'a Value {
    records["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == path)
        .unwrap_or_else(|| panic!("no test {path}"))
}

#[track_caller]
fn build_of<'a>(records: &'a Value, test: &Value) -> &'a Value {
    records["builds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == test["build_id"])
        .unwrap_or_else(|| panic!("no build {}", test["build_id"]))
}

/// SQUAD's metrics: `suite/name` to `{"value", "unit"}`, the value a
/// number or a non-empty array of numbers, the suite the collection's, the
/// name a mechanism's figure; its tests each mechanism's pass, skip or
/// fail; its metadata flat (strings and numbers: SQUAD shows them as they
/// are).
#[track_caller]
fn assert_squad_shape(line: &str) -> Value {
    let submission: Value = serde_json::from_str(line).unwrap();
    let keys: Vec<&String> = submission.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["metadata", "metrics", "tests"], "{line}");
    let metrics = submission["metrics"].as_object().unwrap();
    assert!(!metrics.is_empty(), "{line}");
    for (key, value) in metrics {
        let (suite, name) = key.rsplit_once('/').unwrap();
        assert_eq!(suite, "bpf_overhead", "{key}");
        let (mechanism, figure) = name.rsplit_once('.').unwrap();
        assert!(["overhead", "rate", "prog_ns"].contains(&figure), "{key}");
        assert!(
            !mechanism.is_empty()
                && mechanism
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{key}"
        );
        assert!(value["unit"].is_string(), "{key}: {value}");
        let numbers = match &value["value"] {
            Value::Number(_) => true,
            Value::Array(a) => !a.is_empty() && a.iter().all(Value::is_number),
            _ => false,
        };
        assert!(numbers, "{key}: {value}");
    }
    for (key, value) in submission["tests"].as_object().unwrap() {
        assert!(key.starts_with("bpf_overhead/"), "{key}");
        assert!(
            ["pass", "skip", "fail"].contains(&value.as_str().unwrap()),
            "{key}: {value}"
        );
    }
    for (key, value) in submission["metadata"].as_object().unwrap() {
        assert!(value.is_string() || value.is_number(), "{key}: {value}");
    }
    submission
}

/// One line on stderr, exit 2, nothing on stdout.
#[track_caller]
fn refused(args: &[&str], expected: &str) {
    let out = run(args);
    assert_refused(&out, expected, &format!("{args:?}"));
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
#[serial]
fn a_host_run_gives_valid_records() {
    let saved = TempFile::new("kernel-ci-host.json");
    let out = run_ok(&raw_tp_run(
        "2",
        &["--format", "kcidb", "--save", saved.path()],
    ));
    assert_valid(&out.stdout);
    let records: Value = serde_json::from_str(&out.stdout).unwrap();
    let doc: Value = serde_json::from_str(&fs::read_to_string(&saved.0).unwrap()).unwrap();
    let raw_tp = mechanism(&doc, "raw_tp");
    let overhead = test(&records, "bpf_overhead.raw_tp.overhead");
    assert_eq!(overhead["status"], "DONE");
    assert_eq!(overhead["number"]["unit"], "ns");
    assert_eq!(overhead["number"]["value"], raw_tp["overhead_ns"]["median"]);
    assert_eq!(
        overhead["misc"]["samples"],
        raw_tp["overhead_ns"]["samples"]
    );
    assert_eq!(test(&records, "bpf_overhead.raw_tp")["status"], "PASS");
    assert_eq!(
        test(&records, "bpf_overhead.base.rate")["number"]["value"],
        mechanism(&doc, "base")["k_events_per_sec"]["median"]
    );
    let build = build_of(&records, overhead);
    assert_eq!(build["misc"]["kernel_release"], doc["kernel_release"]);
    assert_eq!(
        overhead["environment"]["misc"]["cpu_model"],
        doc["cpu_model"]
    );
    // `report` over the saved run gives the same records.
    let report = run_ok(&["report", "--format", "kcidb", saved.path()]);
    assert_eq!(report.stdout, out.stdout);
    // SQUAD: the overhead's rounds, the program's one figure.
    let squad = run_ok(&["report", "--format", "squad", saved.path()]);
    assert_eq!(squad.stdout.lines().count(), 1, "{}", squad.stdout);
    let submission = assert_squad_shape(&squad.stdout);
    let metrics = &submission["metrics"];
    assert_eq!(
        metrics["bpf_overhead/raw_tp.overhead"]["value"],
        raw_tp["overhead_ns"]["samples"]
    );
    assert_eq!(
        metrics["bpf_overhead/raw_tp.prog_ns"]["value"],
        raw_tp["prog_ns_per_event"]
    );
    assert_eq!(
        submission["metadata"]["kernel_release"],
        doc["kernel_release"]
    );
    assert_eq!(submission["metadata"]["unit"], "ns");
}

/// A run the gate finds REGRESSED: that mechanism's test is FAIL, the
/// change in its comment, the records still valid, the build named by the
/// running kernel's build id where it has one. The regression is 10000
/// steps of work a hit against a run without (as tests/cli_gate.rs's
/// HEAVIER: far beyond the one-run baseline's ±100% allowance); where the
/// gate says it must not judge the runs (a disturbed CPU, conditions that
/// differ), it is UNSURE (exit 3) and the test PASS, as the run says.
#[test]
#[serial]
fn a_regression_is_a_failed_test_in_valid_records() {
    let plan = ["-m", "raw_tp", "--iterations", "20000", "--repeat", "5"];
    let plan = [&plan[..], &["--no-prog-stats"]].concat();
    let saved = TempFile::new("kernel-ci-cheaper.json");
    run_ok(&[&plan[..], &["--save", saved.path()]].concat());
    let heavier = ["--prog-work", "10000", "--baseline", saved.path()];
    let out = run(&[&plan[..], &heavier, &["--format", "kcidb"]].concat());
    assert_valid(&out.stdout);
    let records: Value = serde_json::from_str(&out.stdout).unwrap();
    let raw_tp = test(&records, "bpf_overhead.raw_tp");
    let unjudged = [" was disturbed: ", "conditions differ from the baseline's"]
        .iter()
        .any(|why| out.stderr.contains(why));
    if unjudged {
        assert_eq!(out.code, 3, "{}", out.stderr);
        assert_eq!(raw_tp["status"], "PASS", "{raw_tp:#}");
    } else {
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert_eq!(raw_tp["status"], "FAIL", "{raw_tp:#}");
        let comment = raw_tp["comment"].as_str().unwrap();
        assert!(comment.starts_with("raw_tp: REGRESSED: "), "{comment}");
    }
    let doc: Value = serde_json::from_str(&fs::read_to_string(&saved.0).unwrap()).unwrap();
    let build = build_of(&records, test(&records, "bpf_overhead.raw_tp.overhead"));
    if let Some(id) = doc["kernel_build_id"].as_str() {
        assert!(build["id"].as_str().unwrap().ends_with(id), "{build:#}");
        assert_eq!(build["misc"]["kernel_build_id"], id);
    }
}

/// The done-when of issue 54: raw_tp on 6.12, exact, counts its
/// instructions per event (121 in this run) with unit "instructions", its
/// build naming the kernel release.
#[test]
fn an_exact_run_counts_instructions() {
    let file = format!("{FIXTURES}/6.12.json");
    let doc: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["unit"], "instructions");
    let out = run_ok(&["report", "--format", "kcidb", &file]);
    assert_valid(&out.stdout);
    let records: Value = serde_json::from_str(&out.stdout).unwrap();
    let overhead = test(&records, "bpf_overhead.raw_tp.overhead");
    assert_eq!(overhead["status"], "DONE");
    assert_eq!(
        overhead["number"]["value"],
        mechanism(&doc, "raw_tp")["overhead_ns"]["median"]
    );
    assert_eq!(overhead["number"]["unit"], "instructions");
    let build = build_of(&records, overhead);
    assert_eq!(build["misc"]["kernel_release"], doc["kernel_release"]);
    assert_eq!(build["architecture"], "x86_64");
    let env = &overhead["environment"]["misc"];
    assert_eq!(env["emulator"], doc["emulator"]);
    assert_eq!(env["cpu_model"], doc["cpu_model"]);
    // No unit of time anywhere in them.
    for t in records["tests"].as_array().unwrap() {
        if let Some(unit) = t["number"]["unit"].as_str() {
            assert!(unit.contains("instructions"), "{t}");
        }
    }
    // A mechanism 6.12 lacks is skipped, with why.
    let session = test(&records, "bpf_overhead.uprobe_session-nop");
    assert_eq!(session["status"], "SKIP");
    let squad = run_ok(&["report", "--format", "squad", &file]);
    let submission = assert_squad_shape(&squad.stdout);
    assert_eq!(
        submission["metrics"]["bpf_overhead/raw_tp.overhead"]["value"],
        mechanism(&doc, "raw_tp")["overhead_ns"]["median"],
        "one count, not an array"
    );
    assert_eq!(submission["metadata"]["unit"], "instructions");
}

#[test]
fn a_report_over_several_kernels() {
    let files = exact_files();
    let args: Vec<&str> = ["report", "--format", "kcidb"]
        .into_iter()
        .chain(files.iter().map(String::as_str))
        .collect();
    let out = run_ok(&args);
    assert_valid(&out.stdout);
    let records: Value = serde_json::from_str(&out.stdout).unwrap();
    let docs: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_str(&fs::read_to_string(f).unwrap()).unwrap())
        .collect();
    let mut releases: Vec<&str> = docs
        .iter()
        .map(|d| d["kernel_release"].as_str().unwrap())
        .collect();
    releases.sort();
    releases.dedup();
    assert_eq!(
        records["checkouts"].as_array().unwrap().len(),
        releases.len()
    );
    assert_eq!(records["builds"].as_array().unwrap().len(), docs.len());
    let raw_tps: Vec<&Value> = records["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["path"] == "bpf_overhead.raw_tp.overhead")
        .collect();
    assert_eq!(raw_tps.len(), docs.len());
    for (t, doc) in raw_tps.iter().zip(&docs) {
        assert_eq!(
            build_of(&records, t)["misc"]["kernel_release"],
            doc["kernel_release"]
        );
        assert_eq!(
            t["number"]["value"],
            mechanism(doc, "raw_tp")["overhead_ns"]["median"]
        );
    }
    let arm64 = records["builds"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["architecture"] == "arm64");
    assert!(arm64, "aarch64 is the kernel's arm64");
    let squad_args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "kcidb" { "squad" } else { a })
        .collect();
    let squad = run_ok(&squad_args);
    let lines: Vec<&str> = squad.stdout.lines().collect();
    assert_eq!(lines.len(), docs.len(), "{}", squad.stdout);
    for (line, doc) in lines.iter().zip(&docs) {
        let submission = assert_squad_shape(line);
        assert_eq!(
            submission["metadata"]["kernel_release"],
            doc["kernel_release"]
        );
    }
}

/// The validator refuses what the schema does not allow: a status it does
/// not know, a path with a slash. Else its verdicts would say nothing.
#[test]
fn the_validator_refuses_bad_records() {
    let Some(python) = validator() else {
        return;
    };
    let out = run_ok(&[
        "report",
        "--format",
        "kcidb",
        &format!("{FIXTURES}/6.12.json"),
    ]);
    validate(&python, &out.stdout).unwrap();
    for (field, bad) in [("status", "OK"), ("path", "bpf_overhead.a/b")] {
        let mut records: Value = serde_json::from_str(&out.stdout).unwrap();
        records["tests"][0][field] = bad.into();
        let verdict = validate(&python, &records.to_string());
        assert!(verdict.is_err(), "{field} {bad}: {verdict:?}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let junk = TempFile::new("kernel-ci-junk.json");
    fs::write(&junk.0, "{\"tests\": []}").unwrap();
    for format in ["kcidb", "squad"] {
        refused(&["report", "--format", format, junk.path()], "report: ");
        // Counts beside times: an exact run and a timed one.
        let timed = TempFile::new("kernel-ci-timed.json");
        fs::write(&timed.0, fixture().to_string()).unwrap();
        let exact = format!("{FIXTURES}/6.12.json");
        refused(
            &["report", "--format", format, &exact, timed.path()],
            "exact counts (cargo xtask vmtest --exact) and timed runs do not compare",
        );
        // An in-run comparison: two sides under one name.
        let mut doc = fixture();
        doc["against"] = "prog-work=1".into();
        let against = TempFile::new("kernel-ci-against.json");
        fs::write(&against.0, doc.to_string()).unwrap();
        refused(
            &["report", "--format", format, against.path()],
            "is an --against run",
        );
        refused_early(
            &["--format", format, "--against", "prog-work=1"],
            "takes no --against",
        );
    }
}
