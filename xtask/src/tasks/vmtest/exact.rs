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

use crate::tasks::vmtest::explain::{self, change, Explained};
use crate::tasks::vmtest::Args;
use crate::util::exact_rule::{judge_counts, ExactChange};
use crate::util::kconfig::{self, KernelConfig};
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
    /// Not judged: a link on every function catches the kernel's other
    /// work, and its rounds spread beyond the threshold.
    Spread,
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
            Verdict::Spread => "spread: not judged",
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
type Count = (String, Option<f64>, bool, Option<f64>);

/// A link on at least this many functions is a link on every function.
const EVERY_FUNCTION: u64 = 1000;

/// For a mechanism with a link on every function (kprobe.multi-all-loop,
/// kretprobe.multi-all-loop): its rounds' spread, as a share of its count.
/// Whatever else the kernel runs during a round (the tick, RCU's work)
/// runs the program on each function it calls, so few rounds run clean
/// and the fewest of 7 is not the same from boot to boot.
fn spread(m: &Value) -> Option<f64> {
    if m["attach"]["functions"].as_u64()? < EVERY_FUNCTION {
        return None;
    }
    let ins: Vec<f64> = m["k_events_per_sec"]["samples"]
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .map(|k| 1e6 / k)
        .collect();
    let (lo, hi) = ins.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let count = m["overhead_ns"]["median"].as_f64()?;
    (!ins.is_empty()).then(|| (hi - lo) / count.abs().max(1.0))
}

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
            let name = m["name"].as_str().unwrap_or("?").to_owned();
            (name, count, skipped, spread(m))
        })
        .collect())
}

/// B against A, per mechanism either counted, in A's order then B's new
/// ones. `threshold`: a share (0.01 for 1%) of A's count.
pub fn verdicts(a: &Value, b: &Value, threshold: f64) -> Result<Vec<Row>> {
    let (ca, cb) = (counts(a, "A")?, counts(b, "B")?);
    let find = |c: &[Count], n: &str| c.iter().find(|(m, ..)| m == n).and_then(|x| x.1);
    let skipped = |c: &[Count], n: &str| c.iter().any(|(m, _, s, _)| m == n && *s);
    let spread_of = |c: &[Count], n: &str| c.iter().find(|(m, ..)| m == n).and_then(|x| x.3);
    let mut rows = Vec::new();
    for (m, va, _, sa) in &ca {
        let Some(va) = *va else { continue };
        let vb = find(&cb, m);
        let (change, verdict) = match vb {
            None if skipped(&cb, m) => (None, Verdict::Absent),
            None => (None, Verdict::Lost),
            Some(vb) => {
                let (change, v) = judge_counts(va, vb, threshold);
                let spread = (*sa)
                    .into_iter()
                    .chain(spread_of(&cb, m))
                    .fold(0.0, f64::max);
                let v = match v {
                    _ if spread > threshold => Verdict::Spread,
                    ExactChange::Regressed => Verdict::Regressed,
                    ExactChange::Improved => Verdict::Improved,
                    ExactChange::Unchanged => Verdict::Unchanged,
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
    for (m, vb, ..) in &cb {
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
    if count(Verdict::Spread) > 0 {
        lines.push(format!(
            "{} not judged: a link on every function runs its program on whatever else the \
             kernel does in a round (the tick, RCU), so its rounds spread beyond the threshold \
             and the fewest is not the same from boot to boot",
            count(Verdict::Spread)
        ));
    }
    lines.join("\n") + "\n"
}

/// What the two kernels' configs say before a verdict: the lines to say
/// (the cost-changing options they set differently, named) and whether to
/// refuse the verdict (they differ, and `across` was not given). A config
/// not known says so, and refuses nothing.
pub fn config_gate(
    a: Option<&KernelConfig>,
    b: Option<&KernelConfig>,
    across: bool,
) -> (Vec<String>, bool) {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (a, _) => {
            let side = if a.is_none() { "A" } else { "B" };
            return (
                vec![format!(
                    "{side}'s kernel config is unknown: cannot tell whether the kernels differ \
                     in cost-changing options"
                )],
                false,
            );
        }
    };
    let Some(line) = kconfig::differences_line(a, b) else {
        return (Vec::new(), false);
    };
    let mut lines = vec![line];
    if !across {
        lines.push(
            "refused: these counts would weigh the configs, not a change; build both kernels \
             from one config, or add --across-configs for a verdict anyway"
                .into(),
        );
    }
    (lines, !across)
}

/// Each kernel's config as vmtest reads it before boot (both kernels
/// made ready, Debian ones fetched, as each side's vmtest would).
fn configs(a: &Args, b_kernel: &str) -> Result<[Option<KernelConfig>; 2]> {
    let (ka, kb) = super::both_kernels(a, b_kernel, false)?;
    Ok([ka, kb].map(|k| k.config.as_ref().map(|c| c.record())))
}

/// A result document's `kernel_config`, if it has one.
fn doc_config(doc: &Value) -> Option<KernelConfig> {
    serde_json::from_value(doc.get("kernel_config")?.clone()).ok()
}

#[derive(Serialize)]
struct Summary<'a> {
    kernel: &'a str,
    against: &'a str,
    release: String,
    against_release: String,
    /// Each kernel's config as known before boot.
    kernel_config: Option<KernelConfig>,
    against_kernel_config: Option<KernelConfig>,
    /// The cost-changing options they set differently.
    config_differences: Vec<String>,
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
    // Before any boot: kernels that differ in cost-changing options get no
    // verdict unless asked for.
    let [ca, cb] = configs(a, b_kernel)?;
    let (lines, refuse) = config_gate(ca.as_ref(), cb.as_ref(), a.across_configs);
    for l in &lines {
        say!("{l}");
    }
    if refuse {
        return Ok(2);
    }
    let known = ca.is_some() && cb.is_some();
    let dir = out_dir(a, &repo_root(), b_kernel);
    clear_out(&dir)?;
    let mut why = run_sides(a, b_kernel, &dir)?;
    let differences = lines.first().filter(|_| known).cloned();
    let Judged {
        exit,
        rows,
        release,
        differences,
    } = judge_sides(a, &dir, known, differences, &mut why)?;
    let exit = match a.explain && !rows.is_empty() {
        true => explain_changes(&dir, &rows).map_or_else(
            |e| {
                say!("--explain: {}", crate::util::one_line(&e));
                exit.max(2)
            },
            |()| exit,
        ),
        false => exit,
    };
    for w in &why {
        say!("{w}");
    }
    let config_differences = differences
        .and_then(|l| l.split_once(": ").map(|(_, d)| d.to_owned()))
        .map(|d| d.split(", ").map(String::from).collect())
        .unwrap_or_default();
    let summary = Summary {
        kernel: &a.kernel,
        against: b_kernel,
        release: release.0.clone(),
        against_release: release.1.clone(),
        kernel_config: ca,
        against_kernel_config: cb,
        config_differences,
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

/// What the two sides came to: the exit status, the rows, the releases
/// and the config differences line, if any.
struct Judged {
    exit: i32,
    rows: Vec<Row>,
    release: (String, String),
    differences: Option<String>,
}

/// Reads both sides' results and judges B against A, unless the guests'
/// own configs (read from /proc/config.gz where the runner could read
/// none) differ and no verdict across configs was asked for.
fn judge_sides(
    a: &Args,
    dir: &Path,
    known: bool,
    mut differences: Option<String>,
    why: &mut Vec<String>,
) -> Result<Judged> {
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
            // What the guests read themselves (/proc/config.gz) where
            // the runner could not.
            let (da, db) = (doc_config(&ra), doc_config(&rb));
            let (after, refuse) = match known {
                true => (Vec::new(), false),
                false => config_gate(da.as_ref(), db.as_ref(), a.across_configs),
            };
            for l in after.iter().filter(|l| l.starts_with("kernels differ")) {
                say!("{l}");
                differences = Some(l.clone());
            }
            if refuse {
                say!("{}", after[1]);
                2
            } else {
                rows = judge(&ra, &rb, a.threshold / 100.0, &release, dir)?;
                if why.is_empty() {
                    exit_code(&rows)
                } else {
                    1
                }
            }
        }
        (ra, rb) => {
            for e in [ra.err(), rb.err()].into_iter().flatten() {
                why.push(crate::util::one_line(&e));
            }
            1
        }
    };
    Ok(Judged {
        exit,
        rows,
        release,
        differences,
    })
}

/// B's counts against A's: the table printed and written into DIR
/// (compare.txt), the rows too (compare.json).
fn judge(
    ra: &Value,
    rb: &Value,
    threshold: f64,
    release: &(String, String),
    dir: &Path,
) -> Result<Vec<Row>> {
    let rows = verdicts(ra, rb, threshold)?;
    let text = table(&rows, &release.0, &release.1, threshold);
    print!("{text}");
    fs::write(dir.join("compare.txt"), &text)?;
    fs::write(
        dir.join("compare.json"),
        serde_json::to_string_pretty(&rows)? + "\n",
    )?;
    Ok(rows)
}

/// Each REGRESSED or improved mechanism's change split by function, from
/// both sides' explain.json: printed, and written into DIR (explain.txt,
/// explain.json).
fn explain_changes(dir: &Path, rows: &[Row]) -> Result<()> {
    let read = |side: &str| -> Result<Explained> {
        let f = dir.join(side).join(explain::FILE);
        let text = fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
    };
    let (ea, eb) = (read("a")?, read("b")?);
    let changed: Vec<(String, String)> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
        .map(|r| (r.mechanism.clone(), r.verdict.word().to_owned()))
        .collect();
    let c = change::changes(&ea, &eb, &changed);
    let text = change::table(&c);
    print!("\n{text}");
    fs::write(dir.join(explain::TABLE_FILE), &text)?;
    fs::write(
        dir.join(explain::FILE),
        serde_json::to_string_pretty(&c)? + "\n",
    )?;
    Ok(())
}

/// DIR without what an earlier run left there: each side's directory and
/// the comparison must not pass for this one's.
fn clear_out(dir: &Path) -> Result<()> {
    for side in ["a", "b"] {
        let d = dir.join(side);
        if d.exists() {
            fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    for f in [
        "compare.txt",
        "compare.json",
        "vmtest.json",
        explain::FILE,
        explain::TABLE_FILE,
    ] {
        let _ = fs::remove_file(dir.join(f));
    }
    Ok(())
}

/// Counts each kernel with its own `vmtest --exact`, A then B, into
/// DIR/a and DIR/b; why either failed.
fn run_sides(a: &Args, b_kernel: &str, dir: &Path) -> Result<Vec<String>> {
    let xtask = std::env::current_exe().context("finding xtask's own executable")?;
    let mut why = Vec::new();
    for (side, k, modules, config) in [
        ("a", a.kernel.as_str(), &a.modules, &a.config),
        ("b", b_kernel, &a.against_modules, &a.against_config),
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
        if a.explain {
            cmd.arg("--explain");
        }
        cmd.args(["--memory", &a.memory, "--smp", &a.smp.to_string()]);
        cmd.args(["--timeout", &a.timeout.to_string()]);
        if !a.append.is_empty() {
            cmd.args(["--append", &a.append]);
        }
        if let Some(m) = modules {
            cmd.args(["--modules", m]);
        }
        if let Some(c) = config {
            cmd.args(["--config", c]);
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
    Ok(why)
}

/// `--out`, else `<target dir>/vmtest/exact/<KERNEL>--<KERNEL_B>`.
fn out_dir(a: &Args, repo: &Path, b: &str) -> PathBuf {
    super::out_dir(a, repo, "exact", &format!("{}--{b}", a.kernel))
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
        // A link on every function whose rounds spread beyond the
        // threshold: not judged, whichever way it moved.
        let every = |count: f64, rates: &[f64]| {
            let mut d = doc(
                "instructions",
                &[("base", "base", None), ("all", "base", Some(count))],
            );
            d["mechanisms"][1]["attach"] = serde_json::json!({"functions": 46248});
            d["mechanisms"][1]["k_events_per_sec"] = serde_json::json!({"samples": rates});
            d
        };
        // 1e6/k: 500 and 505 instructions per event, 1% of a count of 500.
        let (all_a, all_b) = (
            every(500.0, &[2000.0, 1980.2]),
            every(520.0, &[2000.0, 2000.0]),
        );
        let rows = verdicts(&all_a, &all_b, 0.005).unwrap();
        assert_eq!(rows[0].verdict, Verdict::Spread);
        assert_eq!(exit_code(&rows), 0);
        assert!(table(&rows, "a", "b", 0.005).contains("1 not judged"));
        assert_eq!(
            verdicts(&all_a, &all_b, 0.02).unwrap()[0].verdict,
            Verdict::Regressed
        );
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
    fn a_verdict_across_configs_needs_the_flag() {
        use crate::util::kconfig::Config;
        let debug = Config::parse("CONFIG_LOCKDEP=y\nCONFIG_PROVE_RCU=y\nCONFIG_KPROBES=y\n");
        let release = Config::parse("CONFIG_KPROBES=y\nCONFIG_HZ=250\n");
        let (a, b) = (debug.record("a"), release.record("b"));
        let (lines, refuse) = config_gate(Some(&a), Some(&b), false);
        assert!(refuse);
        assert_eq!(
            lines[0],
            "kernels differ in cost-changing options (A vs B): LOCKDEP (y vs not set), \
             PROVE_RCU (y vs not set)"
        );
        assert!(lines[1].contains("--across-configs"), "{}", lines[1]);
        let (lines, refuse) = config_gate(Some(&a), Some(&b), true);
        assert_eq!((lines.len(), refuse), (1, false));
        // Two builds of one config: nothing extra.
        assert_eq!(
            config_gate(Some(&a), Some(&a.clone()), false),
            (vec![], false)
        );
        // Unknown: said, not refused.
        let (lines, refuse) = config_gate(Some(&a), None, false);
        assert!(!refuse && lines[0].starts_with("B's kernel config is unknown"));
        let doc = serde_json::json!({"kernel_config": serde_json::to_value(&b).unwrap()});
        assert_eq!(doc_config(&doc), Some(b));
        assert_eq!(doc_config(&serde_json::json!({})), None);
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
