//! Several result documents side by side: kernels, machines, or a kernel
//! before and after a change. `bpf-overhead report` renders the
//! [`Matrix`] built here as a table and an SVG chart
//! ([`crate::render::report`]): mechanisms down, runs across, each cell the
//! mechanism's ns per event over its base in that run, with its noise.
//!
//! Overheads, not rates, are what compare across runs: each is measured
//! against the base of its own run, so a faster or busier machine moves
//! little of it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::document::{Document, Status};

/// One result file: where it came from and what it was measured on.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultFile {
    /// What the table's column and the chart's legend call it: the kernel
    /// release when those are unique, else the file name, after the
    /// architecture when the runs are of more than one (see [`labels`]).
    pub label: String,
    /// The file as given.
    pub file: String,
    pub kernel_release: String,
    pub cpu_model: String,
    /// `x86_64`, `aarch64`.
    pub arch: String,
    pub timestamp: String,
    /// The emulator (`tcg`) when measured under one: its figures are not
    /// performance figures, and both renderers say so.
    pub emulated: Option<crate::document::Emulation>,
    pub iterations: u64,
    pub repeats: usize,
    /// Its runs were sized to this many s each, not `iterations` events.
    pub run_secs: Option<f64>,
}

/// A mechanism in one run.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Measured: ns per event over its base, median and sample stddev over
    /// the rounds (`rounds` of them; the stddev means nothing with one).
    Overhead {
        median: f64,
        stddev: f64,
        rounds: usize,
    },
    /// A base, measured: its own ns per event (median).
    Base { ns_per_event: f64 },
    /// Skipped: why.
    Skipped(String),
    /// Failed: why.
    Failed(String),
    /// Not in that run (not selected, or by another version), or measured
    /// without figures.
    Missing,
}

/// A mechanism across the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    /// Its base's name (its own for a base).
    pub base: String,
    /// Its trigger: the chart draws one panel per trigger.
    pub trigger: String,
    /// One cell per run, in the order of [`Matrix::runs`].
    pub cells: Vec<Cell>,
}

impl Row {
    pub fn is_base(&self) -> bool {
        self.name == self.base
    }
}

/// Mechanisms down, runs across.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub runs: Vec<ResultFile>,
    pub rows: Vec<Row>,
    /// The figures are counts of instructions (`vmtest --exact`), not ns.
    pub exact: bool,
}

/// Between two counts of the same mechanism side by side, a change of
/// more than this share is marked: counts do not drift, so it is one.
pub const COUNT_CHANGE: f64 = 0.01;

/// A count's change from `before`, when beyond [`COUNT_CHANGE`].
pub fn count_change(before: &Cell, now: &Cell) -> Option<f64> {
    let (Cell::Overhead { median: b, .. }, Cell::Overhead { median: n, .. }) = (before, now) else {
        return None;
    };
    let change = (n - b) / b.abs().max(f64::MIN_POSITIVE);
    (change.abs() > COUNT_CHANGE).then_some(change)
}

impl Matrix {
    /// The runs of `docs`, each with the file it came from, in order. The
    /// rows are every mechanism of any run, in the runs' order (a
    /// mechanism only some runs have goes after the one before it in its
    /// run). Refuses no documents, and documents of which no two have a
    /// mechanism (bases aside) in common: there is nothing to compare.
    pub fn new(docs: &[(String, Document)]) -> Result<Self, String> {
        if docs.is_empty() {
            return Err(
                "no result files: give one or more files written by --save or --format json".into(),
            );
        }
        same_unit(docs.iter().map(|(f, d)| (f.as_str(), d)))?;
        check_common(docs)?;
        let labels = labels(docs);
        let runs = docs
            .iter()
            .zip(labels)
            .map(|((file, doc), label)| ResultFile {
                label,
                file: file.clone(),
                kernel_release: doc.kernel_release.clone(),
                cpu_model: doc.cpu_model.clone(),
                arch: doc.arch.clone(),
                timestamp: doc.timestamp.clone(),
                emulated: doc.emulated.clone(),
                iterations: doc.iterations,
                run_secs: doc.run_secs,
                repeats: doc.repeats,
            })
            .collect();

        let mut rows: Vec<Row> = Vec::new();
        for (_, doc) in docs {
            let mut after: Option<usize> = None;
            for m in &doc.mechanisms {
                after = Some(match rows.iter().position(|r| r.name == m.name) {
                    Some(i) => i,
                    None => {
                        let i = after.map_or(0, |a| a + 1);
                        rows.insert(
                            i,
                            Row {
                                name: m.name.clone(),
                                base: m.base.clone(),
                                trigger: m.trigger.clone(),
                                cells: Vec::new(),
                            },
                        );
                        i
                    }
                });
            }
        }
        for row in &mut rows {
            row.cells = docs
                .iter()
                .map(|(_, doc)| doc.mechanism(&row.name).map_or(Cell::Missing, cell))
                .collect();
        }
        Ok(Self {
            runs,
            rows,
            exact: docs[0].1.exact(),
        })
    }

    /// The triggers in row order, each with its rows that are not bases:
    /// the chart's panels.
    pub fn panels(&self) -> Vec<(&str, Vec<&Row>)> {
        let mut panels: Vec<(&str, Vec<&Row>)> = Vec::new();
        for row in self.rows.iter().filter(|r| !r.is_base()) {
            match panels.iter_mut().find(|(t, _)| *t == row.trigger) {
                Some((_, rows)) => rows.push(row),
                None => panels.push((&row.trigger, vec![row])),
            }
        }
        panels
    }
}

fn cell(m: &crate::document::MechanismResult) -> Cell {
    let why = || m.reason.clone().unwrap_or_else(|| "no reason given".into());
    match m.status {
        Status::Skipped => Cell::Skipped(why()),
        Status::Failed => Cell::Failed(why()),
        Status::Ok if m.is_base() => m
            .ns_per_event
            .map_or(Cell::Missing, |ns_per_event| Cell::Base { ns_per_event }),
        Status::Ok => m
            .overhead_ns
            .as_ref()
            .map_or(Cell::Missing, |o| Cell::Overhead {
                median: o.median,
                stddev: o.stddev,
                rounds: o.samples.len(),
            }),
    }
}

/// One line for each run whose kernel differs from the first run's (the
/// first with a recorded config) in options that change costs, naming
/// them: `kernels differ in cost-changing options (a.json vs b.json):
/// LOCKDEP (y vs not set), ...`. None for runs of one config, or without
/// a recorded config.
pub fn config_lines(docs: &[(String, Document)]) -> Vec<String> {
    let with: Vec<(&str, &crate::kconfig::KernelConfig)> = docs
        .iter()
        .filter_map(|(label, d)| Some((label.as_str(), d.kernel_config.as_ref()?)))
        .collect();
    let Some(&(first, reference)) = with.first() else {
        return Vec::new();
    };
    with.iter()
        .skip(1)
        .filter_map(|&(label, c)| {
            let d = crate::kconfig::cost_differences(reference, c);
            (!d.is_empty()).then(|| {
                format!(
                    "kernels differ in cost-changing options ({first} vs {label}): {}",
                    d.join(", ")
                )
            })
        })
        .collect()
}

/// The mechanisms (bases aside) a document lists, whatever their status.
fn mechanisms(doc: &Document) -> BTreeSet<&str> {
    doc.mechanisms
        .iter()
        .filter(|m| !m.is_base())
        .map(|m| m.name.as_str())
        .collect()
}

/// Two or more documents must share a mechanism, bases aside; a
/// mechanism skipped in one and measured in another counts.
/// Refuses to put counts of instructions beside times: each document's
/// `unit` must be the first's. `name` says which one is which.
pub fn same_unit<'a>(
    docs: impl IntoIterator<Item = (&'a str, &'a Document)>,
) -> Result<(), String> {
    let mut first: Option<(&str, crate::document::Unit)> = None;
    for (name, d) in docs {
        match first {
            None => first = Some((name, d.unit)),
            Some((n0, u0)) if u0 != d.unit => {
                return Err(format!(
                    "{n0} counts {u0} per event and {name} {}: exact counts (cargo xtask vmtest \
                     --exact) and timed runs do not compare; give runs of one kind",
                    d.unit
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn check_common(docs: &[(String, Document)]) -> Result<(), String> {
    if docs.len() < 2 {
        return Ok(());
    }
    let sets: Vec<BTreeSet<&str>> = docs.iter().map(|(_, d)| mechanisms(d)).collect();
    let shared = sets
        .iter()
        .enumerate()
        .any(|(i, a)| sets[i + 1..].iter().any(|b| !a.is_disjoint(b)));
    if shared {
        return Ok(());
    }
    let what: Vec<String> = docs
        .iter()
        .zip(&sets)
        .map(|((file, _), set)| {
            let names: Vec<&str> = set.iter().copied().collect();
            format!(
                "{file} has {}",
                if names.is_empty() {
                    "bases only".to_string()
                } else {
                    names.join(", ")
                }
            )
        })
        .collect();
    Err(format!(
        "nothing in common: no two result files have a mechanism in common ({})",
        what.join("; ")
    ))
}

/// Each run's kernel release when no other run has the same one, else
/// its file name when no other has that, else the file as given; all
/// numbered when that still leaves two alike. When the runs are of more
/// than one architecture, each label starts with its run's (`aarch64
/// 6.12.0`), so that x86_64 and arm64 runs read apart.
fn labels(docs: &[(String, Document)]) -> Vec<String> {
    let mixed = docs.iter().any(|(_, d)| d.arch != docs[0].1.arch);
    let arch = |d: &Document, label: String| {
        if mixed {
            format!("{} {label}", d.arch)
        } else {
            label
        }
    };
    type Candidate = fn(&(String, Document)) -> String;
    let candidates: [Candidate; 3] = [
        |(_, d)| d.kernel_release.clone(),
        |(f, _)| {
            Path::new(f)
                .file_name()
                .map_or_else(|| f.clone(), |n| n.to_string_lossy().into_owned())
        },
        |(f, _)| f.clone(),
    ];
    let candidates = candidates.map(|c| move |run: &(String, Document)| arch(&run.1, c(run)));
    let labels: Vec<String> = docs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            candidates
                .iter()
                .find(|c| {
                    docs.iter()
                        .enumerate()
                        .all(|(j, other)| j == i || c(other) != c(run))
                })
                .map(|c| c(run))
                .unwrap_or_default()
        })
        .collect();
    let unique = labels.iter().collect::<BTreeSet<_>>().len() == labels.len();
    if unique && labels.iter().all(|l| !l.is_empty()) {
        return labels;
    }
    docs.iter()
        .enumerate()
        .map(|(i, (_, d))| arch(d, format!("{} #{}", d.kernel_release, i + 1)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::document::fixtures::document;
    use crate::stats::Summary;

    #[test]
    fn kernels_of_other_cost_options_are_named() {
        use crate::kconfig::Config;
        let debug = Config::parse("CONFIG_LOCKDEP=y\nCONFIG_PREEMPT_VOLUNTARY=y\n");
        let release = Config::parse("CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=250\n");
        let with = |c: Option<&Config>| {
            let mut d = document();
            d.kernel_config = c.map(|c| c.record("/proc/config.gz"));
            d
        };
        let docs = vec![
            ("old.json".to_owned(), with(None)),
            ("debug.json".to_owned(), with(Some(&debug))),
            ("debug2.json".to_owned(), with(Some(&debug))),
            ("release.json".to_owned(), with(Some(&release))),
        ];
        assert_eq!(
            config_lines(&docs),
            [
                "kernels differ in cost-changing options (debug.json vs release.json): \
              LOCKDEP (y vs not set)"
            ]
        );
        assert!(
            config_lines(&docs[..3]).is_empty(),
            "one config: nothing said"
        );
        // An older result reads without the field.
        let mut old = serde_json::to_value(document()).unwrap();
        old.as_object_mut().unwrap().remove("kernel_config");
        let back: Document = serde_json::from_value(old).unwrap();
        assert_eq!(back.kernel_config, None);
    }

    /// Three runs of the fixture: two kernels and an emulated one, with
    /// kprobe measured where the fixture skips it and tp absent from one.
    pub(crate) fn matrix() -> Matrix {
        let a = document();
        let mut b = document();
        b.kernel_release = "6.12.0".into();
        let raw_tp = b.mechanism_mut("raw_tp").unwrap();
        raw_tp.overhead_ns = Summary::of(&[150.0, 160.0, 140.0]);
        let kprobe = b.mechanism_mut("kprobe").unwrap();
        kprobe.status = Status::Ok;
        kprobe.reason = None;
        kprobe.overhead_ns = Summary::of(&[250.0, 260.0, 240.0]);
        b.mechanisms.retain(|m| m.name != "tp");
        let mut c = document();
        c.kernel_release = "6.1.0".into();
        c.emulated = Some("tcg".into());
        let tp = c.mechanism_mut("tp").unwrap();
        tp.status = Status::Failed;
        tp.reason = Some("tp: attach failed".into());
        Matrix::new(&[
            ("a.json".into(), a),
            ("results/b.json".into(), b),
            ("c.json".into(), c),
        ])
        .unwrap()
    }

    #[test]
    fn mechanisms_down_runs_across() {
        let m = matrix();
        let labels: Vec<&str> = m.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["6.18.0", "6.12.0", "6.1.0"]);
        assert_eq!(m.runs[2].emulated, Some("tcg".into()));
        let names: Vec<&str> = m.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["base", "kprobe", "raw_tp", "tp"]);
        let raw_tp = &m.rows[2];
        assert_eq!(
            raw_tp.cells[1],
            Cell::Overhead {
                median: 150.0,
                stddev: 10.0,
                rounds: 3
            }
        );
        assert_eq!(
            m.rows[1].cells[0],
            Cell::Skipped("kernel has no kprobes".into())
        );
        assert_eq!(m.rows[3].cells[1], Cell::Missing, "tp is not in b.json");
        assert_eq!(m.rows[3].cells[2], Cell::Failed("tp: attach failed".into()));
        assert!(
            matches!(m.rows[0].cells[0], Cell::Base { ns_per_event } if (ns_per_event - 1e6 / 1050.0).abs() < 1e-9)
        );
    }

    #[test]
    fn a_mechanism_only_one_run_has_goes_after_its_predecessor() {
        let mut a = document();
        a.mechanisms
            .retain(|m| m.name != "kprobe" && m.name != "base");
        let b = document();
        let m = Matrix::new(&[("a".into(), a), ("b".into(), b)]).unwrap();
        let names: Vec<&str> = m.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["base", "kprobe", "raw_tp", "tp"]);
    }

    #[test]
    fn labels_tell_runs_apart() {
        let doc = document();
        let m = Matrix::new(&[
            ("x/before.json".into(), doc.clone()),
            ("y/after.json".into(), doc.clone()),
        ])
        .unwrap();
        let labels: Vec<&str> = m.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["before.json", "after.json"],
            "same kernel: file names"
        );
        let mut other = doc.clone();
        other.kernel_release = "6.1.0".into();
        let m = Matrix::new(&[
            ("x/before.json".into(), doc.clone()),
            ("y/after.json".into(), doc.clone()),
            ("z/vm.json".into(), other),
        ])
        .unwrap();
        let labels: Vec<&str> = m.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["before.json", "after.json", "6.1.0"],
            "kernel releases where they tell runs apart"
        );
        let m = Matrix::new(&[
            ("x/r.json".into(), doc.clone()),
            ("y/r.json".into(), doc.clone()),
        ])
        .unwrap();
        let labels: Vec<&str> = m.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["x/r.json", "y/r.json"]);
        let m = Matrix::new(&[("r.json".into(), doc.clone()), ("r.json".into(), doc)]).unwrap();
        let labels: Vec<&str> = m.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["6.18.0 #1", "6.18.0 #2"]);
    }

    /// x86_64 against arm64: each label starts with its architecture,
    /// which can alone tell runs apart; of one architecture, none does.
    #[test]
    fn labels_name_the_architecture_when_runs_mix_them() {
        let x86 = document();
        let mut arm = document();
        arm.arch = "aarch64".into();
        let labels = |docs: &[(String, Document)]| -> Vec<String> {
            let m = Matrix::new(docs).unwrap();
            m.runs.into_iter().map(|r| r.label).collect()
        };
        assert_eq!(
            labels(&[
                ("x.json".into(), x86.clone()),
                ("a.json".into(), arm.clone())
            ]),
            ["x86_64 6.18.0", "aarch64 6.18.0"]
        );
        assert_eq!(
            labels(&[
                ("x.json".into(), x86.clone()),
                ("a.json".into(), arm.clone()),
                ("b.json".into(), arm.clone()),
            ]),
            ["x86_64 6.18.0", "aarch64 a.json", "aarch64 b.json"]
        );
        assert_eq!(
            labels(&[
                ("r.json".into(), x86),
                ("r.json".into(), arm.clone()),
                ("r.json".into(), arm.clone()),
            ]),
            ["x86_64 6.18.0 #1", "aarch64 6.18.0 #2", "aarch64 6.18.0 #3"]
        );
        let mut arm2 = arm.clone();
        arm2.kernel_release = "6.12.0".into();
        assert_eq!(
            labels(&[("a.json".into(), arm), ("b.json".into(), arm2)]),
            ["6.18.0", "6.12.0"]
        );
    }

    #[test]
    fn refuses_nothing_and_nothing_in_common() {
        assert!(Matrix::new(&[]).unwrap_err().contains("no result files"));
        let mut a = document();
        a.mechanisms
            .retain(|m| m.name == "base" || m.name == "raw_tp");
        let mut b = document();
        b.mechanisms.retain(|m| m.name == "base" || m.name == "tp");
        let err =
            Matrix::new(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())]).unwrap_err();
        assert_eq!(
            err,
            "nothing in common: no two result files have a mechanism in common \
             (a.json has raw_tp; b.json has tp)"
        );
        // A third run that shares with one of them is enough.
        let c = document();
        assert!(Matrix::new(&[("a".into(), a), ("b".into(), b), ("c".into(), c)]).is_ok());
        // One run alone compares with nothing, and is fine.
        assert!(Matrix::new(&[("a".into(), document())]).is_ok());
    }

    #[test]
    fn panels_group_mechanisms_by_trigger() {
        let mut doc = document();
        let tp = doc.mechanism_mut("tp").unwrap();
        tp.trigger = "uprobe_target".into();
        let m = Matrix::new(&[("a".into(), doc)]).unwrap();
        let panels: Vec<(&str, Vec<&str>)> = m
            .panels()
            .into_iter()
            .map(|(t, rows)| (t, rows.iter().map(|r| r.name.as_str()).collect()))
            .collect();
        assert_eq!(
            panels,
            [
                ("task_rename", vec!["kprobe", "raw_tp"]),
                ("uprobe_target", vec!["tp"])
            ]
        );
    }

    #[test]
    fn counts_and_times_are_not_put_side_by_side() {
        let timed = document();
        let mut exact = document();
        exact.unit = crate::document::Unit::Instructions;
        assert!(same_unit([("a.json", &timed), ("b.json", &timed)]).is_ok());
        let e = same_unit([("a.json", &timed), ("b.json", &exact)]).unwrap_err();
        assert!(
            e.starts_with("a.json counts ns per event and b.json instructions"),
            "{e}"
        );
        let docs = vec![("a.json".to_string(), timed), ("b.json".to_string(), exact)];
        assert!(Matrix::new(&docs).unwrap_err().contains("do not compare"));
    }
}
