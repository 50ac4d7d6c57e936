//! The plan: what to run and how, its defaults, the privileges it needs,
//! and a lower bound of how long it takes.

use std::num::{NonZeroU64, NonZeroUsize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::document::Emulation;
use crate::measure::cpu::cpulock::Wait;
use crate::measure::{
    Error, Mechanism, Options, Privileged, Result, Trigger, Variant, DEFAULT_ITERATIONS,
};

/// Default length of a timed run (see [`Plan::run_time`]).
pub const DEFAULT_RUN_TIME: Duration = Duration::from_millis(50);

/// The length of a timed run with `--against`: shorter, so that A and B
/// are closer in time and a run has more pairs (docs/gate-power.md).
pub const AGAINST_RUN_TIME: Duration = Duration::from_millis(10);

/// Default time budget of the timed rounds (see [`Plan::budget`]).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(45);

/// The time budget with `--against`, whose rounds attach and detach twice:
/// the least rounds leave time for what is undecided after them
/// (docs/gate-power.md, "The budget of an `--against` run").
pub const AGAINST_BUDGET: Duration = Duration::from_secs(75);

/// [`DEFAULT_BUDGET`], or none under emulation, where nothing timed is
/// read.
fn default_budget(emulated: bool) -> Duration {
    if emulated {
        Duration::ZERO
    } else {
        DEFAULT_BUDGET
    }
}

/// A mechanism is sure once it sees this share of the threshold: two runs
/// that just saw the whole threshold would leave about 4 A/A comparisons
/// in 10 UNSURE; at 0.6, about 1 in 100, for 2.8 times the rounds.
pub const SURE_SHARE: f64 = 0.6;

/// Under an instruction clock, runs of 250k instructions: a tick (HZ=250:
/// every 4M) lands in about one in 16, so most runs count none.
pub const EXACT_RUN_TIME: Duration = Duration::from_micros(250);

/// [`DEFAULT_RUN_TIME`], or none under emulation: scaling needs the
/// warm-up run's time per event, and there is no warm-up there.
fn default_run_time(emulated: bool) -> Option<Duration> {
    (!emulated).then_some(DEFAULT_RUN_TIME)
}

/// The change a run must be able to detect, as a share of a mechanism's
/// own cost (its overhead, or [`FLOOR_OF_BASE`] of its base's time if
/// that is more), before it stops measuring it: the threshold it will
/// be judged by.
pub use super::threshold::Threshold;

/// A near-free mechanism's cost is taken as this share of its base's
/// time per event: changes are judged against that.
pub const FLOOR_OF_BASE: f64 = 0.05;

/// The selftest's events under emulation (see [`Plan::selftest`]).
pub const EMULATED_ITERATIONS: NonZeroU64 = NonZeroU64::new(10_000).unwrap();

/// The selftest's longest timed run: 100000 events of up to 2 µs each.
/// Slower ones (a uprobe on `ret`, single-stepped: 9.5 µs an event on a
/// 2-vCPU AMD EPYC VM, 15 µs on a Xeon one) fire what fits, down to a
/// tenth: 1 s of a test's time each, for a count that 20000 check as well.
/// A base fires them all.
pub const SELFTEST_LONGEST_RUN: Duration = Duration::from_millis(200);

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
    /// producers), as [`with_attached`](crate::measure::with_attached) takes them
    /// and the load writes them into the BPF object: set once, copied
    /// nowhere. Its `bpf_stats` is turned on for the stats run only.
    /// With more than one producer, each round also measures one producer
    /// alone, for the scaling.
    pub options: Options,
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
    /// (`MechanismRuns::is_sure`) while the timed rounds have taken less than
    /// this. Zero: exactly `repeats` rounds (so under emulation, where
    /// nothing timed is read).
    pub budget: Duration,
    /// What "sure" means: the change this run could detect, as a share of
    /// the mechanism's own cost, by trigger.
    pub threshold: Threshold,
    /// Set (to a signal number, by a signal handler) to stop the run
    /// after the run in progress: see [`gather`](super::gather).
    pub stop: Option<&'static AtomicUsize>,
    /// Whether to wait for a CPU another measuring run holds (`--no-wait`:
    /// no, the run fails with [`Error::Busy`]).
    pub wait: Wait,
    /// Measure each mechanism twice a round: as A with these options and
    /// as B with the variant's (`--against`), each bracketed by its base.
    pub against: Option<Variant>,
    /// The emulator the run is under (`tcg`), or none on real or
    /// virtualised hardware: its rates are no performance figures, and
    /// the defaults time nothing there. Given by the caller, who reads it
    /// from the environment ([`emulated`](crate::measure::kernel::host::emulated)).
    pub emulated: Option<Emulation>,
    /// The emulator's version, as its runner said it (recorded only).
    pub emulator: Option<String>,
    /// The kernel's config, as the caller read it (recorded only).
    pub kernel_config: Option<crate::kconfig::KernelConfig>,
}

impl Plan {
    /// Under an emulator clocked by the guest's instructions
    /// ([`crate::measure::kernel::host::EXACT`]): its time per event is a count.
    pub fn exact(&self) -> bool {
        self.emulated
            .as_ref()
            .is_some_and(Emulation::counts_instructions)
    }

    /// The runs `m` makes in one attachment, all its rounds' in the first:
    /// under the instruction clock nothing drifts between them, and a link
    /// on every function takes minutes of TCG to make and undo
    /// (fsession.multi-all-loop on 7.3). Elsewhere one, each run between
    /// its base's.
    pub fn per_attachment(&self, m: Mechanism) -> usize {
        let block = self.exact()
            && m.kind().spec().attach.every_function()
            && self.options.producers.get() == 1
            && self.against.is_none();
        if block {
            self.repeats.get()
        } else {
            1
        }
    }

    /// `selection` and each one's base, in catalogue order; an empty
    /// selection means every mechanism. Defaults for the rest, which
    /// depend on whether the run is `emulated` ([`Plan::emulated`]).
    pub fn new(selection: &[Mechanism], emulated: Option<Emulation>) -> Self {
        let is_emulated = emulated.is_some();
        let exact = emulated
            .as_ref()
            .is_some_and(Emulation::counts_instructions);
        Self {
            mechanisms: expand(selection),
            options: Options::default(),
            run_time: if exact {
                Some(EXACT_RUN_TIME)
            } else {
                default_run_time(is_emulated)
            },
            repeats: DEFAULT_REPEATS,
            // Exact: the warm-up sizes the runs, and takes what a first
            // run does once (faults, first allocations) out of the counts.
            warmup: !is_emulated || exact,
            stats_run: true,
            budget: default_budget(is_emulated),
            threshold: Threshold::ByTrigger,
            stop: None,
            wait: Wait::Yes,
            against: None,
            emulated,
            emulator: None,
            kernel_config: None,
        }
    }

    /// This plan as an in-run comparison against `variant` (`--against`):
    /// its timed runs sized to [`AGAINST_RUN_TIME`] and its rounds given
    /// [`AGAINST_BUDGET`], neither under emulation, where nothing timed is
    /// read.
    pub fn against(self, variant: Variant) -> Self {
        let emulated = self.emulated.is_some();
        Self {
            run_time: (!emulated).then_some(AGAINST_RUN_TIME),
            budget: if emulated {
                Duration::ZERO
            } else {
                AGAINST_BUDGET
            },
            against: Some(variant),
            ..self
        }
    }

    /// The selftest's plan: test_overhead's 100000 events, one timed round
    /// (the mechanism between two base runs), no warm-up, no stats run.
    /// Under emulation, [`EMULATED_ITERATIONS`]: there the run proves that
    /// the mechanism attaches and counts exactly, which 10000 events prove
    /// as well as 100000, and its rates are no performance figures. Where
    /// events are slow, what fits in [`SELFTEST_LONGEST_RUN`].
    pub fn selftest(mechanism: Mechanism, emulated: Option<Emulation>) -> Self {
        Self {
            options: Options {
                iterations: if emulated.is_some() {
                    EMULATED_ITERATIONS
                } else {
                    DEFAULT_ITERATIONS
                },
                longest_run: Some(SELFTEST_LONGEST_RUN),
                ..Options::default()
            },
            repeats: NonZeroUsize::MIN,
            budget: Duration::ZERO,
            run_time: None,
            // As test_overhead: no warm-up. The lead-in before the timed
            // run warms the path, and the keeper keeps the CPU from idling.
            warmup: false,
            stats_run: false,
            ..Self::new(&[mechanism], emulated)
        }
    }

    /// The signal that asked the run to stop, if one did.
    pub fn stopped_by(&self) -> Option<i32> {
        let signal = self.stop?.load(Ordering::SeqCst);
        (signal != 0).then_some(signal as i32)
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
                let per_event = fastest_ns_per_event(trigger, plan.options.batch.get());
                ns_per_event.push((trigger, per_event));
                per_event
            }
        };
        let stats_run = plan.stats_run && !m.is_base();
        let runs = 1 + plan.repeats.get() as u64 + u64::from(stats_run);
        ns += runs as f64 * m.events(plan.options.iterations.get()) as f64 * per_event;
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

/// Checks, before anything runs, that this process has the privileges
/// every mechanism of the plan needs ([`caps`](crate::measure::environment::caps)), and the stats run's.
/// The error is one line naming each missing capability and who needs it;
/// the proof, what [`gather`](super::gather) takes.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::fixtures::m;

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

    /// Under emulation, which the caller gives, the defaults time nothing.
    #[test]
    fn emulation_is_the_plans_own_setting() {
        let real = Plan::new(&[], None);
        assert!(real.warmup && real.run_time.is_some() && real.budget > Duration::ZERO);
        let emulated = Plan::new(&[], Some("tcg".into()));
        assert!(!emulated.warmup && emulated.run_time.is_none());
        assert_eq!(emulated.budget, Duration::ZERO);
        assert_eq!(emulated.emulated, Some("tcg".into()));
        let selftest = |emulated| Plan::selftest(m("raw_tp"), emulated).options.iterations;
        assert_eq!(selftest(None), DEFAULT_ITERATIONS);
        assert_eq!(selftest(Some("tcg".into())), EMULATED_ITERATIONS);
    }

    /// `--against` has its own run time and budget, and under emulation
    /// none either.
    #[test]
    fn an_in_run_comparison_has_its_own_run_time_and_budget() {
        let real = Plan::new(&[], None).against(Variant::BpfStats);
        assert_eq!(real.against, Some(Variant::BpfStats));
        assert_eq!(real.run_time, Some(AGAINST_RUN_TIME));
        assert_eq!(real.budget, AGAINST_BUDGET);
        let emulated = Plan::new(&[], Some("tcg".into())).against(Variant::BpfStats);
        assert_eq!(emulated.run_time, None);
        assert_eq!(emulated.budget, Duration::ZERO);
    }

    #[test]
    fn the_estimate_is_a_lower_bound_that_grows_with_the_plan() {
        let plan = |iterations: u64, repeats: usize| Plan {
            options: Options {
                iterations: NonZeroU64::new(iterations).unwrap(),
                ..Options::default()
            },
            repeats: NonZeroUsize::new(repeats).unwrap(),
            ..Plan::new(&[m("raw_tp"), m("uprobe-nop")], None)
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
    fn a_link_on_every_function_is_made_once_under_the_instruction_clock() {
        use crate::document::Emulation;
        let all = m("kprobe.multi-all-loop");
        let one = m("kprobe.multi-loop");
        let exact = Plan::new(&[m("base-loop")], Some(Emulation::TcgIcount));
        assert_eq!(exact.per_attachment(all), exact.repeats.get());
        assert_eq!(exact.per_attachment(one), 1);
        let timed = Plan::new(&[m("base-loop")], None);
        assert_eq!(
            timed.per_attachment(all),
            1,
            "timed runs pair each with its bases"
        );
        let tcg = Plan::new(&[m("base-loop")], Some(Emulation::Tcg));
        assert_eq!(tcg.per_attachment(all), 1);
    }
}
