//! Shared by the tests of the `bpf-overhead` command (tests/cli_*.rs):
//! running it, its output, temporary files, and a result document with
//! fixed figures.
//!
//! Those tests never assert timings: the gate is exercised on doctored
//! figures (a baseline edited to be 30% better), and its rule itself is
//! unit-tested on fixed numbers in src/gate.rs. The tests that load BPF
//! programs run the binary as a child process, one at a time
//! (`#[serial]`): they pin to the same CPU and attach to the same hooks.
//! They need root, like the rest of the suite.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The `bpf-overhead` binary cargo built for the tests: the one path every
/// test runs.
pub const BIN: &str = env!("CARGO_BIN_EXE_bpf-overhead");
pub use bpf_overhead::env_vars::EMULATED_ENV;

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    // The selftest lines gain a suffix under emulation; keep them plain.
    cmd.args(args).env_remove(EMULATED_ENV);
    // Under `cargo sudo-test` the command would write as the user, into
    // the tests' temporary directories, which are root's: a test that
    // means sudo says so (common::users::as_sudo).
    cmd.env_remove("SUDO_UID").env_remove("SUDO_GID");
    // Exactly --repeat rounds, unless a test asks for a budget: these
    // tests check the command's behaviour, not how sure its figures are.
    let subcommand = matches!(args.first(), Some(&"report" | &"compare" | &"calibrate"));
    if !subcommand && !args.iter().any(|a| a.starts_with("--budget")) {
        cmd.args(["--budget", "0"]);
    }
    cmd
}

/// Starts `cmd` (the binary, from [`command`] or built by the test) as a
/// child, its stderr piped and its stdout as `stdout` says: piped, or
/// `Stdio::null()` where only stderr is watched.
#[track_caller]
pub fn spawn(cmd: &mut Command, stdout: Stdio) -> Child {
    cmd.stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("bpf-overhead starts")
}

#[track_caller]
pub fn output(mut cmd: Command) -> Output {
    let out = cmd.output().expect("bpf-overhead runs");
    Output {
        code: out.status.code().expect("bpf-overhead exits, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

#[track_caller]
pub fn run(args: &[&str]) -> Output {
    output(command(args))
}

/// A short run of raw_tp, `repeat` rounds, then `extra`: enough to check
/// what the command does, not its figures.
pub fn raw_tp_run<'a>(repeat: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let short = ["-m", "raw_tp", "--iterations", "2000", "--repeat", repeat];
    [&short[..], extra].concat()
}

/// A run that must succeed: exit 0, or the test fails showing stderr.
#[track_caller]
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert_eq!(
        out.code, 0,
        "bpf-overhead {args:?} exited {}:\n{}",
        out.code, out.stderr
    );
    out
}

/// A file in the temp dir, removed when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(name: &str) -> Self {
        Self(std::env::temp_dir().join(format!("bpf-overhead-{}-{name}", std::process::id())))
    }

    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// The mechanism `name` of a result document.
#[track_caller]
pub fn mechanism<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the result:\n{doc:#}"))
}

#[track_caller]
pub fn bad_input(args: &[&str], expected: &str) {
    assert_refused(&run(args), expected, &format!("{args:?}"));
}

/// Exit 2 (bad input), saying `expected`, without a backtrace.
#[track_caller]
pub fn assert_refused(out: &Output, expected: &str, what: &str) {
    assert_eq!(
        out.code, 2,
        "{what} exited {}: {}{}",
        out.code, out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains(expected),
        "{what}: stderr does not say {expected:?}:\n{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

/// Like [`output`], but fails instead of hanging: a FIFO baseline once
/// made the command wait forever.
#[track_caller]
pub fn output_within(cmd: Command, limit: std::time::Duration) -> Output {
    let out = output_within_or_kill(cmd, limit).unwrap_or_else(|e| panic!("{e}"));
    Output {
        code: out.code.expect("bpf-overhead exits, not killed"),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

/// How a command ended that may have been killed: `code` is `None` for a
/// signal.
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` and kills it if it runs past `limit`: an error says so.
/// Its output is read as it comes, so a full pipe cannot pass for a hang,
/// and lossily, so bytes from a damaged input cannot fail the reading.
pub fn output_within_or_kill(
    mut cmd: Command,
    limit: std::time::Duration,
) -> Result<Ended, String> {
    use std::io::Read as _;
    let mut child = spawn(&mut cmd, Stdio::piped());
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("bpf-overhead {cmd:?} did not end within {limit:?}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Ok(Ended {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    })
}

/// Bad input found before anything is measured: exit 2 with one line,
/// within a few seconds although the run asked for would take minutes.
#[track_caller]
pub fn refused_early(args: &[&str], expected: &str) {
    let long_run: &[&str] = if args.contains(&"--iterations") {
        &["-m", "raw_tp", "--repeat", "3"]
    } else {
        &["-m", "raw_tp", "--iterations", "100000000", "--repeat", "3"]
    };
    let cmd = command(&[long_run, args].concat());
    let out = output_within(cmd, std::time::Duration::from_secs(20));
    assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    assert!(
        out.stderr.contains(expected),
        "{args:?}: stderr does not say {expected:?}:\n{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

/// A result as bpf-overhead writes it, with fixed figures (made with
/// `--format json` and trimmed): base, kprobe (skipped), raw_tp.
pub fn fixture() -> Value {
    let stats = |median: f64| {
        serde_json::json!({
            "samples": [median * 0.99, median, median * 1.01],
            "median": median, "mean": median, "stddev": median * 0.01,
            "min": median * 0.99, "max": median * 1.01
        })
    };
    let mut doc = serde_json::json!({
        "schema": "bpf-overhead-result", "schema_version": 2, "tool_version": "0.1.0",
        "timestamp": "2026-05-01T12:00:00Z", "kernel_release": "6.18.0",
        "cpu_model": "Test CPU", "cpu": 0, "emulated": null, "iterations": 100000,
        "repeats": 3, "warmup_runs": 1, "order": "bracketed", "prog_stats": true,
        "batch": 100, "prog_work": 0, "producers": 1, "interrupted": null,
        "mechanisms": [
            {"name": "base", "base": "base", "trigger": "task_rename",
             "hook": "nothing attached", "events_per_run": 100000, "status": "ok", "reason": null,
             "k_events_per_sec": stats(1000.0), "ns_per_event": 1000.0,
             "overhead_ns": null, "ratio_to_base": null, "hits": null,
             "prog_ns_per_event": null, "producers": null, "scaling": null,
             "speed_ns": stats(1.5), "overhead_steps": null,
             "detectable_ns": null, "detectable": null},
            {"name": "kprobe", "base": "base", "trigger": "task_rename",
             "hook": "__set_task_comm", "events_per_run": 100000, "status": "skipped",
             "reason": "no kprobes",
             "k_events_per_sec": null, "ns_per_event": null, "overhead_ns": null,
             "ratio_to_base": null, "hits": null, "prog_ns_per_event": null,
             "producers": null, "scaling": null, "speed_ns": null, "overhead_steps": null,
             "detectable_ns": null, "detectable": null},
            {"name": "raw_tp", "base": "base", "trigger": "task_rename",
             "hook": "task/task_rename", "events_per_run": 100000, "status": "ok", "reason": null,
             "k_events_per_sec": stats(900.0), "ns_per_event": 1111.1,
             "overhead_ns": stats(111.1), "ratio_to_base": stats(0.9),
             "hits": [100000, 100000, 100000], "prog_ns_per_event": 20.0,
             "producers": [{"cpu": 0, "k_events_per_sec": stats(450.0),
                            "hits": [100000, 100000, 100000]}],
             "scaling": stats(1.9), "speed_ns": stats(1.5), "overhead_steps": stats(74.1),
             "detectable_ns": 5.5, "detectable": 0.05}
        ]
    });
    // Apart: one more field in the literal exceeds json!'s recursion limit.
    doc["retaken_runs"] = 0.into();
    doc["counting"] = "every".into();
    doc["stacktrace"] = false.into();
    doc["budget_secs"] = 0.0.into();
    doc["run_secs"] = serde_json::Value::Null;
    doc["cpu_wait_s"] = 0.0.into();
    doc["arch"] = "x86_64".into();
    doc["against"] = serde_json::Value::Null;
    doc["objects"] = serde_json::json!([]);
    doc["packet"] = serde_json::Value::Null;
    doc["kernel_config"] = serde_json::Value::Null;
    doc["kernel_build_id"] = serde_json::Value::Null;
    doc["unit"] = "ns".into();
    doc["emulator"] = serde_json::Value::Null;
    doc["mitigations"] = serde_json::json!({"spec_rstack_overflow": "Mitigation: Safe RET"});
    for m in doc["mechanisms"].as_array_mut().unwrap() {
        m["against"] = serde_json::Value::Null;
        m["pairs_ns"] = serde_json::Value::Null;
        m["attach"] = serde_json::Value::Null;
        m["windows"] = serde_json::Value::Null;
        m["counted_events"] = serde_json::Value::Null;
        m["base_windows"] = serde_json::Value::Null;
        m["site"] = serde_json::Value::Null;
    }
    doc["context"] = serde_json::json!({
        "cpu": 0, "secs": 1.5, "steal_pct": 0.0, "other_pct": 1.0,
        "involuntary_switches": 3, "load_start": 0.5, "load_end": 0.6, "mhz": null
    });
    doc
}
