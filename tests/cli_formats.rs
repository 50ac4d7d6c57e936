//! The `bpf-overhead` command's other output formats: the table, the
//! selftest lines and KTAP (with kselftest's skip exit status).

use serial_test::serial;

mod common;
use common::cli::*;

#[test]
#[serial]
fn skipped_mechanisms_are_left_out_of_the_selection() {
    let out = run_ok(&raw_tp_run("1", &["-m", "tp", "--skip", "tp"]));
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(rows.contains(&"raw_tp"), "{}", out.stdout);
    assert!(!rows.contains(&"tp"), "{}", out.stdout);
}

#[test]
#[serial]
fn table_by_default_without_progress_when_piped() {
    let out = run_ok(&raw_tp_run("2", &[]));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("bpf-overhead "), "{}", out.stdout);
    assert!(
        lines[1].starts_with("2000 events per run; up to 2 timed rounds"),
        "{}",
        out.stdout
    );
    let header = lines.iter().find(|l| l.starts_with("mechanism")).unwrap();
    for col in bpf_overhead::render::TABLE_COLUMNS {
        assert!(header.contains(col), "{header}");
    }
    assert!(
        lines.iter().any(|l| l.starts_with("base ")),
        "{}",
        out.stdout
    );
    let raw_tp = lines.iter().find(|l| l.starts_with("raw_tp ")).unwrap();
    assert!(raw_tp.contains('–') && raw_tp.contains('±'), "{raw_tp}");
    // stderr is a pipe here: no progress bar, no terminal control.
    assert!(
        !out.stderr.contains('\x1b') && !out.stderr.contains('\r'),
        "{:?}",
        out.stderr
    );
}

#[test]
#[serial]
fn selftest_format_is_test_overheads_lines() {
    let out = run_ok(&raw_tp_run("1", &["--format", "selftest"]));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    for (line, name) in lines.iter().zip(["base", "raw_tp"]) {
        let rest = line
            .strip_prefix(&format!("task_rename {name}\t"))
            .unwrap_or_else(|| panic!("{line:?}"));
        let n = rest
            .strip_suffix("K events per sec")
            .unwrap_or_else(|| panic!("{line:?}"));
        assert!(n.parse::<u64>().is_ok(), "{line:?}");
    }
}

/// A warm-up runs only where it sizes the runs (no `--iterations`), and the
/// program's own run time is measured either way: in the warm-up's
/// attachment, or after the rounds. The heading says which plan ran.
#[test]
#[serial]
fn a_warm_up_runs_only_to_size_the_runs_and_prog_ns_comes_either_way() {
    let sized: &[&str] = &["-m", "raw_tp", "--repeat", "1"];
    let counted: &[&str] = &["-m", "raw_tp", "--repeat", "1", "--iterations", "2000"];
    for (args, warm_ups, heading) in [
        (sized, 1, "after 1 warm-up,"),
        (counted, 0, ", no warm-up,"),
    ] {
        let saved = TempFile::new("warm-up.json");
        let out = run_ok(&[args, &["--save", saved.path()]].concat());
        let second = out.stdout.lines().nth(1).unwrap_or_default();
        assert!(second.contains(heading), "{args:?}: {second}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(saved.path()).unwrap()).unwrap();
        assert_eq!(doc["warmup_runs"], warm_ups, "{args:?}");
        let prog_ns = mechanism(&doc, "raw_tp")["prog_ns_per_event"].as_f64();
        assert!(prog_ns.is_some_and(|ns| ns > 0.0), "{args:?}: {prog_ns:?}");
    }
}

#[test]
#[serial]
fn ktap_format_for_kselftest() {
    let out = run_ok(&[
        "-m",
        "raw_tp,kprobe",
        "--iterations",
        "2000",
        "--repeat",
        "1",
        "--format",
        "ktap",
    ]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "KTAP version 1");
    assert_eq!(lines[1], "1..3", "the plan follows the version line");
    assert!(lines.contains(&"ok 1 base"), "{}", out.stdout);
    assert!(lines.contains(&"ok 3 raw_tp"), "{}", out.stdout);
    // kprobe: ok here, or skipped with its reason where the kernel lacks it.
    let kprobe = lines
        .iter()
        .find(|l| l.starts_with("ok 2 kprobe"))
        .expect("kprobe's line");
    assert!(
        *kprobe == "ok 2 kprobe" || kprobe.starts_with("ok 2 kprobe # SKIP "),
        "{kprobe}"
    );
    assert!(
        lines.last().unwrap().starts_with("# Totals: pass:"),
        "{}",
        out.stdout
    );
    for line in &lines[1..] {
        assert!(
            line.starts_with("# ") || line.starts_with("ok ") || line.starts_with("1.."),
            "not a KTAP line: {line:?}"
        );
    }
}

/// The mechanisms this host may lack: on a kernel without them all, a
/// run of these is all-skipped.
const MAYBE_UNSUPPORTED: &str = "kprobe,kretprobe,fentry,fexit,fmod_ret";

#[test]
#[serial]
fn all_skipped_exits_ksft_skip() {
    let args = [
        "-m",
        MAYBE_UNSUPPORTED,
        "--iterations",
        "2000",
        "--repeat",
        "1",
    ];
    let out = run(&[&args[..], &["--format", "ktap"]].concat());
    let results: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "))
        .collect();
    assert_eq!(results.len(), 6, "{}", out.stdout);
    assert_eq!(results[0], "ok 1 base");
    let all_skipped = results[1..].iter().all(|l| l.contains(" # SKIP "));
    let fine = results.iter().all(|l| l.starts_with("ok "));
    let expected = match (fine, all_skipped) {
        (false, _) => 69,  // a mechanism that could not run
        (true, true) => 4, // nothing measured: kselftest's KSFT_SKIP
        (true, false) => 0,
    };
    assert_eq!(
        out.code, expected,
        "all skipped: {all_skipped}\n{}{}",
        out.stdout, out.stderr
    );
    // Nothing measured is 4 in every format, not only KTAP's.
    let out = run(&[&args[..], &["--format", "table"]].concat());
    assert_eq!(out.code, expected, "{}", out.stderr);
    if all_skipped {
        println!("this kernel has none of {MAYBE_UNSUPPORTED}: ktap exited 4");
    } else {
        println!("this kernel has some of {MAYBE_UNSUPPORTED}: ktap exited {expected}");
    }
}
