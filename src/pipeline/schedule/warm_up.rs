//! Step 1 of a run: the warm-up, which checks that each mechanism loads
//! and sizes its timed runs.

use std::num::NonZeroU64;
use std::time::Duration;

use super::stats_run::keep;
use super::{MechanismRuns, Running, Step};
use crate::measure::{warm_up_run, Mechanism, Options, Result, Sample};

/// The fewest events a timed run scaled by [`Plan::run_time`] fires.
///
/// [`Plan::run_time`]: crate::pipeline::Plan::run_time
const MIN_SCALED_EVENTS: u64 = 1000;

/// Step 1: one untimed run of every mechanism: the load-time support
/// check, which sizes the timed runs; then, attached still, the stats run
/// of those the plan wants it for. False when the kernel has no BPF stats.
pub(super) fn warm_up(
    at: &mut Running<'_, impl FnMut(&Step)>,
    per_mechanism: &mut [MechanismRuns],
) -> bool {
    let plan = at.plan;
    // A run of about a round's length: it checks and sizes as well as
    // 100000 events of 10 µs (uprobe-ret), which took a fifth of a run.
    let opts = Options {
        bpf_stats: false,
        longest_run: plan.options.longest_run.or(plan.run_time),
        ..plan.options.clone()
    };
    // Runs made in one attachment, of a size given, need none: the first
    // of them is one, and the count is the fewest.
    let warms = |o: &MechanismRuns| {
        o.is_ok() && (plan.per_attachment(o.mechanism) == 1 || plan.run_time.is_some())
    };
    let mut stats = plan.stats_run;
    at.step.total = per_mechanism.iter().filter(|o| warms(o)).count() as u64;
    for m_runs in per_mechanism.iter_mut().filter(|o| warms(o)) {
        if plan.stopped_by().is_some() {
            return stats;
        }
        at.next(format!("warm-up {}", m_runs.mechanism));
        let m = m_runs.mechanism;
        let sized = |warm: &Sample| plan.run_time.map(|t| scaled(m, warm, t));
        let wanted = |warm: &Sample| {
            let iterations = sized(warm).unwrap_or(plan.options.iterations);
            wants_stats(stats, m, warm).then_some(iterations)
        };
        match at.warm_up_run(m, &opts, wanted) {
            Ok((warm, stats_run)) => {
                m_runs.iterations = sized(&warm);
                stats &= stats_run.is_none_or(|run| keep(m_runs, run));
            }
            Err(err) => m_runs.fail(err),
        }
        at.step.done += 1;
        // B runs as many events as A, so that each pair compares like
        // with like; its warm-up checks that the variant loads.
        let iterations = m_runs.iterations;
        if let Some(b) = m_runs.against.as_mut().filter(|b| b.is_ok()) {
            b.iterations = iterations;
            at.next(format!("warm-up {} (B)", b.mechanism));
            let wanted = |warm: &Sample| {
                let iterations = iterations.unwrap_or(plan.options.iterations);
                wants_stats(stats, b.mechanism, warm).then_some(iterations)
            };
            match at.warm_up_run(b.mechanism, &plan.options_for(b, false), wanted) {
                Ok((_, stats_run)) => stats &= stats_run.is_none_or(|run| keep(b, run)),
                Err(err) => b.fail(err),
            }
        }
    }
    stats
}

/// Whether `m`, just warmed up, needs a stats run: stats `on`, a program
/// of its own, and none in its warm-up already (a user's object runs with
/// stats on in every run).
fn wants_stats(on: bool, m: Mechanism, warm: &Sample) -> bool {
    on && !m.is_base() && warm.prog_ns_per_event().is_none()
}

impl<P: FnMut(&Step)> Running<'_, P> {
    fn warm_up_run(
        &self,
        m: Mechanism,
        opts: &Options,
        stats: impl FnOnce(&Sample) -> Option<NonZeroU64>,
    ) -> Result<(Sample, Option<Result<Sample>>)> {
        warm_up_run(self.support.ready(m)?, opts, stats)
    }
}

/// The iterations that make `m`'s runs last about `run_time`, from
/// `sample`'s time per event: the faster of its lead-in and its timed
/// events, since a preemption stretches one of them.
fn scaled(m: Mechanism, sample: &Sample, run_time: Duration) -> NonZeroU64 {
    let ns = sample.ns_per_event().min(sample.lead_in_ns_per_event);
    let events = (run_time.as_nanos() as f64 / ns.max(0.01)) as u64;
    let per_iteration = m.events(1).max(1);
    NonZeroU64::new(events.max(MIN_SCALED_EVENTS).div_ceil(per_iteration))
        .unwrap_or(NonZeroU64::MIN)
}
