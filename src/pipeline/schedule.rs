//! The scheduler: a plan's warm-up, bracketed timed rounds and stats run,
//! on the measuring thread, within its budget (see [`super`] for the order).

use std::num::{NonZeroU64, NonZeroUsize};
use std::time::Instant;

mod ab;
mod stats_run;
mod warm_up;

use super::plan::{Plan, FLOOR_OF_BASE, SURE_SHARE};
use crate::document::Status;
use crate::measure::running::keeper::Keeper;
use crate::measure::{cpu::cpulock, note_default_cpu, running::context};
use crate::measure::{
    on_measuring_thread, timed_run, timed_runs, Error, Mechanism, Options, Privileged, Result,
    Sample, Support,
};
use ab::{side, sides, Side};

/// Times a timed run is measured again when the measuring thread lost the
/// CPU during it for more than [`MAX_LOST`] of its time (see
/// [`Sample::lost`]).
pub const MAX_RETAKES: u32 = 2;
/// The share of a timed run the measuring thread may lose to other tasks
/// or the hypervisor. A 1 s run always loses a little (a kworker, a
/// timer): below 1%, the run's figure moves by less than that.
pub const MAX_LOST: f64 = 0.01;

/// Rounds at most, whatever the budget.
pub const MAX_ROUNDS: usize = 100;

/// Where a run is, for a progress indicator.
#[derive(Clone, Debug)]
pub struct Step {
    /// Runs done so far.
    pub done: u64,
    /// Runs expected in all (shrinks once skipped mechanisms are known).
    pub total: u64,
    /// What runs next: `warm-up raw_tp`, `round 2 raw_tp`...
    pub what: String,
    /// Timed runs measured again so far, because the measuring thread lost
    /// the CPU during them.
    pub retaken: u64,
}

/// What [`gather`] came to: each mechanism's runs, and the rounds.
#[derive(Clone, Debug, Default)]
pub struct Gathered {
    pub per_mechanism: Vec<MechanismRuns>,
    /// Timed rounds run (the most any mechanism had).
    pub rounds: usize,
    /// Timed runs measured again because the measuring thread lost the CPU
    /// during them.
    pub retaken_runs: u64,
    /// What else the machine did on the measuring CPU meanwhile.
    pub context: Option<context::Context>,
    /// Seconds spent waiting, before the run, for a CPU that another
    /// measuring run held ([`cpulock`]).
    pub cpu_wait_s: f64,
}

/// What one mechanism came to.
#[derive(Clone, Debug)]
pub struct MechanismRuns {
    pub mechanism: Mechanism,
    pub status: Status,
    pub reason: Option<String>,
    /// The timed runs, in round order (a base: every one of its runs).
    pub samples: Vec<Sample>,
    /// A mechanism's: its base's runs just before and just after each of
    /// its timed runs.
    pub before: Vec<Sample>,
    pub after: Vec<Sample>,
    /// Timed runs kept at the start of the round in progress.
    kept: usize,
    /// Its iterations per run, when scaled to [`Plan::run_time`].
    iterations: Option<NonZeroU64>,
    /// With several producers: one producer alone, in the same rounds.
    pub single: Vec<Sample>,
    /// The program's own ns per event, from the stats run.
    pub prog_ns_per_event: Option<f64>,
    /// With `--against`: the same mechanism as B, measured with the
    /// variant's options in the same rounds, each run bracketed by the
    /// same base (the variant never changes a base).
    pub against: Option<Box<MechanismRuns>>,
    /// This is a B side: its runs take the variant's options.
    is_b: bool,
}

impl MechanismRuns {
    pub(super) fn new(mechanism: Mechanism) -> Self {
        Self {
            mechanism,
            status: Status::Ok,
            reason: None,
            samples: Vec::new(),
            before: Vec::new(),
            after: Vec::new(),
            kept: 0,
            iterations: None,
            single: Vec::new(),
            prog_ns_per_event: None,
            against: None,
            is_b: false,
        }
    }

    /// Per timed run, the ns per event over the mean of the base runs
    /// around it.
    pub fn overheads(&self) -> Vec<f64> {
        self.samples
            .iter()
            .zip(self.before.iter().zip(&self.after))
            .map(|(s, (b, a))| s.ns_per_event() - (b.ns_per_event() + a.ns_per_event()) / 2.0)
            .collect()
    }

    /// What a change in this mechanism's cost is measured against: its
    /// median overhead, or [`FLOOR_OF_BASE`] of its base's time.
    pub fn reference_ns(&self) -> f64 {
        let base: Vec<f64> = self.before.iter().map(Sample::ns_per_event).collect();
        let overhead = crate::stats::median(&self.overheads()).abs();
        overhead.max(FLOOR_OF_BASE * crate::stats::median(&base))
    }

    /// The smallest change of its cost, in ns per event, that this run
    /// could detect against a baseline as noisy as itself.
    pub fn detectable_ns(&self) -> Option<f64> {
        let o = self.overheads();
        crate::stats::detectable_ns(&o, &o)
    }

    /// [`Self::detectable_ns`] as a share of [`Self::reference_ns`].
    pub fn detectable(&self) -> Option<f64> {
        self.detectable_ns().map(|ns| ns / self.reference_ns())
    }

    /// Measured precisely enough for `plan.precision`: it sees
    /// [`SURE_SHARE`] of it (in-run, and the pairs decide:
    /// [`Self::pairs_sure`]).
    fn is_sure(&self, plan: &Plan) -> bool {
        let threshold = plan.threshold.of(self.mechanism.trigger());
        let target = SURE_SHARE * threshold;
        self.pairs_sure(threshold, target)
            .unwrap_or_else(|| self.detectable().is_some_and(|d| d <= target))
    }

    fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    fn set(&mut self, status: Status, reason: String) {
        self.status = status;
        self.reason = Some(reason);
    }

    /// Records a run's error: a missing kernel feature is a skip, anything
    /// else a failure; its reason without this mechanism's name (the
    /// result says it already), another's named.
    pub(super) fn fail(&mut self, err: Error) {
        let status = [Status::Failed, Status::Skipped][usize::from(err.is_unsupported())];
        match err.mechanism() {
            Some(m) if m != self.mechanism.name() && !err.is_unsupported() => {
                self.set(status, err.to_string())
            }
            _ => self.set(status, err.reason().to_string()),
        }
    }
}

impl Plan {
    /// The options of `m_runs`: its own iterations when scaled.
    fn options_for(&self, m_runs: &MechanismRuns, bpf_stats: bool) -> Options {
        let a = Options {
            iterations: m_runs.iterations.unwrap_or(self.options.iterations),
            bpf_stats,
            ..self.options.clone()
        };
        match &self.against {
            Some(variant) if m_runs.is_b => variant.apply(&a),
            _ => a,
        }
    }
}

/// Runs the plan (see the module documentation for the order) and
/// returns the runs of each planned mechanism. `privileged` is the check
/// made before ([`check_privileges`](super::check_privileges), or [`Privileged::check`] where a
/// mechanism's missing capabilities should fail only that mechanism).
/// Fails only for problems that stop the whole run; a mechanism's own
/// problems end up in its runs.
pub fn gather(
    plan: &Plan,
    privileged: &Privileged,
    progress: impl FnMut(&Step) + Send,
) -> Result<Gathered> {
    // The CPUs are chosen and held here, once: one measuring run per CPU
    // at a time, across processes.
    let cpus = cpulock::hold_for(
        plan.options.cpu,
        plan.options.producers.get(),
        plan.wait,
        plan.stop,
    )?;
    let mut runs = on_measuring_thread(|| Ok(run_here(plan, privileged, cpus.cpu, progress)))?;
    runs.cpu_wait_s = cpulock::waited_for_held().as_secs_f64();
    Ok(runs)
}

fn run_here(
    plan: &Plan,
    privileged: &Privileged,
    cpu: usize,
    mut progress: impl FnMut(&Step),
) -> Gathered {
    let mut per_mechanism: Vec<MechanismRuns> = plan
        .mechanisms
        .iter()
        .copied()
        .map(MechanismRuns::new)
        .collect();
    if let Some(variant) = &plan.against {
        ab::add_b_sides(&mut per_mechanism, variant);
    }

    // Check once, and hold what the mechanisms need from the environment
    // (tracefs) for the whole run, so it is set up once rather than per
    // run; and skip what the kernel visibly lacks before loading anything.
    let (support, problems) = Support::check(privileged);
    for (m, err) in problems {
        if let Some(m_runs) = per_mechanism.iter_mut().find(|o| o.mechanism == m) {
            m_runs.fail(err);
            m_runs.share_with_b();
        }
    }
    // The CPU never idles between runs (see keeper.rs).
    note_default_cpu(plan.options.cpu, cpu);
    // Not under an instruction clock, where it turns each wait into emulated work (exact.md).
    let _keeper = (!plan.exact()).then(|| Keeper::start(cpu));
    let context_before = context::snapshot(cpu);

    let mut step = Step {
        done: 0,
        total: 0,
        what: String::new(),
        retaken: 0,
    };
    let mut at = Running {
        plan,
        support: &support,
        step: &mut step,
        progress: &mut progress,
    };
    // Where the warm-up found no BPF stats, the stats run finds none.
    let stats = !plan.warmup || warm_up::warm_up(&mut at, &mut per_mechanism);
    propagate_base_problems(&mut per_mechanism);
    let rounds = timed_rounds(&mut at, &mut per_mechanism);
    ab::prog_run_times_from_rounds(&mut per_mechanism);
    propagate_base_problems(&mut per_mechanism);
    if plan.stats_run && stats {
        stats_run::stats_run(&mut at, &mut per_mechanism);
    }
    if let Some(signal) = plan.stopped_by() {
        cut_short(&mut per_mechanism, signal);
    }
    step.what = "done".into();
    progress(&step);
    Gathered {
        per_mechanism,
        rounds,
        retaken_runs: step.retaken,
        context: context_before.and_then(|before| context::since(&before)),
        cpu_wait_s: 0.0,
    }
}

/// What every step of a run works with: the plan, the checks made for
/// it, and where the run is.
struct Running<'a, P> {
    plan: &'a Plan,
    support: &'a Support,
    step: &'a mut Step,
    progress: &'a mut P,
}

impl<P: FnMut(&Step)> Running<'_, P> {
    /// Announces what runs next.
    fn next(&mut self, what: String) {
        self.step.what = what;
        (self.progress)(self.step);
    }

    fn timed_run(&self, m: Mechanism, opts: &Options) -> Result<Sample> {
        timed_run(self.support.ready(m)?, opts)
    }

    fn timed_runs(&self, m: Mechanism, opts: &Options, n: usize) -> Result<Vec<Sample>> {
        timed_runs(self.support.ready(m)?, opts, n)
    }
}

/// A base and the mechanisms compared to it, as ranges of the plan.
fn groups(per_mechanism: &[MechanismRuns]) -> Vec<std::ops::Range<usize>> {
    let starts: Vec<usize> = (0..per_mechanism.len())
        .filter(|&i| i == 0 || per_mechanism[i].mechanism.is_base())
        .collect();
    starts
        .iter()
        .zip(starts.iter().skip(1).chain([&per_mechanism.len()]))
        .map(|(&a, &b)| a..b)
        .collect()
}

/// Step 2: the timed rounds. In each, every group runs its base around each
/// of its mechanisms (base, raw_tp, base, tp, base): a mechanism's run is
/// paired with the mean of the base runs just before and just after it,
/// which takes out any drift in the machine's speed that is steady over
/// the few tens of ms between them. At least `plan.repeats` rounds; then,
/// within `plan.budget`, more rounds of the mechanisms not yet
/// [`MechanismRuns::is_sure`]. Returns the rounds run.
fn timed_rounds(
    at: &mut Running<'_, impl FnMut(&Step)>,
    per_mechanism: &mut [MechanismRuns],
) -> usize {
    let plan = at.plan;
    let started = Instant::now();
    let mut round = 0;
    loop {
        let min_rounds = round < plan.repeats.get();
        let first = round == 0;
        let wanted = |o: &MechanismRuns| {
            o.is_ok()
                && !o.mechanism.is_base()
                && (min_rounds || !o.is_sure(plan))
                && (first || plan.per_attachment(o.mechanism) == 1)
        };
        // A base with none of its mechanisms to measure (selected alone,
        // or they are skipped) runs once a round, the least number of rounds.
        let alone = |g: &std::ops::Range<usize>, per_mechanism: &[MechanismRuns]| {
            min_rounds
                && per_mechanism[g.start].is_ok()
                && !per_mechanism[g.clone()]
                    .iter()
                    .any(|o| o.is_ok() && !o.mechanism.is_base())
        };
        let todo = per_mechanism.iter().filter(|o| wanted(o)).count()
            + groups(per_mechanism)
                .iter()
                .filter(|g| alone(g, per_mechanism))
                .count();
        let more =
            round < plan.repeats.get() || (started.elapsed() < plan.budget && round < MAX_ROUNDS);
        if todo == 0 || !more || plan.stopped_by().is_some() {
            return round;
        }
        round += 1;
        let sides_each = if plan.against.is_some() { 4 } else { 2 };
        at.step.total = at.step.done + sides_each * todo as u64;
        for o in per_mechanism.iter_mut() {
            o.kept = o.samples.len();
            if let Some(b) = o.against.as_mut() {
                b.kept = b.samples.len();
            }
        }
        for group in groups(per_mechanism) {
            let todo: Vec<usize> = group
                .clone()
                .filter(|&i| wanted(&per_mechanism[i]))
                .collect();
            if todo.is_empty() && !alone(&group, per_mechanism)
                || !per_mechanism[group.start].is_ok()
            {
                continue;
            }
            let todo = sides(per_mechanism, &todo, round);
            if !bracket(at, per_mechanism, group.start, &todo, round) {
                return round;
            }
        }
    }
}

/// Runs `base`, then each of `todo` followed by `base` again. False when a
/// stop was asked for.
fn bracket(
    at: &mut Running<'_, impl FnMut(&Step)>,
    per_mechanism: &mut [MechanismRuns],
    base: usize,
    todo: &[(usize, Side)],
    round: usize,
) -> bool {
    let plan = at.plan;
    let mut before: Option<Sample> = None;
    for (n, &run) in std::iter::once(&(base, Side::A)).chain(todo).enumerate() {
        if n > 0 {
            // The mechanism, then the base after it.
            if plan.stopped_by().is_some() {
                return false;
            }
            let Some(b) = before.clone() else { return true };
            let o = side(per_mechanism, run);
            let b_mark = if run.1 == Side::B { " (B)" } else { "" };
            at.next(format!("round {round} {}{b_mark}", o.mechanism));
            let got = timed(at, o);
            at.step.done += 1;
            let o = side(per_mechanism, run);
            match got {
                Ok((single, samples)) => {
                    o.single.extend(single);
                    o.before.extend(samples.iter().map(|_| b.clone()));
                    o.samples.extend(samples);
                }
                Err(err) => {
                    o.fail(err);
                    continue;
                }
            }
        }
        if plan.stopped_by().is_some() {
            return false;
        }
        at.next(format!("round {round} {}", per_mechanism[base].mechanism));
        match timed(at, &per_mechanism[base]) {
            Ok((single, mut samples)) => {
                let sample = samples.pop().expect("a base runs once an attachment");
                if n > 0 {
                    let o = side(per_mechanism, run);
                    o.after.resize(o.samples.len(), sample.clone());
                }
                per_mechanism[base].single.extend(single);
                per_mechanism[base].samples.push(sample.clone());
                before = Some(sample);
            }
            Err(err) => {
                per_mechanism[base].fail(err);
                return true;
            }
        }
    }
    true
}

/// One timed run of `o` (or [`Plan::per_attachment`]'s), and with several
/// producers first one producer alone (for the scaling).
fn timed(
    at: &mut Running<'_, impl FnMut(&Step)>,
    o: &MechanismRuns,
) -> Result<(Option<Sample>, Vec<Sample>)> {
    let plan = at.plan;
    let opts = plan.options_for(o, false);
    let n = plan.per_attachment(o.mechanism);
    if n > 1 {
        return Ok((None, at.timed_runs(o.mechanism, &opts, n)?));
    }
    let single = (plan.options.producers.get() > 1)
        .then(|| {
            let one = Options {
                producers: NonZeroUsize::MIN,
                ..opts.clone()
            };
            at.timed_run(o.mechanism, &one)
        })
        .transpose()?;
    // A run during which another task (or the hypervisor) had the CPU for
    // a while timed that too: measured again at once (no pause: the CPU
    // stays busy), a few times.
    let mut sample = at.timed_run(o.mechanism, &opts)?;
    for _ in 0..MAX_RETAKES {
        let lost = sample.lost.as_secs_f64() / sample.elapsed.as_secs_f64().max(1e-9);
        if lost <= MAX_LOST || plan.stopped_by().is_some() {
            break;
        }
        at.step.retaken += 1;
        sample = at.timed_run(o.mechanism, &opts)?;
    }
    Ok((single, vec![sample]))
}

/// After a stop: drops the round in progress (a mechanism's figures pair
/// it with the base runs around it), and marks what has no round left as
/// not measured.
fn cut_short(per_mechanism: &mut [MechanismRuns], signal: i32) {
    let why = format!("not measured: interrupted by {}", signal_name(signal));
    let cut = |m_runs: &mut MechanismRuns| {
        let kept = m_runs.kept;
        m_runs.samples.truncate(kept);
        m_runs.before.truncate(kept);
        m_runs.after.truncate(kept);
        m_runs.single.truncate(kept);
        if m_runs.samples.is_empty() {
            m_runs.set(Status::Failed, why.clone());
        }
    };
    for m_runs in per_mechanism.iter_mut().filter(|o| o.is_ok()) {
        if let Some(b) = m_runs
            .against
            .as_deref_mut()
            .filter(|b| b.is_ok() && b.prog_ns_per_event.is_none())
        {
            cut(b);
        }
        cut(m_runs);
    }
}

/// `SIGINT` for 2.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

/// A mechanism whose base could not be measured cannot be compared to it.
fn propagate_base_problems(per_mechanism: &mut [MechanismRuns]) {
    let bad_bases: Vec<(Mechanism, Status)> = per_mechanism
        .iter()
        .filter(|o| o.mechanism.is_base() && !o.is_ok())
        .map(|o| (o.mechanism, o.status))
        .collect();
    for m_runs in per_mechanism.iter_mut().filter(|o| o.is_ok()) {
        if let Some((base, status)) = bad_bases
            .iter()
            .find(|(b, _)| *b == m_runs.mechanism.base())
        {
            let what = if *status == Status::Skipped {
                "was skipped"
            } else {
                "failed"
            };
            m_runs.set(*status, format!("its base {base} {what}"));
            m_runs.share_with_b();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::fixtures::{m, m_runs};

    #[test]
    fn a_stop_drops_the_round_in_progress() {
        // Stopped in round 3: base ran it, raw_tp did not.
        let mut per_mechanism = [
            m_runs(m("base"), &[1000, 1000, 1000]),
            m_runs(m("raw_tp"), &[1100, 1100]),
            MechanismRuns::new(m("tp")),
        ];
        per_mechanism[2].fail(Error::unsupported("no tracefs"));
        for o in &mut per_mechanism {
            o.kept = 2;
        }
        cut_short(&mut per_mechanism, libc::SIGINT);
        assert_eq!(per_mechanism[0].samples.len(), 2);
        assert_eq!(per_mechanism[1].samples.len(), 2);
        assert_eq!(per_mechanism[2].status, Status::Skipped, "left as it was");
        // Stopped before a timed round: nothing measured.
        let mut per_mechanism = [m_runs(m("base"), &[]), m_runs(m("raw_tp"), &[])];
        cut_short(&mut per_mechanism, libc::SIGTERM);
        for o in &per_mechanism {
            assert_eq!(o.status, Status::Failed);
            assert_eq!(
                o.reason.as_deref(),
                Some("not measured: interrupted by SIGTERM")
            );
        }
    }

    #[test]
    fn a_bad_base_takes_its_mechanisms_with_it() {
        let mut base = m_runs(m("base-nop"), &[]);
        base.fail(Error::failed("boom"));
        let mut per_mechanism = [
            m_runs(m("base"), &[1000]),
            m_runs(m("raw_tp"), &[1100]),
            base,
            m_runs(m("uprobe-nop"), &[2000]),
        ];
        propagate_base_problems(&mut per_mechanism);
        assert_eq!(per_mechanism[1].status, Status::Ok);
        assert_eq!(per_mechanism[3].status, Status::Failed);
        assert_eq!(
            per_mechanism[3].reason.as_deref(),
            Some("its base base-nop failed")
        );
    }
}
