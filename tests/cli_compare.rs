//! `bpf-overhead compare A... --against B...`: runs made at the same time
//! (a duet of two kernels), judged B against A round by round, on result
//! files with fixed figures (no root, no BPF).

use serde_json::Value;

mod common;
use common::cli::*;

/// Per-round figures: `samples` and their statistics.
fn stats(samples: &[f64]) -> Value {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    serde_json::json!({
        "samples": samples, "median": (sorted[mid - 1] + sorted[mid]) / 2.0,
        "mean": mean, "stddev": var.sqrt(),
        "min": sorted[0], "max": sorted[samples.len() - 1]
    })
}

/// The fixture with raw_tp's rounds' overheads set to `overheads` (and
/// every other per-round figure to as many rounds), saved.
fn session(name: &str, overheads: &[f64], release: &str) -> TempFile {
    let mut doc = fixture();
    let n = overheads.len();
    doc["repeats"] = n.into();
    doc["kernel_release"] = release.into();
    let flat = |v: f64| stats(&vec![v; n]);
    let base = &mut doc["mechanisms"][0];
    base["k_events_per_sec"] = flat(1000.0);
    base["speed_ns"] = flat(1.5);
    let raw_tp = &mut doc["mechanisms"][2];
    raw_tp["overhead_ns"] = stats(overheads);
    raw_tp["k_events_per_sec"] = flat(900.0);
    raw_tp["ratio_to_base"] = flat(0.9);
    raw_tp["overhead_steps"] = flat(74.0);
    raw_tp["speed_ns"] = flat(1.5);
    raw_tp["hits"] = vec![100_000; n].into();
    raw_tp["producers"] = Value::Null;
    raw_tp["scaling"] = Value::Null;
    let file = TempFile::new(name);
    std::fs::write(&file.0, serde_json::to_string(&doc).unwrap()).unwrap();
    file
}

fn rounds(scale: f64) -> Vec<f64> {
    (0..10).map(|i| (110.0 + (i % 4) as f64) * scale).collect()
}

/// `compare A A --against B B EXTRA...`: two sessions of each.
fn compare_two_sessions(a: &TempFile, b: &TempFile, extra: &[&str]) -> Output {
    let args = [
        &[
            "compare",
            a.path(),
            a.path(),
            "--against",
            b.path(),
            b.path(),
        ][..],
        extra,
    ]
    .concat();
    run(&args)
}

#[test]
fn a_run_against_itself_is_unchanged_and_exits_0() {
    let a = session("cmp-aa-a", &rounds(1.0), "6.12.0");
    let b = session("cmp-aa-b", &rounds(1.0), "6.12.0");
    let out = run(&["compare", a.path(), "--against", b.path()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("Holm-corrected"), "{}", out.stdout);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("raw_tp"))
        .unwrap();
    assert!(line.ends_with(" ok"), "{line}");
    assert!(out.stdout.contains("compare: PASSED"), "{}", out.stdout);
}

#[test]
fn b_costlier_in_every_pair_is_regressed_and_exits_1() {
    let a = session("cmp-ab-a", &rounds(1.0), "6.1.0");
    let b = session("cmp-ab-b", &rounds(1.3), "6.12.0");
    // One session alone can never regress: the sessions must agree.
    let out = run(&["compare", a.path(), "--against", b.path()]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let out = compare_two_sessions(&a, &b, &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("B (6.12.0) against A (6.1.0)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("compare: FAILED"), "{}", out.stdout);
    // The other way round, A is the costlier: B improved.
    let out = compare_two_sessions(&b, &a, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("raw_tp"))
        .unwrap();
    assert!(line.ends_with(" improved"), "{line}");
}

#[test]
fn json_findings_on_stdout_and_the_table_on_stderr() {
    let a = session("cmp-js-a", &rounds(1.0), "6.1.0");
    let b = session("cmp-js-b", &rounds(1.3), "6.12.0");
    let out = compare_two_sessions(&a, &b, &["--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["exit"], 1);
    let raw_tp = &v["comparisons"][0];
    assert_eq!(raw_tp["name"], "raw_tp");
    assert_eq!(raw_tp["verdict"], "REGRESSED");
    assert_eq!(raw_tp["pairs"], 20, "two sessions of 10 rounds");
    assert!(out.stderr.contains("mechanism"), "{}", out.stderr);
}

#[test]
fn sessions_that_do_not_pair_are_bad_input() {
    let a = session("cmp-bad-a", &rounds(1.0), "6.1.0");
    bad_input(
        &["compare", a.path(), a.path(), "--against", a.path()],
        "2 A result(s) and 1 B result(s)",
    );
    bad_input(&["compare", a.path()], "--against");
    bad_input(
        &["compare", a.path(), "--against", "/nonexistent.json"],
        "/nonexistent.json",
    );
}
