//! The one measurement pipeline, used by the tests and the command alike:
//! a [`Plan`] (validated when built: the types admit no zero counts) goes
//! to [`run`], whose runs become a result [`Document`] in [`document`].
//! Overhead and ratio to base are computed there and nowhere else.
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
//!    change of `precision` (`Outcome::is_sure`). The CPU never idles
//!    between runs ([`Keeper`]: a vCPU that idles comes back slow), and
//!    every timed run starts straight after an untimed lead-in of the
//!    same events;
//! 3. optionally, one more run of every non-base mechanism with the
//!    kernel's BPF run-time stats enabled, for the program's own ns per
//!    event. It is kept out of the timed passes because the stats add two
//!    clock reads to every program run.
//!
//! All of it happens on one measuring thread with a file table of its own
//! ([`on_measuring_thread`]), so a run inside `cargo test` measures what a
//! single-threaded process does.

use std::num::{NonZeroU64, NonZeroUsize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::document::SCHEMA_VERSION;
use crate::document::{
    Document, Host, MechanismResult, ProducerResult, Status, ORDER_BRACKETED, SCHEMA,
};
use crate::measure::keeper::Keeper;
use crate::measure::{context, cpulock, CpuPin};
use crate::measure::{
    measure, on_measuring_thread, Error, Mechanism, Options, Privileged, Result, Sample, Support,
    Trigger, DEFAULT_ITERATIONS,
};
use crate::stats::Summary;

/// Default length of a timed run (see [`Plan::run_time`]).
pub const DEFAULT_RUN_TIME: Duration = Duration::from_millis(50);
/// The fewest events a timed run scaled by [`Plan::run_time`] fires.
const MIN_SCALED_EVENTS: u64 = 1000;

/// Default time budget of the timed rounds (see [`Plan::budget`]).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(45);
/// [`DEFAULT_BUDGET`], or none under emulation, where nothing timed is
/// read.
fn default_budget() -> Duration {
    if crate::document::emulated().is_some() {
        Duration::ZERO
    } else {
        DEFAULT_BUDGET
    }
}

/// A mechanism is sure once it sees this share of the threshold. Not the
/// whole threshold: the gate calls a comparison unchanged when the change's
/// 90% interval (0.66 of what the runs can detect, each side) lies within
/// the threshold, so two runs that each just see the threshold would come
/// out UNSURE in about 4 A/A comparisons of 10; at 0.6, in about 1 of 100.
/// It costs (1/0.6)^2 = 2.8 times the rounds.
pub const SURE_SHARE: f64 = 0.6;

/// [`DEFAULT_RUN_TIME`], or none under emulation: scaling needs the
/// warm-up run's time per event, and there is no warm-up there.
fn default_run_time() -> Option<Duration> {
    crate::document::emulated()
        .is_none()
        .then_some(DEFAULT_RUN_TIME)
}

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

/// The change a run must be able to detect, as a share of a mechanism's
/// own cost (its overhead, or [`FLOOR_OF_BASE`] of its base's time if
/// that is more), before it stops measuring it; the gate's default
/// thresholds are the same.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Precision {
    /// On the comm trigger, whose overheads are a small part of a
    /// syscall's cost.
    pub comm: f64,
    /// On the kernel loop and the call trigger.
    pub other: f64,
}

impl Precision {
    pub const DEFAULT: Precision = Precision {
        comm: 0.15,
        other: 0.06,
    };

    pub fn of(self, trigger: Trigger) -> f64 {
        match trigger {
            Trigger::TaskRename => self.comm,
            Trigger::Call(_) | Trigger::Loop(_) => self.other,
        }
    }
}

/// A near-free mechanism's cost is taken as this share of its base's
/// time per event: changes are judged against that.
pub const FLOOR_OF_BASE: f64 = 0.05;

/// The selftest's events under emulation (see [`Plan::selftest`]).
pub const EMULATED_ITERATIONS: NonZeroU64 = NonZeroU64::new(10_000).unwrap();

/// Default `--repeat`: the least number of rounds.
/// Seven: with five, one disturbed round of either run (5 of the 25 pairs
/// the wrong way round) kept the gate's rank test above p = 0.05; seven
/// allow 11 of 49.
pub const DEFAULT_REPEATS: NonZeroUsize = NonZeroUsize::new(7).unwrap();

/// What to run, and how.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The mechanisms to run, each base included, in catalogue order.
    pub mechanisms: Vec<Mechanism>,
    /// Every run's own settings (events, CPU, batch, program work,
    /// producers), as [`with_run`](crate::measure::with_run) takes them
    /// and the load writes them into the BPF object: set once, copied
    /// nowhere. Its `bpf_stats` is turned on for the stats run only.
    /// With more than one producer, each round also measures one producer
    /// alone, for the scaling.
    pub run: Options,
    /// Instead, scale each mechanism's events so that its timed runs last
    /// about this long, from its warm-up run: a slow mechanism (a uprobe
    /// on `ret`, 10 µs an event) then costs no more time than a fast one,
    /// and a fast one runs long enough to average out a hiccup.
    pub run_time: Option<Duration>,
    /// Timed passes.
    pub repeats: NonZeroUsize,
    /// Run every mechanism once untimed first. Off under emulation, where
    /// nothing is timed that anyone reads: the timed pass finds what the
    /// kernel lacks just as well.
    pub warmup: bool,
    /// Make the extra run with BPF run-time stats.
    pub stats_run: bool,
    /// After `repeats` rounds, more rounds of the mechanisms not yet sure
    /// (`Outcome::is_sure`) while the timed rounds have taken less than
    /// this. Zero: exactly `repeats` rounds (so under emulation, where
    /// nothing timed is read).
    pub budget: Duration,
    /// What "sure" means: the change this run could detect, as a share of
    /// the mechanism's own cost, by trigger.
    pub precision: Precision,
    /// Set (to a signal number, by a signal handler) to stop the run
    /// after the run in progress: see [`run`].
    pub stop: Option<&'static AtomicUsize>,
}

impl Plan {
    /// `selection` and each one's base, in catalogue order; an empty
    /// selection means every mechanism. Defaults for the rest.
    pub fn new(selection: &[Mechanism]) -> Self {
        let emulated = crate::document::emulated().is_some();
        Self {
            mechanisms: expand(selection),
            run: Options::default(),
            run_time: default_run_time(),
            repeats: DEFAULT_REPEATS,
            warmup: !emulated,
            stats_run: true,
            budget: default_budget(),
            precision: Precision::DEFAULT,
            stop: None,
        }
    }

    /// The selftest's plan: test_overhead's 100000 events, one timed round
    /// (the mechanism between two base runs), no warm-up, no stats run.
    /// Under emulation, [`EMULATED_ITERATIONS`]: there the run proves that
    /// the mechanism attaches and counts exactly, which 10000 events prove
    /// as well as 100000, and its rates are no performance figures.
    pub fn selftest(mechanism: Mechanism) -> Self {
        let emulated = crate::document::emulated().is_some();
        Self {
            run: Options {
                iterations: if emulated {
                    EMULATED_ITERATIONS
                } else {
                    DEFAULT_ITERATIONS
                },
                ..Options::default()
            },
            repeats: NonZeroUsize::MIN,
            budget: Duration::ZERO,
            run_time: None,
            // As test_overhead: no warm-up. The lead-in before the timed
            // run warms the path, and the keeper keeps the CPU from idling.
            warmup: false,
            stats_run: false,
            ..Self::new(&[mechanism])
        }
    }

    /// The signal that asked the run to stop, if one did.
    pub fn stopped_by(&self) -> Option<i32> {
        let signal = self.stop?.load(Ordering::SeqCst);
        (signal != 0).then_some(signal as i32)
    }

    /// The options of `outcome`'s runs: its own iterations when scaled.
    fn options_for(&self, outcome: &Outcome, bpf_stats: bool) -> Options {
        Options {
            iterations: outcome.iterations.unwrap_or(self.run.iterations),
            bpf_stats,
            ..self.run.clone()
        }
    }
}

/// The mechanisms to run for `selection`: each selected one and its base,
/// in catalogue order. An empty selection means all of them.
pub fn expand(selection: &[Mechanism]) -> Vec<Mechanism> {
    Mechanism::all()
        .filter(|m| {
            selection.is_empty()
                || selection
                    .iter()
                    .any(|s| s == m || (m.is_base() && s.base() == *m))
        })
        .collect()
}

/// A lower bound of how long `plan` takes, in seconds: each of its runs
/// fires its events at no more than the speed of its trigger alone (what
/// a mechanism adds only slows it), timed here for a moment on this
/// thread. For refusing what cannot finish: `--iterations
/// 9223372036854775807` would run for millions of years.
pub fn estimate_secs(plan: &Plan) -> f64 {
    let mut ns_per_event: Vec<(Trigger, f64)> = Vec::new();
    let mut ns = 0.0;
    for m in &plan.mechanisms {
        let trigger = m.trigger();
        let per_event = match ns_per_event.iter().find(|(t, _)| *t == trigger) {
            Some(&(_, per_event)) => per_event,
            None => {
                let per_event = fastest_ns_per_event(trigger, plan.run.batch.get());
                ns_per_event.push((trigger, per_event));
                per_event
            }
        };
        let stats_run = plan.stats_run && !m.is_base();
        let runs = 1 + plan.repeats.get() as u64 + u64::from(stats_run);
        ns += runs as f64 * m.events(plan.run.iterations.get()) as f64 * per_event;
    }
    ns / 1e9
}

/// The trigger's time per event, the best of a few short batches (the
/// fastest is the one least disturbed). A trigger that cannot be armed
/// here counts as 1 ns per event.
fn fastest_ns_per_event(trigger: Trigger, plan_batch: u32) -> f64 {
    const BATCH: u64 = 200;
    // A kernel loop needs its driver loaded (and privileges): it counts
    // as 1 ns per event, below its real cost.
    let Ok(mut armed) = trigger.arm(None, plan_batch) else {
        return 1.0;
    };
    let fastest = (0..5)
        .filter_map(|_| {
            let start = Instant::now();
            armed.fire(BATCH).ok()?;
            Some(start.elapsed().as_nanos() as f64 / BATCH as f64)
        })
        .fold(f64::INFINITY, f64::min);
    if fastest.is_finite() {
        fastest.max(0.01)
    } else {
        1.0
    }
}

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

/// What a [`run`] came to.
#[derive(Clone, Debug, Default)]
pub struct Runs {
    pub outcomes: Vec<Outcome>,
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
pub struct Outcome {
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
}

impl Outcome {
    fn new(mechanism: Mechanism) -> Self {
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
    /// [`SURE_SHARE`] of it.
    fn is_sure(&self, plan: &Plan) -> bool {
        self.detectable()
            .is_some_and(|d| d <= SURE_SHARE * plan.precision.of(self.mechanism.trigger()))
    }

    fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    fn set(&mut self, status: Status, reason: String) {
        self.status = status;
        self.reason = Some(reason);
    }

    /// Records a run's error: a missing kernel feature is a skip (its
    /// reason alone), anything else a failure (its whole message).
    fn fail(&mut self, err: Error) {
        if err.is_unsupported() {
            self.set(Status::Skipped, err.reason().to_string());
        } else {
            self.set(Status::Failed, err.to_string());
        }
    }
}

/// Checks, before anything runs, that this process has the privileges
/// every mechanism of the plan needs ([`caps`]), and the stats run's.
/// The error is one line naming each missing capability and who needs it;
/// the proof, what [`run`] takes.
pub fn check_privileges(plan: &Plan) -> Result<Privileged> {
    let privileged = Privileged::check(&plan.mechanisms)?;
    // Mechanisms that lack the same, together: "uprobe-nop, uretprobe-nop
    // need CAP_SYS_ADMIN to create uprobes...".
    let mut lacking: Vec<(Vec<&str>, String)> = Vec::new();
    for (m, missing) in privileged.lacking() {
        let missing = missing.to_string();
        match lacking.iter_mut().find(|(_, what)| *what == missing) {
            Some((names, _)) => names.push(m.name()),
            None => lacking.push((vec![m.name()], missing)),
        }
    }
    let mut parts: Vec<String> = lacking
        .iter()
        .map(|(names, what)| {
            let verb = if names.len() == 1 { "needs" } else { "need" };
            format!("{} {verb} {what}", names.join(", "))
        })
        .collect();
    let stats = plan.stats_run && plan.mechanisms.iter().any(|m| !m.is_base());
    if let Some(missing) = privileged.stats_lacking().filter(|_| stats) {
        parts.push(format!("the prog ns run needs {missing}"));
    }
    if parts.is_empty() {
        return Ok(privileged);
    }
    let leave_out = if stats && parts.len() > lacking.len() {
        "; run it as root, or leave those out (-m, --no-prog-stats)"
    } else {
        "; run it as root, or leave those out (-m)"
    };
    Err(Error::environment(format!(
        "{}{leave_out}",
        parts.join("; ")
    )))
}

/// Runs the plan (see the module documentation for the order) and
/// returns one outcome per planned mechanism. `privileged` is the check
/// made before ([`check_privileges`], or [`Privileged::check`] where a
/// mechanism's missing capabilities should fail only that mechanism).
/// Fails only for problems that stop the whole run; a mechanism's own
/// problems end up in its outcome.
pub fn run(
    plan: &Plan,
    privileged: &Privileged,
    progress: impl FnMut(&Step) + Send,
) -> Result<Runs> {
    // One measuring run per CPU at a time, across processes (re-entrant:
    // the command holds it already).
    let _cpus = cpulock::hold_for(plan.run.cpu, plan.run.producers.get(), cpulock::Wait::Yes)?;
    let mut runs = on_measuring_thread(|| Ok(run_here(plan, privileged, progress)))?;
    runs.cpu_wait_s = cpulock::waited_for_held().as_secs_f64();
    Ok(runs)
}

fn run_here(plan: &Plan, privileged: &Privileged, mut progress: impl FnMut(&Step)) -> Runs {
    let mut outcomes: Vec<Outcome> = plan.mechanisms.iter().copied().map(Outcome::new).collect();

    // Check once, and hold what the mechanisms need from the environment
    // (tracefs) for the whole run, so it is set up once rather than per
    // run; and skip what the kernel visibly lacks before loading anything.
    let (support, problems) = Support::check(privileged);
    for (m, err) in problems {
        if let Some(outcome) = outcomes.iter_mut().find(|o| o.mechanism == m) {
            outcome.fail(err);
        }
    }
    // The CPU never idles between runs (see keeper.rs).
    let cpu = CpuPin::new(plan.run.cpu).map(|pin| pin.cpu);
    let _keeper = cpu.as_ref().ok().map(|&cpu| Keeper::start(cpu));
    let context_before = context::snapshot(*cpu.as_ref().unwrap_or(&0));

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
    if plan.warmup {
        warm_up(&mut at, &mut outcomes);
    }
    propagate_base_problems(&mut outcomes);
    let rounds = timed_rounds(&mut at, &mut outcomes);
    propagate_base_problems(&mut outcomes);
    if plan.stats_run {
        stats_run(&mut at, &mut outcomes);
    }
    if let Some(signal) = plan.stopped_by() {
        cut_short(&mut outcomes, signal);
    }
    step.what = "done".into();
    progress(&step);
    Runs {
        outcomes,
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

    fn measure(&self, m: Mechanism, opts: &Options) -> Result<Sample> {
        measure(self.support.ready(m)?, opts)
    }
}

/// Step 1: one untimed run of every mechanism: the load-time support check.
fn warm_up(at: &mut Running<'_, impl FnMut(&Step)>, outcomes: &mut [Outcome]) {
    let plan = at.plan;
    let opts = Options {
        bpf_stats: false,
        ..plan.run.clone()
    };
    at.step.total = outcomes.iter().filter(|o| o.is_ok()).count() as u64;
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
        if plan.stopped_by().is_some() {
            return;
        }
        at.next(format!("warm-up {}", outcome.mechanism));
        match at.measure(outcome.mechanism, &opts) {
            Ok(sample) => {
                outcome.iterations = plan.run_time.map(|t| scaled(outcome.mechanism, &sample, t))
            }
            Err(err) => outcome.fail(err),
        }
        at.step.done += 1;
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

/// A base and the mechanisms compared to it, as ranges of the plan.
fn groups(outcomes: &[Outcome]) -> Vec<std::ops::Range<usize>> {
    let starts: Vec<usize> = (0..outcomes.len())
        .filter(|&i| i == 0 || outcomes[i].mechanism.is_base())
        .collect();
    starts
        .iter()
        .zip(starts.iter().skip(1).chain([&outcomes.len()]))
        .map(|(&a, &b)| a..b)
        .collect()
}

/// Step 2: the timed rounds. In each, every group runs its base around each
/// of its mechanisms (base, raw_tp, base, tp, base): a mechanism's run is
/// paired with the mean of the base runs just before and just after it,
/// which takes out any drift in the machine's speed that is steady over
/// the few tens of ms between them. At least `plan.repeats` rounds; then,
/// within `plan.budget`, more rounds of the mechanisms not yet
/// [`Outcome::is_sure`]. Returns the rounds run.
fn timed_rounds(at: &mut Running<'_, impl FnMut(&Step)>, outcomes: &mut [Outcome]) -> usize {
    let plan = at.plan;
    let started = Instant::now();
    let mut round = 0;
    loop {
        let min_rounds = round < plan.repeats.get();
        let wanted =
            |o: &Outcome| o.is_ok() && !o.mechanism.is_base() && (min_rounds || !o.is_sure(plan));
        // A base with none of its mechanisms to measure (selected alone,
        // or they are skipped) runs once a round, the least number of rounds.
        let alone = |g: &std::ops::Range<usize>, outcomes: &[Outcome]| {
            min_rounds
                && outcomes[g.start].is_ok()
                && !outcomes[g.clone()]
                    .iter()
                    .any(|o| o.is_ok() && !o.mechanism.is_base())
        };
        let todo = outcomes.iter().filter(|o| wanted(o)).count()
            + groups(outcomes)
                .iter()
                .filter(|g| alone(g, outcomes))
                .count();
        let more =
            round < plan.repeats.get() || (started.elapsed() < plan.budget && round < MAX_ROUNDS);
        if todo == 0 || !more || plan.stopped_by().is_some() {
            return round;
        }
        round += 1;
        at.step.total = at.step.done + 2 * todo as u64;
        for o in outcomes.iter_mut() {
            o.kept = o.samples.len();
        }
        for group in groups(outcomes) {
            let todo: Vec<usize> = group.clone().filter(|&i| wanted(&outcomes[i])).collect();
            if todo.is_empty() && !alone(&group, outcomes) || !outcomes[group.start].is_ok() {
                continue;
            }
            if !bracket(at, outcomes, group.start, &todo, round) {
                return round;
            }
        }
    }
}

/// Runs `base`, then each of `todo` followed by `base` again. False when a
/// stop was asked for.
fn bracket(
    at: &mut Running<'_, impl FnMut(&Step)>,
    outcomes: &mut [Outcome],
    base: usize,
    todo: &[usize],
    round: usize,
) -> bool {
    let plan = at.plan;
    let mut before: Option<Sample> = None;
    for (n, &i) in std::iter::once(&base).chain(todo).enumerate() {
        if n > 0 {
            // The mechanism, then the base after it.
            if plan.stopped_by().is_some() {
                return false;
            }
            let Some(b) = before.clone() else { return true };
            at.next(format!("round {round} {}", outcomes[i].mechanism));
            let got = timed(at, &outcomes[i]);
            at.step.done += 1;
            match got {
                Ok((single, sample)) => {
                    let o = &mut outcomes[i];
                    o.single.extend(single);
                    o.samples.push(sample);
                    o.before.push(b);
                }
                Err(err) => {
                    outcomes[i].fail(err);
                    continue;
                }
            }
        }
        if plan.stopped_by().is_some() {
            return false;
        }
        at.next(format!("round {round} {}", outcomes[base].mechanism));
        match timed(at, &outcomes[base]) {
            Ok((single, sample)) => {
                if n > 0 {
                    outcomes[i].after.push(sample.clone());
                }
                outcomes[base].single.extend(single);
                outcomes[base].samples.push(sample.clone());
                before = Some(sample);
            }
            Err(err) => {
                outcomes[base].fail(err);
                return true;
            }
        }
    }
    true
}

/// One timed run of `m`, and with several producers first one producer
/// alone (for the scaling).
fn timed(at: &mut Running<'_, impl FnMut(&Step)>, o: &Outcome) -> Result<(Option<Sample>, Sample)> {
    let plan = at.plan;
    let opts = plan.options_for(o, false);
    let single = (plan.run.producers.get() > 1)
        .then(|| {
            let one = Options {
                producers: NonZeroUsize::MIN,
                ..opts.clone()
            };
            at.measure(o.mechanism, &one)
        })
        .transpose()?;
    // A run during which another task (or the hypervisor) had the CPU for
    // a while timed that too: measured again at once (no pause: the CPU
    // stays busy), a few times.
    let mut sample = at.measure(o.mechanism, &opts)?;
    for _ in 0..MAX_RETAKES {
        let lost = sample.lost.as_secs_f64() / sample.elapsed.as_secs_f64().max(1e-9);
        if lost <= MAX_LOST || plan.stopped_by().is_some() {
            break;
        }
        at.step.retaken += 1;
        sample = at.measure(o.mechanism, &opts)?;
    }
    Ok((single, sample))
}

/// Step 3: the program's own run time, with BPF stats on for this run only.
fn stats_run(at: &mut Running<'_, impl FnMut(&Step)>, outcomes: &mut [Outcome]) {
    let plan = at.plan;
    let todo = |o: &Outcome| o.is_ok() && !o.mechanism.is_base();
    at.step.total = at.step.done + outcomes.iter().filter(|o| todo(o)).count() as u64;
    for outcome in outcomes.iter_mut().filter(|o| todo(o)) {
        if plan.stopped_by().is_some() {
            return;
        }
        at.next(format!("BPF stats {}", outcome.mechanism));
        match at.measure(outcome.mechanism, &plan.options_for(outcome, true)) {
            Ok(sample) => outcome.prog_ns_per_event = sample.prog_ns_per_event(),
            // No BPF_ENABLE_STATS (before 5.8): no figures, not a
            // failure, and no point trying the other mechanisms.
            Err(err) if err.is_unsupported() => {
                log::warn!("no program run times: {}", err.reason());
                return;
            }
            Err(err) => outcome.fail(err),
        }
        at.step.done += 1;
    }
}

/// After a stop: drops the round in progress (a mechanism's figures pair
/// it with the base runs around it), and marks what has no round left as
/// not measured.
fn cut_short(outcomes: &mut [Outcome], signal: i32) {
    let why = format!("not measured: interrupted by {}", signal_name(signal));
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
        let kept = outcome.kept;
        outcome.samples.truncate(kept);
        outcome.before.truncate(kept);
        outcome.after.truncate(kept);
        outcome.single.truncate(kept);
        if outcome.samples.is_empty() {
            outcome.set(Status::Failed, why.clone());
        }
    }
}

/// `SIGINT` for 2.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

/// A mechanism whose base could not be measured cannot be compared to it.
fn propagate_base_problems(outcomes: &mut [Outcome]) {
    let bad_bases: Vec<(Mechanism, Status)> = outcomes
        .iter()
        .filter(|o| o.mechanism.is_base() && !o.is_ok())
        .map(|o| (o.mechanism, o.status))
        .collect();
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
        if let Some((base, status)) = bad_bases
            .iter()
            .find(|(b, _)| *b == outcome.mechanism.base())
        {
            let what = if *status == Status::Skipped {
                "was skipped"
            } else {
                "failed"
            };
            outcome.set(*status, format!("its base {base} {what}"));
        }
    }
}

/// Runs the plan and returns its document: [`run`], then [`document`].
pub fn execute(
    plan: &Plan,
    privileged: &Privileged,
    host: impl FnOnce() -> Host,
    progress: impl FnMut(&Step) + Send,
) -> Result<Document> {
    let runs = run(plan, privileged, progress)?;
    Ok(document(plan, &runs, host()))
}

/// Turns outcomes into the result document. Pure: the statistics of fixed
/// samples are unit-tested.
pub fn document(plan: &Plan, runs: &Runs, host: Host) -> Document {
    let outcomes = &runs.outcomes;
    let cpu = outcomes
        .iter()
        .flat_map(|o| o.samples.first())
        .map(|s| s.cpu)
        .next()
        .or(plan.run.cpu)
        .unwrap_or(0);
    let mechanisms = outcomes.iter().map(|o| mechanism_result(plan, o)).collect();
    Document {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        timestamp: host.timestamp,
        kernel_release: host.kernel_release,
        cpu_model: host.cpu_model,
        arch: host.arch,
        cpu,
        emulated: host.emulated,
        iterations: plan.run.iterations.get(),
        repeats: runs.rounds.max(1),
        budget_secs: plan.budget.as_secs_f64(),
        run_secs: plan.run_time.map(|t| t.as_secs_f64()),
        warmup_runs: usize::from(plan.warmup),
        order: ORDER_BRACKETED.into(),
        prog_stats: plan.stats_run,
        batch: plan.run.batch.get(),
        prog_work: plan.run.prog_work.get(),
        producers: plan.run.producers.get(),
        interrupted: plan.stopped_by().map(signal_name),
        retaken_runs: runs.retaken_runs,
        context: runs.context.clone(),
        cpu_wait_s: runs.cpu_wait_s,
        mechanisms,
    }
}

/// One mechanism's figures. A mechanism's timed run is paired with the
/// mean of its base's runs just before and after it.
fn mechanism_result(plan: &Plan, o: &Outcome) -> MechanismResult {
    let m = o.mechanism;
    // Ok with no timed run cannot happen through run(); say so if it does.
    let (status, reason) = match (o.status, o.samples.is_empty()) {
        (Status::Ok, true) => (Status::Failed, Some("no timed run".to_string())),
        (status, _) => (status, o.reason.clone()),
    };
    let ok = status == Status::Ok;
    let rates: Vec<f64> = o.samples.iter().map(|s| s.events_per_sec() / 1e3).collect();
    let ns: Vec<f64> = o.samples.iter().map(Sample::ns_per_event).collect();
    let paired_ok = ok && !m.is_base() && o.before.len() == o.samples.len();
    let paired = |f: &dyn Fn(&Sample, &Sample, &Sample) -> f64| -> Option<Summary> {
        if !paired_ok {
            return None;
        }
        let values: Vec<f64> = o
            .samples
            .iter()
            .zip(o.before.iter().zip(&o.after))
            .map(|(s, (b, a))| f(s, b, a))
            .collect();
        Summary::of(&values)
    };
    let base_ns = |b: &Sample, a: &Sample| (b.ns_per_event() + a.ns_per_event()) / 2.0;
    MechanismResult {
        name: m.name().into(),
        base: m.base().name().into(),
        trigger: m.trigger().label().into(),
        hook: m.hook().into(),
        events_per_run: o
            .samples
            .first()
            .map_or_else(|| m.events(plan.run.iterations.get()), |s| s.iterations),
        status,
        reason,
        k_events_per_sec: ok.then(|| Summary::of(&rates)).flatten(),
        ns_per_event: ok.then(|| crate::stats::median(&ns)),
        overhead_ns: paired_ok.then(|| Summary::of(&o.overheads())).flatten(),
        ratio_to_base: paired(&|s, b, a| {
            s.events_per_sec() / ((b.events_per_sec() + a.events_per_sec()) / 2.0)
        }),
        hits: (!m.is_base() && ok).then(|| o.samples.iter().map(|s| s.hits.unwrap_or(0)).collect()),
        prog_ns_per_event: ok.then_some(o.prog_ns_per_event).flatten(),
        producers: (ok && plan.run.producers.get() > 1).then(|| per_producer(&o.samples)),
        scaling: (ok && o.single.len() == o.samples.len())
            .then(|| {
                let ratios: Vec<f64> = o
                    .samples
                    .iter()
                    .zip(&o.single)
                    .map(|(n, one)| n.events_per_sec() / one.events_per_sec())
                    .collect();
                Summary::of(&ratios)
            })
            .flatten(),
        speed_ns: ok
            .then(|| Summary::of(&o.samples.iter().map(|s| s.speed_ns).collect::<Vec<_>>()))
            .flatten(),
        overhead_steps: paired(&|s, b, a| {
            (s.ns_per_event() - base_ns(b, a))
                / ((2.0 * s.speed_ns + b.speed_ns + a.speed_ns) / 4.0)
        }),
        detectable: paired_ok.then(|| o.detectable()).flatten(),
        detectable_ns: paired_ok.then(|| o.detectable_ns()).flatten(),
    }
}

/// Each producer's rate over the rounds, and its hits.
fn per_producer(samples: &[Sample]) -> Vec<ProducerResult> {
    let n = samples.iter().map(|s| s.producers.len()).min().unwrap_or(0);
    (0..n)
        .filter_map(|i| {
            let rates: Vec<f64> = samples
                .iter()
                .map(|s| s.producers[i].events_per_sec() / 1e3)
                .collect();
            Some(ProducerResult {
                cpu: samples.first()?.producers[i].cpu,
                k_events_per_sec: Summary::of(&rates)?,
                hits: samples.iter().filter_map(|s| s.producers[i].hits).collect(),
            })
        })
        .collect()
}

/// Whether this kernel runs a mechanism, for `--list`.
#[derive(Clone, Debug, PartialEq)]
pub enum Availability {
    Yes,
    /// The kernel lacks what it needs: why.
    No(String),
    /// It should run and did not: why.
    Broken(String),
    /// Not privileged: cannot tell.
    Unknown,
}

/// Finds out, with a one-event run of each, which of `mechanisms` this
/// kernel runs. Without privileges every answer is [`Availability::Unknown`].
pub fn survey(mechanisms: &[Mechanism], cpu: Option<usize>) -> Vec<(Mechanism, Availability)> {
    let opts = Options {
        iterations: NonZeroU64::MIN,
        cpu,
        ..Options::default()
    };
    let Ok(privileged) = Privileged::check(mechanisms) else {
        // What the architecture lacks needs no privileges to tell.
        let here = |m: Mechanism| {
            m.trigger()
                .absent_here()
                .map_or(Availability::Unknown, Availability::No)
        };
        return mechanisms.iter().map(|&m| (m, here(m))).collect();
    };
    let surveyed = on_measuring_thread(|| {
        let (support, mut problems) = Support::check(&privileged);
        Ok(mechanisms
            .iter()
            .map(|&m| {
                let verdict = match problems.iter().position(|(p, _)| *p == m) {
                    Some(i) => Err(problems.swap_remove(i).1),
                    None => support.ready(m).and_then(|r| measure(r, &opts)).map(|_| ()),
                };
                let availability = match verdict {
                    Ok(()) => Availability::Yes,
                    Err(err) if err.is_unsupported() => Availability::No(err.reason().into()),
                    Err(err) => Availability::Broken(err.reason().into()),
                };
                (m, availability)
            })
            .collect())
    });
    surveyed.unwrap_or_else(|err| {
        mechanisms
            .iter()
            .map(|&m| (m, Availability::Broken(err.to_string())))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn m(name: &str) -> Mechanism {
        name.parse().unwrap()
    }

    #[test]
    fn plan_adds_bases_in_order() {
        assert_eq!(expand(&[]), Mechanism::all().collect::<Vec<_>>());
        assert_eq!(expand(&[m("raw_tp")]), vec![m("base"), m("raw_tp")]);
        assert_eq!(
            expand(&[m("uretprobe-ret"), m("tp"), m("raw_tp"), m("tp")]),
            vec![
                m("base"),
                m("raw_tp"),
                m("tp"),
                m("base-ret"),
                m("uretprobe-ret")
            ]
        );
        assert_eq!(expand(&[m("base-nop")]), vec![m("base-nop")]);
    }

    fn runs(outcomes: &[Outcome]) -> Runs {
        Runs {
            outcomes: outcomes.to_vec(),
            rounds: outcomes.iter().map(|o| o.samples.len()).max().unwrap_or(0),
            retaken_runs: 0,
            context: None,
            cpu_wait_s: 0.0,
        }
    }

    fn sample(mech: Mechanism, ns_per_event: u64, hits: Option<u64>) -> Sample {
        Sample {
            mechanism: mech,
            iterations: 1000,
            elapsed: Duration::from_nanos(ns_per_event * 1000),
            hits,
            prog_run: None,
            cpu: 1,
            producers: Vec::new(),
            speed_ns: 2.0,
            lead_in_ns_per_event: 1.0,
            lost: Duration::ZERO,
        }
    }

    /// A base's runs, or a mechanism's with the same base time before
    /// and after each: `base_ns` (or 1000 ns when not given).
    fn outcome(mech: Mechanism, ns: &[u64]) -> Outcome {
        paired(mech, ns, &vec![1000; ns.len()])
    }

    fn paired(mech: Mechanism, ns: &[u64], base_ns: &[u64]) -> Outcome {
        let hits = (!mech.is_base()).then_some(1000);
        let base: Vec<Sample> = if mech.is_base() {
            Vec::new()
        } else {
            base_ns
                .iter()
                .map(|&n| sample(mech.base(), n, None))
                .collect()
        };
        Outcome {
            samples: ns.iter().map(|&n| sample(mech, n, hits)).collect(),
            before: base.clone(),
            after: base,
            prog_ns_per_event: hits.map(|_| 25.0),
            ..Outcome::new(mech)
        }
    }

    fn host() -> Host {
        Host {
            kernel_release: "6.18.0".into(),
            cpu_model: "Test CPU".into(),
            arch: "x86_64".into(),
            timestamp: "2026-05-01T12:00:00Z".into(),
            emulated: None,
        }
    }

    #[test]
    fn figures_are_paired_per_repeat() {
        // Base 1000, 500, 1000 ns/event; raw_tp 100 ns more in each pass.
        let outcomes = [
            outcome(m("base"), &[1000, 500, 1000]),
            paired(m("raw_tp"), &[1100, 600, 1100], &[1000, 500, 1000]),
        ];
        let plan = Plan {
            run: Options {
                iterations: NonZeroU64::new(1000).unwrap(),
                ..Options::default()
            },
            repeats: NonZeroUsize::new(3).unwrap(),
            ..Plan::new(&[m("raw_tp")])
        };
        let doc = document(&plan, &runs(&outcomes), host());
        assert_eq!(doc.cpu, 1);
        let base = doc.mechanism("base").unwrap();
        let rate = base.k_events_per_sec.as_ref().unwrap();
        assert_eq!(rate.samples, vec![1000.0, 2000.0, 1000.0]);
        assert_eq!(rate.median, 1000.0);
        assert_eq!(base.ns_per_event, Some(1000.0));
        assert!(base.overhead_ns.is_none() && base.ratio_to_base.is_none());
        assert!(base.hits.is_none() && base.prog_ns_per_event.is_none());

        let raw_tp = doc.mechanism("raw_tp").unwrap();
        let overhead = raw_tp.overhead_ns.as_ref().unwrap();
        // Paired: exactly +100 every time, no spread, although the base
        // itself varied by 2x.
        assert!(overhead.samples.iter().all(|v| (v - 100.0).abs() < 1e-6));
        assert!(overhead.stddev < 1e-6);
        let ratio = raw_tp.ratio_to_base.as_ref().unwrap();
        assert!((ratio.samples[0] - 1000.0 / 1100.0).abs() < 1e-9);
        assert!((ratio.samples[1] - 500.0 / 600.0).abs() < 1e-9);
        assert!((ratio.median - 1000.0 / 1100.0).abs() < 1e-9);
        assert_eq!(raw_tp.hits, Some(vec![1000; 3]));
        assert_eq!(raw_tp.prog_ns_per_event, Some(25.0));
        assert_eq!(raw_tp.base, "base");
        assert_eq!(raw_tp.trigger, "task_rename");
    }

    #[test]
    fn skipped_and_failed_have_reasons_and_no_figures() {
        let mut kprobe = Outcome::new(m("kprobe"));
        kprobe.fail(Error::unsupported("no kprobes"));
        let mut tp = outcome(m("tp"), &[1100]);
        tp.fail(Error::failed("tp: attach failed"));
        let outcomes = [outcome(m("base"), &[1000]), kprobe, tp];
        let doc = document(&Plan::new(&[]), &runs(&outcomes), host());
        let kprobe = doc.mechanism("kprobe").unwrap();
        assert_eq!(kprobe.status, Status::Skipped);
        assert_eq!(kprobe.reason.as_deref(), Some("no kprobes"));
        assert!(kprobe.k_events_per_sec.is_none() && kprobe.ratio_to_base.is_none());
        let tp = doc.mechanism("tp").unwrap();
        assert_eq!(tp.status, Status::Failed);
        assert!(tp.k_events_per_sec.is_none() && tp.hits.is_none());
    }

    #[test]
    fn a_stop_drops_the_round_in_progress() {
        // Stopped in round 3: base ran it, raw_tp did not.
        let mut outcomes = [
            outcome(m("base"), &[1000, 1000, 1000]),
            outcome(m("raw_tp"), &[1100, 1100]),
            Outcome::new(m("tp")),
        ];
        outcomes[2].fail(Error::unsupported("no tracefs"));
        for o in &mut outcomes {
            o.kept = 2;
        }
        cut_short(&mut outcomes, libc::SIGINT);
        assert_eq!(outcomes[0].samples.len(), 2);
        assert_eq!(outcomes[1].samples.len(), 2);
        assert_eq!(outcomes[2].status, Status::Skipped, "left as it was");
        // Stopped before a timed round: nothing measured.
        let mut outcomes = [outcome(m("base"), &[]), outcome(m("raw_tp"), &[])];
        cut_short(&mut outcomes, libc::SIGTERM);
        for o in &outcomes {
            assert_eq!(o.status, Status::Failed);
            assert_eq!(
                o.reason.as_deref(),
                Some("not measured: interrupted by SIGTERM")
            );
        }
    }

    #[test]
    fn the_document_says_what_stopped_the_run() {
        static STOP: AtomicUsize = AtomicUsize::new(0);
        let plan = Plan {
            stop: Some(&STOP),
            ..Plan::new(&[m("raw_tp")])
        };
        let outcomes = [outcome(m("base"), &[1000]), outcome(m("raw_tp"), &[1100])];
        assert_eq!(document(&plan, &runs(&outcomes), host()).interrupted, None);
        STOP.store(libc::SIGINT as usize, Ordering::SeqCst);
        assert_eq!(plan.stopped_by(), Some(libc::SIGINT));
        let doc = document(&plan, &runs(&outcomes), host());
        assert_eq!(doc.interrupted.as_deref(), Some("SIGINT"));
    }

    #[test]
    fn the_estimate_is_a_lower_bound_that_grows_with_the_plan() {
        let plan = |iterations: u64, repeats: usize| Plan {
            run: Options {
                iterations: NonZeroU64::new(iterations).unwrap(),
                ..Options::default()
            },
            repeats: NonZeroUsize::new(repeats).unwrap(),
            ..Plan::new(&[m("raw_tp"), m("uprobe-nop")])
        };
        let small = estimate_secs(&plan(1000, 1));
        // 1000 comm writes and 100000 calls: well under a second.
        assert!(small > 0.0 && small < 1.0, "{small}");
        let absurd = estimate_secs(&plan(u64::MAX / 2, 5));
        assert!(absurd.is_finite() && absurd > 86_400.0 * 365.0, "{absurd}");
        // Ten times the rounds, about ten times as long (same triggers).
        let one = estimate_secs(&plan(1_000_000, 1));
        let ten = estimate_secs(&plan(1_000_000, 19));
        assert!(ten > 3.0 * one, "{one} {ten}");
    }

    #[test]
    fn a_bad_base_takes_its_mechanisms_with_it() {
        let mut base = outcome(m("base-nop"), &[]);
        base.fail(Error::failed("boom"));
        let mut outcomes = [
            outcome(m("base"), &[1000]),
            outcome(m("raw_tp"), &[1100]),
            base,
            outcome(m("uprobe-nop"), &[2000]),
        ];
        propagate_base_problems(&mut outcomes);
        assert_eq!(outcomes[1].status, Status::Ok);
        assert_eq!(outcomes[3].status, Status::Failed);
        assert_eq!(
            outcomes[3].reason.as_deref(),
            Some("its base base-nop failed")
        );
    }
}
