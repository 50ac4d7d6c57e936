//! What kernel CI's records carry of a result, for both renderers
//! ([`super::kcidb`], [`super::squad`]): each mechanism under the name
//! kernel CI gives the kselftest collection's result for it, and its
//! figures, each with its unit and the values it is the median of.

use crate::document::{Document, MechanismResult};
use crate::stats::Summary;

/// The kselftest collection's name, the first part of every test's name.
pub const SUITE: &str = "bpf_overhead";

/// A rate's unit in a timed run: thousands of events per second.
pub const RATE_UNIT: &str = "K events/s";
/// A rate's unit in an exact run, whose clock counts instructions.
pub const EXACT_RATE_UNIT: &str = "events/M instructions";

/// A mechanism's name as kernel CI names the collection's result for it:
/// each character but `[A-Za-z0-9_-]` becomes `_`, as LKFT's parser of
/// kselftest output (test-definitions' parse-output.py) does:
/// `kprobe.multi` is `kprobe_multi`, an object's `agent/handle_openat` is
/// `agent_handle_openat`. A dot would split a KCIDB path, a slash a SQUAD
/// suite.
pub fn test_name(mechanism: &str) -> String {
    mechanism
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Every mechanism of `doc` with its [`test_name`], made unique as LKFT
/// makes them: a name seen before gets `_dup2`, `_dup3`...
pub fn named(doc: &Document) -> Vec<(String, &MechanismResult)> {
    let mut seen: Vec<String> = Vec::new();
    doc.mechanisms
        .iter()
        .map(|m| {
            let name = test_name(&m.name);
            let n = seen.iter().filter(|s| **s == name).count();
            seen.push(name.clone());
            let unique = if n == 0 {
                name
            } else {
                format!("{name}_dup{}", n + 1)
            };
            (unique, m)
        })
        .collect()
}

/// One figure of a mechanism.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure<'a> {
    /// `overhead`, `rate` or `prog_ns`: the last part of its test's name.
    pub metric: &'static str,
    /// The figure: the median of `spread`'s values, or the one value.
    pub value: f64,
    /// What it counts: `ns` or `instructions` per event, or a rate.
    pub unit: &'static str,
    /// The values it is the median of, in the order measured (the rounds'
    /// overheads, the runs' rates); none for a single figure.
    pub spread: Option<&'a Summary>,
    /// What it is, in words, for a record's comment.
    pub what: String,
}

impl Figure<'_> {
    /// Its values: the spread's, or the one value.
    pub fn values(&self) -> Vec<f64> {
        self.spread
            .map_or_else(|| vec![self.value], |s| s.samples.clone())
    }
}

/// A measured mechanism's figures: its overhead over its base (a base has
/// none), its rate, and its program's own run time when the run had BPF
/// stats. In an exact run each counts instructions. None for a mechanism
/// skipped or failed, and none that is not a finite number.
pub fn figures<'a>(doc: &Document, m: &'a MechanismResult) -> Vec<Figure<'a>> {
    if !m.is_ok() {
        return Vec::new();
    }
    let exact = doc.exact();
    let unit = doc.unit_word();
    let mut out = Vec::new();
    if let Some(o) = m.overhead_ns.as_ref().filter(|_| !m.is_base()) {
        let what = if exact {
            format!(
                "{} over {}: instructions per event, the fewest of its rounds less the \
                 fewest of its base's runs around them",
                m.name, m.base
            )
        } else {
            format!(
                "{} over {}: ns per event, median of {} rounds",
                m.name,
                m.base,
                o.samples.len()
            )
        };
        out.push(Figure {
            metric: "overhead",
            value: o.median,
            unit,
            spread: Some(o),
            what,
        });
    }
    if let Some(r) = &m.k_events_per_sec {
        let (unit, words) = if exact {
            (EXACT_RATE_UNIT, "events per million guest instructions")
        } else {
            (RATE_UNIT, "thousands of events per second")
        };
        out.push(Figure {
            metric: "rate",
            value: r.median,
            unit,
            spread: Some(r),
            what: format!("{}: {words}, median of {} runs", m.name, r.samples.len()),
        });
    }
    if let Some(p) = m.prog_ns_per_event {
        out.push(Figure {
            metric: "prog_ns",
            value: p,
            unit,
            spread: None,
            what: format!(
                "{}: the BPF program's own run time, {unit} per run (BPF stats)",
                m.name
            ),
        });
    }
    out.retain(|f| f.value.is_finite() && f.values().iter().all(|v| v.is_finite()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;
    use crate::measure::Mechanism;

    #[test]
    fn names_are_kernel_cis_and_unique() {
        assert_eq!(test_name("kprobe.multi"), "kprobe_multi");
        assert_eq!(test_name("uprobe.multi-nop"), "uprobe_multi-nop");
        assert_eq!(test_name("agent/handle_openat"), "agent_handle_openat");
        assert_eq!(test_name("raw_tp-loop"), "raw_tp-loop");
        // Every mechanism of the catalogue keeps a name of its own.
        let all: Vec<String> = Mechanism::all().map(|m| test_name(m.name())).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "{all:?}");
        // Two that meet get LKFT's suffix.
        let mut doc = document();
        doc.mechanisms[2].name = "a.b".into();
        doc.mechanisms[3].name = "a/b".into();
        let names: Vec<String> = named(&doc).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["base", "kprobe", "a_b", "a_b_dup2"]);
    }

    #[test]
    fn a_mechanism_has_its_overhead_rate_and_program_time() {
        let doc = document();
        let raw_tp = doc.mechanism("raw_tp").unwrap();
        let f = figures(&doc, raw_tp);
        let metrics: Vec<(&str, f64, &str)> =
            f.iter().map(|f| (f.metric, f.value, f.unit)).collect();
        assert_eq!(
            metrics,
            [
                ("overhead", 100.0, "ns"),
                ("rate", 945.0, RATE_UNIT),
                ("prog_ns", 20.5, "ns")
            ]
        );
        assert_eq!(f[0].values(), [100.0, 101.0, 99.0]);
        assert_eq!(f[2].values(), [20.5]);
        // A base has its rate alone; a skipped mechanism nothing.
        let base = figures(&doc, doc.mechanism("base").unwrap());
        assert_eq!(base.iter().map(|f| f.metric).collect::<Vec<_>>(), ["rate"]);
        assert!(figures(&doc, doc.mechanism("kprobe").unwrap()).is_empty());
    }

    #[test]
    fn an_exact_runs_figures_count_instructions() {
        let mut doc = document();
        doc.unit = crate::document::Unit::Instructions;
        let raw_tp = doc.mechanism("raw_tp").unwrap();
        let units: Vec<&str> = figures(&doc, raw_tp).iter().map(|f| f.unit).collect();
        assert_eq!(units, ["instructions", EXACT_RATE_UNIT, "instructions"]);
    }

    #[test]
    fn a_figure_that_is_no_number_is_left_out() {
        let mut doc = document();
        doc.mechanism_mut("raw_tp").unwrap().prog_ns_per_event = Some(f64::NAN);
        let raw_tp = doc.mechanism("raw_tp").unwrap();
        let metrics: Vec<&str> = figures(&doc, raw_tp).iter().map(|f| f.metric).collect();
        assert_eq!(metrics, ["overhead", "rate"]);
    }
}
