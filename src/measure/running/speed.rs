//! The machine's speed, timed with every run: a fixed piece of user-space
//! work (a chain of calls that depend on each other) on the measuring CPU,
//! just before and just after the timed events.
//!
//! Machines like the VMs this project runs on slow down by 20–35% for
//! seconds at a time (another guest on the same core, the host's clock):
//! a run's base, its mechanism and this reference all slow down together,
//! the mechanism's overhead in ns with them. The reference runs no kernel
//! code, so no kernel change moves it. A mechanism's overhead divided by
//! the reference of the same run is its cost at a fixed machine speed,
//! which is what the regression gate compares between runs.

use std::hint::black_box;
use std::time::Instant;

/// Steps per timing: ~0.2 ms on the machines this was written on, long
/// enough for the clock, short enough that most timings see no interrupt.
const STEPS: u32 = 1 << 17;
/// Timings per reference, of which the fastest counts: an interrupt or the
/// hypervisor taking the CPU for a moment stretches one timing, while a
/// slow spell stretches them all.
const TIMINGS: usize = 5;

/// One step: a call that the compiler cannot inline or see through.
#[inline(never)]
fn step(x: u64) -> u64 {
    black_box(x)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
}

fn timing() -> f64 {
    let begin = Instant::now();
    let mut x = 0u64;
    for _ in 0..STEPS {
        x = step(x);
    }
    black_box(x);
    begin.elapsed().as_nanos() as f64 / f64::from(STEPS)
}

/// ns per step of the reference work, timed now on the calling thread:
/// the fastest of a few timings.
pub fn reference_ns() -> f64 {
    (0..TIMINGS).map(|_| timing()).fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_takes_time_and_is_finite() {
        let ns = reference_ns();
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
