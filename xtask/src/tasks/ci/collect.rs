//! `cargo xtask ci`'s last step, and `ci --collect DIR`: one table built from
//! each kernel's vmtest.json and suite.ktap, and the kernels' results side by
//! side (`bpf-overhead report`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use base64::Engine;

use crate::util::exact_counts::read_document;
use crate::util::{cargo, repo_root};
use crate::vm::summary::VmtestJson;

/// One kernel's run, as ci saw it.
pub struct KernelRun {
    pub kernel: String,
    pub exit: i32,
    pub wall: Duration,
}

/// A kernel's directory under DIR: its name, or a path's, made a file name.
pub fn kernel_dir(out: &Path, kernel: &str) -> PathBuf {
    out.join(kernel.replace('/', "_"))
}

/// What TAP::Parser (prove's parser) understood of a KTAP file.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Ktap {
    pub plan: Option<u32>,
    pub pass: u32,
    pub skip: u32,
    pub fail: u32,
    /// A plan met by the results, none failed, no parse error.
    pub ok: bool,
}

/// scripts/check-ktap.d/tap_summary.pl's output: `plan N`, `pass N`,
/// `skip N`, `fail N`, `verdict pass|fail`.
pub fn parse_tap_summary(text: &str) -> Ktap {
    let mut k = Ktap::default();
    for l in text.lines() {
        let Some((key, v)) = l.split_once(' ') else {
            continue;
        };
        let n = v.parse::<u32>().ok();
        match (key, n) {
            ("plan", n) => k.plan = n,
            ("pass", Some(n)) => k.pass = n,
            ("skip", Some(n)) => k.skip = n,
            ("fail", Some(n)) => k.fail = n,
            ("verdict", _) => k.ok = v == "pass",
            _ => {}
        }
    }
    k
}

/// The suite's KTAP in DIR, read by TAP::Parser, the parser behind prove,
/// which scripts/check-ktap checks against the kernel's own kunit_parser;
/// for a kselftest kernel, run_kselftest.sh's output (kselftest.ktap).
fn ktap(dir: &Path) -> Result<Ktap> {
    let file = ["suite.ktap", "kselftest.ktap"]
        .map(|f| dir.join(f))
        .into_iter()
        .find(|f| f.is_file())
        .context("no suite.ktap or kselftest.ktap")?;
    let out = Command::new("perl")
        .arg(repo_root().join("scripts/check-ktap.d/tap_summary.pl"))
        .arg(&file)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running scripts/check-ktap.d/tap_summary.pl (perl)")?;
    ensure!(
        out.status.success(),
        "tap_summary.pl failed on {}",
        file.display()
    );
    Ok(parse_tap_summary(&String::from_utf8_lossy(&out.stdout)))
}

/// After the name of a kernel counted by `vmtest --exact` (ci/kernels'
/// `--exact` lines).
pub const EXACT_SUFFIX: &str = "-exact";

/// An exact run's proof: its result counts instructions and measured
/// something.
fn exact_result(dir: &Path) -> Result<()> {
    let doc = read_document(&dir.join("result.json"))?;
    ensure!(
        doc.exact(),
        "result.json counts {}, not instructions",
        doc.unit
    );
    let measured = doc.mechanisms.iter().any(|m| !m.is_base() && m.is_ok());
    ensure!(measured, "result.json: no mechanism counted");
    Ok(())
}

/// One row of the table.
pub struct Row {
    pub kernel: String,
    pub summary: Option<VmtestJson>,
    pub ktap: Option<Ktap>,
    /// ci's own clock, the fetch taken out; else the runner's total.
    pub wall: Option<f64>,
    pub verdict: String,
}

fn row(out: &Path, kernel: &str, run: Option<&KernelRun>) -> Row {
    let dir = kernel_dir(out, kernel);
    let summary = VmtestJson::load(&dir).ok();
    // Counts: only the command runs, no suite and no KTAP; its result is
    // what it proves.
    let exact = kernel.ends_with(EXACT_SUFFIX);
    let ktap = if exact {
        exact_result(&dir).map(|()| Ktap {
            ok: true,
            ..Ktap::default()
        })
    } else {
        ktap(&dir)
    };
    let exit = run.map(|r| r.exit).or(summary.as_ref().map(|s| s.exit));
    let verdict = match (&summary, &ktap, exit) {
        (_, _, None) => "FAIL: not run (no vmtest.json)".to_owned(),
        (None, _, Some(rc)) => format!("FAIL: exit {rc}, no vmtest.json"),
        (Some(s), _, Some(rc)) if rc != 0 => {
            let why = s.why.first().map(String::as_str).unwrap_or("");
            format!("FAIL: exit {rc} {why}").trim_end().to_owned()
        }
        (_, Err(e), _) => format!("FAIL: KTAP: {e:#}"),
        (_, Ok(k), _) if !k.ok => "FAIL: KTAP incomplete or failing".to_owned(),
        _ => "PASS".to_owned(),
    };
    let wall = match (run, &summary) {
        (Some(r), s) => Some(r.wall.as_secs_f64() - s.as_ref().map_or(0.0, |s| s.fetch_s)),
        (None, Some(s)) => Some(s.total_s),
        (None, None) => None,
    };
    Row {
        kernel: kernel.to_owned(),
        summary,
        ktap: ktap.ok().filter(|_| !exact),
        wall,
        verdict,
    }
}

const HEADER: [&str; 8] = [
    "kernel",
    "release",
    "fetch s",
    "boot s",
    "VM s",
    "wall s",
    "KTAP pass/skip/fail (plan)",
    "verdict",
];

fn cells(r: &Row) -> [String; 8] {
    let s = r.summary.as_ref();
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
    [
        r.kernel.clone(),
        s.map_or("-".into(), |s| s.release.clone()),
        f(s.map(|s| s.fetch_s)),
        f(s.and_then(|s| s.boot_s)),
        f(s.map(|s| s.vm_s)),
        f(r.wall),
        r.ktap.as_ref().map_or("-".into(), |k| {
            format!(
                "{}/{}/{} ({})",
                k.pass,
                k.skip,
                k.fail,
                k.plan.map_or("none".into(), |p| p.to_string())
            )
        }),
        r.verdict.clone(),
    ]
}

/// The table, aligned for a terminal or in Markdown.
pub fn table(rows: &[Row], markdown: bool) -> String {
    let all: Vec<[String; 8]> = std::iter::once(HEADER.map(String::from))
        .chain(rows.iter().map(cells))
        .collect();
    let mut s = String::new();
    if markdown {
        for (i, r) in all.iter().enumerate() {
            s += &format!("| {} |\n", r.join(" | "));
            if i == 0 {
                s += &format!("|{}\n", "---|".repeat(r.len()));
            }
        }
        return s;
    }
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|c| all.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &all {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                // Text left, figures right.
                if (2..=5).contains(&c) {
                    format!("{v:>w$}")
                } else {
                    format!("{v:<w$}")
                }
            })
            .collect();
        s += line.join("  ").trim_end();
        s.push('\n');
    }
    s
}

/// The table of DIR's kernels, then the report; true if every kernel passed
/// and the report was written.
pub fn collect(out: &Path, kernels: &[String], runs: &[KernelRun], markdown: bool) -> Result<bool> {
    let rows: Vec<Row> = kernels
        .iter()
        .map(|k| row(out, k, runs.iter().find(|r| &r.kernel == k)))
        .collect();
    let all_pass = rows.iter().all(|r| r.verdict == "PASS");
    let reports = [REPORT, REPORT_EXACT].map(|stem| (stem, report(out, kernels, stem)));
    let reports_ok = reports.iter().all(|(_, r)| r.is_ok());
    if markdown {
        print!("{}", markdown_summary(&rows, &reports, out));
        return Ok(all_pass && reports_ok);
    }
    println!(
        "ci: VM runs (fetch: getting the kernel; boot: qemu start to the command; VM: qemu \
         start to exit; wall: the whole run less the fetch)"
    );
    print!("{}", table(&rows, false));
    for (stem, report) in &reports {
        match report {
            Ok(text) if text.is_empty() => {}
            Ok(text) => {
                print!("{text}");
                eprintln!(
                    "ci: report of the kernels: {}, {}",
                    out.join(format!("{stem}.txt")).display(),
                    out.join(format!("{stem}.svg")).display()
                );
            }
            Err(e) => eprintln!("ci: {stem}: {e:#}"),
        }
    }
    Ok(all_pass && reports_ok)
}

/// The timed results side by side, and the exact ones (counts).
const REPORT: &str = "report";
const REPORT_EXACT: &str = "report-exact";

/// `bpf-overhead report` over DIR/*/result.json into `stem`.txt and .svg:
/// the suite's kernels' timed results (`report`), or the counts of the
/// exact ones (`report-exact`), which report does not put beside times.
/// A kernel that ran the kselftest collection saves no result.json: none
/// of them is asked for, and with only those there is no report.
fn report(out: &Path, kernels: &[String], stem: &str) -> Result<String> {
    let exact = stem.ends_with(EXACT_SUFFIX);
    let suites: Vec<PathBuf> = kernels
        .iter()
        .filter(|k| k.ends_with(EXACT_SUFFIX) == exact)
        .map(|k| kernel_dir(out, k))
        .filter(|d| !d.join("kselftest.ktap").is_file())
        .collect();
    if suites.is_empty() {
        return Ok(String::new());
    }
    let results: Vec<PathBuf> = suites
        .iter()
        .map(|d| d.join("result.json"))
        .filter(|p| p.is_file())
        .collect();
    if results.is_empty() {
        bail!("no kernel saved a result: no report");
    }
    let o = cargo()
        .args([
            "run",
            "--quiet",
            "--package",
            "bpf-overhead",
            "--",
            "report",
        ])
        .args(&results)
        .arg("--svg")
        .arg(out.join(format!("{stem}.svg")))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running bpf-overhead report")?;
    ensure!(
        o.status.success(),
        "bpf-overhead report failed ({})",
        o.status
    );
    crate::util::write_file(out.join(format!("{stem}.txt")), &o.stdout)?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// For $GITHUB_STEP_SUMMARY: the table, the report, and the chart inline
/// (also in the report artifact, as report.svg).
fn markdown_summary(rows: &[Row], reports: &[(&str, Result<String>)], out: &Path) -> String {
    let mut s = String::from("## bpf-overhead: the suite on each kernel\n\n");
    s += &table(rows, true);
    s += "\nfetch: getting the kernel (apt, download, unpack; ~0 when cached); boot: qemu start \
          to the command; VM: qemu start to exit; wall: the whole run less the fetch. KTAP: \
          the suite's results as TAP::Parser reads them.\n\n";
    for (stem, report) in reports {
        let what = if *stem == REPORT_EXACT {
            "their counts side by side (`vmtest --exact`, `bpf-overhead report`)"
        } else {
            "side by side (`bpf-overhead report`)"
        };
        match report {
            Ok(text) if text.is_empty() => {}
            Ok(text) => {
                s += &format!("## The kernels {what}\n\n```\n{text}```\n\n");
                if let Ok(svg) = fs::read(out.join(format!("{stem}.svg"))) {
                    s += &format!(
                        "<img alt=\"bpf-overhead {stem} chart\" src=\"data:image/svg+xml;base64,{}\">\n\n",
                        base64::engine::general_purpose::STANDARD.encode(&svg)
                    );
                }
            }
            Err(e) => s += &format!("No {stem}: {e:#}\n"),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    /// Kernels that ran the kselftest collection ask for no report; a
    /// suite kernel that saved no result still fails it.
    #[test]
    fn kselftest_kernels_need_no_result() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("6.12-kselftest")).unwrap();
        fs::write(
            d.path().join("6.12-kselftest/kselftest.ktap"),
            "TAP version 13\n",
        )
        .unwrap();
        assert_eq!(
            report(d.path(), &["6.12-kselftest".into()], REPORT).unwrap(),
            ""
        );
        fs::create_dir_all(d.path().join("6.12")).unwrap();
        let both = ["6.12-kselftest".to_owned(), "6.12".to_owned()];
        assert!(report(d.path(), &both, REPORT).is_err());
        // The exact report leaves the suite's kernels out, and the other
        // way round.
        assert_eq!(report(d.path(), &both, REPORT_EXACT).unwrap(), "");
    }

    /// An exact kernel passes on a result that counted something, and
    /// needs no KTAP.
    #[test]
    fn exact_kernels_need_a_result_that_counts() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("6.12-exact");
        fs::create_dir_all(&dir).unwrap();
        assert!(exact_result(&dir).is_err());
        use crate::util::document::{fixtures, Status};
        let write = |doc: &crate::util::document::Document| {
            fs::write(dir.join("result.json"), doc.to_json()).unwrap()
        };
        write(&fixtures::document());
        assert!(exact_result(&dir).is_err(), "a timed run's result");
        let mut counted = fixtures::counted(&[("raw_tp", 121.0)]);
        counted.mechanisms[1].status = Status::Skipped;
        write(&counted);
        assert!(exact_result(&dir).is_err(), "only its base counted");
        counted.mechanisms[1].status = Status::Ok;
        write(&counted);
        assert!(exact_result(&dir).is_ok());
    }

    use super::*;

    #[test]
    fn tap_summary_counts() {
        let k = parse_tap_summary(
            "plan 48\nok base\nskip x: old\npass 45\nskip 3\nfail 0\nverdict pass\n",
        );
        assert_eq!(
            k,
            Ktap {
                plan: Some(48),
                pass: 45,
                skip: 3,
                fail: 0,
                ok: true
            }
        );
        let k = parse_tap_summary("plan none\npass 0\nskip 0\nfail 0\nverdict fail\n");
        assert_eq!((k.plan, k.ok), (None, false));
    }

    #[test]
    fn rows_from_the_runner_and_ktap() {
        let out = tempfile::tempdir().unwrap();
        let dir = kernel_dir(out.path(), "6.1");
        fs::create_dir_all(&dir).unwrap();
        let s = VmtestJson {
            kernel: "6.1".into(),
            release: "6.1.0-57-amd64".into(),
            fetch_s: 2.0,
            boot_s: Some(3.1),
            vm_s: 25.0,
            total_s: 30.0,
            ..VmtestJson::default()
        };
        s.save(&dir).unwrap();
        fs::write(
            dir.join("suite.ktap"),
            "KTAP version 1\n1..2\nok 1 base\nok 2 kprobe # SKIP old\n",
        )
        .unwrap();
        let run = KernelRun {
            kernel: "6.1".into(),
            exit: 0,
            wall: Duration::from_secs(40),
        };
        let r = row(out.path(), "6.1", Some(&run));
        assert_eq!(r.verdict, "PASS");
        assert_eq!(r.wall, Some(38.0), "the fetch is taken out");
        let t = table(&[r], false);
        assert!(t.contains("6.1.0-57-amd64"), "{t}");
        assert!(t.contains("1/1/0 (2)"), "{t}");

        // Cut short: its plan is not met.
        fs::write(dir.join("suite.ktap"), "KTAP version 1\n1..3\nok 1 base\n").unwrap();
        let r = row(out.path(), "6.1", Some(&run));
        assert_eq!(r.verdict, "FAIL: KTAP incomplete or failing");
        let missing = row(out.path(), "5.10", None);
        assert!(missing.verdict.starts_with("FAIL: not run"));
        let failed = KernelRun {
            kernel: "5.10".into(),
            exit: 2,
            wall: Duration::from_secs(1),
        };
        let r = row(out.path(), "5.10", Some(&failed));
        assert_eq!(r.verdict, "FAIL: exit 2, no vmtest.json");
        let md = table(&[r], true);
        assert!(md.starts_with("| kernel | release |") && md.contains("|---|"));
    }

    /// A mechanism that crashed the kernel is the kernel's verdict, with
    /// the oops's first line, though the rest of the suite passed.
    #[test]
    fn a_crash_is_the_verdict() {
        let out = tempfile::tempdir().unwrap();
        let dir = kernel_dir(out.path(), "6.12");
        fs::create_dir_all(&dir).unwrap();
        let crash = crate::vm::crash::Crash {
            mechanism: "kprobe".into(),
            step: "overhead".into(),
            boot: 1,
            oops: vec!["Kernel panic - not syncing: sysrq triggered crash".into()],
        };
        let (exit, why) = crate::vm::crash::judged(&[crash], 0, vec![]);
        VmtestJson {
            kernel: "6.12".into(),
            exit,
            why,
            ..VmtestJson::default()
        }
        .save(&dir)
        .unwrap();
        fs::write(
            dir.join("suite.ktap"),
            "KTAP version 1\n1..2\nok 1 base\n# kprobe crashed the kernel\nnot ok 2 kprobe\n",
        )
        .unwrap();
        let r = row(out.path(), "6.12", None);
        assert_eq!(
            r.verdict,
            "FAIL: exit 69 kprobe crashed the kernel: Kernel panic - not syncing: sysrq triggered crash"
        );
        assert!(table(&[r], false).contains("1/0/1 (2)"));
    }
}
