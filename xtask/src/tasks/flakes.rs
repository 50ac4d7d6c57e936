//! `cargo xtask flakes`: hunts flaky tests. Runs the README's test command
//! (`cargo sudo-test -- --nocapture`, with `--no-fail-fast` so that one
//! failure does not hide the others) N times under each condition: alone,
//! beside a CPU hog on another CPU than the measuring one, and beside a loop
//! of 20 MB writes each followed by `sync`. Prints, per test that failed at
//! least once, how often it failed under each condition, and each run's
//! test time (the sum of the test binaries' `finished in`). Every run's
//! output is kept in the output directory, so a failure can be read whole.
//! Exit 0 when no test failed, 1 when one did.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use bpf_overhead_common::background::{self, Background};

use crate::util::values::positive_usize;
use crate::util::{cargo, repo_root};

/// What runs beside the test command in `cargo xtask flakes`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Condition {
    /// Nothing.
    Quiet,
    /// A busy loop pinned to another CPU than the measuring one.
    Hog,
    /// 20 MB written to a file, then sync(2), in a loop.
    Disk,
}

impl Condition {
    pub fn name(self) -> &'static str {
        match self {
            Condition::Quiet => "quiet",
            Condition::Hog => "hog",
            Condition::Disk => "disk",
        }
    }
}

/// `cargo xtask flakes`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct FlakesArgs {
    /// Runs of the test command under each condition
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = positive_usize)]
    pub runs: usize,
    /// The conditions, in order (comma-separated)
    #[arg(
        long,
        value_name = "CONDITION",
        value_delimiter = ',',
        default_value = "quiet,hog,disk"
    )]
    pub under: Vec<Condition>,
    /// Where each run's output goes (default: target/flakes)
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

/// What one run of the test command said.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// `binary::test` of every test that failed.
    pub failed: Vec<String>,
    /// Test binaries that ended without a `test result:` line (a crash, a
    /// build failure): each counts as a failure of the binary itself.
    pub broken: Vec<String>,
    /// Tests that passed, over every binary.
    pub passed: usize,
    /// Sum of the binaries' `finished in`, seconds.
    pub test_secs: f64,
}

/// Reads cargo test's output. A binary's block starts at cargo's
/// `Running <path> (<exe>)` (`Doc-tests` too); libtest ends it with
/// `test result: ...`, and lists its failed tests, with or without
/// `--nocapture`, under a `failures:` line, four spaces in.
pub fn parse(output: &str) -> Outcome {
    let mut out = Outcome::default();
    let mut binary: Option<String> = None;
    let mut in_failures = false;
    for line in output.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed
            .strip_prefix("Running ")
            .or_else(|| trimmed.strip_prefix("Doc-tests "))
        {
            if let Some(b) = binary.take() {
                out.broken.push(b);
            }
            let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
            let name = rest.split_whitespace().next().unwrap_or(rest);
            binary = Some(binary_name(name));
            in_failures = false;
        } else if trimmed == "failures:" {
            in_failures = true;
        } else if in_failures && line.starts_with("    ") && !trimmed.is_empty() {
            let test = trimmed.to_string();
            let b = binary.as_deref().unwrap_or("?");
            let name = format!("{b}::{test}");
            if !out.failed.contains(&name) {
                out.failed.push(name);
            }
        } else if let Some(result) = trimmed.strip_prefix("test result: ") {
            in_failures = false;
            binary = None;
            out.passed += count(result, " passed");
            if let Some(secs) = result
                .rsplit_once("finished in ")
                .and_then(|(_, s)| s.trim_end_matches('s').parse::<f64>().ok())
            {
                out.test_secs += secs;
            }
        }
    }
    if let Some(b) = binary {
        out.broken.push(b);
    }
    out
}

/// `tests/cli_gate.rs` -> `cli_gate`; `src/lib.rs` (unit tests) -> `src/lib`,
/// a doc test's crate name as it is.
fn binary_name(path: &str) -> String {
    match path.strip_prefix("tests/") {
        Some(t) => t.trim_end_matches(".rs").to_string(),
        None => path.trim_end_matches(".rs").to_string(),
    }
}

/// The number before `what` in libtest's summary (`3 passed; 0 failed`).
fn count(result: &str, what: &str) -> usize {
    result
        .split(';')
        .find_map(|part| part.trim().strip_suffix(what.trim()))
        .and_then(|n| n.trim().rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// A disturbance beside the runs, stopped (and its files removed) when
/// dropped.
fn load(condition: Condition, dir: &Path) -> Result<Option<Background>> {
    Ok(Some(match condition {
        Condition::Quiet => return Ok(None),
        Condition::Hog => {
            let cpu = other_cpu()?;
            Background::start(move || pin(cpu), background::spin)
        }
        Condition::Disk => {
            let file = dir.join("disk-load.bin");
            Background::start(
                || (),
                move || background::disk(&file, || crate::util::create_file(&file)),
            )
        }
    }))
}

/// The CPU the hog takes: the last this process may use, which is not the
/// suite's measuring CPU (the first it may use) when there are two.
fn other_cpu() -> Result<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
    }
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    allowed.last().copied().context("no CPU allowed")
}

fn pin(cpu: usize) {
    // SAFETY: as in other_cpu; the set names one CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
    }
}

/// The README's test command, with --no-fail-fast: its output, cargo's
/// (stderr) and the tests' (stdout) in the order they were written, which
/// is what tells which binary a test belongs to.
fn run_tests() -> Result<(String, bool)> {
    let (mut reader, writer) = std::io::pipe().context("a pipe")?;
    let mut c = cargo();
    c.current_dir(repo_root())
        .args(["sudo-test", "--no-fail-fast", "--", "--nocapture"])
        .stdout(writer.try_clone().context("a pipe")?)
        .stderr(writer);
    let mut child = c.spawn().context("running the test command")?;
    // The command holds the pipe's write ends: without dropping it, the
    // read below would never see the end.
    drop(c);
    let mut out = Vec::new();
    reader
        .read_to_end(&mut out)
        .context("reading the test command's output")?;
    let status = child.wait().context("waiting for the test command")?;
    Ok((String::from_utf8_lossy(&out).into_owned(), status.success()))
}

pub fn main(a: FlakesArgs) -> i32 {
    match hunt(&a) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("flakes: {e:#}");
            2
        }
    }
}

fn hunt(a: &FlakesArgs) -> Result<bool> {
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| repo_root().join("target/flakes"));
    crate::util::create_dir_all(&dir)?;
    // Build first, so that no run's time or load includes the build.
    let built = cargo()
        .current_dir(repo_root())
        .args(["test", "--no-run", "--quiet"])
        .status()
        .context("running cargo test --no-run")?;
    if !built.success() {
        bail!("the suite does not build: see cargo's output above");
    }
    let mut fails: BTreeMap<String, BTreeMap<Condition, usize>> = BTreeMap::new();
    let mut runs: Vec<(Condition, usize, Outcome, f64)> = Vec::new();
    for &condition in &a.under {
        let load = load(condition, &dir)?;
        for n in 1..=a.runs {
            let started = Instant::now();
            let (text, success) = run_tests()?;
            let wall = started.elapsed().as_secs_f64();
            let log = dir.join(format!("{}-{n}.log", condition.name()));
            crate::util::write_file(&log, &text)?;
            let o = parse(&text);
            let bad: Vec<&String> = o.failed.iter().chain(&o.broken).collect();
            println!(
                "flakes: {} run {n}/{}: {} passed, {} failed, test time {:.1} s, wall {:.0} s{}",
                condition.name(),
                a.runs,
                o.passed,
                bad.len(),
                o.test_secs,
                wall,
                if bad.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": {} ({})",
                        bad.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        log.display()
                    )
                }
            );
            if bad.is_empty() && !success {
                println!(
                    "flakes: the command failed with no failed test: see {}",
                    log.display()
                );
                *fails
                    .entry("(the command)".into())
                    .or_default()
                    .entry(condition)
                    .or_default() += 1;
            }
            for name in bad {
                *fails
                    .entry(name.clone())
                    .or_default()
                    .entry(condition)
                    .or_default() += 1;
            }
            runs.push((condition, n, o, wall));
        }
        drop(load);
    }
    print!("{}", summary(a, &fails, &runs));
    Ok(fails.is_empty())
}

fn summary(
    a: &FlakesArgs,
    fails: &BTreeMap<String, BTreeMap<Condition, usize>>,
    runs: &[(Condition, usize, Outcome, f64)],
) -> String {
    let mut s = String::new();
    s += "\n| condition | runs | failed runs | test time (s): min, median, max |\n|---|---|---|---|\n";
    for &c in &a.under {
        let mut times: Vec<f64> = runs
            .iter()
            .filter(|r| r.0 == c)
            .map(|r| r.2.test_secs)
            .collect();
        times.sort_by(f64::total_cmp);
        let failed = runs
            .iter()
            .filter(|r| r.0 == c && !(r.2.failed.is_empty() && r.2.broken.is_empty()))
            .count();
        if let (Some(lo), Some(hi)) = (times.first(), times.last()) {
            s += &format!(
                "| {} | {} | {failed} | {lo:.1}, {:.1}, {hi:.1} |\n",
                c.name(),
                times.len(),
                times[times.len() / 2]
            );
        }
    }
    if fails.is_empty() {
        s += "\nflakes: no test failed\n";
    } else {
        s += "\n| test |";
        for c in &a.under {
            s += &format!(" {} |", c.name());
        }
        s += "\n|---|";
        s += &"---|".repeat(a.under.len());
        s += "\n";
        for (name, by) in fails {
            s += &format!("| {name} |");
            for c in &a.under {
                s += &format!(" {}/{} |", by.get(c).copied().unwrap_or(0), a.runs);
            }
            s += "\n";
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
   Compiling bpf-overhead v0.1.0
    Finished `test` profile [optimized + debuginfo] target(s) in 0.3s
     Running unittests src/lib.rs (target/debug/deps/bpf_overhead-1)
running 2 tests
test a ... ok
test b ... ok
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.15s
     Running tests/cli_gate.rs (target/debug/deps/cli_gate-2)
running 3 tests
test gate_one ... some output
ok
test gate_two ... FAILED
test gate_three ... ok

failures:

failures:
    gate_two

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 10.33s
     Running tests/overhead.rs (target/debug/deps/overhead-3)
running 52 tests
test raw_tp ... ";

    #[test]
    fn failed_tests_are_named_with_their_binary() {
        let o = parse(RUN);
        assert_eq!(o.failed, vec!["cli_gate::gate_two".to_string()]);
        assert_eq!(o.passed, 4);
        assert!((o.test_secs - 10.48).abs() < 1e-9, "{}", o.test_secs);
    }

    #[test]
    fn a_binary_without_its_result_is_broken() {
        assert_eq!(parse(RUN).broken, vec!["overhead".to_string()]);
    }

    #[test]
    fn unit_tests_are_named_by_their_source() {
        let crashed = "     Running unittests src/lib.rs (target/debug/deps/bpf_overhead-1)\n";
        assert_eq!(parse(crashed).broken, vec!["src/lib".to_string()]);
    }

    #[test]
    fn a_clean_run_has_nothing_to_report() {
        let clean = RUN.split("     Running tests/cli_gate.rs").next().unwrap();
        let o = parse(clean);
        assert_eq!(
            o,
            Outcome {
                failed: vec![],
                broken: vec![],
                passed: 2,
                test_secs: 0.15
            }
        );
    }

    #[test]
    fn the_summary_counts_each_tests_failures_per_condition() {
        let a = FlakesArgs {
            runs: 2,
            under: vec![Condition::Quiet, Condition::Hog],
            out: None,
        };
        let mut fails = BTreeMap::new();
        fails.insert(
            "cli_gate::gate_two".to_string(),
            BTreeMap::from([(Condition::Hog, 1)]),
        );
        let runs = vec![
            (
                Condition::Quiet,
                1,
                parse(RUN.split("     Running tests/cli_gate.rs").next().unwrap()),
                1.0,
            ),
            (Condition::Hog, 1, parse(RUN), 1.0),
        ];
        let s = summary(&a, &fails, &runs);
        assert!(s.contains("| cli_gate::gate_two | 0/2 | 1/2 |"), "{s}");
        assert!(s.contains("| hog | 1 | 1 | 10.5, 10.5, 10.5 |"), "{s}");
    }
}
