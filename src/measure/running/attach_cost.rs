//! What attaching took, where that is worth telling: a link on every
//! kernel function takes seconds and megabytes to make.

use std::fs;
use std::time::Instant;

pub use bpf_overhead_common::document::AttachCost;

/// An attach call being timed: [`Timing::start`] just before it,
/// [`Timing::done`] just after.
pub(crate) struct Timing {
    at: Instant,
    kernel_kib: Option<i64>,
}

impl Timing {
    pub(crate) fn start() -> Self {
        let kernel_kib = kernel_kib();
        Self {
            at: Instant::now(),
            kernel_kib,
        }
    }

    pub(crate) fn done(self, functions: u64) -> AttachCost {
        let seconds = self.at.elapsed().as_secs_f64();
        AttachCost {
            functions,
            seconds,
            memory_kib: self.kernel_kib.zip(kernel_kib()).map(|(b, a)| a - b),
        }
    }
}

fn kernel_kib() -> Option<i64> {
    kernel_kib_in(&fs::read_to_string("/proc/meminfo").ok()?)
}

/// The kernel allocations a link's memory shows in (Percpu is 3.18+).
const KERNEL_FIELDS: [&str; 3] = ["SUnreclaim:", "VmallocUsed:", "Percpu:"];

fn kernel_kib_in(meminfo: &str) -> Option<i64> {
    KERNEL_FIELDS
        .iter()
        .map(|field| {
            let line = meminfo.lines().find(|l| l.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse::<i64>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_memory_is_slab_vmalloc_and_percpu_in_kib() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:        20480123 kB\n\
                       SUnreclaim:       100000 kB\nVmallocUsed:       20000 kB\n\
                       Percpu:             3000 kB\n";
        assert_eq!(kernel_kib_in(meminfo), Some(123_000));
        assert_eq!(kernel_kib_in("SUnreclaim: 1 kB\n"), None);
    }
}
