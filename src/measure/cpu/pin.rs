//! The CPU a run measures on: chosen from the allowed and online CPUs,
//! pinned for as long as a [`CpuPin`] lives, and the CPUs its producers
//! take beside it.

use std::fs;
use std::sync::Once;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::measure::error::{Error, Result};

/// Pins the calling thread to one CPU and restores its affinity on drop.
pub struct CpuPin {
    saved: CpuSet,
    pub cpu: usize,
    /// The CPUs the thread was allowed before.
    pub allowed: Vec<usize>,
}

/// Says, once per process, that a measurement without `--cpu` pins to
/// `cpu` because CPU 0 is not allowed. Only where timed rounds start, not
/// at every pin: a listing or a bad input's one line stays one line.
pub fn note_default_cpu(asked: Option<usize>, cpu: usize) {
    static SAID: Once = Once::new();
    if asked.is_none() && cpu != 0 {
        SAID.call_once(|| log::warn!("CPU 0 is not in the allowed set: pinning to CPU {cpu}"));
    }
}

/// The calling thread's affinity, and the CPUs in it.
fn affinity() -> Result<(CpuSet, Vec<usize>)> {
    let set = sched_getaffinity(Pid::from_raw(0))
        .map_err(|e| Error::environment(format!("sched_getaffinity failed: {e}")))?;
    let cpus = (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect();
    Ok((set, cpus))
}

/// The CPUs the calling thread may run on, without pinning it.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    affinity().map(|(_, cpus)| cpus)
}

/// The CPU a run with `--cpu` `asked` measures on: `asked`, checked
/// online and allowed, else 0 or the first allowed CPU.
pub fn choose(asked: Option<usize>) -> Result<usize> {
    choose_in(asked, &allowed_cpus()?)
}

fn choose_in(asked: Option<usize>, allowed: &[usize]) -> Result<usize> {
    match asked {
        Some(c) => {
            check_cpu_online(c)?;
            if !allowed.contains(&c) {
                return Err(Error::environment(format!(
                    "CPU {c} is not in this thread's allowed CPUs ({}): pick one of those",
                    list(allowed)
                )));
            }
            Ok(c)
        }
        None if allowed.contains(&0) => Ok(0),
        None => allowed
            .first()
            .copied()
            .ok_or_else(|| Error::environment("this thread may run on no CPU")),
    }
}

impl CpuPin {
    /// Pins the calling thread to [`choose`]'s CPU.
    pub fn new(cpu: Option<usize>) -> Result<Self> {
        let (saved, allowed) = affinity()?;
        let cpu = choose_in(cpu, &allowed)?;
        let mut one = CpuSet::new();
        one.set(cpu)
            .map_err(|e| Error::environment(format!("CPU {cpu}: {e}")))?;
        sched_setaffinity(Pid::from_raw(0), &one)
            .map_err(|e| Error::environment(format!("pinning to CPU {cpu} failed: {e}")))?;
        Ok(Self {
            saved,
            cpu,
            allowed,
        })
    }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        if let Err(e) = sched_setaffinity(Pid::from_raw(0), &self.saved) {
            log::warn!("could not restore CPU affinity: {e}");
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

pub(crate) fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs for `n` producers: `first` (where the measuring thread is
/// pinned), then the other CPUs this thread may use, in order.
pub(crate) fn producer_cpus(first: usize, allowed: &[usize], n: usize) -> Result<Vec<usize>> {
    let cpus: Vec<usize> = std::iter::once(first)
        .chain(allowed.iter().copied().filter(|&c| c != first))
        .take(n)
        .collect();
    if cpus.len() < n {
        return Err(Error::environment(format!(
            "{n} producers need {n} CPUs, one each, and this process may use {}: ask for at most \
             that many",
            allowed.len()
        )));
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0-x"), None);
    }

    #[test]
    fn producers_get_distinct_cpus_starting_with_the_pinned_one() {
        assert_eq!(producer_cpus(2, &[0, 1, 2, 3], 3).unwrap(), vec![2, 0, 1]);
        assert_eq!(producer_cpus(0, &[0, 1], 1).unwrap(), vec![0]);
        let err = producer_cpus(0, &[0, 1], 3).unwrap_err().to_string();
        assert!(err.contains("3 producers need 3 CPUs"), "{err}");
    }
}
