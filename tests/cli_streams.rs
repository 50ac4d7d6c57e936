//! The `bpf-overhead` command's output streams: a closed or failing
//! stdout, --overwrite-baseline writing whole, notes said once.

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use serde_json::Value;
use serial_test::serial;

mod common;
use common::cli::*;

/// A closed stdout ends the output quietly: no panic, no backtrace, the
/// run's own exit status; and --save is written anyway.
#[test]
#[serial]
fn a_closed_stdout_ends_the_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("r.json");
    let mut cmd = command(&raw_tp_run(
        "1",
        &["--format", "json", "--save", save.to_str().unwrap()],
    ));
    cmd.env("RUST_BACKTRACE", "1");
    let (code, stderr) = with_stdout_closed(cmd);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
    let saved: Value = serde_json::from_str(&fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(saved["mechanisms"][1]["status"], "ok");
    // --list too.
    let (code, stderr) = with_stdout_closed(command(&["--list", "-m", "raw_tp"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// Runs `cmd` with its stdout's reader gone before a byte is written
/// (`| (exec 0<&-)`): its exit code and stderr.
fn with_stdout_closed(mut cmd: Command) -> (Option<i32>, String) {
    let mut child = spawn(&mut cmd, Stdio::piped());
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

#[test]
#[serial]
fn a_failed_stdout_is_one_line_and_the_environment_status() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("r.json");
    let mut cmd = command(&raw_tp_run("1", &["--save", save.to_str().unwrap()]));
    cmd.stdout(
        fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    )
    .env("RUST_BACKTRACE", "1");
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(
        errors,
        ["bpf-overhead: error: cannot write the output to stdout: No space left on device (os error 28)"],
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The result file does not depend on stdout.
    assert!(save.is_file(), "{stderr}");
}

/// --overwrite-baseline: the new result replaces the baseline whole (a
/// new file renamed over it, through the link, which stays a link).
#[test]
#[serial]
fn overwrite_baseline_replaces_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&baseline, &link).unwrap();
    let l = link.to_str().unwrap();
    run_ok(&raw_tp_run("2", &["--save", l]));
    let first = fs::read_to_string(&baseline).unwrap();
    let out = run(&raw_tp_run(
        "2",
        &["--baseline", l, "--save", l, "--overwrite-baseline"],
    ));
    assert!(
        out.code == 0 || out.stdout.contains("gate:"),
        "{}",
        out.stderr
    );
    let second = fs::read_to_string(&baseline).unwrap();
    assert_ne!(first, second, "not replaced");
    serde_json::from_str::<Value>(&second).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // Nothing but the two names: no temporary file left.
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["baseline.json", "link.json"]);
}

/// "CPU 0 is not in the allowed set" is said once per process, not once
/// per run (it was 10 times for three mechanisms).
#[test]
#[serial]
fn the_cpu_note_is_said_once() {
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let Some(cpu) = (1..nix::sched::CpuSet::count()).find(|&c| allowed.is_set(c).unwrap()) else {
        println!("SKIP: needs a CPU other than 0");
        return;
    };
    let mut cmd = command(&["-m", "raw_tp,tp", "--iterations", "1000", "--repeat", "2"]);
    // SAFETY: sched_setaffinity is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut one = nix::sched::CpuSet::new();
            one.set(cpu).map_err(std::io::Error::from)?;
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &one)
                .map_err(std::io::Error::from)
        });
    }
    let out = output(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let notes = out
        .stderr
        .matches(&format!(
            "CPU 0 is not in the allowed set: pinning to CPU {cpu}"
        ))
        .count();
    assert_eq!(notes, 1, "{}", out.stderr);
}
