//! `cargo xtask vmtest` and `history`'s exit statuses, provoked without
//! booting a VM: bad input is 2, an environment that cannot run it (no
//! tools) the environment's 69, never 1, which means a regression only.

use std::process::{Command, Output};

const XTASK: &str = env!("CARGO_BIN_EXE_xtask");

/// xtask with `args`, and `path` as its PATH when given.
fn xtask(args: &[&str], path: Option<&str>) -> Output {
    let mut cmd = Command::new(XTASK);
    cmd.args(args).env_remove("VMTEST_ACCEL");
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.output().expect("xtask runs")
}

#[track_caller]
fn assert_status(out: &Output, code: i32) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
}

#[test]
fn two_kernels_to_vmtest_are_bad_input() {
    assert_status(&xtask(&["vmtest", "6.1", "6.12"], None), 2);
}

#[test]
fn a_series_history_cannot_read_is_bad_input() {
    assert_status(&xtask(&["history", "six"], None), 2);
}

#[test]
fn no_task_is_bad_input() {
    assert_status(&xtask(&[], None), 2);
}

/// Nothing on PATH (no qemu, no apt): the environment cannot run the VM.
#[test]
fn vmtest_with_no_tools_is_the_environment_status() {
    let empty = tempfile::tempdir().unwrap();
    let out = xtask(&["vmtest", "6.1"], Some(empty.path().to_str().unwrap()));
    assert_status(&out, 69);
}
