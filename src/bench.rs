//! The benchmark matrix: every selected mechanism and its base, measured
//! `repeats` times with the same definitions of mechanism, trigger and
//! measurement that the tests use ([`measure`](mod@crate::measure)).
//!
//! The order of runs:
//!
//! 1. a warm-up pass: one untimed run of every mechanism, which is also
//!    where the ones this kernel cannot run are found (and skipped);
//! 2. `repeats` timed passes, each going once round-robin over the whole
//!    selection in [`Mechanism::ALL`] order (each base just before the
//!    mechanisms compared to it), so that drift in the machine's speed —
//!    frequency, other load, cache state — hits a mechanism and its base
//!    alike. A mechanism's figures against its base are paired per pass:
//!    repeat *r* of `raw_tp` against repeat *r* of `base`;
//! 3. one more run of every non-base mechanism with the kernel's BPF
//!    run-time stats enabled, for the program's own ns per event. It is
//!    kept out of the timed passes because the stats add two clock reads
//!    to every program run.

use crate::error::{Error, Result};
use crate::measure::{measure, Options, Sample};
use crate::mechanism::Mechanism;
use crate::result::SCHEMA_VERSION;
use crate::result::{Document, Host, MechanismResult, Status, ORDER_ROUND_ROBIN, SCHEMA};
use crate::stats::Summary;
use crate::sys::{self, Tracefs};
use crate::trigger::Trigger;

/// Default `--repeat`.
pub const DEFAULT_REPEATS: usize = 5;

#[derive(Clone, Debug)]
pub struct Config {
    /// What the user asked for; empty means every mechanism.
    pub selection: Vec<Mechanism>,
    pub iterations: u64,
    pub repeats: usize,
    /// `None`: CPU 0, or the first allowed CPU if 0 is not.
    pub cpu: Option<usize>,
    /// Make the extra run with BPF run-time stats.
    pub prog_stats: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            selection: Vec::new(),
            iterations: crate::measure::DEFAULT_ITERATIONS,
            repeats: DEFAULT_REPEATS,
            cpu: None,
            prog_stats: true,
        }
    }
}

/// The mechanisms to run for `selection`: each selected one and its base,
/// in [`Mechanism::ALL`] order. An empty selection means all of them.
pub fn plan(selection: &[Mechanism]) -> Vec<Mechanism> {
    if selection.is_empty() {
        return Mechanism::ALL.to_vec();
    }
    Mechanism::ALL
        .into_iter()
        .filter(|m| {
            selection
                .iter()
                .any(|s| s == m || (m.is_base() && s.base() == *m))
        })
        .collect()
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

/// What one mechanism came to.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub mechanism: Mechanism,
    pub status: Status,
    pub reason: Option<String>,
    /// The timed runs, in repeat order.
    pub samples: Vec<Sample>,
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

    /// Records a run's error: a missing kernel feature is a skip, anything
    /// else a failure.
    fn fail(&mut self, err: Error) {
        match err {
            Error::Unsupported(reason) => self.set(Status::Skipped, reason),
            err => self.set(Status::Failed, err.to_string()),
        }
    }
}

/// How many times more events a call base (`base-nop`, `base-push`,
/// `base-ret`) fires. Such an event is a ~2 ns function call: 100000 of
/// them last 0.2 ms, within the jitter of a single interrupt, which made
/// the uprobe mechanisms' ratios to base swing 12–28% between runs. Scaled,
/// the base lasts about as long as a comm-write run; rates are per event,
/// so the figures stay comparable.
pub const CALL_BASE_SCALE: u64 = 100;

fn run_one(mechanism: Mechanism, opts: &Options) -> Result<Sample> {
    let scaled;
    let opts = if matches!(mechanism, Mechanism::Base(Trigger::Call(_))) {
        scaled = Options {
            iterations: opts.iterations.saturating_mul(CALL_BASE_SCALE),
            ..opts.clone()
        };
        &scaled
    } else {
        opts
    };
    measure(mechanism, opts)
}

/// Runs each mechanism's pre-load support check ([`Mechanism::check_support`]),
/// tp first so that the tracefs it keeps mounted serves the others' checks
/// instead of each mounting (and announcing) its own. Returns the guards to
/// hold while the mechanisms run, and each mechanism's problem, if any.
pub fn check_support(mechanisms: &[Mechanism]) -> (Vec<Tracefs>, Vec<Option<Error>>) {
    let mut guards = Vec::new();
    let mut problems: Vec<Option<Error>> = mechanisms.iter().map(|_| None).collect();
    let mut order: Vec<usize> = (0..mechanisms.len()).collect();
    order.sort_by_key(|&i| mechanisms[i] != Mechanism::Tp);
    for i in order {
        match mechanisms[i].check_support() {
            Ok(guard) => guards.extend(guard),
            Err(err) => problems[i] = Some(err),
        }
    }
    (guards, problems)
}

/// Runs the matrix (see the module documentation for the order) and returns
/// one outcome per planned mechanism. Fails only for problems that stop the
/// whole run (not privileged, bad configuration); a mechanism's own
/// problems end up in its outcome.
pub fn run(config: &Config, mut progress: impl FnMut(&Step)) -> Result<Vec<Outcome>> {
    if config.iterations == 0 {
        return Err(Error::environment("iterations must be at least 1"));
    }
    if config.repeats == 0 {
        return Err(Error::environment("repeats must be at least 1"));
    }
    sys::check_privileges()?;
    let plan = plan(&config.selection);
    let mut outcomes: Vec<Outcome> = plan.iter().copied().map(Outcome::new).collect();

    // Hold what the mechanisms need from the environment (tracefs) for the
    // whole run, so it is set up once rather than per run; and skip what
    // the kernel visibly lacks before loading anything.
    let (_guards, problems) = check_support(&plan);
    for (outcome, problem) in outcomes.iter_mut().zip(problems) {
        if let Some(err) = problem {
            outcome.fail(err);
        }
    }

    let opts = Options {
        iterations: config.iterations,
        cpu: config.cpu,
        prog_stats: false,
    };
    let stats_runs = |outcomes: &[Outcome]| -> u64 {
        if config.prog_stats {
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
        total: ok_count(&outcomes) * (1 + config.repeats as u64) + stats_runs(&outcomes),
        what: String::new(),
    };

    // 1. Warm-up, and the load-time support check.
    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
        step.what = format!("warm-up {}", outcome.mechanism);
        progress(&step);
        if let Err(err) = run_one(outcome.mechanism, &opts) {
            outcome.fail(err);
        }
        step.done += 1;
    }
    propagate_base_problems(&mut outcomes);
    step.total = step.done + ok_count(&outcomes) * config.repeats as u64 + stats_runs(&outcomes);

    // 2. The timed passes, round-robin.
    for repeat in 1..=config.repeats {
        for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
            step.what = format!("repeat {repeat}/{} {}", config.repeats, outcome.mechanism);
            progress(&step);
            match run_one(outcome.mechanism, &opts) {
                Ok(sample) => outcome.samples.push(sample),
                Err(err) => outcome.fail(err),
            }
            step.done += 1;
        }
    }
    propagate_base_problems(&mut outcomes);

    // 3. The program's own run time, with BPF stats on for this run only.
    if config.prog_stats {
        step.total = step.done + stats_runs(&outcomes);
        let stats_opts = Options {
            prog_stats: true,
            ..opts.clone()
        };
        for outcome in outcomes
            .iter_mut()
            .filter(|o| o.is_ok() && !o.mechanism.is_base())
        {
            step.what = format!("BPF stats {}", outcome.mechanism);
            progress(&step);
            match run_one(outcome.mechanism, &stats_opts) {
                Ok(sample) => outcome.prog_ns_per_event = sample.prog_ns_per_event(),
                // No BPF_ENABLE_STATS (before 5.8): no figures, not a
                // failure, and no point trying the other mechanisms.
                Err(Error::Unsupported(why)) => {
                    eprintln!("bpf-overhead: no program run times: {why}");
                    break;
                }
                Err(err) => outcome.fail(err),
            }
            step.done += 1;
        }
    }
    step.what = "done".into();
    progress(&step);
    Ok(outcomes)
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

/// Turns outcomes into the result document. Pure: the statistics of fixed
/// samples are unit-tested.
pub fn document(config: &Config, outcomes: &[Outcome], host: Host) -> Document {
    let cpu = outcomes
        .iter()
        .flat_map(|o| o.samples.first())
        .map(|s| s.cpu)
        .next()
        .or(config.cpu)
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
                name: m.name(),
                base: m.base().name(),
                trigger: m.trigger().label().into(),
                hook: m.hook(),
                status,
                reason,
                k_events_per_sec: ok.then(|| Summary::of(&rates)).flatten(),
                ns_per_event: ok.then(|| crate::stats::median(&ns)),
                overhead_ns: paired(|s, b| s.ns_per_event() - b.ns_per_event()),
                ratio_to_base: paired(|s, b| s.events_per_sec() / b.events_per_sec()),
                hits: (!m.is_base() && ok)
                    .then(|| o.samples.iter().map(|s| s.hits.unwrap_or(0)).collect()),
                prog_ns_per_event: ok.then_some(o.prog_ns_per_event).flatten(),
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
        iterations: config.iterations,
        repeats: config.repeats,
        warmup_runs: 1,
        order: ORDER_ROUND_ROBIN.into(),
        prog_stats: config.prog_stats,
        mechanisms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger::{Target, Trigger};
    use std::time::Duration;

    fn m(name: &str) -> Mechanism {
        name.parse().unwrap()
    }

    #[test]
    fn plan_adds_bases_in_order() {
        assert_eq!(plan(&[]), Mechanism::ALL.to_vec());
        assert_eq!(plan(&[m("raw_tp")]), vec![m("base"), m("raw_tp")]);
        assert_eq!(
            plan(&[m("uretprobe-ret"), m("tp"), m("raw_tp"), m("tp")]),
            vec![
                m("base"),
                m("raw_tp"),
                m("tp"),
                Mechanism::Base(Trigger::Call(Target::Ret)),
                m("uretprobe-ret")
            ]
        );
        assert_eq!(plan(&[m("base-nop")]), vec![m("base-nop")]);
    }

    fn sample(mech: Mechanism, ns_per_event: u64, hits: Option<u64>) -> Sample {
        Sample {
            mechanism: mech,
            iterations: 1000,
            elapsed: Duration::from_nanos(ns_per_event * 1000),
            hits,
            prog_run: None,
            cpu: 1,
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
        let config = Config {
            iterations: 1000,
            repeats: 3,
            ..Config::default()
        };
        let doc = document(&config, &outcomes, host());
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
        let doc = document(&Config::default(), &outcomes, host());
        let kprobe = doc.mechanism("kprobe").unwrap();
        assert_eq!(kprobe.status, Status::Skipped);
        assert_eq!(kprobe.reason.as_deref(), Some("no kprobes"));
        assert!(kprobe.k_events_per_sec.is_none() && kprobe.ratio_to_base.is_none());
        let tp = doc.mechanism("tp").unwrap();
        assert_eq!(tp.status, Status::Failed);
        assert!(tp.k_events_per_sec.is_none() && tp.hits.is_none());
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
