//! The `bpf-overhead` command's help, `--list`, and the `report` subcommand
//! (several result files side by side).

use std::fs;

use serial_test::serial;

mod common;
use common::cli::*;
use common::system::is_root;

#[test]
fn help_describes_every_option() {
    let out = run_ok(&["--help"]);
    for option in [
        "--mechanism",
        "--iterations",
        "--repeat",
        "--budget",
        "--cpu",
        "--list",
        "--format",
        "--baseline",
        "--threshold",
        "--save",
        "--overwrite-baseline",
        "--no-prog-stats",
        "BPF_ENABLE_STATS",
        "before and after each of its mechanisms",
        "Exit status",
        "3   could not decide",
        "report",
    ] {
        assert!(
            out.stdout.contains(option),
            "--help lacks {option}:\n{}",
            out.stdout
        );
    }
    for default in [
        "about 50 ms each",
        "[default: 7]",
        "Default: 6, and 15 on the comm and syscall triggers",
        "[default: table]",
    ] {
        assert!(out.stdout.contains(default), "--help lacks {default}");
    }
    let out = run_ok(&["--version"]);
    assert_eq!(
        out.stdout.trim(),
        format!("bpf-overhead {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
#[serial]
fn list_names_every_mechanism_and_its_support() {
    let out = run_ok(&["--list"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("mechanism") && lines[0].contains("supported"));
    // The catalogue, not a copy of it: a new mechanism needs no edit here.
    let names: Vec<&str> = bpf_overhead::Mechanism::all().map(|m| m.name()).collect();
    assert!(lines.len() > names.len(), "{}", out.stdout);
    for (line, name) in lines[1..].iter().zip(&names) {
        let mut cells = line.split_whitespace();
        assert_eq!(cells.next(), Some(*name), "{line}");
        let supported = cells.next().unwrap();
        if is_root() {
            assert!(["yes", "no", "error"].contains(&supported), "{line}");
        } else {
            assert_eq!(supported, "?", "{line}");
        }
    }
    if is_root() {
        // A base is the trigger alone: always supported.
        assert!(
            lines[1].split_whitespace().nth(1) == Some("yes"),
            "{}",
            lines[1]
        );
        // Every "no" comes with its reason.
        for line in &lines[1..=names.len()] {
            let name = line.split_whitespace().next().unwrap();
            if line.split_whitespace().nth(1) == Some("no") {
                assert!(
                    out.stdout.contains(&format!("\n{name}: ")),
                    "no reason for {name}:\n{}",
                    out.stdout
                );
            }
        }
    }
}

/// One line on stderr, exit 2, no backtrace.
fn bad_report(args: &[&str], expected: &str) {
    let args: Vec<&str> = std::iter::once("report")
        .chain(args.iter().copied())
        .collect();
    bad_input(&args, expected);
    let out = run(&args);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn report_help() {
    let out = run_ok(&["report", "--help"]);
    for text in [
        "FILE",
        "--svg",
        "--save or --format json",
        "Emulated runs are marked",
        "Exit status",
    ] {
        assert!(
            out.stdout.contains(text),
            "report --help lacks {text}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn report_bad_input() {
    bad_report(&[], "report: no result files");
    bad_report(
        &["/nonexistent/a.json"],
        "report: cannot read /nonexistent/a.json",
    );
    let junk = TempFile::new("report-junk.json");
    fs::write(&junk.0, "task_rename base\t1000K events per sec\n").unwrap();
    bad_report(&[junk.path()], "not valid JSON");
    let (a, b) = (
        TempFile::new("report-a.json"),
        TempFile::new("report-b.json"),
    );
    let mut doc = fixture();
    doc["mechanisms"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["name"] != "kprobe");
    fs::write(&a.0, doc.to_string()).unwrap();
    doc["mechanisms"][1]["name"] = "tp".into();
    fs::write(&b.0, doc.to_string()).unwrap();
    bad_report(&[a.path(), b.path()], "nothing in common");
    bad_report(
        &[a.path(), "--svg", "/nonexistent/dir/r.svg"],
        "no directory /nonexistent/dir",
    );
}

#[test]
fn report_renders_a_table_and_a_chart() {
    let (a, b, chart) = (
        TempFile::new("report-6.18.json"),
        TempFile::new("report-6.1.json"),
        TempFile::new("report.svg"),
    );
    fs::write(&a.0, fixture().to_string()).unwrap();
    let mut doc = fixture();
    doc["kernel_release"] = "6.1.0".into();
    doc["emulated"] = "tcg".into();
    fs::write(&b.0, doc.to_string()).unwrap();
    let out = run_ok(&["report", a.path(), b.path(), "--svg", chart.path()]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("mechanism")).unwrap();
    assert!(
        header.contains("6.18.0") && header.contains("6.1.0 (emulated)"),
        "{}",
        out.stdout
    );
    let raw_tp = lines.iter().find(|l| l.starts_with("raw_tp")).unwrap();
    assert_eq!(raw_tp.matches("+111.1 ± 1.1").count(), 2, "{raw_tp}");
    assert!(
        out.stdout
            .contains("EMULATED (tcg): not performance figures"),
        "{}",
        out.stdout
    );
    let svg = fs::read_to_string(&chart.0).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("+111.1 ± 1.1 (emulated)"), "{svg}");
    assert_eq!(
        out.stderr.trim(),
        format!("bpf-overhead: chart written to {}", chart.path())
    );
}

/// `--format json|csv|markdown`: the table's figures for programs and
/// pages, from the same files.
#[test]
fn report_formats_for_programs_and_pages() {
    let (a, b) = (
        TempFile::new("report-fmt-6.18.json"),
        TempFile::new("report-fmt-6.1.json"),
    );
    fs::write(&a.0, fixture().to_string()).unwrap();
    let mut doc = fixture();
    doc["kernel_release"] = "6.1.0".into();
    fs::write(&b.0, doc.to_string()).unwrap();
    let report = |format: &str| run_ok(&["report", "--format", format, a.path(), b.path()]).stdout;

    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let records = json["records"].as_array().unwrap();
    let raw_tp: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["mechanism"] == "raw_tp")
        .collect();
    assert_eq!(raw_tp.len(), 2, "{json}");
    assert_eq!(raw_tp[1]["run"], "6.1.0");
    assert_eq!(raw_tp[1]["status"], "measured");
    assert_eq!(json["unit"], "ns");

    let csv = report("csv");
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("run,file,kernel_release,"));
    assert_eq!(lines.count(), records.len(), "{csv}");

    let md = report("markdown");
    assert!(md.contains("| mechanism | 6.18.0 | 6.1.0 |"), "{md}");
    assert!(md.lines().any(|l| l.starts_with("| raw_tp |")), "{md}");
}
