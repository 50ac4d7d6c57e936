//! Two measuring runs on one CPU: each would time the other's work too,
//! and nothing would say so. A per-CPU lock serialises them (the command's
//! runs and the suite's tests alike), with a line saying who holds the CPU
//! and for how long the run has waited; `--no-wait` fails at once instead.
//!
//! Needs root, like the rest of the suite.

use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use bpf_overhead::measure::cpu::cpulock::{self, CpuLock, Wait};
use serial_test::serial;

mod common;
use common::cli::{command, spawn, BIN};
use common::procs;
use common::system::root_or_skip;

const RUN: [&str; 7] = [
    "-m",
    "raw_tp-loop",
    "--repeat",
    "1",
    "--no-prog-stats",
    "--iterations=100000",
    "--budget=0",
];

/// Three runs started together on the default CPU: never two measuring at
/// once, the later ones say whom they wait for, and all three succeed.
#[test]
#[serial]
fn runs_on_one_cpu_take_turns_and_say_whom_they_wait_for() {
    if !root_or_skip("needs root") {
        return;
    }
    let mut runs: Vec<Child> = Vec::new();
    for _ in 0..3 {
        runs.push(spawn(&mut command(&RUN), Stdio::null()));
        std::thread::sleep(Duration::from_millis(100));
    }
    let pids: Vec<u32> = runs.iter().map(Child::id).collect();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut overlaps = 0;
    while runs.iter_mut().any(|r| r.try_wait().unwrap().is_none()) {
        assert!(Instant::now() < deadline, "the runs did not end in 300 s");
        let at_once: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&p| procs::holds_a_program(p))
            .collect();
        if at_once.len() > 1 {
            overlaps += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut waited = 0;
    for (run, pid) in runs.into_iter().zip(&pids) {
        let out = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        print!("{pid}:\n{stderr}");
        assert!(out.status.success(), "run {pid} failed:\n{stderr}");
        let waiting: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("waiting for CPU"))
            .collect();
        // A line may name a measuring run from outside this test (another
        // suite, a benchmark): the lock serialises those too, and says so.
        let mut waited_for_ours = false;
        for line in &waiting {
            assert!(line.contains(" waited "), "{line}");
            if let Some(holder) = pids.iter().find(|p| line.contains(&format!("(pid {p}: "))) {
                // A holder that is exiting as the line is written may no
                // longer show its command line.
                let named = line.contains(BIN) || line.contains("command line unknown");
                assert!(holder != pid && named, "{line}");
                waited_for_ours = true;
            }
        }
        if waited_for_ours {
            waited += 1;
        }
    }
    assert_eq!(overlaps, 0, "two runs measured on one CPU at once");
    assert!(waited >= 2, "two of the three runs should have waited");
}

/// While a suite test holds the CPU (as every suite test does, through the
/// pipeline), the command with --no-wait fails at once, exit 75, with one
/// line naming the holder; without it, it waits until the CPU is free.
#[test]
#[serial]
fn no_wait_fails_at_once_naming_the_holder() {
    if !root_or_skip("needs root") {
        return;
    }
    let cpus = cpulock::cpus_of(None, 1).unwrap();
    let lock = cpulock::hold(&cpus, Wait::Yes).unwrap();
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(RUN)
        .arg("--no-wait")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stderr}");
    assert_eq!(out.status.code(), Some(75), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "it waited");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let me = format!("(pid {}: ", std::process::id());
    assert!(
        stderr.starts_with(&format!("bpf-overhead: error: CPU {} is taken", cpus[0]))
            && stderr.contains(&me)
            && stderr.contains("--no-wait"),
        "{stderr}"
    );

    waits_until_let_go(lock, cpus[0], &me);

    // A run that did not wait says 0.
    let out = Command::new(BIN)
        .args(RUN)
        .args(["--format", "json", "--no-wait"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["cpu_wait_s"].as_f64(), Some(0.0));
}

/// A run without --no-wait while we hold `cpu` with `lock`: it says it
/// waits for us (`me`) and measures nothing until we let go, then runs,
/// its result saying how long it waited.
fn waits_until_let_go(lock: CpuLock, cpu: usize, me: &str) {
    let mut run = spawn(
        &mut command(&[&RUN[..], &["--format", "json"]].concat()),
        Stdio::piped(),
    );
    // It says it waits as soon as it finds the CPU taken; then, 0.2 s on,
    // it still neither ended nor attached anything.
    let stderr = run.stderr.take().unwrap();
    let said = std::thread::spawn(move || until_waiting(stderr));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !said.is_finished() {
        assert!(Instant::now() < deadline, "it said nothing within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (mut seen, mut rest) = said.join().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(run.try_wait().unwrap().is_none(), "it did not wait");
    assert!(
        !procs::holds_a_program(run.id()),
        "it measured on a CPU that was taken"
    );
    drop(lock);
    let out = run.wait_with_output().unwrap();
    std::io::Read::read_to_end(&mut rest, &mut seen).unwrap();
    let stderr = String::from_utf8_lossy(&seen);
    print!("{stderr}");
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("waiting for CPU {cpu}")) && stderr.contains(me),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let waited = doc["cpu_wait_s"]
        .as_f64()
        .expect("cpu_wait_s in the result");
    assert!((0.2..60.0).contains(&waited), "cpu_wait_s {waited}");
}

/// A run's stderr read until it says it waits for the CPU (or to its end,
/// should it end first): what it said, and the pipe, for the rest.
fn until_waiting(mut stderr: ChildStderr) -> (Vec<u8>, ChildStderr) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("waiting for CPU") {
        match std::io::Read::read(&mut stderr, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    (seen, stderr)
}

/// Within one process the lock is re-entrant (a caller may hold it around
/// its pipeline run, which takes it again), and it goes with the last hold.
#[test]
#[serial]
fn the_lock_is_reentrant_within_a_process() {
    if !root_or_skip("needs root") {
        return;
    }
    let cpus = cpulock::cpus_of(None, 1).unwrap();
    let outer = cpulock::hold(&cpus, Wait::No).unwrap();
    let inner = cpulock::hold(&cpus, Wait::No).expect("ours already");
    drop(outer);
    let out = Command::new(BIN)
        .args(RUN)
        .arg("--no-wait")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "still held by the inner hold");
    drop(inner);
    let out = Command::new(BIN)
        .args(RUN)
        .arg("--no-wait")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ctrl-C while waiting for the CPU stops the wait at once: one line, exit
/// 128 + SIGINT, nothing attached, nothing measured.
#[test]
#[serial]
fn a_signal_while_waiting_stops_the_wait() {
    if !root_or_skip("needs root") {
        return;
    }
    let cpus = cpulock::cpus_of(None, 1).unwrap();
    let _lock = cpulock::hold(&cpus, Wait::Yes).unwrap();
    let mut run = spawn(&mut command(&RUN), Stdio::null());
    let (mut seen, mut stderr) = until_waiting(run.stderr.take().unwrap());
    assert!(
        String::from_utf8_lossy(&seen).contains("waiting for CPU"),
        "it ended: {}",
        String::from_utf8_lossy(&seen)
    );
    let asked = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = run.wait().unwrap();
    std::io::Read::read_to_end(&mut stderr, &mut seen).unwrap();
    let stderr = String::from_utf8_lossy(&seen);
    print!("{stderr}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "it went on waiting"
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.lines().last().is_some_and(|l| l
            == "bpf-overhead: interrupted by SIGINT while waiting for the CPU: nothing measured"),
        "{stderr}"
    );
}
