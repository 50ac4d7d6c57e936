//! What the gate warns about: differences between the baseline and this
//! run that make a comparison weaker but not meaningless. The gate still
//! runs; src/render/findings.rs says each one in words.
//!
//! The settings that must match between runs are listed once, in
//! [`SETTINGS`]: a knob recorded in the document joins the comparison
//! there (and the compiler then asks for its words in the renderer).

use crate::document::Document;

/// One difference worth knowing. It does not fail the gate.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// A setting of [`SETTINGS`] differs: its value then and now, as the
    /// document has it.
    Setting {
        setting: Setting,
        baseline: String,
        current: String,
    },
    /// A run of one repeat: no noise to measure, only the threshold applies.
    OneRepeat,
    /// Two repeats: the noise test cannot reach p ≤ 0.05.
    TwoRepeats,
    /// The machine's speed reference moved by more than
    /// [`SPEED_WARNING`], in ns then and now.
    Speed { baseline_ns: f64, current_ns: f64 },
    /// The measuring CPU's conditions differed by more than `condition`'s
    /// limit, in percent of its time.
    Conditions {
        condition: Condition,
        baseline_pct: f64,
        current_pct: f64,
    },
    /// The baseline is several runs, from `first` to `last` (timestamps).
    BaselineSet {
        runs: usize,
        first: String,
        last: String,
    },
}

/// A setting of the run, recorded in its document, that must be the same
/// in the baseline for the comparison to mean all it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Iterations,
    Arch,
    CpuModel,
    Emulated,
    ProgWork,
    Counting,
    Stacktrace,
    Batch,
    RunLength,
    /// The `--object` files, by name and hash (not compared where the
    /// baseline recorded none).
    Objects,
    /// The `--packet` test runs ran on.
    Packet,
}

/// How a setting is read from a document, as text.
pub type Read = fn(&Document) -> String;

/// Every setting compared between runs, in the order their warnings
/// come, with how to read it from a document. The kernel differing is the
/// point of the gate, and is not here.
pub const SETTINGS: &[(Setting, Read)] = &[
    (Setting::Iterations, |d| d.iterations.to_string()),
    (Setting::Arch, |d| d.arch.clone()),
    (Setting::CpuModel, |d| d.cpu_model.clone()),
    (Setting::Emulated, |d| {
        d.emulated
            .as_ref()
            .map_or_else(|| "none".into(), |e| e.to_string())
    }),
    (Setting::ProgWork, |d| d.prog_work.to_string()),
    (Setting::Counting, |d| d.counting.to_string()),
    (Setting::Stacktrace, |d| d.stacktrace.to_string()),
    (Setting::Batch, |d| d.batch.to_string()),
    (Setting::RunLength, |d| {
        d.run_secs
            .map_or_else(|| "fixed counts".into(), |s| format!("{:.0} ms", s * 1e3))
    }),
    (Setting::Objects, |d| {
        let files: Vec<String> = d.objects.iter().map(|f| f.short()).collect();
        files.join(", ")
    }),
    (Setting::Packet, |d| {
        d.packet
            .as_ref()
            .map_or_else(|| "the built-in packet".into(), |f| f.short())
    }),
];

/// What the measuring CPU did besides the run, as recorded in its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// Time stolen by the hypervisor.
    Steal,
    /// Other work on the measuring CPU.
    OtherWork,
}

impl Condition {
    /// How far apart, in points, the two runs may be without a warning.
    const fn limit(self) -> f64 {
        match self {
            Condition::Steal => 2.0,
            Condition::OtherWork => 5.0,
        }
    }
}

/// The share by which the speed reference may move between runs without
/// a warning.
pub const SPEED_WARNING: f64 = 0.05;

/// Every difference between `baseline` and `current` worth a warning.
pub fn warnings(baseline: &Document, current: &Document) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = SETTINGS
        .iter()
        .filter_map(|&(setting, read)| {
            let (baseline, current) = (read(baseline), read(current));
            // Older results, and runs of no object, record no files.
            let unrecorded = setting == Setting::Objects && baseline.is_empty();
            (baseline != current && !unrecorded).then_some(Warning::Setting {
                setting,
                baseline,
                current,
            })
        })
        .collect();
    if baseline.repeats < 2 || current.repeats < 2 {
        warnings.push(Warning::OneRepeat);
    } else if baseline.repeats < 3 || current.repeats < 3 {
        warnings.push(Warning::TwoRepeats);
    }
    if let (Some(then), Some(now)) = (super::speed_of(baseline), super::speed_of(current)) {
        if (now / then - 1.0).abs() > SPEED_WARNING {
            warnings.push(Warning::Speed {
                baseline_ns: then,
                current_ns: now,
            });
        }
    }
    if let (Some(then), Some(now)) = (&baseline.context, &current.context) {
        for (condition, a, b) in [
            (Condition::Steal, then.steal_pct, now.steal_pct),
            (Condition::OtherWork, then.other_pct, now.other_pct),
        ] {
            if (a - b).abs() > condition.limit() {
                warnings.push(Warning::Conditions {
                    condition,
                    baseline_pct: a,
                    current_pct: b,
                });
            }
        }
    }
    warnings
}
