//! `cargo xtask vmtest KERNEL --against KERNEL_B --exact`: both kernels
//! counted, one after the other, B judged against A per mechanism.
//!
//! Under an instruction clock a mechanism's figure is a count of guest
//! instructions per event, the same on every host and at every moment
//! (docs/exact.md), so nothing needs to run at the same time as anything
//! else: each kernel boots alone with `vmtest --exact`, and B's count is
//! judged against A's by a threshold alone. No statistics, so no UNSURE:
//! a mechanism is REGRESSED, improved or unchanged; or, with `--explain`,
//! where its kinds of events changed, judged by a host's prices
//! ([`path`]).

pub mod path;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use serde::Serialize;

use crate::tasks::vmtest::explain::{self, change, Explained};
use crate::tasks::vmtest::{Args, Exact, Mode};
use crate::util::document::Document;
use crate::util::exact_counts::{exit_code, read_document, table, verdicts, Row, Verdict};
use crate::util::kconfig::{self, KernelConfig};
use crate::util::signal::check_signal;
use crate::util::{repo_root, say, secs};
use crate::vm::job::Job;
use crate::vm::{self, Accel};

pub fn main(a: Args) -> i32 {
    vm::task_main(|| run(&a))
}

/// `--exact`'s options, which this mode runs with.
fn exact(a: &Args) -> Result<&Exact> {
    match &a.mode {
        Mode::Exact(x) => Ok(x),
        Mode::Timed => bail!("--against: kernels are counted in turn with --exact only"),
    }
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
    let x = exact(a)?;
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
    let (lines, refuse) = config_gate(ca.as_ref(), cb.as_ref(), x.across_configs);
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
    } = judge_sides(x, &dir, known, differences, &mut why)?;
    let exit = match x.explain && !rows.is_empty() {
        true => explain_changes(&dir, &rows).map_or_else(
            |e| {
                say!("--explain: {}", crate::util::one_line(&e));
                match exit {
                    0 => i32::from(crate::util::exit_status::ENVIRONMENT),
                    rc => rc,
                }
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
        threshold: x.threshold,
        rows: &rows,
        exit,
        why,
        total_s: (start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    };
    crate::util::write_file(
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
    x: &Exact,
    dir: &Path,
    known: bool,
    mut differences: Option<String>,
    why: &mut Vec<String>,
) -> Result<Judged> {
    let read = |side: &str| read_document(&dir.join(side).join("result.json"));
    let (mut rows, mut release) = (Vec::new(), (String::new(), String::new()));
    let exit = match (read("a"), read("b")) {
        (Ok(ra), Ok(rb)) => {
            release = (ra.kernel_release.clone(), rb.kernel_release.clone());
            // What the guests read themselves (/proc/config.gz) where
            // the runner could not.
            let (da, db) = (ra.kernel_config.clone(), rb.kernel_config.clone());
            let (after, refuse) = match known {
                true => (Vec::new(), false),
                false => config_gate(da.as_ref(), db.as_ref(), x.across_configs),
            };
            for l in after.iter().filter(|l| l.starts_with("kernels differ")) {
                say!("{l}");
                differences = Some(l.clone());
            }
            if refuse {
                say!("{}", after[1]);
                2
            } else {
                let prices = x
                    .calibration
                    .as_deref()
                    .map(path::Prices::read)
                    .transpose()?;
                rows = judge(
                    &ra,
                    &rb,
                    x.threshold / 100.0,
                    &release,
                    dir,
                    prices.as_ref(),
                )?;
                if why.is_empty() {
                    exit_code(&rows)
                } else {
                    i32::from(crate::util::exit_status::ENVIRONMENT)
                }
            }
        }
        (ra, rb) => {
            for e in [ra.err(), rb.err()].into_iter().flatten() {
                why.push(crate::util::one_line(&e));
            }
            i32::from(crate::util::exit_status::ENVIRONMENT)
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
    ra: &Document,
    rb: &Document,
    threshold: f64,
    release: &(String, String),
    dir: &Path,
    prices: Option<&path::Prices>,
) -> Result<Vec<Row>> {
    let mut rows = verdicts(ra, rb, threshold)?;
    // With both sides explained: a changed path is judged by its price.
    let mut text = String::new();
    if let (Ok(ea), Ok(eb)) = (read_explained(dir, "a"), read_explained(dir, "b")) {
        for note in path::rejudge(&mut rows, &ea, &eb, prices, threshold) {
            text += &format!("{note}\n");
        }
    }
    let text = table(&rows, &release.0, &release.1, threshold) + &text;
    print!("{text}");
    crate::util::write_file(dir.join("compare.txt"), &text)?;
    crate::util::write_file(
        dir.join("compare.json"),
        serde_json::to_string_pretty(&rows)? + "\n",
    )?;
    Ok(rows)
}

/// Each REGRESSED or improved mechanism's change split by function, from
/// both sides' explain.json: printed, and written into DIR (explain.txt,
/// explain.json).
fn explain_changes(dir: &Path, rows: &[Row]) -> Result<()> {
    let (ea, eb) = (read_explained(dir, "a")?, read_explained(dir, "b")?);
    let changed: Vec<(String, String)> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
        .map(|r| (r.mechanism.clone(), r.verdict.exact_word().to_owned()))
        .collect();
    let c = change::changes(&ea, &eb, &changed);
    let text = change::table(&c);
    print!("\n{text}");
    crate::util::write_file(dir.join(explain::TABLE_FILE), &text)?;
    crate::util::write_file(
        dir.join(explain::FILE),
        serde_json::to_string_pretty(&c)? + "\n",
    )?;
    Ok(())
}

/// One side's explain.json in DIR (`a` or `b`).
fn read_explained(dir: &Path, side: &str) -> Result<Explained> {
    let f = dir.join(side).join(explain::FILE);
    let text = fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
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
    let x = exact(a)?;
    let xtask = crate::util::own_exe();
    let mut why = Vec::new();
    for (side, k, modules, config) in [
        ("a", a.kernel.as_str(), &a.modules, &a.config),
        ("b", b_kernel, &a.against_modules, &a.against_config),
    ] {
        let out = dir.join(side);
        crate::util::create_dir_all(&out)?;
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
        if x.explain {
            cmd.arg("--explain");
        }
        cmd.args(["--memory", &a.memory, "--smp", &a.smp.to_string()]);
        cmd.args(["--rounds", &x.rounds.to_string()]);
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
    }
}
