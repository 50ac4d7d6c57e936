//! The `bpf-overhead` command's answers to bad input: exit 2 with one
//! clear line (and the usage for argument errors), before anything is
//! measured.

use std::fs;

mod common;
use common::cli::*;

#[test]
fn unknown_mechanism() {
    bad_input(&["-m", "kprobes"], "unknown mechanism 'kprobes'");
    bad_input(&["-m", "raw_tp,nope"], "expected one of base, kprobe");
    bad_input(&["--skip", "kprobes"], "unknown mechanism 'kprobes'");
}

#[test]
fn skipping_every_selected_mechanism() {
    bad_input(
        &["-m", "raw_tp", "--skip", "raw_tp"],
        "--skip leaves no mechanism to measure: skip fewer",
    );
}

#[test]
fn zero_iterations_or_repeats() {
    bad_input(&["--iterations", "0"], "must be at least 1");
    bad_input(&["--repeat", "0"], "must be at least 1");
    bad_input(&["--iterations", "many"], "--iterations");
}

#[test]
fn cpu_out_of_range() {
    bad_input(
        &["--cpu", "999", "-m", "raw_tp"],
        "CPU 999 is offline or does not exist",
    );
    bad_input(&["--cpu", "999", "--list"], "CPU 999");
}

#[test]
fn bad_threshold_and_format() {
    bad_input(&["--threshold", "150"], "from 0 to below 100");
    bad_input(&["--format", "xml"], "invalid value 'xml'");
}

#[test]
fn unreadable_baseline() {
    bad_input(
        &["--baseline", "/nonexistent/baseline.json"],
        "cannot read baseline /nonexistent/baseline.json",
    );
}

#[test]
fn baseline_that_is_not_a_result() {
    let file = TempFile::new("not-json.json");
    fs::write(&file.0, "task_rename base\t1000K events per sec\n").unwrap();
    bad_input(&["--baseline", file.path()], "not valid JSON");
    fs::write(&file.0, "{\"mechanisms\": []}").unwrap();
    bad_input(&["--baseline", file.path()], "not a bpf-overhead result");
}

#[test]
fn baseline_of_another_schema_version() {
    let file = TempFile::new("v99.json");
    fs::write(
        &file.0,
        r#"{"schema": "bpf-overhead-result", "schema_version": 99, "mechanisms": []}"#,
    )
    .unwrap();
    bad_input(&["--baseline", file.path()], "schema version 99");
}

#[test]
fn baseline_with_nothing_in_common() {
    let file = TempFile::new("nothing-in-common.json");
    let mut doc = fixture();
    doc["mechanisms"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["name"] == "base" || m["name"] == "raw_tp");
    fs::write(&file.0, doc.to_string()).unwrap();
    bad_input(
        &["--baseline", file.path(), "-m", "uprobe-nop"],
        "nothing to compare: the baseline measured raw_tp and this run selects uprobe-nop",
    );
}

#[test]
fn save_to_a_missing_directory() {
    bad_input(
        &["--save", "/nonexistent/dir/r.json"],
        "no directory /nonexistent/dir",
    );
}

/// The argument errors of clap, ours included: one line, then the usage.
#[test]
fn usage_errors_are_one_line_and_the_usage() {
    for (args, expected) in [
        (
            &["--cpu", "-1"][..],
            "-1 is out of range: CPUs are numbered from 0",
        ),
        (
            &["--threshold", "-5"],
            "-5 is out of range: must be a percentage from 0",
        ),
        (
            &["--iterations", "-1"],
            "-1 is out of range: must be at least 1",
        ),
        (
            &["--repeat", "-3"],
            "-3 is out of range: must be at least 1",
        ),
        (
            &["--format", "xml"],
            "[possible values: table, json, ktap, selftest, kcidb, squad]",
        ),
        (
            &["--formt", "json"],
            "a similar argument exists: '--format'",
        ),
        (&["--overwrite-baseline"], "--save <FILE>"),
        (&["--cpu"], "a value is required for '--cpu <CPU>'"),
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}:\n{}", out.stderr);
        assert!(
            lines[0].starts_with("bpf-overhead: error: ") && lines[0].contains(expected),
            "{args:?}: {}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("Usage: bpf-overhead") && lines[1].ends_with("(see --help)"),
            "{}",
            lines[1]
        );
    }
}

#[test]
fn absurd_iterations_are_refused() {
    refused_early(
        &["--iterations", "9223372036854775807"],
        "--iterations 9223372036854775807 with --repeat 3: this run would take at least",
    );
    // What fits is said, and fits.
    let out = run(&["-m", "raw_tp", "--iterations", "9223372036854775807"]);
    let fit: u64 = out
        .stderr
        .split("at most about ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(fit > 1000 && fit < 1_000_000_000_000, "{fit}");
}
