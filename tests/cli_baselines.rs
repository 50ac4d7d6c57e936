//! The `bpf-overhead` command's result files: baselines that are special
//! files, nonsense or interrupted, and --save targets that are bad or the
//! baseline itself, all refused before measuring.

use std::fs;
use std::process::Command;

use serde_json::Value;

mod common;
use common::cli::*;
use common::system::{is_root, root_or_skip};

#[test]
fn special_file_baselines_are_refused_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let huge = dir.path().join("huge.json");
    // Sparse: 65 MiB of nothing, over the 64 MiB a result file may have.
    fs::File::create(&huge).unwrap().set_len(65 << 20).unwrap();
    for (file, expected) in [
        ("/dev/zero", "/dev/zero: a device, not a result file"),
        (fifo.to_str().unwrap(), "a FIFO, not a result file"),
        (
            huge.to_str().unwrap(),
            "68157440 bytes, more than a result file's 64 MiB",
        ),
    ] {
        refused_early(&["--baseline", file], expected);
        // report reads result files too.
        let out = output_within(
            command(&["report", file, file]),
            std::time::Duration::from_secs(20),
        );
        assert_refused(&out, expected, &format!("report {file}"));
    }
}

/// A baseline whose figures make no sense is refused, naming the field: a
/// gate a corrupt file could switch off would be worse than none.
#[test]
fn nonsense_number_baselines_are_refused() {
    let file = TempFile::new("nonsense.json");
    fn ratio(doc: &mut Value) -> &mut Value {
        &mut doc["mechanisms"][2]["ratio_to_base"]
    }
    let constant = |v: f64| {
        serde_json::json!({"samples": [v, v, v], "median": v, "mean": v, "stddev": 0.0,
                           "min": v, "max": v})
    };
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: [(&str, Edit); 7] = [
        // 1e308 of noise made a 100% drop "noise".
        (
            "(raw_tp): ratio_to_base.stddev is 1e308, but its samples give 0.009",
            Box::new(|doc| ratio(doc)["stddev"] = 1e308.into()),
        ),
        (
            "(raw_tp): ratio_to_base.samples[0] is -5, must be a positive number",
            Box::new(move |doc| *ratio(doc) = constant(-5.0)),
        ),
        (
            "(raw_tp): ratio_to_base.samples[0] is 0, must be a positive number",
            Box::new(move |doc| *ratio(doc) = constant(0.0)),
        ),
        (
            "mechanisms[3]: name \"raw_tp\" appears twice",
            Box::new(|doc| {
                let dup = doc["mechanisms"][2].clone();
                doc["mechanisms"].as_array_mut().unwrap().push(dup);
            }),
        ),
        (
            "(kprobe): base \"base\" is not a base in the document",
            Box::new(|doc| {
                doc["mechanisms"].as_array_mut().unwrap().remove(0);
            }),
        ),
        (
            "(raw_tp): overhead_ns.samples has 2 values, not one per repeat",
            Box::new(|doc| {
                let overhead = &mut doc["mechanisms"][2]["overhead_ns"];
                overhead["samples"] = serde_json::json!([100.0, 110.0]);
            }),
        ),
        (
            "(raw_tp): hits is [100000, 5, 100000]",
            Box::new(|doc| doc["mechanisms"][2]["hits"][1] = 5.into()),
        ),
    ];
    for (expected, edit) in cases {
        let mut doc = fixture();
        edit(&mut doc);
        fs::write(&file.0, doc.to_string()).unwrap();
        refused_early(&["--baseline", file.path()], expected);
    }
}

#[test]
fn an_interrupted_result_is_no_baseline() {
    let file = TempFile::new("interrupted.json");
    let mut doc = fixture();
    doc["interrupted"] = "SIGINT".into();
    fs::write(&file.0, doc.to_string()).unwrap();
    refused_early(
        &["--baseline", file.path()],
        "the run was interrupted (SIGINT) and is incomplete",
    );
}

#[test]
fn save_onto_the_baseline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    fs::write(&baseline, fixture().to_string()).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&baseline, &link).unwrap();
    let hard = dir.path().join("hard.json");
    fs::hard_link(&baseline, &hard).unwrap();
    let detour = dir.path().join(".").join("baseline.json");
    let b = baseline.to_str().unwrap();
    // The same file by its name, another path, a symlink, a hard link.
    for save in [
        b,
        detour.to_str().unwrap(),
        link.to_str().unwrap(),
        hard.to_str().unwrap(),
    ] {
        refused_early(
            &["--baseline", b, "--save", save],
            "is the --baseline file: the run would replace the baseline",
        );
    }
    assert_eq!(
        fs::read_to_string(&baseline).unwrap(),
        fixture().to_string(),
        "the baseline was changed"
    );
}

#[test]
fn bad_save_targets_are_found_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("nowhere.json");
    std::os::unix::fs::symlink(dir.path().join("missing/x.json"), &nowhere).unwrap();
    for (save, expected) in [
        (
            "/proc",
            "cannot save to /proc: cannot create a file in /proc",
        ),
        (
            "/dev/full",
            "cannot save to /dev/full: it is not a regular file",
        ),
        (
            "/proc/x.json",
            "cannot save to /proc/x.json: cannot create a file in /proc",
        ),
        ("/nonexistent/dir/r.json", "no directory /nonexistent/dir"),
        (nowhere.to_str().unwrap(), "/missing"),
    ] {
        refused_early(&["--save", save], expected);
    }
    // A read-only mount, made for the test in a mount namespace of its own.
    if !is_root() || Command::new("unshare").arg("--help").output().is_err() {
        println!("SKIP: a read-only mount needs root and unshare(1)");
        return;
    }
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let script = format!(
        "mount -t tmpfs -o ro none {ro} && exec {BIN} -m raw_tp --iterations 100000000 \
         --save {ro}/r.json",
        ro = ro.display()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
    let out = output_within(cmd, std::time::Duration::from_secs(20));
    assert_refused(&out, "Read-only file system", "--save on a read-only mount");
}

/// A directory is a baseline set: one with no result file, or one that is
/// not a result, is bad input that names the file.
#[test]
fn bad_baseline_sets_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    refused_early(
        &["--baseline", d],
        "no result files (*.json) in this directory",
    );
    fs::write(dir.path().join("a.json"), fixture().to_string()).unwrap();
    fs::write(dir.path().join("b.json"), "{}").unwrap();
    refused_early(&["--baseline", d], "b.json");
    // report reads files, not sets.
    let out = output_within(
        command(&["report", d, d]),
        std::time::Duration::from_secs(20),
    );
    assert_refused(&out, "a directory, not a result file", "report DIR DIR");
}

/// `--save DIR/` adds each run to the set as a new file, never over
/// another, and `--baseline DIR` judges against all of them.
#[test]
#[serial_test::serial]
fn save_into_a_set_adds_a_file_each_run() {
    if !root_or_skip("a run needs root") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for n in 1..=2 {
        run_ok(&raw_tp_run(
            "3",
            &["--budget", "0", "--no-prog-stats", "--save", d],
        ));
        let files = fs::read_dir(d).unwrap().count();
        assert_eq!(files, n, "runs saved into {d}");
    }
    let out = run(&raw_tp_run(
        "3",
        &["--budget", "0", "--no-prog-stats", "--baseline", d],
    ));
    assert!(matches!(out.code, 0 | 1 | 3), "{}", out.stderr);
    assert!(out.stdout.contains("baseline set"), "{}", out.stdout);
}
