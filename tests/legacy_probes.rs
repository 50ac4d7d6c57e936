//! Legacy probes left by a killed run. Where the kernel has no perf PMU for
//! a probe kind, libbpf creates the probe through tracefs: a line in
//! `uprobe_events` (or `kprobe_events`) named `libbpf_<pid>_<n>_...`, which
//! it removes on detach. A run killed with SIGKILL never detaches, and its
//! entry stays in the kernel, machine-wide. The next run removes the
//! entries of processes that are gone (and only those, and only on what
//! this tool attaches to).
//!
//! No kernel this suite boots has kprobe_events without the kprobe PMU:
//! both come with CONFIG_KPROBE_EVENTS. So the test takes the same path
//! with uprobes, by hiding the uprobe PMU (an empty tmpfs over
//! /sys/bus/event_source/devices, in a mount namespace of its own, which
//! the runs it starts inherit): libbpf and bpf-overhead then go through
//! `uprobe_events`, as on a kernel without the PMU.
//!
//! The VMs' kernels have kprobes too: there the same happens with
//! `kprobe_events`, the case of the issue.
//!
//! Needs root.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bpf_overhead::env_vars::EMULATED_ENV;
use nix::mount::{mount, MsFlags};
use serial_test::serial;

mod common;
use common::cli::{spawn, BIN};
use common::system::{in_private_mounts, root_or_skip};

const DEVICES: &str = "/sys/bus/event_source/devices";

/// Runs `f` on a thread in a private mount namespace
/// ([`in_private_mounts`]) where the perf PMUs are hidden and tracefs is
/// mounted, given the tracefs directory.
fn without_pmus<R: Send>(f: impl FnOnce(&Path) -> R + Send) -> R {
    in_private_mounts(|| {
        let none = None::<&str>;
        mount(
            Some("tmpfs"),
            DEVICES,
            Some("tmpfs"),
            MsFlags::empty(),
            none,
        )
        .unwrap();
        let tracing = Path::new("/sys/kernel/tracing");
        if !tracing.join("events").exists() {
            mount(
                Some("tracefs"),
                tracing,
                Some("tracefs"),
                MsFlags::empty(),
                none,
            )
            .unwrap();
        }
        f(tracing)
    })
}

fn entries_of(events: &Path, pid: u32) -> Vec<String> {
    fs::read_to_string(events)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("/libbpf_{pid}_")))
        .map(String::from)
        .collect()
}

fn remove(events: &Path, entries: &[String]) {
    for e in entries {
        let event = e
            .split_whitespace()
            .next()
            .unwrap()
            .split_once(':')
            .unwrap()
            .1;
        let _ = fs::OpenOptions::new()
            .append(true)
            .open(events)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("-:{event}\n").as_bytes()));
    }
}

/// Starts `mechanism`, SIGKILLs it once its legacy probe is in `events`,
/// and expects the next run to remove what it left.
fn killed_runs_probe_is_removed(events: &Path, mechanism: &str) {
    let mut killed = spawn(
        Command::new(BIN)
            .args([
                "-m",
                mechanism,
                "--repeat",
                "100000",
                "--iterations",
                "20000",
            ])
            .env_remove(EMULATED_ENV),
        Stdio::null(),
    );
    let pid = killed.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while entries_of(events, pid).is_empty() {
        if let Some(status) = killed.try_wait().unwrap() {
            let out = killed.wait_with_output().unwrap();
            panic!(
                "{mechanism}: the run ended ({status}) without a legacy probe:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            Instant::now() < deadline,
            "{mechanism}: no legacy probe within 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let stale = entries_of(events, pid);
    println!("{mechanism}: left by the killed run (pid {pid}): {stale:?}");
    assert!(!stale.is_empty(), "SIGKILL left nothing: nothing to test");

    let out = Command::new(BIN)
        .args(["-m", mechanism, "--repeat", "1", "--iterations", "1000"])
        .args(["--no-prog-stats", "--budget", "0"])
        .env_remove(EMULATED_ENV)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stderr}");
    let left = entries_of(events, pid);
    // Whatever happens, leave the machine as it was.
    remove(events, &left);
    assert!(
        out.status.success(),
        "{mechanism}: the next run failed:\n{stderr}"
    );
    assert_eq!(
        left,
        Vec::<String>::new(),
        "{mechanism}: the next run left them"
    );
    assert!(
        stderr.contains(&format!("/libbpf_{pid}_")) && stderr.contains("removed "),
        "{stderr}"
    );
}

#[test]
#[serial]
fn a_killed_runs_legacy_probe_is_removed_by_the_next_run() {
    if !root_or_skip("needs root") {
        return;
    }
    without_pmus(|tracing| {
        // kprobe_events where the kernel has kprobes (the VMs' kernels;
        // not this project's usual host, which has no CONFIG_KPROBES).
        let mut tested = 0;
        for (file, mechanism) in [("uprobe_events", "uprobe-nop"), ("kprobe_events", "kprobe")] {
            let events = tracing.join(file);
            if events.exists() {
                killed_runs_probe_is_removed(&events, mechanism);
                tested += 1;
            } else {
                println!("SKIP {mechanism}: no {file} (the kernel lacks that probe kind)");
            }
        }
        if tested == 0 {
            println!("SKIP: neither uprobe_events nor kprobe_events");
        }
    });
}
