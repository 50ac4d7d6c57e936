//! The output formats, each beside all it decides: which renderer, what
//! goes to stdout and what to stderr, and which results it can carry.

use clap::ValueEnum;

use crate::document::{Document, Status};
use crate::gate::Findings;
use crate::side_by_side::Matrix;

/// One run's result on stdout (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for humans.
    Table,
    /// The result document (schema in docs/json-schema.md).
    Json,
    /// KTAP, for kselftest runners.
    Ktap,
    /// test_overhead's lines: `task_rename <mech>\t<N>K events per sec`.
    Selftest,
    /// KernelCI's KCIDB records (schema v5.3), for `kcidb-submit`.
    Kcidb,
    /// A SQUAD submission's `metrics` and `metadata` (LKFT), one line.
    Squad,
}

/// A run's rendering: stdout carries it alone. Beside a machine-readable
/// one, what a human reads goes to stderr: `notes` (one line each) and the
/// gate's report.
#[derive(Debug, PartialEq)]
pub struct Page {
    pub stdout: String,
    pub notes: Vec<String>,
    pub stderr: String,
}

impl Format {
    /// Kernel CI's records carry one run's figures per mechanism: an
    /// in-run comparison's two sides would be two series under one name.
    pub fn carries_two_sides(self) -> bool {
        !matches!(self, Format::Kcidb | Format::Squad)
    }

    /// The name `--format` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }

    /// `doc` in this format, with the gate's findings and its report
    /// (`gate`) if the run was judged.
    pub fn page(self, doc: &Document, gate: Option<(&Findings, &str)>) -> Page {
        let findings = gate.map(|(f, _)| f);
        let report = gate.map(|(_, text)| text);
        let stdout = match self {
            Format::Table => match report {
                Some(text) => format!("{}\n{text}", super::table(doc)),
                None => super::table(doc),
            },
            Format::Json => doc.to_json(),
            Format::Ktap => super::ktap(doc, findings),
            Format::Selftest => super::selftest(doc),
            Format::Kcidb => super::kcidb::judged(&[(doc, findings)]),
            Format::Squad => super::squad::judged(doc, findings),
        };
        // The table carries the report; beside the others, stderr does.
        let stderr = match self {
            Format::Table => String::new(),
            _ => report.unwrap_or_default().to_owned(),
        };
        // The selftest's lines name only what ran.
        let notes = match self {
            Format::Selftest => not_run(doc),
            _ => Vec::new(),
        };
        Page {
            stdout,
            notes,
            stderr,
        }
    }
}

/// One line for each mechanism skipped or failed, with why.
fn not_run(doc: &Document) -> Vec<String> {
    doc.mechanisms
        .iter()
        .filter(|m| !m.is_ok())
        .map(|m| {
            let what = if m.status == Status::Skipped {
                "skipped"
            } else {
                "FAILED"
            };
            let why = m.reason.as_deref().unwrap_or("no reason given");
            format!("{what} {}: {why}", m.name)
        })
        .collect()
}

/// Result files side by side on stdout (`report --format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// The table.
    Table,
    /// The table's figures as JSON: one record per mechanism and run.
    Json,
    /// The same records as CSV, one line each.
    Csv,
    /// The table as Markdown.
    Markdown,
    /// KernelCI's KCIDB records of every file (schema v5.3).
    Kcidb,
    /// A SQUAD submission per file, one line each.
    Squad,
}

/// What a report format renders: the files' figures matched side by side,
/// or each file's own records for kernel CI (no mechanism in common needed).
pub enum Sheet {
    Matrix(fn(&Matrix) -> String),
    Records(fn(&[&Document]) -> String),
}

impl ReportFormat {
    pub fn sheet(self) -> Sheet {
        match self {
            ReportFormat::Table => Sheet::Matrix(super::matrix::table),
            ReportFormat::Json => Sheet::Matrix(super::tabular::json),
            ReportFormat::Csv => Sheet::Matrix(super::tabular::csv),
            ReportFormat::Markdown => Sheet::Matrix(super::tabular::markdown),
            ReportFormat::Kcidb => Sheet::Records(super::kcidb::kcidb),
            ReportFormat::Squad => Sheet::Records(super::squad::squad),
        }
    }
}

/// Two kernels' sessions compared (`compare --format`): the table, or the
/// findings as JSON with the table on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    #[test]
    fn the_table_carries_the_gate_report_and_stderr_nothing() {
        let page = Format::Table.page(
            &document(),
            Some((&super::super::raw_tp_regressed(), "R\n")),
        );
        assert!(page.stdout.ends_with("\nR\n"), "{}", page.stdout);
        assert!(page.notes.is_empty() && page.stderr.is_empty());
    }

    #[test]
    fn a_machine_readable_page_sends_the_report_to_stderr() {
        for format in [Format::Json, Format::Ktap, Format::Kcidb, Format::Squad] {
            let page = format.page(
                &document(),
                Some((&super::super::raw_tp_regressed(), "R\n")),
            );
            assert!(!page.stdout.contains("\nR\n"), "{format:?}");
            assert_eq!(page.stderr, "R\n", "{format:?}");
        }
    }

    #[test]
    fn the_selftest_names_what_did_not_run_on_stderr() {
        let page = Format::Selftest.page(&document(), None);
        assert_eq!(page.notes, ["skipped kprobe: kernel has no kprobes"]);
        assert!(!page.stdout.contains("kprobe"), "{}", page.stdout);
        assert!(
            page.stdout.contains("task_rename raw_tp"),
            "{}",
            page.stdout
        );
    }

    #[test]
    fn only_kernel_ci_records_refuse_two_sides() {
        let refuse: Vec<String> = Format::value_variants()
            .iter()
            .filter(|f| !f.carries_two_sides())
            .map(|f| f.name())
            .collect();
        assert_eq!(refuse, ["kcidb", "squad"]);
    }
}
