//! The measurement: pin to one CPU, attach, fire the trigger N times back
//! to back, read the clock and the hit counter. As in the kernel's
//! test_overhead, the rate is N / elapsed.

use std::fs;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::{gettid, Pid};

use crate::error::{Error, Result};
use crate::mechanism::{Attached, Mechanism};
use crate::sys;
use crate::trigger::Armed;

/// test_overhead's MAX_CNT.
pub const DEFAULT_ITERATIONS: u64 = 100_000;

#[derive(Clone, Debug)]
pub struct Options {
    /// Events per measurement.
    pub iterations: u64,
    /// CPU to pin to; `None`: CPU 0, or the first allowed CPU if 0 is not.
    pub cpu: Option<usize>,
    /// Also read the program's own run time from the kernel's BPF stats.
    /// Enabling them adds two clock reads per program run, so measurements
    /// with and without them are not comparable.
    pub prog_stats: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            iterations: DEFAULT_ITERATIONS,
            cpu: None,
            prog_stats: false,
        }
    }
}

/// One timed run of one mechanism.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub mechanism: Mechanism,
    pub iterations: u64,
    pub elapsed: Duration,
    /// What the BPF program counted from our thread; `None` for a base.
    pub hits: Option<u64>,
    /// Kernel-measured program run time and run count (with `prog_stats`).
    pub prog_run: Option<(u64, u64)>,
    /// The CPU the run was pinned to.
    pub cpu: usize,
}

impl Sample {
    pub fn events_per_sec(&self) -> f64 {
        self.iterations as f64 / self.elapsed.as_secs_f64()
    }

    /// test_overhead's figure: `MAX_CNT * 1000000 / elapsed_ns`, truncated.
    pub fn k_events_per_sec(&self) -> u64 {
        let ns = self.elapsed.as_nanos().max(1);
        (self.iterations as u128 * 1_000_000 / ns) as u64
    }

    pub fn ns_per_event(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.iterations as f64
    }

    /// The program's own run time per event, from the kernel's stats.
    pub fn prog_ns_per_event(&self) -> Option<f64> {
        let (ns, cnt) = self.prog_run?;
        (cnt > 0).then(|| ns as f64 / cnt as f64)
    }
}

/// Pins the calling thread to one CPU and restores its affinity on drop.
pub struct CpuPin {
    saved: CpuSet,
    pub cpu: usize,
}

impl CpuPin {
    pub fn new(cpu: Option<usize>) -> Result<Self> {
        let me = Pid::from_raw(0);
        let saved = sched_getaffinity(me)
            .map_err(|e| Error::environment(format!("sched_getaffinity failed: {e}")))?;
        let allowed: Vec<usize> = (0..CpuSet::count())
            .filter(|&c| saved.is_set(c).unwrap_or(false))
            .collect();
        let cpu = match cpu {
            Some(c) => {
                check_cpu_online(c)?;
                if !allowed.contains(&c) {
                    return Err(Error::environment(format!(
                        "CPU {c} is not in this thread's allowed CPUs ({}): pick one of those",
                        list(&allowed)
                    )));
                }
                c
            }
            None if allowed.contains(&0) => 0,
            None => {
                let first = *allowed
                    .first()
                    .ok_or_else(|| Error::environment("this thread may run on no CPU"))?;
                eprintln!("bpf-overhead: CPU 0 is not in the allowed set: pinning to CPU {first}");
                first
            }
        };
        let mut one = CpuSet::new();
        one.set(cpu)
            .map_err(|e| Error::environment(format!("CPU {cpu}: {e}")))?;
        sched_setaffinity(me, &one)
            .map_err(|e| Error::environment(format!("pinning to CPU {cpu} failed: {e}")))?;
        Ok(Self { saved, cpu })
    }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        if let Err(e) = sched_setaffinity(Pid::from_raw(0), &self.saved) {
            eprintln!("bpf-overhead: could not restore CPU affinity: {e}");
        }
    }
}

/// The online CPUs, from /sys/devices/system/cpu/online ("0-3,6").
pub fn online_cpus() -> Result<Vec<usize>> {
    const ONLINE: &str = "/sys/devices/system/cpu/online";
    let text = fs::read_to_string(ONLINE)
        .map_err(|e| Error::environment(format!("cannot read {ONLINE}: {e}")))?;
    parse_cpu_list(text.trim())
        .ok_or_else(|| Error::environment(format!("cannot parse {ONLINE}: {text:?}")))
}

pub fn check_cpu_online(cpu: usize) -> Result<()> {
    let online = online_cpus()?;
    if online.contains(&cpu) {
        Ok(())
    } else {
        Err(Error::environment(format!(
            "CPU {cpu} is offline or does not exist (online CPUs: {}): pick one of those",
            list(&online)
        )))
    }
}

fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A mechanism attached and its trigger armed on the calling thread, pinned
/// to one CPU. Lives only inside [`with_run`], which undoes everything.
pub struct Run<'a> {
    mechanism: Mechanism,
    attached: Option<Attached<'a>>,
    armed: &'a mut Armed,
    prog_stats: bool,
    cpu: usize,
}

impl Run<'_> {
    /// Fires `iterations` events and times them.
    pub fn measure(&mut self, iterations: u64) -> Result<Sample> {
        if let Some(a) = self.attached.as_mut() {
            // Attaching may have hit the probe already (fmod_ret sees
            // every write(2) of this thread, including log output).
            a.reset_hits();
        }
        let before = self.attached.as_ref().and_then(|a| a.prog_stats());
        let start = Instant::now();
        self.armed.fire(iterations)?;
        let elapsed = start.elapsed();
        // Read the counter before anything else runs on this thread:
        // restoring the thread name, for one, fires the probe again.
        let hits = self.attached.as_mut().map(|a| a.hits());
        let after = self.attached.as_ref().and_then(|a| a.prog_stats());
        self.armed.verify()?;
        check_hits(self.mechanism, hits, iterations)?;
        let prog_run = match (self.prog_stats, before, after) {
            (true, Some((t0, c0)), Some((t1, c1))) => Some((t1 - t0, c1 - c0)),
            _ => None,
        };
        Ok(Sample {
            mechanism: self.mechanism,
            iterations,
            elapsed,
            hits,
            prog_run,
            cpu: self.cpu,
        })
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    pub fn cpu(&self) -> usize {
        self.cpu
    }
}

/// Each mechanism fires exactly once per event of its trigger, and the
/// program counts only this thread: any other count is a failure. (A base
/// has no program: `None`.)
fn check_hits(mechanism: Mechanism, hits: Option<u64>, iterations: u64) -> Result<()> {
    match hits {
        Some(hits) if hits != iterations => Err(Error::failed(format!(
            "{mechanism}: the BPF program counted {hits} hits from this thread for {iterations} events"
        ))),
        _ => Ok(()),
    }
}

/// Sets up `mechanism` (privilege and feature checks, CPU pin, trigger,
/// load and attach), hands the run to `f`, then undoes all of it, in
/// reverse order, however `f` ends (error or panic included).
pub fn with_run<R>(
    mechanism: Mechanism,
    opts: &Options,
    f: impl FnOnce(&mut Run<'_>) -> Result<R>,
) -> Result<R> {
    if opts.iterations == 0 {
        return Err(Error::environment("iterations must be at least 1"));
    }
    sys::check_privileges()?;
    let _tracefs = mechanism.check_support()?;
    let _stats = if opts.prog_stats && !mechanism.is_base() {
        Some(sys::enable_run_time_stats()?)
    } else {
        None
    };
    let pin = CpuPin::new(opts.cpu)?;
    let mut armed = mechanism.trigger().arm()?;
    let tid = gettid().as_raw() as u32;
    let mut storage = MaybeUninit::uninit();
    let attached = mechanism.attach(&mut storage, tid)?;
    let mut run = Run {
        mechanism,
        attached,
        armed: &mut armed,
        prog_stats: opts.prog_stats,
        cpu: pin.cpu,
    };
    f(&mut run)
}

/// One measurement of `mechanism` with `opts`.
pub fn measure(mechanism: Mechanism, opts: &Options) -> Result<Sample> {
    with_run(mechanism, opts, |run| run.measure(opts.iterations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_hit_counts_fail() {
        assert!(check_hits(Mechanism::RawTp, Some(1000), 1000).is_ok());
        assert!(check_hits(Mechanism::ALL[0], None, 1000).is_ok());
        let err = check_hits(Mechanism::RawTp, Some(999), 1000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("999 hits") && err.contains("1000 events"),
            "{err}"
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0-x"), None);
    }

    #[test]
    fn rates_follow_test_overhead() {
        let s = Sample {
            mechanism: Mechanism::ALL[0],
            iterations: 100_000,
            elapsed: Duration::from_nanos(36_900_000),
            hits: None,
            prog_run: Some((5_000_000, 100_000)),
            cpu: 0,
        };
        assert_eq!(s.k_events_per_sec(), 2710); // 100000 * 1e6 / 36.9e6
        assert!((s.ns_per_event() - 369.0).abs() < 1e-9);
        assert_eq!(s.prog_ns_per_event(), Some(50.0));
    }
}
