//! A guest kernel that crashes during a mechanism: which mechanism, the
//! first lines of its oops, and its `not ok` in the suite's KTAP.
//!
//! The guest appends to the output share's [`PROGRESS_FILE`] (each write
//! reaches the host before it returns): the job script a [`STEP`] line
//! before each step and a [`DONE`] line after it, the suite and the command
//! each mechanism's name before setting it up (`BPF_OVERHEAD_PROGRESS`,
//! src/measure/kernel/progress.rs). A boot that ends without the guest's
//! exit status while a step is running crashed its last mechanism.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::vm::{Boot, End};

/// The progress file's name in the output share.
pub const PROGRESS_FILE: &str = "progress";
/// The job script's line before a step (a test binary, bpf-overhead).
pub const STEP: &str = "vmtest-step ";
/// ... and after it.
pub const DONE: &str = "vmtest-done ";
/// The step whose tests are one per mechanism, and which resumes itself
/// after a crash (it leaves out what its KTAP file has a result for).
pub const SUITE: &str = "overhead";
/// How much of an oops is kept.
pub const OOPS_LINES: usize = 12;

/// One crash: what crashed the kernel, and how it said so.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Crash {
    /// The mechanism last started (`-m`'s name).
    pub mechanism: String,
    /// The step that ran it: a test binary's name or bpf-overhead.
    pub step: String,
    /// Which boot, from 1.
    pub boot: u32,
    /// The oops's first lines from the serial console, timestamps taken
    /// off; empty when the guest stopped answering without one.
    pub oops: Vec<String>,
}

impl Crash {
    /// `NAME crashed the kernel: <the oops's first line>`.
    pub fn summary(&self) -> String {
        let first = self
            .oops
            .first()
            .map_or("no oops on the console: the guest stopped answering", |l| {
                l.as_str()
            });
        format!("{} crashed the kernel: {first}", self.mechanism)
    }
}

/// The step running and its mechanism last started, if a step was running
/// and had started one.
pub fn running(progress: &str) -> Option<(String, String)> {
    let (mut step, mut mechanism) = (None, None);
    for l in progress.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(s) = l.strip_prefix(STEP) {
            (step, mechanism) = (Some(s), None);
        } else if l.starts_with(DONE) {
            (step, mechanism) = (None, None);
        } else {
            mechanism = Some(l);
        }
    }
    Some((step?.to_owned(), mechanism?.to_owned()))
}

/// The steps the progress file says finished.
pub fn done(progress: &str) -> Vec<String> {
    progress
        .lines()
        .filter_map(|l| l.trim().strip_prefix(DONE))
        .map(String::from)
        .collect()
}

/// The crash of boot number `n`: it ended (a panic powers the guest off, a
/// hang meets the timeout) without the guest's exit status, after the
/// guest was up, during a mechanism.
pub fn find(o: &Boot, status: Option<&str>, progress: &str, n: u32) -> Option<Crash> {
    let ended = matches!(o.end, End::Exited(_) | End::TimedOut);
    let no_status = status.is_none_or(|s| s.trim().is_empty());
    if !ended || !no_status || o.up.is_none() {
        return None;
    }
    let (step, mechanism) = running(progress)?;
    Some(Crash {
        mechanism,
        step,
        boot: n,
        oops: oops(&String::from_utf8_lossy(&o.log)),
    })
}

/// The first [`OOPS_LINES`] lines of the console's first oops, panic,
/// fault or RCU stall, without their timestamps; none when it has none.
pub fn oops(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().map(message).collect();
    let Some(start) = lines.iter().position(|l| starts_an_oops(l)) else {
        return Vec::new();
    };
    lines[start..]
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .take(OOPS_LINES)
        .map(String::from)
        .collect()
}

/// A console line without its printk timestamp (`[   12.345678] `).
fn message(line: &str) -> &str {
    let l = line.trim_start();
    match l.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((t, rest)) if t.trim().parse::<f64>().is_ok() => rest.trim_start(),
        _ => l,
    }
}

/// How the kernels from 5.10 to 7.x begin what ends a guest: x86's
/// `BUG:`, `Oops:`, `general protection fault`, double faults, `kernel BUG
/// at`, arm64's `Unable to handle kernel`, a panic, a soft lockup and RCU
/// stalls (which do not end the guest, but explain a hang).
fn starts_an_oops(msg: &str) -> bool {
    const STARTS: &[&str] = &[
        "BUG: ",
        "watchdog: BUG: ",
        "Oops",
        "general protection fault",
        "Kernel panic - not syncing",
        "kernel BUG at ",
        "traps: PANIC: double fault",
        "PANIC: double fault",
        "Unable to handle kernel",
        "Internal error: Oops",
        "rcu: INFO: rcu_",
        "INFO: rcu_",
        "rcu: INFO: ",
    ];
    STARTS.iter().any(|s| msg.starts_with(s))
}

/// Appends the crash's `not ok` to the suite's KTAP document at `path`,
/// numbered after its results, the oops as its diagnostics. The suite
/// starts the document before its first mechanism, so a crash finds it.
pub fn append_ktap(path: &Path, c: &Crash) -> Result<()> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let n = text
        .lines()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "))
        .count()
        + 1;
    let mut add = format!("# {} crashed the kernel (boot {})\n", c.mechanism, c.boot);
    for l in &c.oops {
        add += &format!("# {l}\n");
    }
    add += &format!("not ok {n} {}\n", c.mechanism.replace('#', "_"));
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    std::io::Write::write_all(&mut f, add.as_bytes())
        .with_context(|| format!("appending to {}", path.display()))
}

/// The exit status and why, crashes first: a run where a mechanism
/// crashed the kernel fails (the environment's status, unless it failed
/// otherwise too): a VM that failed, not a regression.
pub fn judged(crashed: &[Crash], rc: i32, why: Vec<String>) -> (i32, Vec<String>) {
    if crashed.is_empty() {
        return (rc, why);
    }
    let mut all: Vec<String> = crashed.iter().map(Crash::summary).collect();
    all.extend(why);
    let failed = i32::from(crate::util::exit_status::ENVIRONMENT);
    (if rc == 0 { failed } else { rc }, all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::tests::boot;

    /// 6.12's sysrq crash (what vmtest's own test injects).
    const SYSRQ_6_12: &str = "\
[   41.203912] sysrq: Trigger a crash
[   41.204305] Kernel panic - not syncing: sysrq triggered crash
[   41.204790] CPU: 0 UID: 0 PID: 213 Comm: overhead-b6c3 Not tainted 6.12.118+deb13-amd64 #1
[   41.205101] Call Trace:
[   41.205200]  <TASK>
[   41.205300]  panic+0x34b/0x380
";
    /// 5.10's sysrq crash: a NULL write, an oops, then the panic.
    const NULL_5_10: &str = "\
test kprobe ... ok
[   12.000001] sysrq: SysRq : Trigger a crash
[   12.000002] BUG: kernel NULL pointer dereference, address: 0000000000000000
[   12.000003] #PF: supervisor write access in kernel mode
[   12.000004] Oops: 0002 [#1] SMP NOPTI
[   12.000005] RIP: 0010:sysrq_handle_crash+0x16/0x20
[   12.000006] Kernel panic - not syncing: Fatal exception
";
    const GPF_6_1: &str = "\
[  300.1] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI
[  300.2] CPU: 1 PID: 900 Comm: bpf-overhead Not tainted 6.1.0-57-amd64 #1  Debian 6.1.192-1
[  300.3] RIP: 0010:ftrace_modify_all_code+0x5/0x130
";
    const DOUBLE_FAULT: &str = "\
[   99.0] traps: PANIC: double fault, error_code: 0x0
[   99.1] double fault: 0000 [#1] PREEMPT SMP NOPTI
[   99.2] RIP: 0010:int3_exception_handler+0x1/0x20
";
    const OOPS_7_3: &str = "\
[    5.5] Oops: general protection fault, probably for non-canonical address 0x1: 0000 [#1] SMP
[    5.6] CPU: 0 UID: 0 PID: 1 Comm: sh Not tainted 7.3.4+deb13-amd64
";
    const RCU_STALL: &str = "\
[  600.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[  600.1] rcu: 	1-...!: (1 GPs behind) idle=abc/1/0x4000000000000000
[  600.2] 	(detected by 0, t=21002 jiffies, g=1234, q=56 ncpus=2)
";
    const RCU_STALL_5_10: &str = "\
[  600.0] INFO: rcu_sched self-detected stall on CPU
[  600.1] 	1-....: (21000 ticks this GP)
";
    const SOFT_LOCKUP: &str = "\
[  200.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [bpf-overhead:321]
[  200.1] Modules linked in: 9p
";
    const NO_TIMESTAMPS: &str = "\
Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000
Internal error: Oops: 0000000096000046 [#1] SMP
";

    #[test]
    fn oopses_of_several_kernels() {
        let first = |log: &str| oops(log).first().cloned().unwrap_or_default();
        assert_eq!(
            first(SYSRQ_6_12),
            "Kernel panic - not syncing: sysrq triggered crash"
        );
        assert_eq!(
            oops(SYSRQ_6_12)[1],
            "CPU: 0 UID: 0 PID: 213 Comm: overhead-b6c3 Not tainted 6.12.118+deb13-amd64 #1"
        );
        assert_eq!(
            first(NULL_5_10),
            "BUG: kernel NULL pointer dereference, address: 0000000000000000"
        );
        assert_eq!(oops(NULL_5_10).len(), 5, "up to the end of the log");
        assert!(first(GPF_6_1).starts_with("general protection fault, probably"));
        assert_eq!(
            first(DOUBLE_FAULT),
            "traps: PANIC: double fault, error_code: 0x0"
        );
        assert!(first(OOPS_7_3).starts_with("Oops: general protection fault"));
        assert_eq!(
            first(RCU_STALL),
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"
        );
        assert_eq!(
            first(RCU_STALL_5_10),
            "INFO: rcu_sched self-detected stall on CPU"
        );
        assert!(first(SOFT_LOCKUP).starts_with("watchdog: BUG: soft lockup - CPU#1"));
        assert!(first(NO_TIMESTAMPS).starts_with("Unable to handle kernel NULL"));
        // No output, or none that is an oops: nothing.
        assert!(oops("").is_empty());
        assert!(oops("[ 1.0] Linux version 6.12\ntest fentry ... ok\n").is_empty());
        let long: String = (0..40)
            .map(|i| format!("[ 1.{i}] BUG: line {i}\n"))
            .collect();
        assert_eq!(oops(&long).len(), OOPS_LINES);
    }

    const PROGRESS: &str = "vmtest-step overhead\nbase\nbase\nkprobe\n";

    #[test]
    fn the_progress_file_names_the_mechanism_running() {
        assert_eq!(
            running(PROGRESS),
            Some(("overhead".into(), "kprobe".into()))
        );
        let finished = format!("{PROGRESS}vmtest-done overhead\nvmtest-step cleanup\n");
        assert_eq!(running(&finished), None, "a step, but no mechanism yet");
        assert_eq!(done(&finished), ["overhead"]);
        let command = format!("{finished}vmtest-done cleanup\nvmtest-step bpf-overhead\nbase\n");
        assert_eq!(
            running(&command),
            Some(("bpf-overhead".into(), "base".into()))
        );
        assert_eq!(running(""), None);
        assert_eq!(running("kprobe\n"), None, "no step: not a job's");
    }

    #[test]
    fn a_boot_without_status_during_a_mechanism_crashed() {
        let c = find(&boot(End::Exited(0), SYSRQ_6_12, true), None, PROGRESS, 1).unwrap();
        assert_eq!(
            (c.mechanism.as_str(), c.step.as_str(), c.boot),
            ("kprobe", "overhead", 1)
        );
        assert_eq!(
            c.summary(),
            "kprobe crashed the kernel: Kernel panic - not syncing: sysrq triggered crash"
        );
        // A hang: the timeout, no oops.
        let hung = find(&boot(End::TimedOut, "test x\n", true), None, PROGRESS, 2).unwrap();
        assert!(hung.oops.is_empty());
        assert!(hung
            .summary()
            .ends_with("no oops on the console: the guest stopped answering"));
        // An exit status, an interrupt, a guest never up, no mechanism: no crash.
        let up = boot(End::Exited(0), SYSRQ_6_12, true);
        assert_eq!(find(&up, Some("0\n"), PROGRESS, 1), None);
        assert_eq!(
            find(&boot(End::Signalled(2), "", true), None, PROGRESS, 1),
            None
        );
        assert_eq!(
            find(&boot(End::Exited(0), SYSRQ_6_12, false), None, PROGRESS, 1),
            None
        );
        assert_eq!(find(&up, None, "vmtest-step overhead\n", 1), None);
    }

    #[test]
    fn the_crash_is_a_numbered_not_ok_with_its_oops() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("suite.ktap");
        fs::write(&f, "KTAP version 1\n1..3\n# suite\nok 1 base\n").unwrap();
        let c = find(&boot(End::Exited(0), SYSRQ_6_12, true), None, PROGRESS, 1).unwrap();
        append_ktap(&f, &c).unwrap();
        assert_eq!(
            fs::read_to_string(&f).unwrap(),
            "KTAP version 1\n1..3\n# suite\nok 1 base\n\
             # kprobe crashed the kernel (boot 1)\n\
             # Kernel panic - not syncing: sysrq triggered crash\n\
             # CPU: 0 UID: 0 PID: 213 Comm: overhead-b6c3 Not tainted 6.12.118+deb13-amd64 #1\n\
             # Call Trace:\n# <TASK>\n# panic+0x34b/0x380\nnot ok 2 kprobe\n"
        );
        assert!(append_ktap(&dir.path().join("none"), &c).is_err());
    }

    #[test]
    fn a_crash_fails_the_run_and_says_so_first() {
        assert_eq!(judged(&[], 0, vec![]), (0, vec![]));
        let c = Crash {
            mechanism: "kprobe".into(),
            step: "overhead".into(),
            boot: 1,
            oops: vec!["Kernel panic - not syncing: sysrq triggered crash".into()],
        };
        let (rc, why) = judged(std::slice::from_ref(&c), 0, vec!["note".into()]);
        assert_eq!(rc, 69);
        assert_eq!(
            why,
            [
                "kprobe crashed the kernel: Kernel panic - not syncing: sysrq triggered crash",
                "note"
            ]
        );
        assert_eq!(judged(&[c], 101, vec![]).0, 101);
    }
}
