//! `bpf-overhead report --format json|csv|markdown`: the report's
//! [`Matrix`] for other programs (JSON, CSV: one record per run and
//! mechanism) and for pages (Markdown: the table as `report` prints it).
//! Pure functions of the matrix, tested on fixed documents.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::matrix;
use crate::side_by_side::{Cell, Matrix, ResultFile};

/// What a figure is counted in: `ns` or `instructions` per event.
fn unit(m: &Matrix) -> &'static str {
    if m.exact {
        "instructions"
    } else {
        "ns"
    }
}

/// One cell as a record's fields: status, value (over the base, or a
/// base's own per event), stddev, rounds, reason.
struct Fields<'a> {
    status: &'static str,
    value: Option<f64>,
    stddev: Option<f64>,
    rounds: Option<usize>,
    reason: Option<&'a str>,
}

fn fields(cell: &Cell) -> Fields<'_> {
    let none = |status| Fields {
        status,
        value: None,
        stddev: None,
        rounds: None,
        reason: None,
    };
    match cell {
        Cell::Overhead {
            median,
            stddev,
            rounds,
        } => Fields {
            value: Some(*median),
            stddev: (*rounds > 1).then_some(*stddev),
            rounds: Some(*rounds),
            ..none("measured")
        },
        Cell::Base { ns_per_event } => Fields {
            value: Some(*ns_per_event),
            ..none("base")
        },
        Cell::Skipped(why) => Fields {
            reason: Some(why),
            ..none("skipped")
        },
        Cell::Failed(why) => Fields {
            reason: Some(why),
            ..none("failed")
        },
        Cell::Missing => none("missing"),
    }
}

fn run_json(run: &ResultFile) -> Value {
    json!({
        "label": run.label,
        "file": run.file,
        "kernel_release": run.kernel_release,
        "arch": run.arch,
        "cpu_model": run.cpu_model,
        "timestamp": run.timestamp,
        "emulated": run.emulated,
        "iterations": run.iterations,
        "repeats": run.repeats,
        "run_secs": run.run_secs,
    })
}

/// One JSON object: `unit`, `runs` (what each run is) and `records`, one
/// per mechanism and run, rows in the table's order.
pub fn json(m: &Matrix) -> String {
    let records: Vec<Value> = m
        .rows
        .iter()
        .flat_map(|row| {
            row.cells.iter().zip(&m.runs).map(move |(cell, run)| {
                let f = fields(cell);
                json!({
                    "run": run.label,
                    "mechanism": row.name,
                    "base": row.base,
                    "trigger": row.trigger,
                    "status": f.status,
                    "value": f.value,
                    "stddev": f.stddev,
                    "rounds": f.rounds,
                    "reason": f.reason,
                })
            })
        })
        .collect();
    let doc = json!({
        "unit": unit(m),
        "what": matrix::what(m),
        "runs": m.runs.iter().map(run_json).collect::<Vec<_>>(),
        "records": records,
    });
    let mut out = serde_json::to_string_pretty(&doc).expect("a JSON value serializes");
    out.push('\n');
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV columns, in order.
pub const CSV_HEADER: &str =
    "run,file,kernel_release,arch,mechanism,base,trigger,status,value,stddev,rounds,unit,reason";

/// RFC 4180 CSV: [`CSV_HEADER`], then one line per mechanism and run.
/// `value` is over the base (a base's own per event), in `unit` per
/// event; empty fields are what that cell lacks.
pub fn csv(m: &Matrix) -> String {
    let mut out = format!("{CSV_HEADER}\r\n");
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for row in &m.rows {
        for (cell, run) in row.cells.iter().zip(&m.runs) {
            let f = fields(cell);
            let line = [
                run.label.clone(),
                run.file.clone(),
                run.kernel_release.clone(),
                run.arch.clone(),
                row.name.clone(),
                row.base.clone(),
                row.trigger.clone(),
                f.status.to_string(),
                opt(f.value),
                opt(f.stddev),
                f.rounds.map(|r| r.to_string()).unwrap_or_default(),
                unit(m).to_string(),
                f.reason.unwrap_or("").to_string(),
            ]
            .iter()
            .map(|s| csv_field(s))
            .collect::<Vec<_>>()
            .join(",");
            let _ = write!(out, "{line}\r\n");
        }
    }
    out
}

/// A Markdown table cell: one line, `|` escaped.
fn md_cell(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The report's table as Markdown: what the figures are, the table
/// (cells as `report` prints them), each run, and the notes.
pub fn markdown(m: &Matrix) -> String {
    let (header, rows) = matrix::cells(m);
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", md_cell(matrix::what(m)));
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| md_cell(c)).collect();
        format!("| {} |", cells.join(" | "))
    };
    let _ = writeln!(out, "{}", line(&header));
    let rule: Vec<&str> = (0..header.len())
        .map(|c| if c == 0 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    out.push('\n');
    for run in &m.runs {
        let _ = writeln!(
            out,
            "- **{}**: {}",
            md_cell(&run.label),
            md_cell(&matrix::describe(run))
        );
    }
    let notes = matrix::notes(m);
    if !notes.is_empty() {
        out.push('\n');
    }
    for note in notes {
        let _ = writeln!(out, "- {}", md_cell(&note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side_by_side::tests::matrix;

    #[test]
    fn json_has_a_record_per_mechanism_and_run() {
        let m = matrix();
        let v: Value = serde_json::from_str(&json(&m)).unwrap();
        assert_eq!(v["unit"], "ns");
        assert_eq!(v["runs"].as_array().unwrap().len(), 3);
        assert_eq!(v["runs"][2]["emulated"], "tcg");
        let records = v["records"].as_array().unwrap();
        assert_eq!(records.len(), m.rows.len() * m.runs.len());
        let find = |mech: &str, run: &str| {
            records
                .iter()
                .find(|r| r["mechanism"] == mech && r["run"] == run)
                .unwrap()
        };
        let raw_tp = find("raw_tp", "6.12.0");
        assert_eq!(
            (&raw_tp["status"], &raw_tp["value"], &raw_tp["stddev"]),
            (&json!("measured"), &json!(150.0), &json!(10.0))
        );
        assert_eq!(raw_tp["rounds"], 3);
        assert_eq!(find("base", "6.18.0")["status"], "base");
        let tp = find("tp", "6.1.0");
        assert_eq!(tp["status"], "failed");
        assert_eq!(tp["reason"], "tp: attach failed");
        assert_eq!(find("tp", "6.12.0")["status"], "missing");
    }

    #[test]
    fn csv_is_one_line_per_mechanism_and_run_with_quoted_fields() {
        let m = matrix();
        let text = csv(&m);
        assert!(text.ends_with("\r\n"));
        let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 1 + m.rows.len() * m.runs.len());
        let columns = CSV_HEADER.split(',').count();
        let raw_tp = lines
            .iter()
            .find(|l| l.starts_with("6.12.0,results/b.json,6.12.0,") && l.contains(",raw_tp,"))
            .unwrap();
        let f: Vec<&str> = raw_tp.split(',').collect();
        assert_eq!(f.len(), columns, "{raw_tp}");
        assert_eq!(&f[7..12], ["measured", "150", "10", "3", "ns"]);
        assert_eq!(csv_field("a, \"b\""), "\"a, \"\"b\"\"\"");
    }

    #[test]
    fn markdown_is_the_table_with_its_runs_and_notes() {
        let m = matrix();
        let text = markdown(&m);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ns per event over the base"), "{text}");
        assert_eq!(
            lines[2], "| mechanism | 6.18.0 | 6.12.0 | 6.1.0 (emulated) |",
            "{text}"
        );
        assert_eq!(lines[3], "|---|---:|---:|---:|");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("| raw_tp |") && l.contains("+150.0 ± 10.0")),
            "{text}"
        );
        assert!(text.contains("- **6.1.0**: c.json: kernel 6.1.0"), "{text}");
        assert!(text.contains("tp: attach failed"), "{text}");
        assert_eq!(md_cell("a|b\n c"), "a\\|b c");
    }
}
