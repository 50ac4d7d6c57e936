//! Step 3 of a run: each program's own run time, from the kernel's BPF
//! stats.

use super::{MechanismRuns, Running, Step};
use crate::measure::{Result, Sample};

/// Step 3: the program's own run time, with BPF stats on for this run only.
pub(super) fn stats_run(
    at: &mut Running<'_, impl FnMut(&Step)>,
    per_mechanism: &mut [MechanismRuns],
) {
    let plan = at.plan;
    let todo = |o: &MechanismRuns| o.is_ok() && !o.mechanism.is_base();
    at.step.total = at.step.done + per_mechanism.iter().filter(|o| todo(o)).count() as u64;
    for m_runs in per_mechanism.iter_mut().filter(|o| todo(o)) {
        if plan.stopped_by().is_some() {
            return;
        }
        // B's program run time too: what the variant did to the program.
        if !stats_of(at, m_runs) {
            return;
        }
        if let Some(b) = m_runs
            .against
            .as_deref_mut()
            .filter(|b| b.is_ok() && b.prog_ns_per_event.is_none())
        {
            if !stats_of(at, b) {
                return;
            }
        }
        at.step.done += 1;
    }
}

/// One stats run of `o`. False when the kernel has no BPF stats: no
/// figures, not a failure, and no point trying the other mechanisms.
fn stats_of(at: &mut Running<'_, impl FnMut(&Step)>, o: &mut MechanismRuns) -> bool {
    // A user's object runs with stats on in every run (its hits are its
    // run count): its timed runs have the figure, and one more run would
    // only say it again.
    let timed: Vec<f64> = o
        .samples
        .iter()
        .filter_map(Sample::prog_ns_per_event)
        .collect();
    if !timed.is_empty() && timed.len() == o.samples.len() {
        o.prog_ns_per_event = Some(crate::stats::median(&timed));
        return true;
    }
    // Most had theirs in their warm-up's attachment.
    if o.prog_ns_per_event.is_some() {
        return true;
    }
    let b_mark = if o.is_b { " (B)" } else { "" };
    at.next(format!("BPF stats {}{b_mark}", o.mechanism));
    let run = at.timed_run(o.mechanism, &at.plan.options_for(o, true));
    keep(o, run)
}

/// Keeps what a stats run of `o` found (here or in its warm-up's
/// attachment). False when the kernel has no BPF stats: no figures, not a
/// failure, and no point trying the others.
pub(super) fn keep(o: &mut MechanismRuns, run: Result<Sample>) -> bool {
    match run {
        Ok(sample) => o.prog_ns_per_event = sample.prog_ns_per_event(),
        // Before 5.8.
        Err(err) if err.is_unsupported() => {
            log::warn!("no program run times: {}", err.reason());
            return false;
        }
        Err(err) => o.fail(err),
    }
    true
}
