//! What the power experiments (gate_power, compare_power) share: a
//! load on the other CPU, and verdict counts.

use bpf_overhead::gate::Verdict;
use bpf_overhead::measure::{online_cpus, CpuPin};
pub use bpf_overhead_common::background::{self, Background};

/// `round` over and over on a CPU other than the measuring one, while it
/// lives.
pub fn beside(round: impl FnMut() + Send + 'static) -> Background {
    let cpu = online_cpus()
        .unwrap()
        .into_iter()
        .find(|&c| c != 0)
        .unwrap_or(0);
    Background::start(move || CpuPin::new(Some(cpu)).unwrap(), round)
}

/// A busy loop on the other CPU: the CPU hog.
pub fn hog() -> Background {
    beside(background::spin)
}

/// Verdict counts: [regressed, unsure, ok, improved].
pub fn tally(counts: &mut [usize; 4], v: Verdict) {
    let i = match v {
        Verdict::Regressed | Verdict::Missing => 0,
        Verdict::Inconclusive => 1,
        Verdict::Improved => 3,
        _ => 2,
    };
    counts[i] += 1;
}
