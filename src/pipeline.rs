//! The one measurement pipeline, used by the tests and the command alike:
//! a [`Plan`] (validated when built: the types admit no zero counts) goes
//! to [`gather`], whose runs become a result [`Document`] in [`document`].
//! Overhead and ratio to base are computed there and nowhere else. One
//! concern a file: the plan and its defaults (`plan.rs`), the scheduler
//! (`schedule.rs`, and `schedule/ab.rs` for `--against`'s B sides), the
//! document's assembly (`assemble.rs`) and `--list`'s survey (`survey.rs`).
//!
//! The order of runs:
//!
//! 1. a warm-up pass: one untimed run of every mechanism, which is also
//!    where the ones this kernel cannot run are found (and skipped);
//! 2. timed rounds. In each, every base runs before and after each of its
//!    mechanisms (base, raw_tp, base, tp, base), and a mechanism's run is
//!    paired with the mean of the two base runs around it: drift in the
//!    machine's speed that is steady over those few tens of ms cancels.
//!    At least `repeats` rounds; then, within `budget`, more rounds of
//!    each mechanism whose overhead is not yet known well enough to see a
//!    change of `precision` (`MechanismRuns::is_sure`). The CPU never idles
//!    between runs ([`Keeper`]: a vCPU that idles comes back slow), and
//!    every timed run starts straight after an untimed lead-in of the
//!    same events;
//! 3. optionally, one more run of every non-base mechanism with the
//!    kernel's BPF run-time stats enabled, for the program's own ns per
//!    event. It is kept out of the timed passes because the stats add two
//!    clock reads to every program run. After a warm-up, it is made in the
//!    warm-up's attachment (one attach and detach fewer); without one, last.
//!
//! All of it happens on one measuring thread with a file table of its own
//! ([`on_measuring_thread`]), so a run inside `cargo test` measures what a
//! single-threaded process does.
//!
//! [`Keeper`]: crate::measure::running::keeper::Keeper
//! [`on_measuring_thread`]: crate::measure::on_measuring_thread

mod assemble;
mod plan;
mod schedule;
mod survey;
mod threshold;

pub use assemble::document;
pub use plan::{
    check_privileges, estimate_secs, expand, Plan, AGAINST_BUDGET, AGAINST_RUN_TIME,
    DEFAULT_BUDGET, DEFAULT_REPEATS, DEFAULT_RUN_TIME, EMULATED_ITERATIONS, FLOOR_OF_BASE,
    SURE_SHARE,
};
pub use schedule::{
    gather, signal_name, Gathered, MechanismRuns, Step, MAX_LOST, MAX_RETAKES, MAX_ROUNDS,
};
pub use survey::{survey, Availability};
pub use threshold::{Threshold, COMM_THRESHOLD, DEFAULT_THRESHOLD};

use crate::document::Document;
use crate::measure::kernel::host::Host;
use crate::measure::{Privileged, Result};

/// Runs the plan and returns its document: [`gather`], then [`document`].
pub fn execute(
    plan: &Plan,
    privileged: &Privileged,
    host: impl FnOnce() -> Host,
    progress: impl FnMut(&Step) + Send,
) -> Result<Document> {
    let runs = gather(plan, privileged, progress)?;
    Ok(document(plan, &runs, host()))
}

/// Outcomes and samples with fixed numbers, for the tests of the scheduler
/// and of the document assembly.
#[cfg(test)]
mod fixtures {
    use std::time::Duration;

    use super::{Gathered, MechanismRuns};
    use crate::measure::kernel::host::Host;
    use crate::measure::{Mechanism, Sample};

    pub(super) fn m(name: &str) -> Mechanism {
        name.parse().unwrap()
    }

    pub(super) fn runs(per_mechanism: &[MechanismRuns]) -> Gathered {
        Gathered {
            per_mechanism: per_mechanism.to_vec(),
            rounds: per_mechanism
                .iter()
                .map(|o| o.samples.len())
                .max()
                .unwrap_or(0),
            retaken_runs: 0,
            context: None,
            cpu_wait_s: 0.0,
        }
    }

    fn sample(mech: Mechanism, ns_per_event: u64, hits: Option<u64>) -> Sample {
        Sample {
            mechanism: mech,
            events: 1000,
            elapsed: Duration::from_nanos(ns_per_event * 1000),
            hits,
            counted_events: 1000,
            prog_run: None,
            cpu: 1,
            producers: Vec::new(),
            speed_ns: 2.0,
            lead_in_ns_per_event: 1.0,
            lost: Duration::ZERO,
            attach: None,
            window: None,
            site: None,
        }
    }

    /// A base's runs, or a mechanism's with the same base time before
    /// and after each: `base_ns` (or 1000 ns when not given).
    pub(super) fn m_runs(mech: Mechanism, ns: &[u64]) -> MechanismRuns {
        paired(mech, ns, &vec![1000; ns.len()])
    }

    pub(super) fn paired(mech: Mechanism, ns: &[u64], base_ns: &[u64]) -> MechanismRuns {
        let hits = (!mech.is_base()).then_some(1000);
        let base: Vec<Sample> = if mech.is_base() {
            Vec::new()
        } else {
            base_ns
                .iter()
                .map(|&n| sample(mech.base(), n, None))
                .collect()
        };
        let mut o = MechanismRuns::new(mech);
        o.samples = ns.iter().map(|&n| sample(mech, n, hits)).collect();
        o.before = base.clone();
        o.after = base;
        o.prog_ns_per_event = hits.map(|_| 25.0);
        o
    }

    pub(super) fn host() -> Host {
        Host {
            kernel_release: "6.18.0".into(),
            kernel_build_id: None,
            cpu_model: "Test CPU".into(),
            arch: "x86_64".into(),
            timestamp: "2026-05-01T12:00:00Z".into(),
            mitigations: Default::default(),
        }
    }
}
