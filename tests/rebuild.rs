//! A rebuild during a run: `cargo build` in another terminal (or a second
//! CI job in the same checkout) replaces the executable at its path while
//! a run goes on. The uprobes of the runs after that must still attach to
//! the image that runs, not to the new file at the path, and count exactly.
//!
//! Needs root, like the rest of the suite.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bpf_overhead::env_vars::EMULATED_ENV;
use serde_json::Value;
use serial_test::serial;

mod common;
use common::cli::{spawn, BIN};
use common::procs;
use common::system::root_or_skip;

/// Replaces `path` the way a linker or `cp new tmp && mv tmp path` does:
/// a new file, renamed over the old one (a new inode at the path; the
/// running image keeps the old, now unlinked, one).
fn replace(path: &Path) {
    let tmp = path.with_extension("new");
    fs::copy(BIN, &tmp).unwrap();
    fs::rename(&tmp, path).unwrap();
}

#[test]
#[serial]
fn the_executable_replaced_mid_run_keeps_exact_counts() {
    if !root_or_skip("needs root") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("bpf-overhead");
    fs::copy(BIN, &exe).unwrap();
    let mut run = spawn(
        Command::new(&exe)
            .args([
                "-m",
                // Every way of attaching to the executable; uprobe-nop as
                // asked in the issue.
                "base,uprobe-nop,uretprobe-nop,uprobe.multi-nop,uprobe.session-nop,usdt",
                "--repeat",
                "1",
                "--iterations",
                "5000",
                "--budget",
                "0",
                "--format",
                "json",
            ])
            .env_remove(EMULATED_ENV),
        Stdio::piped(),
    );
    // Replace it once the first uprobe is attached (the warm-up): every
    // later run loads and attaches again, after the replacement (one
    // round of each mechanism: each attach is the same proof, and each
    // uprobe's detach waits ~0.1 s for RCU).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !procs::holds_a_program(run.id()) {
        assert!(
            run.try_wait().unwrap().is_none(),
            "the run ended before attaching anything"
        );
        assert!(Instant::now() < deadline, "nothing attached within 60 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    replace(&exe);
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reasons: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"reason\": \""))
        .collect();
    assert!(
        out.status.success(),
        "the run failed ({}) after its executable was replaced:\n{stderr}{reasons:#?}",
        out.status
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ok = Vec::new();
    for m in doc["mechanisms"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        if m["base"] == m["name"] {
            continue;
        }
        // uprobe.multi needs 6.6 and uprobe.session 6.13: a VM's kernel
        // may skip them, never fail them.
        if m["status"] == "skipped" && name != "uprobe-nop" {
            println!("({name} skipped: {})", m["reason"]);
            continue;
        }
        assert_eq!(m["status"], "ok", "{m}");
        // The lead-in's events, which alone count by default (sessions
        // count every event).
        let counted = match &m["counted_events"] {
            Value::Null => Value::from(vec![m["events_per_run"].clone()]),
            c => c.clone(),
        };
        assert_eq!(m["hits"], counted, "{m}");
        assert!(counted[0].as_u64().is_some_and(|n| n > 0), "{m}");
        ok.push(name);
    }
    println!("exact counts after the replacement: {}", ok.join(" "));
}
