//! A small document with fixed numbers, for the tests of every reader
//! (the renderers, the gate, the checks of a document read back).

use super::*;

/// A mechanism measured ok: `rate` k events/s in each round and, given
/// its `ratio` to `base` in each round, its figures over base.
fn ok(name: &str, base: &str, rate: &[f64], ratio: Option<&[f64]>) -> MechanismResult {
    MechanismResult {
        name: name.into(),
        base: base.into(),
        trigger: "task_rename".into(),
        hook: "task/task_rename".into(),
        events_per_run: 100_000,
        status: Status::Ok,
        reason: None,
        k_events_per_sec: Summary::of(rate),
        ns_per_event: Some(1e6 / median(rate)),
        overhead_ns: ratio.map(|_| Summary::of(&[100.0, 101.0, 99.0]).unwrap()),
        ratio_to_base: ratio.and_then(Summary::of),
        hits: ratio.map(|_| vec![100_000; 3]),
        counted_events: None,
        prog_ns_per_event: ratio.map(|_| 20.5),
        producers: None,
        scaling: None,
        speed_ns: Summary::of(&[2.0, 2.0, 2.0]),
        overhead_steps: ratio.map(|_| Summary::of(&[50.0, 55.0, 45.0]).unwrap()),
        detectable_ns: ratio.map(|_| 25.0),
        detectable: ratio.map(|_| 0.25),
        side_b: None,
        pairs_ns: None,
        attach: None,
        windows: None,
        base_windows: None,
        site: None,
    }
}

pub fn document() -> Document {
    Document {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        timestamp: "2026-05-01T12:00:00Z".into(),
        kernel_release: "6.18.0".into(),
        kernel_build_id: None,
        cpu_model: "Test CPU".into(),
        arch: "x86_64".into(),
        mitigations: Default::default(),
        cpu: 0,
        emulated: None,
        unit: Unit::Ns,
        emulator: None,
        iterations: 100_000,
        repeats: 3,
        budget_secs: 0.0,
        run_secs: None,
        warmup_runs: 1,
        order: Order::Bracketed,
        prog_stats: true,
        batch: 100,
        prog_work: 0,
        counting: Counting::Every,
        stacktrace: false,
        producers: 1,
        interrupted: None,
        retaken_runs: 0,
        context: None,
        cpu_wait_s: 0.0,
        kernel_config: None,
        variant: None,
        objects: Vec::new(),
        packet: None,
        mechanisms: vec![
            ok("base", "base", &[1000.0, 1100.0, 1050.0], None),
            MechanismResult {
                hook: "__set_task_comm".into(),
                status: Status::Skipped,
                reason: Some("kernel has no kprobes".into()),
                k_events_per_sec: None,
                ns_per_event: None,
                speed_ns: None,
                ..ok("kprobe", "base", &[1.0], None)
            },
            ok(
                "raw_tp",
                "base",
                &[900.0, 990.0, 945.0],
                Some(&[0.90, 0.90, 0.90]),
            ),
            ok(
                "tp",
                "base",
                &[850.0, 935.0, 890.0],
                Some(&[0.85, 0.85, 0.84]),
            ),
        ],
    }
}

/// An exact run's document: a base, then each `(name, count)` counted,
/// `count` instructions per event over the base.
pub fn counted(counts: &[(&str, f64)]) -> Document {
    let mut d = document();
    d.unit = Unit::Instructions;
    d.emulated = Some(Emulation::TcgIcount);
    let (base, template) = (d.mechanisms[0].clone(), d.mechanisms[2].clone());
    d.mechanisms = std::iter::once(base)
        .chain(counts.iter().map(|(name, count)| MechanismResult {
            name: (*name).into(),
            overhead_ns: Summary::of(&[*count]),
            k_events_per_sec: None,
            ..template.clone()
        }))
        .collect();
    d
}
