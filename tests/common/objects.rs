//! Helpers of the tests that run the suite's own BPF objects
//! (tests/objects/, built by build.rs) through `--object`.

use serde_json::Value;

use super::cli::run;

/// One of the suite's objects.
pub fn object(name: &str) -> String {
    format!("{}/{name}.bpf.o", env!("TEST_OBJECTS_DIR"))
}

/// The names, as the kernel keeps them (15 bytes), of every program of
/// the suite's objects: none may stay loaded after a run ends.
const OUR_PROGRAMS: &[&str] = &[
    "enter_getpid",
    "exit_getppid",
    "enter_openat",
    "enter_read",
    "any_syscall",
    "on_fork",
    "parse_udp",
    "ingress",
    "out_of_bounds",
    "ks_getpid",
    "kp_getppid",
    "fe_read",
    "trace_openat",
    "lsm_file_open",
    "classify",
    "keep_udp",
    "dissect",
    "count_call",
    "in_getpid",
    "out_getpid",
    "in_getppid",
    "out_getppid",
    "in_openat",
    "out_openat",
    "in_read",
    "out_read",
    "in_close",
    "out_close",
    "count_pinned",
    "spin",
    "too_large",
    "gpl_helper",
    "sock_named",
    "good_one",
    "bad_one",
];

/// The loaded programs of the system named as ours.
pub fn loaded_now() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|p| p.name.to_string_lossy().into_owned())
        .filter(|n| OUR_PROGRAMS.contains(&n.as_str()))
        .collect()
}

/// [`loaded_now`] once the kernel has freed what the last run closed: it
/// frees a program after an RCU grace period, not at the close.
pub fn ours_loaded() -> Vec<String> {
    for _ in 0..50 {
        let now = loaded_now();
        if now.is_empty() {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    loaded_now()
}

/// Why a test of the suite's objects skips where it is not root
/// ([`root_or_skip`](super::system::root_or_skip)).
pub const NEEDS_ROOT: &str = "needs root to load BPF programs";

/// Every run of `m` reached its program once an event.
#[track_caller]
pub fn hits_are_events(m: &Value) {
    let events = m["events_per_run"].as_u64().unwrap();
    let hits = m["hits"].as_array().unwrap();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.as_u64() == Some(events)),
        "{m:#}"
    );
}

/// A [`short`] run of the suite's object `name`, which must exit 0: its
/// result document.
#[track_caller]
pub fn measured(name: &str) -> Value {
    let out = run(&short(&["--object", &object(name), "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// A short run: enough to check what the command does, not its figures
/// (and no budget: [`run`] gives every run `--budget 0`). One round after
/// the warm-up: each round of a tracepoint program waits ~0.1 s for RCU
/// on detach, and each XDP test run twice for the dispatcher's update.
pub fn short<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&["--iterations", "2000", "--repeat", "1"], extra].concat()
}
