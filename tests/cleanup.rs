//! Nothing is left behind: after every mechanism has run through the
//! pipeline (or failed to load), and even when a run panics while
//! attached, the set of BPF programs in the kernel, the thread's name, its
//! CPU affinity, the process's open files and the mounts (the suite mounts
//! tracefs when it needs it) are as they were before.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use std::num::{NonZeroU64, NonZeroUsize};

use bpf_overhead::document::Status;
use bpf_overhead::measure::{with_run, Options};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::Mechanism;
use libbpf_rs::query::ProgInfoIter;
use nix::sched::{sched_getaffinity, CpuSet};
use nix::sys::prctl;
use nix::unistd::Pid;
use serial_test::serial;

/// IDs of the loaded BPF programs that are ours (prog_* in
/// bpf/overhead.bpf.c; the kernel keeps 15 bytes of a name). Other
/// programs on the machine come and go on their own.
fn our_programs() -> BTreeSet<u32> {
    ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy().starts_with("prog_"))
        .map(|p| p.id)
        .collect()
}

fn affinity() -> Vec<bool> {
    let set = sched_getaffinity(Pid::from_raw(0)).unwrap();
    (0..CpuSet::count())
        .map(|c| set.is_set(c).unwrap())
        .collect()
}

/// Mounts (device, mount point, type). Leaves out the tracefs that the
/// kernel automounts under debugfs the first time anyone walks into
/// /sys/kernel/debug/tracing (libbpf reads tracepoint IDs there when
/// debugfs is mounted): the kernel's doing, and nothing to undo.
fn mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|m| m != "tracefs /sys/kernel/debug/tracing tracefs")
        .collect()
}

fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

struct State {
    programs: BTreeSet<u32>,
    files: usize,
    name: std::ffi::CString,
    affinity: Vec<bool>,
    mounts: Vec<String>,
}

fn state() -> State {
    State {
        programs: our_programs(),
        files: open_files(),
        name: prctl::get_name().unwrap(),
        affinity: affinity(),
        mounts: mounts(),
    }
}

fn assert_unchanged(before: &State, when: &str) {
    // The kernel frees a detached program after an RCU grace period
    // (raw_tp's takes a few ms), so give the IDs a bounded time to go.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = state();
    while after.programs != before.programs && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        after = state();
    }
    assert_eq!(
        after.programs, before.programs,
        "BPF programs left loaded {when}"
    );
    assert_eq!(after.files, before.files, "files left open {when}");
    assert_eq!(after.name, before.name, "thread name not restored {when}");
    assert_eq!(
        after.affinity, before.affinity,
        "CPU affinity not restored {when}"
    );
    assert_eq!(after.mounts, before.mounts, "mounts changed {when}");
}

const ITERATIONS: NonZeroU64 = NonZeroU64::new(1000).unwrap();

fn opts() -> Options {
    Options {
        iterations: ITERATIONS,
        ..Options::default()
    }
}

#[test_log::test]
#[serial]
fn every_mechanism_leaves_nothing_behind() {
    let before = state();
    // Every mechanism, with the BPF-stats run too.
    let plan = Plan {
        iterations: ITERATIONS,
        repeats: NonZeroUsize::MIN,
        budget: Duration::ZERO,
        ..Plan::new(&[])
    };
    let outcomes = pipeline::run(&plan, |_| {}).unwrap().outcomes;
    let mut ran = Vec::new();
    for o in &outcomes {
        match o.status {
            Status::Ok => ran.push(o.mechanism.name()),
            Status::Skipped => println!("({} not supported: {:?})", o.mechanism, o.reason),
            Status::Failed => panic!("{}: {:?}", o.mechanism, o.reason),
        }
    }
    println!("ran: {}", ran.join(" "));
    assert_unchanged(&before, "after running every mechanism");
}

#[test_log::test]
#[serial]
fn a_panic_while_attached_leaves_nothing_behind() {
    // These work on every kernel this suite targets; tp mounts tracefs
    // where it is not mounted.
    for mechanism in ["raw_tp", "tp", "uprobe-nop"].map(|n| Mechanism::by_name(n).unwrap()) {
        let before = state();
        // The deliberate panic is caught below: keep its message and
        // backtrace out of the test output.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let result = catch_unwind(AssertUnwindSafe(|| {
            with_run(mechanism, &opts(), |run| -> bpf_overhead::Result<()> {
                run.measure(NonZeroU64::new(10).unwrap())?;
                // Prove the check below can fail: our program is loaded now.
                assert_ne!(
                    our_programs(),
                    before.programs,
                    "{mechanism}: no program loaded"
                );
                panic!("deliberate panic while {mechanism} is attached");
            })
        }));
        std::panic::set_hook(hook);
        let err = result.expect_err("the closure panics");
        let msg = err
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        assert!(
            msg.starts_with("deliberate panic"),
            "unexpected panic: {msg}"
        );
        assert_unchanged(&before, &format!("after a panic with {mechanism} attached"));
    }
}
