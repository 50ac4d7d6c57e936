//! The result of a benchmark run as one versioned document: what `--format
//! json` prints, what `--save` writes and what `--baseline` reads back.
//! docs/json-schema.md documents the schema; bump [`SCHEMA_VERSION`] on any change
//! that an older reader would misread (renamed, removed or re-meant fields).
//! One concern a file: the types and their JSON (`schema.rs`), the checks
//! of a document read back (`validate.rs`), and result files (`files.rs`).

mod files;
mod schema;
mod validate;

pub use files::{read_result_file, set_files, Need, ReadError, MAX_FILE_BYTES};
pub use schema::{
    Document, InputFile, MechanismResult, ProducerResult, Status, ORDER_BRACKETED,
    ORDER_ROUND_ROBIN, READS_VERSIONS, SCHEMA, SCHEMA_VERSION, UNIT_INSTRUCTIONS, UNIT_NS,
};

/// A small document with fixed numbers, for the renderers and the gate.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::stats::Summary;

    pub(crate) fn document() -> Document {
        let ok = |name: &str, base: &str, rate: &[f64], ratio: Option<&[f64]>| MechanismResult {
            name: name.into(),
            base: base.into(),
            trigger: "task_rename".into(),
            hook: "task/task_rename".into(),
            events_per_run: 100_000,
            status: Status::Ok,
            reason: None,
            k_events_per_sec: Summary::of(rate),
            ns_per_event: Some(1e6 / crate::stats::median(rate)),
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
            against: None,
            pairs_ns: None,
            attach: None,
            windows: None,
            base_windows: None,
            site: None,
        };
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
            unit: UNIT_NS.into(),
            emulator: None,
            iterations: 100_000,
            repeats: 3,
            budget_secs: 0.0,
            run_secs: None,
            warmup_runs: 1,
            order: ORDER_BRACKETED.into(),
            prog_stats: true,
            batch: 100,
            prog_work: 0,
            counting: "plain".into(),
            stacktrace: false,
            producers: 1,
            interrupted: None,
            retaken_runs: 0,
            context: None,
            cpu_wait_s: 0.0,
            kernel_config: None,
            against: None,
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
}
