//! What else the machine did on the measuring CPU during a run: time
//! stolen by the hypervisor, time spent on other work, involuntary context
//! switches of the measuring thread, the load and the clock. A baseline
//! and a candidate measured under different conditions are not
//! comparable, and the gate says so.

use std::fs;
use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;

pub use bpf_overhead_common::document::Context;

/// The counters at one moment, taken on the measuring thread.
#[derive(Clone, Debug)]
pub struct Snapshot {
    cpu: usize,
    at: Instant,
    /// (busy, steal, all) in clock ticks, of `cpu`.
    ticks: (u64, u64, u64),
    /// This process's CPU time in ns.
    process_ns: u64,
    involuntary: u64,
    load: f64,
}

/// Takes a snapshot of `cpu`, or `None` where /proc is unreadable.
pub fn snapshot(cpu: usize) -> Option<Snapshot> {
    Some(Snapshot {
        cpu,
        at: Instant::now(),
        ticks: cpu_ticks(&fs::read_to_string("/proc/stat").ok()?, cpu)?,
        process_ns: rusage(UsageWho::RUSAGE_SELF).0,
        involuntary: rusage(UsageWho::RUSAGE_THREAD).1,
        load: load_average()?,
    })
}

/// The context from `before` until now (on the same thread).
pub fn since(before: &Snapshot) -> Option<Context> {
    let now = snapshot(before.cpu)?;
    let tick_ns = 1e9 / clock_ticks_per_sec();
    let all = now.ticks.2.saturating_sub(before.ticks.2) as f64;
    let pct = |ticks: u64| {
        if all > 0.0 {
            100.0 * ticks as f64 / all
        } else {
            0.0
        }
    };
    let busy_ns = now.ticks.0.saturating_sub(before.ticks.0) as f64 * tick_ns;
    let ours_ns = now.process_ns.saturating_sub(before.process_ns) as f64;
    let other = ((busy_ns - ours_ns) / tick_ns).max(0.0) as u64;
    Some(Context {
        cpu: before.cpu,
        secs: now.at.duration_since(before.at).as_secs_f64(),
        steal_pct: pct(now.ticks.1.saturating_sub(before.ticks.1)),
        other_pct: pct(other).min(100.0),
        involuntary_switches: now.involuntary.saturating_sub(before.involuntary),
        load_start: before.load,
        load_end: now.load,
        mhz: mhz(before.cpu),
    })
}

/// `cpuN user nice system idle iowait irq softirq steal ...` from
/// /proc/stat: (busy, steal, all), busy being all but idle, iowait and
/// steal.
fn cpu_ticks(stat: &str, cpu: usize) -> Option<(u64, u64, u64)> {
    let label = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label.as_str()))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let field = |i: usize| v.get(i).copied().unwrap_or(0);
    // Guest time is counted in user time already.
    let all: u64 = (0..8).map(field).sum();
    let steal = field(7);
    let busy = all - field(3) - field(4) - steal;
    Some((busy, steal, all))
}

fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// The calling thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID: the
/// scheduler's own count, to the ns, without time stolen by a hypervisor
/// that reports it).
pub fn thread_cpu_time() -> std::time::Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(std::time::Duration::from)
        .unwrap_or_default()
}

/// (CPU time in ns, involuntary context switches) of `who`.
fn rusage(who: UsageWho) -> (u64, u64) {
    let Ok(ru) = getrusage(who) else {
        return (0, 0);
    };
    let ns = |t: TimeVal| t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1000;
    (
        ns(ru.user_time()) + ns(ru.system_time()),
        ru.involuntary_context_switches() as u64,
    )
}

fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn mhz(cpu: usize) -> Option<f64> {
    let cpufreq = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
    if let Some(khz) = fs::read_to_string(cpufreq)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Some(khz / 1000.0);
    }
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    info.split("\n\n")
        .find(|block| {
            block.lines().any(|l| {
                l.strip_prefix("processor")
                    .and_then(|r| r.trim().strip_prefix(':'))
                    .is_some_and(|n| n.trim() == cpu.to_string())
            })
        })?
        .lines()
        .find_map(|l| l.strip_prefix("cpu MHz"))
        .and_then(|r| r.trim().strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_of_one_cpu() {
        let stat = "cpu  88765 0 12616 110636 567 0 188 23 0 0\n\
                    cpu0 44439 0 5827 56009 130 0 73 11 0 0\n\
                    cpu1 44326 0 6789 54626 437 0 115 12 0 0\n";
        let (busy, steal, all) = cpu_ticks(stat, 1).unwrap();
        assert_eq!(steal, 12);
        assert_eq!(all, 44326 + 6789 + 54626 + 437 + 115 + 12);
        assert_eq!(busy, 44326 + 6789 + 115);
        assert_eq!(cpu_ticks(stat, 2), None);
    }

    #[test]
    fn a_snapshot_and_its_context() {
        let before = snapshot(0).expect("/proc is readable");
        let c = since(&before).unwrap();
        assert!(c.steal_pct >= 0.0 && c.other_pct >= 0.0 && c.other_pct <= 100.0);
        assert!(c.load_start >= 0.0);
    }
}
