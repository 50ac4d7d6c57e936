//! Document assembly: each mechanism's runs as the result document. Overhead
//! and ratio to base are computed here and nowhere else.

use super::plan::Plan;
use super::schedule::{signal_name, Gathered, MechanismRuns};
use crate::document::{
    Document, InputFile, MechanismResult, Order, ProducerResult, Status, Unit, SCHEMA,
    SCHEMA_VERSION,
};
use crate::measure::kernel::host::Host;
use crate::measure::{AttachCost, Sample, Variant};
use crate::stats::Summary;

/// Turns each mechanism's runs into the result document. Pure: the statistics of fixed
/// samples are unit-tested.
pub fn document(plan: &Plan, runs: &Gathered, host: Host) -> Document {
    let per_mechanism = &runs.per_mechanism;
    let cpu = per_mechanism
        .iter()
        .flat_map(|o| o.samples.first())
        .map(|s| s.cpu)
        .next()
        .or(plan.options.cpu)
        .unwrap_or(0);
    let mechanisms = per_mechanism
        .iter()
        .map(|o| mechanism_result(plan, o))
        .collect();
    Document {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        timestamp: host.timestamp,
        kernel_release: host.kernel_release,
        kernel_build_id: host.kernel_build_id,
        cpu_model: host.cpu_model,
        arch: host.arch,
        mitigations: host.mitigations,
        cpu,
        emulated: plan.emulated.clone(),
        unit: if plan.exact() {
            Unit::Instructions
        } else {
            Unit::Ns
        },
        emulator: plan.emulator.clone(),
        iterations: plan.options.iterations.get(),
        repeats: runs.rounds.max(1),
        budget_secs: plan.budget.as_secs_f64(),
        run_secs: plan.run_time.map(|t| t.as_secs_f64()),
        warmup_runs: usize::from(plan.warmup),
        order: Order::Bracketed,
        prog_stats: plan.stats_run,
        batch: plan.options.batch.get(),
        prog_work: plan.options.prog_work.get(),
        counting: plan.options.counting,
        stacktrace: plan.options.stacktrace,
        producers: plan.options.producers.get(),
        interrupted: plan.stopped_by().map(signal_name),
        retaken_runs: runs.retaken_runs,
        context: runs.context.clone(),
        cpu_wait_s: runs.cpu_wait_s,
        variant: plan.against.as_ref().map(Variant::recorded),
        objects: objects(plan),
        packet: packet(plan),
        kernel_config: plan.kernel_config.clone(),
        mechanisms,
    }
}

/// The object files of the plan's programs, A's then B's, each once.
fn objects(plan: &Plan) -> Vec<InputFile> {
    let b = plan.mechanisms.iter().filter_map(|&m| {
        plan.against
            .as_ref()?
            .b_of(m)
            .filter(|b| b.object() != m.object())
    });
    let mut files: Vec<InputFile> = Vec::new();
    for p in plan
        .mechanisms
        .iter()
        .copied()
        .chain(b)
        .filter_map(|m| m.object())
    {
        let path = p.path.display().to_string();
        if !files.iter().any(|f| f.path == path) {
            files.push(InputFile::of(&p.path, p.bytes()));
        }
    }
    files
}

/// `--packet`'s file, when a program of the plan ran on it.
fn packet(plan: &Plan) -> Option<InputFile> {
    let path = crate::measure::objects::object::packet_file()?;
    let m = plan
        .mechanisms
        .iter()
        .copied()
        .find(|&m| crate::measure::objects::object::uses_packet(m))?;
    match m.trigger() {
        crate::measure::mechanism::trigger::Trigger::TestRun(t) => {
            Some(InputFile::of(path, t.packet))
        }
        _ => None,
    }
}

/// All producers' rate over one producer's alone, round by round, where
/// every round ran both.
fn scaling(o: &MechanismRuns) -> Option<Summary> {
    if o.single.len() != o.samples.len() {
        return None;
    }
    let ratios: Vec<f64> = o
        .samples
        .iter()
        .zip(&o.single)
        .map(|(n, one)| n.events_per_sec() / one.events_per_sec())
        .collect();
    Summary::of(&ratios)
}

/// One mechanism's figures. A mechanism's timed run is paired with the
/// mean of its base's runs just before and after it.
fn mechanism_result(plan: &Plan, o: &MechanismRuns) -> MechanismResult {
    let m = o.mechanism;
    // Ok with no timed run cannot happen through run(); say so if it does.
    let (status, reason) = match (o.status, o.samples.is_empty()) {
        (Status::Ok, true) => (Status::Failed, Some("no timed run".to_string())),
        (status, _) => (status, o.reason.clone()),
    };
    let ok = status == Status::Ok;
    let paired_ok = ok && !m.is_base() && o.before.len() == o.samples.len();
    let rounds = |f: fn(&Sample) -> f64| Summary::of(&o.samples.iter().map(f).collect::<Vec<_>>());
    // How small a change the rounds' noise hides; counts have no noise.
    let noisy = paired_ok && !plan.exact();
    let attach: Vec<AttachCost> = o.samples.iter().filter_map(|s| s.attach).collect();
    let (windows, base_windows) = run_windows(o, ok);
    MechanismResult {
        name: m.name().into(),
        base: m.base().name().into(),
        trigger: m.trigger().label().into(),
        hook: m.hook().into(),
        events_per_run: o
            .samples
            .first()
            .map_or_else(|| m.events(plan.options.iterations.get()), |s| s.events),
        status,
        reason,
        k_events_per_sec: ok.then(|| rounds(|s| s.events_per_sec() / 1e3)).flatten(),
        ns_per_event: ok.then(|| ns_per_event(plan, o)),
        overhead_ns: paired_ok.then(|| overhead_ns(plan, o)).flatten(),
        ratio_to_base: paired_ok.then(|| ratio_to_base(o)).flatten(),
        // None where the program counted nothing (`--counting none`).
        hits: (!m.is_base() && ok)
            .then(|| o.samples.iter().map(|s| s.hits).collect())
            .flatten(),
        counted_events: (!m.is_base() && ok).then(|| counted_events(o)).flatten(),
        prog_ns_per_event: ok.then_some(o.prog_ns_per_event).flatten(),
        producers: (ok && plan.options.producers.get() > 1).then(|| per_producer(&o.samples)),
        scaling: ok.then(|| scaling(o)).flatten(),
        speed_ns: ok.then(|| rounds(|s| s.speed_ns)).flatten(),
        overhead_steps: paired_ok.then(|| overhead_steps(o)).flatten(),
        detectable: noisy.then(|| o.detectable()).flatten(),
        detectable_ns: noisy.then(|| o.detectable_ns()).flatten(),
        side_b: o
            .against
            .as_ref()
            .map(|b| Box::new(mechanism_result(plan, b))),
        pairs_ns: o
            .pairs_ns()
            .filter(|p| !p.is_empty() && o.against.as_ref().is_some_and(|b| b.status == Status::Ok))
            .and_then(|p| Summary::of(&p)),
        attach: ok.then(|| attach_median(&attach)).flatten(),
        windows,
        base_windows,
        site: ok.then(|| o.samples.last()?.site).flatten(),
    }
}

/// The ns per event of `o`'s timed runs: their median, or under an
/// instruction clock ([`Plan::exact`]) their least.
fn ns_per_event(plan: &Plan, o: &MechanismRuns) -> f64 {
    let ns: Vec<f64> = o.samples.iter().map(Sample::ns_per_event).collect();
    match plan.exact() {
        true => ns.iter().copied().fold(f64::INFINITY, f64::min),
        false => crate::stats::median(&ns),
    }
}

/// The overhead over the rounds; under an instruction clock one value,
/// the count ([`overhead_exact`]), not a statistic.
fn overhead_ns(plan: &Plan, o: &MechanismRuns) -> Option<Summary> {
    match plan.exact() {
        true => overhead_exact(o).and_then(|c| Summary::of(&[c])),
        false => Summary::of(&o.overheads()),
    }
}

/// Per round, the timed run's rate over the mean of its base's runs
/// around it.
fn ratio_to_base(o: &MechanismRuns) -> Option<Summary> {
    paired(o, |s, b, a| {
        s.events_per_sec() / ((b.events_per_sec() + a.events_per_sec()) / 2.0)
    })
}

/// Per round, the overhead in steps of the speed reference of the timed
/// run (counted twice) and its base's runs around it.
fn overhead_steps(o: &MechanismRuns) -> Option<Summary> {
    paired(o, |s, b, a| {
        let base_ns = (b.ns_per_event() + a.ns_per_event()) / 2.0;
        (s.ns_per_event() - base_ns) / ((2.0 * s.speed_ns + b.speed_ns + a.speed_ns) / 4.0)
    })
}

/// `f` of each timed run and its base's runs before and after it, over
/// the rounds.
fn paired(o: &MechanismRuns, f: impl Fn(&Sample, &Sample, &Sample) -> f64) -> Option<Summary> {
    let values: Vec<f64> = o
        .samples
        .iter()
        .zip(o.before.iter().zip(&o.after))
        .map(|(s, (b, a))| f(s, b, a))
        .collect();
    Summary::of(&values)
}

/// The events each run's program counted, where it counted and they are
/// not the events run throughout.
fn counted_events(o: &MechanismRuns) -> Option<Vec<u64>> {
    o.samples
        .iter()
        .any(|s| s.hits.is_some() && s.counted_events != s.events)
        .then(|| o.samples.iter().map(|s| s.counted_events).collect())
}

/// The counting windows of `o`'s runs and of its base's runs around them.
fn run_windows(o: &MechanismRuns, ok: bool) -> (Option<Vec<u64>>, Option<Vec<u64>>) {
    let base = o.before.iter().chain(&o.after);
    (
        ok.then(|| windows(o.samples.iter())).flatten(),
        (ok && !o.mechanism.is_base())
            .then(|| windows(base))
            .flatten(),
    )
}

/// The runs' counting windows, in order and once each; none unless every
/// run had one.
fn windows<'a>(runs: impl Iterator<Item = &'a Sample>) -> Option<Vec<u64>> {
    let mut w: Vec<u64> = runs.map(|s| s.window).collect::<Option<_>>()?;
    w.sort_unstable();
    w.dedup();
    (!w.is_empty()).then_some(w)
}

/// Each figure's median over the runs' attach costs (all on the same
/// functions); none unless every run has one.
fn attach_median(costs: &[AttachCost]) -> Option<AttachCost> {
    let first = costs.first()?;
    let memory: Vec<f64> = costs
        .iter()
        .filter_map(|c| c.memory_kib.map(|m| m as f64))
        .collect();
    Some(AttachCost {
        functions: first.functions,
        seconds: crate::stats::median(&costs.iter().map(|c| c.seconds).collect::<Vec<_>>()),
        memory_kib: (memory.len() == costs.len())
            .then(|| crate::stats::median(&memory).round() as i64),
    })
}

/// Under an instruction clock ([`Plan::exact`]), the count per event: a
/// mechanism's fewest instructions per event in any round less the fewest
/// of its base's runs around them. There nothing varies from run to run
/// but what interrupts (the tick: every 4 million instructions at HZ=250)
/// add to the runs they land in, so the smallest of a few short runs is
/// one that none landed in.
fn overhead_exact(o: &MechanismRuns) -> Option<f64> {
    let least = |s: &mut dyn Iterator<Item = &Sample>| s.map(Sample::ns_per_event).reduce(f64::min);
    Some(least(&mut o.samples.iter())? - least(&mut o.before.iter().chain(&o.after))?)
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

#[cfg(test)]
mod tests {
    use std::num::{NonZeroU64, NonZeroUsize};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::measure::{Error, Options};
    use crate::pipeline::fixtures::{host, m, m_runs, paired, runs};

    #[test]
    fn figures_are_paired_per_repeat() {
        // Base 1000, 500, 1000 ns/event; raw_tp 100 ns more in each pass.
        let per_mechanism = [
            m_runs(m("base"), &[1000, 500, 1000]),
            paired(m("raw_tp"), &[1100, 600, 1100], &[1000, 500, 1000]),
        ];
        let plan = Plan {
            options: Options {
                iterations: NonZeroU64::new(1000).unwrap(),
                ..Options::default()
            },
            repeats: NonZeroUsize::new(3).unwrap(),
            ..Plan::new(&[m("raw_tp")], None)
        };
        let doc = document(&plan, &runs(&per_mechanism), host());
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
        let mut kprobe = MechanismRuns::new(m("kprobe"));
        kprobe.fail(Error::unsupported("no kprobes"));
        let mut tp = m_runs(m("tp"), &[1100]);
        tp.fail(Error::failed("tp: attach failed"));
        let per_mechanism = [m_runs(m("base"), &[1000]), kprobe, tp];
        let doc = document(&Plan::new(&[], None), &runs(&per_mechanism), host());
        let kprobe = doc.mechanism("kprobe").unwrap();
        assert_eq!(kprobe.status, Status::Skipped);
        assert_eq!(kprobe.reason.as_deref(), Some("no kprobes"));
        assert!(kprobe.k_events_per_sec.is_none() && kprobe.ratio_to_base.is_none());
        let tp = doc.mechanism("tp").unwrap();
        assert_eq!(tp.status, Status::Failed);
        assert!(tp.k_events_per_sec.is_none() && tp.hits.is_none());
    }

    #[test]
    fn the_document_says_what_stopped_the_run() {
        static STOP: AtomicUsize = AtomicUsize::new(0);
        let plan = Plan {
            stop: Some(&STOP),
            ..Plan::new(&[m("raw_tp")], None)
        };
        let per_mechanism = [m_runs(m("base"), &[1000]), m_runs(m("raw_tp"), &[1100])];
        assert_eq!(
            document(&plan, &runs(&per_mechanism), host()).interrupted,
            None
        );
        STOP.store(libc::SIGINT as usize, Ordering::SeqCst);
        assert_eq!(plan.stopped_by(), Some(libc::SIGINT));
        let doc = document(&plan, &runs(&per_mechanism), host());
        assert_eq!(doc.interrupted.as_deref(), Some("SIGINT"));
    }

    #[test]
    fn exact_counts_are_the_fewest_less_the_fewest_base() {
        // A tick landed in rounds 1 and 3 of raw_tp and in one base run:
        // the count is the clean round less the clean base run.
        let mut raw_tp = paired(m("raw_tp"), &[1130, 1121, 1127], &[1000, 1000, 1004]);
        raw_tp.after = paired(m("raw_tp"), &[1], &[1009, 1000, 1000]).before;
        let per_mechanism = [m_runs(m("base"), &[1000, 1004, 1000]), raw_tp];
        let plan = Plan::new(&[m("raw_tp")], Some(crate::document::Emulation::TcgIcount));
        assert!(plan.exact() && plan.warmup);
        let doc = document(&plan, &runs(&per_mechanism), host());
        assert_eq!((doc.unit.word(), doc.exact()), ("instructions", true));
        let raw_tp = doc.mechanism("raw_tp").unwrap();
        assert_eq!(raw_tp.overhead_ns.as_ref().unwrap().samples, [121.0]);
        assert_eq!(raw_tp.ns_per_event, Some(1121.0));
        assert!(raw_tp.detectable.is_none());
        // Timed, the same runs give the rounds' paired overheads.
        let timed = document(
            &Plan::new(&[m("raw_tp")], Some("tcg".into())),
            &runs(&per_mechanism),
            host(),
        );
        assert_eq!(timed.unit.word(), "ns");
        assert_eq!(
            timed
                .mechanism("raw_tp")
                .unwrap()
                .overhead_ns
                .as_ref()
                .unwrap()
                .samples
                .len(),
            3
        );
    }

    #[test]
    fn attach_costs_are_the_medians_of_the_runs() {
        let cost = |seconds, memory_kib| AttachCost {
            functions: 42352,
            seconds,
            memory_kib,
        };
        let costs = [
            cost(3.5, Some(5000)),
            cost(4.9, Some(5300)),
            cost(3.6, Some(5100)),
        ];
        assert_eq!(attach_median(&costs), Some(cost(3.6, Some(5100))));
        let unread = [cost(3.5, Some(5000)), cost(4.0, None)];
        assert_eq!(attach_median(&unread), Some(cost(3.75, None)));
        assert_eq!(attach_median(&[]), None);
    }
}
