//! The one measurement pipeline, used by the tests and the command alike:
//! a [`Plan`] (validated when built: the types admit no zero counts) goes
//! to [`run`], whose runs become a result [`Document`] in [`document`].
//! Overhead and ratio to base are computed there and nowhere else.
//!
//! The order of runs:
//!
//! 1. a warm-up pass: one untimed run of every mechanism, which is also
//!    where the ones this kernel cannot run are found (and skipped);
//! 2. `repeats` timed passes, each going once round-robin over the whole
//!    plan in catalogue order (each base just before the mechanisms
//!    compared to it), so that drift in the machine's speed — frequency,
//!    other load, cache state — hits a mechanism and its base alike. A
//!    mechanism's figures against its base are paired per pass: repeat *r*
//!    of `raw_tp` against repeat *r* of `base`;
//!    Every run also times a fixed piece of user-space work, the speed
//!    reference (src/measure/speed.rs). When the machine slowed down during
//!    a base's run or one of its mechanisms' (a reference more than
//!    [`STEADY_TOLERANCE`] above the best seen), that base and its
//!    mechanisms are measured again in the same round, up to
//!    [`MAX_RETAKES`] times;
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
use std::time::Instant;

use crate::document::SCHEMA_VERSION;
use crate::document::{
    Document, Host, MechanismResult, ProducerResult, Status, ORDER_ROUND_ROBIN, SCHEMA,
};
use crate::measure::sys::{self, Tracefs};
use crate::measure::{caps, cpulock};
use crate::measure::{
    measure, on_measuring_thread, Batch, Error, Mechanism, Options, ProgWork, Result, Sample,
    Trigger, DEFAULT_ITERATIONS,
};
use crate::stats::Summary;

/// Runs are steady when no speed reference among them is more than this
/// much slower than the fastest seen in the whole run (warm-up included).
/// Quiet, the reference varies by well under 1%; the slow spells that
/// this catches cost 20–35%.
pub const STEADY_TOLERANCE: f64 = 0.05;
/// Times unsteady runs are measured again before they are kept anyway.
pub const MAX_RETAKES: u32 = 3;
/// Pause before measuring again: slow spells last seconds.
const RETAKE_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// The selftest's events under emulation (see [`Plan::selftest`]).
pub const EMULATED_ITERATIONS: NonZeroU64 = NonZeroU64::new(10_000).unwrap();

/// Default `--repeat`.
/// Seven: with five, one disturbed round of either run (5 of the 25 pairs
/// the wrong way round) kept the gate's rank test above p = 0.05; seven
/// allow 11 of 49.
pub const DEFAULT_REPEATS: NonZeroUsize = NonZeroUsize::new(7).unwrap();

/// What to run, and how.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The mechanisms to run, each base included, in catalogue order.
    pub mechanisms: Vec<Mechanism>,
    /// Events per mechanism run (a base scales it: [`Mechanism::events`]).
    pub iterations: NonZeroU64,
    /// Timed passes.
    pub repeats: NonZeroUsize,
    /// Run every mechanism once untimed first. Off under emulation, where
    /// nothing is timed that anyone reads: the timed pass finds what the
    /// kernel lacks just as well.
    pub warmup: bool,
    /// `None`: CPU 0, or the first allowed CPU if 0 is not.
    pub cpu: Option<usize>,
    /// Make the extra run with BPF run-time stats.
    pub stats_run: bool,
    /// Loop iterations per driver run (kernel-loop trigger).
    pub batch: Batch,
    /// Extra work every program does per hit.
    pub prog_work: ProgWork,
    /// Producers firing at once, each on its own CPU. With more than one,
    /// each round also measures one producer alone, for the scaling.
    pub producers: NonZeroUsize,
    /// Times runs slowed down by the machine are measured again (see
    /// [`run`]): [`MAX_RETAKES`], and 0 under emulation, where the speed
    /// of the emulated CPU means nothing and retakes only cost time.
    pub retakes: u32,
    /// Set (to a signal number, by a signal handler) to stop the run
    /// after the run in progress: see [`run`].
    pub stop: Option<&'static AtomicUsize>,
}

impl Plan {
    /// `selection` and each one's base, in catalogue order; an empty
    /// selection means every mechanism. Defaults for the rest.
    pub fn new(selection: &[Mechanism]) -> Self {
        Self {
            mechanisms: expand(selection),
            iterations: DEFAULT_ITERATIONS,
            repeats: DEFAULT_REPEATS,
            warmup: crate::document::emulated().is_none(),
            cpu: None,
            stats_run: true,
            batch: Batch::default(),
            prog_work: ProgWork::default(),
            producers: NonZeroUsize::MIN,
            retakes: if crate::document::emulated().is_some() {
                0
            } else {
                MAX_RETAKES
            },
            stop: None,
        }
    }

    /// The selftest's plan: test_overhead's 100000 events, one timed run
    /// after the warm-up, no stats run. Under emulation,
    /// [`EMULATED_ITERATIONS`] and no warm-up: there the run proves that
    /// the mechanism attaches and counts exactly, which 10000 events prove
    /// as well as 100000, and its rates are no performance figures.
    pub fn selftest(mechanism: Mechanism) -> Self {
        let emulated = crate::document::emulated().is_some();
        Self {
            iterations: if emulated {
                EMULATED_ITERATIONS
            } else {
                DEFAULT_ITERATIONS
            },
            repeats: NonZeroUsize::MIN,
            stats_run: false,
            ..Self::new(&[mechanism])
        }
    }

    /// The signal that asked the run to stop, if one did.
    pub fn stopped_by(&self) -> Option<i32> {
        let signal = self.stop?.load(Ordering::SeqCst);
        (signal != 0).then_some(signal as i32)
    }

    fn options(&self, bpf_stats: bool) -> Options {
        Options {
            iterations: self.iterations,
            cpu: self.cpu,
            bpf_stats,
            batch: self.batch,
            prog_work: self.prog_work,
            producers: self.producers,
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
                let per_event = fastest_ns_per_event(trigger, plan.batch.get());
                ns_per_event.push((trigger, per_event));
                per_event
            }
        };
        let stats_run = plan.stats_run && !m.is_base();
        let runs = 1 + plan.repeats.get() as u64 + u64::from(stats_run);
        ns += runs as f64 * m.events(plan.iterations.get()) as f64 * per_event;
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
    /// What runs next: `warm-up raw_tp`, `repeat 2/5 raw_tp`...
    pub what: String,
}

/// What a [`run`] came to.
#[derive(Clone, Debug, Default)]
pub struct Runs {
    pub outcomes: Vec<Outcome>,
    /// Timed runs measured again because the machine slowed down.
    pub retaken_runs: u64,
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
    /// The timed runs, in repeat order.
    pub samples: Vec<Sample>,
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
            single: Vec::new(),
            prog_ns_per_event: None,
        }
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

/// Runs each mechanism's pre-load support check ([`Mechanism::check_support`]),
/// tp first so that the tracefs it keeps mounted serves the others' checks
/// instead of each mounting (and announcing) its own. Returns the guards to
/// hold while the mechanisms run, and each mechanism's problem, if any.
fn check_support(mechanisms: &[Mechanism]) -> (Vec<Tracefs>, Vec<Option<Error>>) {
    let mut guards = Vec::new();
    let mut problems: Vec<Option<Error>> = mechanisms.iter().map(|_| None).collect();
    let mut order: Vec<usize> = (0..mechanisms.len()).collect();
    order.sort_by_key(|&i| mechanisms[i].kind() != crate::measure::Kind::Tracepoint);
    for i in order {
        if let Some(missing) = caps::missing(mechanisms[i]) {
            let m = mechanisms[i];
            problems[i] = Some(Error::environment(format!("{m} needs {missing}")));
            continue;
        }
        match mechanisms[i].check_support() {
            Ok(guard) => guards.extend(guard),
            Err(err) => problems[i] = Some(err),
        }
    }
    (guards, problems)
}

/// Checks, before anything runs, that this process has the privileges
/// every mechanism of the plan needs ([`caps`]), and the stats run's.
/// The error is one line naming each missing capability and who needs it.
pub fn check_privileges(plan: &Plan) -> Result<()> {
    sys::check_privileges()?;
    // Mechanisms that lack the same, together: "uprobe-nop, uretprobe-nop
    // need CAP_SYS_ADMIN to create uprobes...".
    let mut lacking: Vec<(Vec<&str>, String)> = Vec::new();
    for m in &plan.mechanisms {
        if let Some(missing) = caps::missing(*m) {
            let missing = missing.to_string();
            match lacking.iter_mut().find(|(_, what)| *what == missing) {
                Some((names, _)) => names.push(m.name()),
                None => lacking.push((vec![m.name()], missing)),
            }
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
    if let Some(missing) = caps::missing_for_stats().filter(|_| stats) {
        parts.push(format!("the prog ns run needs {missing}"));
    }
    if parts.is_empty() {
        return Ok(());
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
/// returns one outcome per planned mechanism. Fails only for problems that
/// stop the whole run (not privileged); a mechanism's own problems end up
/// in its outcome.
pub fn run(plan: &Plan, progress: impl FnMut(&Step) + Send) -> Result<Runs> {
    sys::check_privileges()?;
    // One measuring run per CPU at a time, across processes (re-entrant:
    // the command holds it already).
    let _cpus = cpulock::hold_for(plan.cpu, plan.producers.get(), cpulock::Wait::Yes)?;
    let mut runs = on_measuring_thread(|| Ok(run_here(plan, progress)))?;
    runs.cpu_wait_s = cpulock::waited_for_held().as_secs_f64();
    Ok(runs)
}

fn run_here(plan: &Plan, mut progress: impl FnMut(&Step)) -> Runs {
    let repeats = plan.repeats.get() as u64;
    let mut outcomes: Vec<Outcome> = plan.mechanisms.iter().copied().map(Outcome::new).collect();

    // Hold what the mechanisms need from the environment (tracefs) for the
    // whole run, so it is set up once rather than per run; and skip what
    // the kernel visibly lacks before loading anything.
    let (_guards, problems) = check_support(&plan.mechanisms);
    for (outcome, problem) in outcomes.iter_mut().zip(problems) {
        if let Some(err) = problem {
            outcome.fail(err);
        }
    }

    let opts = plan.options(false);
    let stats_runs = |outcomes: &[Outcome]| -> u64 {
        if plan.stats_run {
            outcomes
                .iter()
                .filter(|o| o.is_ok() && !o.mechanism.is_base())
                .count() as u64
        } else {
            0
        }
    };
    let ok_count = |outcomes: &[Outcome]| outcomes.iter().filter(|o| o.is_ok()).count() as u64;
    let mut step = Step {
        done: 0,
        total: ok_count(&outcomes) * (1 + repeats) + stats_runs(&outcomes),
        what: String::new(),
    };

    // A signal stops the run between two runs (never inside one).
    let stopped = || plan.stopped_by().is_some();
    let mut rounds_done = 0;

    // 1. Warm-up, and the load-time support check.
    let mut fastest = f64::INFINITY;
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok() && plan.warmup) {
        if stopped() {
            break;
        }
        step.what = format!("warm-up {}", outcome.mechanism);
        progress(&step);
        match measure(outcome.mechanism, &opts) {
            Ok(sample) => fastest = fastest.min(sample.speed_ns),
            Err(err) => outcome.fail(err),
        }
        step.done += 1;
    }
    propagate_base_problems(&mut outcomes);
    step.total = step.done + ok_count(&outcomes) * repeats + stats_runs(&outcomes);

    // 2. The timed passes, round-robin, each again while the machine was
    // slow during it.
    let single_opts = Options {
        producers: NonZeroUsize::MIN,
        ..opts.clone()
    };
    // A base and the mechanisms compared to it, in plan order: a group is
    // measured again as a whole, which keeps each pairing within a round.
    let groups: Vec<std::ops::Range<usize>> = {
        let starts: Vec<usize> = (0..outcomes.len())
            .filter(|&i| i == 0 || outcomes[i].mechanism.is_base())
            .collect();
        starts
            .iter()
            .zip(starts.iter().skip(1).chain([&outcomes.len()]))
            .map(|(&a, &b)| a..b)
            .collect()
    };
    let mut retaken_runs = 0;
    'rounds: for repeat in 1..=repeats {
        for group in &groups {
            for take in 0..=plan.retakes {
                let mut slowest = 0f64;
                let mut measured = Vec::new();
                for (i, outcome) in outcomes[group.clone()].iter_mut().enumerate() {
                    if !outcome.is_ok() {
                        continue;
                    }
                    if stopped() {
                        break 'rounds;
                    }
                    step.what = format!("repeat {repeat}/{repeats} {}", outcome.mechanism);
                    progress(&step);
                    let single = (plan.producers.get() > 1)
                        .then(|| measure(outcome.mechanism, &single_opts))
                        .transpose();
                    match single.and_then(|single| Ok((single, measure(outcome.mechanism, &opts)?)))
                    {
                        Ok((single, sample)) => {
                            slowest = slowest.max(sample.speed_ns);
                            fastest = fastest.min(sample.speed_ns);
                            measured.push(group.start + i);
                            outcome.single.extend(single);
                            outcome.samples.push(sample);
                        }
                        Err(err) => outcome.fail(err),
                    }
                    step.done += 1;
                }
                if slowest <= fastest * (1.0 + STEADY_TOLERANCE) || take == plan.retakes {
                    break;
                }
                log::info!(
                    "repeat {repeat}: the machine was {:.0}% slower than its best; measuring \
                     {} again",
                    100.0 * (slowest / fastest - 1.0),
                    outcomes[group.start].mechanism
                );
                for &i in &measured {
                    outcomes[i].samples.pop();
                    if plan.producers.get() > 1 {
                        outcomes[i].single.pop();
                    }
                }
                retaken_runs += measured.len() as u64;
                step.total += measured.len() as u64;
                std::thread::sleep(RETAKE_PAUSE);
            }
        }
        rounds_done = repeat;
    }
    propagate_base_problems(&mut outcomes);

    // 3. The program's own run time, with BPF stats on for this run only.
    if plan.stats_run {
        step.total = step.done + stats_runs(&outcomes);
        let stats_opts = plan.options(true);
        for outcome in outcomes
            .iter_mut()
            .filter(|o| o.is_ok() && !o.mechanism.is_base())
        {
            if stopped() {
                break;
            }
            step.what = format!("BPF stats {}", outcome.mechanism);
            progress(&step);
            match measure(outcome.mechanism, &stats_opts) {
                Ok(sample) => outcome.prog_ns_per_event = sample.prog_ns_per_event(),
                // No BPF_ENABLE_STATS (before 5.8): no figures, not a
                // failure, and no point trying the other mechanisms.
                Err(err) if err.is_unsupported() => {
                    log::warn!("no program run times: {}", err.reason());
                    break;
                }
                Err(err) => outcome.fail(err),
            }
            step.done += 1;
        }
    }
    if let Some(signal) = plan.stopped_by() {
        cut_short(&mut outcomes, rounds_done, signal);
    }
    step.what = "done".into();
    progress(&step);
    Runs {
        outcomes,
        retaken_runs,
        ..Runs::default()
    }
}

/// After a stop: keeps the rounds that every mechanism completed (a
/// figure against the base pairs runs of the same round), and marks what
/// has none as not measured.
fn cut_short(outcomes: &mut [Outcome], rounds: u64, signal: i32) {
    let why = format!("not measured: interrupted by {}", signal_name(signal));
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
        outcome.samples.truncate(rounds as usize);
        outcome.single.truncate(rounds as usize);
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
    host: impl FnOnce() -> Host,
    progress: impl FnMut(&Step) + Send,
) -> Result<Document> {
    let runs = run(plan, progress)?;
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
        .or(plan.cpu)
        .unwrap_or(0);
    let base_of = |m: Mechanism| outcomes.iter().find(|o| o.mechanism == m.base());
    let mechanisms = outcomes
        .iter()
        .map(|o| {
            let m = o.mechanism;
            // Ok with no timed run cannot happen through run(); say so if it does.
            let (status, reason) = match (o.status, o.samples.is_empty()) {
                (Status::Ok, true) => (Status::Failed, Some("no timed run".to_string())),
                (status, _) => (status, o.reason.clone()),
            };
            let ok = status == Status::Ok;
            let rates: Vec<f64> = o.samples.iter().map(|s| s.events_per_sec() / 1e3).collect();
            let ns: Vec<f64> = o.samples.iter().map(Sample::ns_per_event).collect();
            // Pair each timed run with its base's run in the same pass.
            let paired = |f: fn(&Sample, &Sample) -> f64| -> Option<Summary> {
                let base = base_of(m).filter(|b| ok && !m.is_base() && b.is_ok())?;
                if base.samples.len() != o.samples.len() {
                    return None;
                }
                let values: Vec<f64> = o
                    .samples
                    .iter()
                    .zip(&base.samples)
                    .map(|(s, b)| f(s, b))
                    .collect();
                Summary::of(&values)
            };
            MechanismResult {
                name: m.name().into(),
                base: m.base().name().into(),
                trigger: m.trigger().label().into(),
                hook: m.hook().into(),
                events_per_run: o
                    .samples
                    .first()
                    .map_or_else(|| m.events(plan.iterations.get()), |s| s.iterations),
                status,
                reason,
                k_events_per_sec: ok.then(|| Summary::of(&rates)).flatten(),
                ns_per_event: ok.then(|| crate::stats::median(&ns)),
                overhead_ns: paired(|s, b| s.ns_per_event() - b.ns_per_event()),
                ratio_to_base: paired(|s, b| s.events_per_sec() / b.events_per_sec()),
                hits: (!m.is_base() && ok)
                    .then(|| o.samples.iter().map(|s| s.hits.unwrap_or(0)).collect()),
                prog_ns_per_event: ok.then_some(o.prog_ns_per_event).flatten(),
                producers: (ok && plan.producers.get() > 1).then(|| per_producer(&o.samples)),
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
                overhead_steps: paired(|s, b| {
                    (s.ns_per_event() - b.ns_per_event()) / ((s.speed_ns + b.speed_ns) / 2.0)
                }),
            }
        })
        .collect();
    Document {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        timestamp: host.timestamp,
        kernel_release: host.kernel_release,
        cpu_model: host.cpu_model,
        cpu,
        emulated: host.emulated,
        iterations: plan.iterations.get(),
        repeats: plan.repeats.get(),
        warmup_runs: 1,
        order: ORDER_ROUND_ROBIN.into(),
        prog_stats: plan.stats_run,
        batch: plan.batch.get(),
        prog_work: plan.prog_work.get(),
        producers: plan.producers.get(),
        interrupted: plan.stopped_by().map(signal_name),
        retaken_runs: runs.retaken_runs,
        cpu_wait_s: runs.cpu_wait_s,
        mechanisms,
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
    let plan = Plan {
        iterations: NonZeroU64::MIN,
        cpu,
        ..Plan::new(mechanisms)
    };
    if sys::check_privileges().is_err() {
        return mechanisms
            .iter()
            .map(|&m| (m, Availability::Unknown))
            .collect();
    }
    let opts = plan.options(false);
    let surveyed = on_measuring_thread(|| {
        let (_guards, problems) = check_support(mechanisms);
        Ok(mechanisms
            .iter()
            .zip(problems)
            .map(|(&m, problem)| {
                let verdict = match problem {
                    Some(err) => Err(err),
                    None => measure(m, &opts).map(|_| ()),
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
            ..Runs::default()
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
        }
    }

    fn outcome(mech: Mechanism, ns: &[u64]) -> Outcome {
        let hits = (!mech.is_base()).then_some(1000);
        Outcome {
            samples: ns.iter().map(|&n| sample(mech, n, hits)).collect(),
            prog_ns_per_event: hits.map(|_| 25.0),
            ..Outcome::new(mech)
        }
    }

    fn host() -> Host {
        Host {
            kernel_release: "6.18.0".into(),
            cpu_model: "Test CPU".into(),
            timestamp: "2026-05-01T12:00:00Z".into(),
            emulated: None,
        }
    }

    #[test]
    fn figures_are_paired_per_repeat() {
        // Base 1000, 500, 1000 ns/event; raw_tp 100 ns more in each pass.
        let outcomes = [
            outcome(m("base"), &[1000, 500, 1000]),
            outcome(m("raw_tp"), &[1100, 600, 1100]),
        ];
        let plan = Plan {
            iterations: NonZeroU64::new(1000).unwrap(),
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
    fn a_stop_keeps_the_rounds_every_mechanism_completed() {
        // Stopped in round 3: base ran it, raw_tp did not.
        let mut outcomes = [
            outcome(m("base"), &[1000, 1000, 1000]),
            outcome(m("raw_tp"), &[1100, 1100]),
            Outcome::new(m("tp")),
        ];
        outcomes[2].fail(Error::unsupported("no tracefs"));
        cut_short(&mut outcomes, 2, libc::SIGINT);
        assert_eq!(outcomes[0].samples.len(), 2);
        assert_eq!(outcomes[1].samples.len(), 2);
        assert_eq!(outcomes[2].status, Status::Skipped, "left as it was");
        // Stopped before a timed round: nothing measured.
        let mut outcomes = [outcome(m("base"), &[]), outcome(m("raw_tp"), &[])];
        cut_short(&mut outcomes, 0, libc::SIGTERM);
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
            iterations: NonZeroU64::new(iterations).unwrap(),
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
