//! Nothing is left behind: after a whole run through the pipeline, and
//! even when a run panics while attached, the set of BPF programs in the
//! kernel, the thread's name, its CPU affinity, the process's open files
//! and the mounts (the suite mounts tracefs when it needs it) are as they
//! were before. tests/overhead.rs checks all but the mounts after each
//! mechanism's run.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use std::num::{NonZeroU64, NonZeroUsize};

use bpf_overhead::document::Status;
use bpf_overhead::measure::kernel::host::emulated;
use bpf_overhead::measure::{cpu::cpulock, with_attached, Options, Privileged, Support};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::Mechanism;
use libbpf_rs::query::ProgInfoIter;
use serial_test::serial;

mod common;
use common::procs;
use common::procs::BpfFds;
use common::system::in_private_mounts;

/// IDs of the BPF programs this process holds. Not the machine's list:
/// another suite or benchmark running at the same time loads the same
/// `prog_*` programs, and they are not ours to account for.
fn our_programs() -> BTreeSet<u32> {
    BpfFds::of(std::process::id()).programs
}

/// Whether any of `ids` is still loaded, machine-wide.
fn still_loaded(ids: &BTreeSet<u32>) -> Vec<u32> {
    ProgInfoIter::default()
        .map(|p| p.id)
        .filter(|id| ids.contains(id))
        .collect()
}

/// Mounts as the calling thread sees them: in a mount namespace of the
/// test's own ([`in_own_mount_namespace`]), what others mount meanwhile (a
/// second suite, a user, a CI job) does not show. Leaves out the tracefs
/// that the kernel automounts under debugfs the first time anyone walks
/// into /sys/kernel/debug/tracing (libbpf reads tracepoint IDs there when
/// debugfs is mounted): the kernel's doing, and nothing to undo.
fn mounts() -> Vec<String> {
    procs::mounts()
        .into_iter()
        .filter(|m| m != "tracefs /sys/kernel/debug/tracing tracefs")
        .collect()
}

/// Runs the test `f` in a private copy of its mount namespace
/// ([`in_private_mounts`]), so that a mount by another process cannot
/// show in [`mounts`], while whatever the run mounts in the namespaces it
/// makes from this one would if it leaked. Not where a namespace of its
/// own makes /proc/self/exe read under another root (the chrooted VM
/// guest, where nothing else runs): libbpf's USDT attach on kernels
/// without BPF cookies (5.10) needs that path and /proc/<pid>/maps to
/// agree; there `f` runs on the test's thread. Tried on a throwaway
/// thread first.
fn in_own_mount_namespace(f: impl FnOnce() + Send) {
    let exe = || std::fs::read_link("/proc/self/exe").ok();
    let here = exe();
    let there = in_private_mounts(exe);
    if there == here {
        in_private_mounts(f);
    } else {
        println!("(mounts compared in the shared namespace: here one of our own reads /proc/self/exe as {there:?})");
        f();
    }
}

struct State {
    footprint: procs::Footprint,
    mounts: Vec<String>,
}

fn state() -> State {
    State {
        footprint: procs::Footprint::now(),
        mounts: mounts(),
    }
}

#[track_caller]
fn assert_unchanged(before: &State, when: &str) {
    if let Some(changed) = before.footprint.changed() {
        panic!("{when}: {changed}");
    }
    assert_eq!(mounts(), before.mounts, "mounts changed {when}");
}

const ITERATIONS: NonZeroU64 = NonZeroU64::new(1000).unwrap();

fn opts() -> Options {
    Options {
        iterations: ITERATIONS,
        ..Options::default()
    }
}

/// A whole run through the pipeline, with its BPF-stats run,
/// of a mechanism of each way of attaching that this host has: a raw
/// tracepoint, a tracepoint (which mounts tracefs where it is not), a
/// uprobe, a uprobe link, the kernel loop. tests/overhead.rs checks the
/// same without the mounts after every mechanism's run.
#[test_log::test]
#[serial]
fn a_run_with_bpf_stats_leaves_nothing_behind() {
    in_own_mount_namespace(|| {
        let before = state();
        let mechanisms = [
            "raw_tp",
            "tp",
            "uprobe-nop",
            "uprobe.multi-nop",
            "raw_tp-loop",
        ]
        .map(|n| Mechanism::by_name(n).unwrap());
        let plan = Plan {
            options: opts(),
            run_time: None,
            repeats: NonZeroUsize::MIN,
            budget: Duration::ZERO,
            // The warm-up is one more run of the same kind.
            warmup: false,
            ..Plan::new(&mechanisms, emulated())
        };
        assert!(plan.stats_run);
        let privileged = Privileged::check(&plan.mechanisms).unwrap();
        let per_mechanism = pipeline::gather(&plan, &privileged, |_| {})
            .unwrap()
            .per_mechanism;
        let mut ran = Vec::new();
        for o in &per_mechanism {
            match o.status {
                Status::Ok => ran.push(o.mechanism.name()),
                Status::Skipped => println!("({} not supported: {:?})", o.mechanism, o.reason),
                Status::Failed => panic!("{}: {:?}", o.mechanism, o.reason),
            }
        }
        println!("ran: {}", ran.join(" "));
        assert_unchanged(&before, "after a run with BPF stats");
    });
}

#[test_log::test]
#[serial]
fn a_panic_while_attached_leaves_nothing_behind() {
    in_own_mount_namespace(|| {
        // A measuring run, as the pipeline's: one per CPU at a time.
        let cpus = cpulock::cpus_of(None, 1).unwrap();
        let _cpu = cpulock::hold(&cpus, cpulock::Wait::Yes).unwrap();
        // These work on every kernel this suite targets; tp mounts tracefs
        // where it is not mounted.
        for mechanism in ["raw_tp", "tp", "uprobe-nop"].map(|n| Mechanism::by_name(n).unwrap()) {
            let before = state();
            let held = our_programs();
            let attached = std::cell::RefCell::new(BTreeSet::new());
            // The deliberate panic is caught below: keep its message and
            // backtrace out of the test output.
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(|_| {}));
            let result = catch_unwind(AssertUnwindSafe(|| {
                let support = Support::one(mechanism).unwrap();
                let ready = support.ready(mechanism).unwrap();
                with_attached(ready, &opts(), |run| -> bpf_overhead::Result<()> {
                    run.time_run(NonZeroU64::new(10).unwrap())?;
                    // Prove the check below can fail: our program is loaded now.
                    *attached.borrow_mut() = our_programs();
                    assert_ne!(*attached.borrow(), held, "{mechanism}: no program loaded");
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
            let when = format!("after a panic with {mechanism} attached");
            assert_unchanged(&before, &when);
            // And the kernel freed them (after an RCU grace period).
            let ours: BTreeSet<u32> = attached.take().difference(&held).copied().collect();
            let deadline = Instant::now() + Duration::from_secs(5);
            while !still_loaded(&ours).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                still_loaded(&ours).is_empty(),
                "BPF programs left in the kernel {when}"
            );
        }
    });
}
