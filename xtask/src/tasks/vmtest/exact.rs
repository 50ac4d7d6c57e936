//! `cargo xtask vmtest KERNEL --against KERNEL_B --exact`: both kernels
//! counted, one after the other, B judged against A per mechanism.
//!
//! Under an instruction clock a mechanism's figure is a count of guest
//! instructions per event, the same on every host and at every moment
//! (docs/exact.md), so nothing needs to run at the same time as anything
//! else: each kernel boots alone with `vmtest --exact`, and B's count is
//! judged against A's by a threshold alone. No statistics, so no UNSURE:
//! a mechanism is REGRESSED, improved or unchanged.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::tasks::vmtest::Args;
use crate::util::signal::check_signal;
use crate::util::{repo_root, say, secs};
use crate::vm::job::Job;
use crate::vm::{self, Accel};

pub fn main(a: Args) -> i32 {
    vm::task_main(|| run(&a))
}

/// One mechanism's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// B costs more than A by more than the threshold.
    #[serde(rename = "REGRESSED")]
    Regressed,
    /// B costs less than A by more than the threshold.
    Improved,
    /// Within the threshold.
    Unchanged,
    /// Only B has it.
    New,
    /// A counted it, B's kernel lacks it (skipped): not compared.
    Absent,
    /// A counted it and B failed to: fails the run.
    #[serde(rename = "LOST")]
    Lost,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Absent => "absent in B",
            Verdict::Lost => "LOST",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub mechanism: String,
    /// Instructions per event over base, A's and B's.
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (B − A) / |A|.
    pub change: Option<f64>,
    pub verdict: Verdict,
}

/// A mechanism's count in one document: none when it was not counted.
type Count = (String, Option<f64>, bool);

/// A result document's counts: each mechanism (bases aside), its
/// instructions per event over its base, and whether it was skipped.
/// Refuses a document that is not exact.
fn counts(doc: &Value, name: &str) -> Result<Vec<Count>> {
    let unit = doc["unit"].as_str().unwrap_or("ns");
    ensure!(
        unit == "instructions",
        "{name}: counts {unit}, not instructions: not an exact run"
    );
    let ms = doc["mechanisms"]
        .as_array()
        .with_context(|| format!("{name}: no mechanisms"))?;
    Ok(ms
        .iter()
        .filter(|m| m["name"] != m["base"])
        .map(|m| {
            let ok = m["status"] == "ok";
            let count = ok.then(|| m["overhead_ns"]["median"].as_f64()).flatten();
            let skipped = m["status"] == "skipped";
            (m["name"].as_str().unwrap_or("?").to_owned(), count, skipped)
        })
        .collect())
}

/// B against A, per mechanism either counted, in A's order then B's new
/// ones. `threshold`: a share (0.01 for 1%) of A's count.
pub fn verdicts(a: &Value, b: &Value, threshold: f64) -> Result<Vec<Row>> {
    let (ca, cb) = (counts(a, "A")?, counts(b, "B")?);
    let find = |c: &[Count], n: &str| c.iter().find(|(m, ..)| m == n).and_then(|(_, v, _)| *v);
    let skipped = |c: &[Count], n: &str| c.iter().any(|(m, _, s)| m == n && *s);
    let mut rows = Vec::new();
    for (m, va, _) in &ca {
        let Some(va) = *va else { continue };
        let vb = find(&cb, m);
        let (change, verdict) = match vb {
            None if skipped(&cb, m) => (None, Verdict::Absent),
            None => (None, Verdict::Lost),
            Some(vb) => {
                let change = (vb - va) / va.abs().max(f64::MIN_POSITIVE);
                let v = if change > threshold {
                    Verdict::Regressed
                } else if change < -threshold {
                    Verdict::Improved
                } else {
                    Verdict::Unchanged
                };
                (Some(change), v)
            }
        };
        rows.push(Row {
            mechanism: m.clone(),
            a: Some(va),
            b: vb,
            change,
            verdict,
        });
    }
    for (m, vb, _) in &cb {
        if vb.is_some() && find(&ca, m).is_none() {
            rows.push(Row {
                mechanism: m.clone(),
                a: None,
                b: *vb,
                change: None,
                verdict: Verdict::New,
            });
        }
    }
    Ok(rows)
}

/// 1 when B regressed or lost a mechanism, else 0.
pub fn exit_code(rows: &[Row]) -> i32 {
    i32::from(
        rows.iter()
            .any(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Lost)),
    )
}

/// The verdicts as a table.
pub fn table(rows: &[Row], name_a: &str, name_b: &str, threshold: f64) -> String {
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.1}"));
    let mut lines = vec![
        format!(
            "exact: B {name_b} against A {name_a}: guest instructions per event over base, \
             threshold {:.2}%",
            threshold * 100.0
        ),
        String::new(),
    ];
    let mut cells = vec![["mechanism", "A", "B", "B-A", "change", "verdict"].map(String::from)];
    for r in rows {
        let diff = r.a.zip(r.b).map(|(a, b)| b - a);
        cells.push([
            r.mechanism.clone(),
            f(r.a),
            f(r.b),
            f(diff),
            r.change
                .map_or("-".into(), |c| format!("{:+.2}%", c * 100.0)),
            r.verdict.word().into(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &cells {
        let mut l = format!("{:<w$}", r[0], w = widths[0]);
        for c in 1..6 {
            l += &format!("  {:>w$}", r[c], w = widths[c]);
        }
        lines.push(l.trim_end().to_owned());
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    lines.push(String::new());
    lines.push(format!(
        "{} REGRESSED, {} improved, {} unchanged, {} new, {} absent in B, {} LOST",
        count(Verdict::Regressed),
        count(Verdict::Improved),
        count(Verdict::Unchanged),
        count(Verdict::New),
        count(Verdict::Absent),
        count(Verdict::Lost)
    ));
    lines.join("\n") + "\n"
}

#[derive(Serialize)]
struct Summary<'a> {
    kernel: &'a str,
    against: &'a str,
    release: String,
    against_release: String,
    threshold: f64,
    rows: &'a [Row],
    exit: i32,
    why: Vec<String>,
    total_s: f64,
}

fn run(a: &Args) -> Result<i32> {
    let start = Instant::now();
    let b_kernel = a.against.as_deref().context("--against")?;
    ensure!(
        matches!(&a.job, Job::Tests(_)) && a.bench,
        "--against --exact runs the bpf-overhead command: no --cmd, --exec or --no-bench"
    );
    ensure!(
        a.accel != Some(Accel::Kvm),
        "--exact counts instructions under TCG only: drop --accel kvm"
    );
    let repo = repo_root();
    let dir = out_dir(a, &repo, b_kernel);
    for side in ["a", "b"] {
        let d = dir.join(side);
        if d.exists() {
            fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    for f in ["compare.txt", "compare.json", "vmtest.json"] {
        let _ = fs::remove_file(dir.join(f));
    }
    let xtask = std::env::current_exe().context("finding xtask's own executable")?;
    let mut why = Vec::new();
    for (side, k, modules) in [
        ("a", a.kernel.as_str(), &a.modules),
        ("b", b_kernel, &a.against_modules),
    ] {
        let out = dir.join(side);
        fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let mut cmd = Command::new(&xtask);
        cmd.args([
            "vmtest",
            k,
            "--exact",
            "--accel",
            "tcg",
            "--arch",
            a.arch.name(),
        ]);
        cmd.arg("--out").arg(&out);
        cmd.args(["--memory", &a.memory, "--smp", &a.smp.to_string()]);
        cmd.args(["--timeout", &a.timeout.to_string()]);
        if !a.append.is_empty() {
            cmd.args(["--append", &a.append]);
        }
        if let Some(m) = modules {
            cmd.args(["--modules", m]);
        }
        for b in &a.bench_args {
            cmd.arg(format!("--bench-arg={b}"));
        }
        for (k, v) in &a.env {
            cmd.args(["--env", &format!("{k}={v}")]);
        }
        for c in &a.cargo_args {
            cmd.arg(format!("--cargo-arg={c}"));
        }
        say!("exact {}: {k} into {}", side.to_uppercase(), out.display());
        let rc = cmd
            .stdin(Stdio::null())
            .status()
            .context("starting vmtest")?;
        check_signal()?;
        if !rc.success() {
            why.push(format!(
                "{}'s VM exited {} (see above)",
                side.to_uppercase(),
                rc.code().unwrap_or(128)
            ));
        }
    }
    let read = |side: &str| -> Result<Value> {
        let f = dir.join(side).join("result.json");
        let text = fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
    };
    let (mut rows, mut release) = (Vec::new(), (String::new(), String::new()));
    let exit = match (read("a"), read("b")) {
        (Ok(ra), Ok(rb)) => {
            release = (
                ra["kernel_release"].as_str().unwrap_or("?").to_owned(),
                rb["kernel_release"].as_str().unwrap_or("?").to_owned(),
            );
            rows = verdicts(&ra, &rb, a.threshold / 100.0)?;
            let text = table(&rows, &release.0, &release.1, a.threshold / 100.0);
            print!("{text}");
            fs::write(dir.join("compare.txt"), &text)?;
            fs::write(
                dir.join("compare.json"),
                serde_json::to_string_pretty(&rows)? + "\n",
            )?;
            let rc = exit_code(&rows);
            if why.is_empty() {
                rc
            } else {
                1
            }
        }
        (ra, rb) => {
            for e in [ra.err(), rb.err()].into_iter().flatten() {
                why.push(crate::util::one_line(&e));
            }
            1
        }
    };
    for w in &why {
        say!("{w}");
    }
    let summary = Summary {
        kernel: &a.kernel,
        against: b_kernel,
        release: release.0.clone(),
        against_release: release.1.clone(),
        threshold: a.threshold,
        rows: &rows,
        exit,
        why,
        total_s: (start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    };
    fs::write(
        dir.join("vmtest.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    println!(
        "vmtest: exact {} against {} total {} exit {exit}",
        release.0,
        release.1,
        secs(start.elapsed())
    );
    Ok(exit)
}

/// `--out`, else `<target dir>/vmtest/exact/<KERNEL>--<KERNEL_B>`.
fn out_dir(a: &Args, repo: &Path, b: &str) -> PathBuf {
    if let Some(o) = &a.out {
        return PathBuf::from(o);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .ok()
        .filter(|t| !t.is_empty())
        .map_or_else(|| repo.join("target"), PathBuf::from);
    target
        .join("vmtest/exact")
        .join(format!("{}--{b}", a.kernel).replace('/', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(unit: &str, ms: &[(&str, &str, Option<f64>)]) -> Value {
        let ms: Vec<Value> = ms
            .iter()
            .map(|(n, base, c)| {
                serde_json::json!({
                    "name": n.trim_end_matches('!'), "base": base,
                    "status": match (c, *n == *base, n.ends_with("!")) {
                        (_, _, true) => "failed",
                        (Some(_), _, _) | (_, true, _) => "ok",
                        _ => "skipped",
                    },
                    "overhead_ns": c.map(|c| serde_json::json!({"median": c})),
                })
            })
            .collect();
        serde_json::json!({"unit": unit, "mechanisms": ms})
    }

    #[test]
    fn verdicts_by_threshold_alone() {
        let a = doc(
            "instructions",
            &[
                ("base", "base", None),
                ("raw_tp", "base", Some(100.0)),
                ("tp", "base", Some(400.0)),
                ("fentry", "base", Some(200.0)),
                ("kprobe", "base", Some(300.0)),
                ("lsm", "base", Some(50.0)),
            ],
        );
        let b = doc(
            "instructions",
            &[
                ("base", "base", None),
                ("raw_tp", "base", Some(101.5)),
                ("tp", "base", Some(396.0)),
                ("fentry", "base", Some(201.9)),
                ("kprobe", "base", None),
                ("lsm!", "base", None),
                ("kprobe.multi", "base", Some(280.0)),
            ],
        );
        let rows = verdicts(&a, &b, 0.01).unwrap();
        let got: Vec<(&str, Verdict)> = rows
            .iter()
            .map(|r| (r.mechanism.as_str(), r.verdict))
            .collect();
        assert_eq!(
            got,
            [
                ("raw_tp", Verdict::Regressed),
                ("tp", Verdict::Unchanged),
                ("fentry", Verdict::Unchanged),
                ("kprobe", Verdict::Absent),
                ("lsm", Verdict::Lost),
                ("kprobe.multi", Verdict::New),
            ]
        );
        assert_eq!(exit_code(&rows), 1);
        let rows = verdicts(&a, &a, 0.01).unwrap();
        assert!(rows.iter().all(|r| r.verdict == Verdict::Unchanged));
        assert_eq!(exit_code(&rows), 0);
        let cheaper = doc("instructions", &[("raw_tp", "base", Some(98.0))]);
        let r = verdicts(&a, &cheaper, 0.01).unwrap();
        assert_eq!(r[0].verdict, Verdict::Improved);
        let text = table(&r, "6.1", "6.12", 0.01);
        let row = text.lines().find(|l| l.starts_with("raw_tp")).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["raw_tp", "+100.0", "+98.0", "-2.0", "-2.00%", "improved"]
        );
    }

    #[test]
    fn a_timed_run_is_refused() {
        let timed = doc("ns", &[("raw_tp", "base", Some(100.0))]);
        let exact = doc("instructions", &[("raw_tp", "base", Some(100.0))]);
        let e = verdicts(&exact, &timed, 0.01).unwrap_err().to_string();
        assert_eq!(e, "B: counts ns, not instructions: not an exact run");
        let old = serde_json::json!({"mechanisms": []});
        assert!(verdicts(&old, &exact, 0.01).is_err());
    }
}
