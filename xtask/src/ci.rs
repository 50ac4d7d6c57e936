//! `cargo xtask ci`: what .ci/run runs. The host steps (lint, tests, KTAP
//! checks), then every CI kernel in a VM (`vmtest`, N at a time), then one
//! table built from each kernel's vmtest.json and suite.ktap, and the
//! kernels' results side by side (`bpf-overhead report`).

use std::collections::VecDeque;
use std::env;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::arch::Arch;
use crate::args::{CiArgs, CI_STEPS};
use crate::guest_build::build_command;
use crate::lint;
use crate::summary::Summary;
use crate::util::{cargo, is_root, one_line, repo_root, shown};

/// The CI kernels, one a line: both `cargo xtask ci` and the GitHub workflow
/// (through `cargo xtask ci --matrix`) read it.
pub const KERNELS_FILE: &str = "ci/kernels";

pub fn main(c: CiArgs) -> i32 {
    match run(&c) {
        Ok(rc) => rc,
        Err(e) => {
            eprintln!("ci: {}", one_line(&e));
            2
        }
    }
}

/// A step's outcome, for the last lines.
struct Done {
    name: String,
    ok: bool,
    secs: f64,
}

fn run(c: &CiArgs) -> Result<i32> {
    let repo = repo_root();
    env::set_current_dir(&repo).with_context(|| format!("cd {}", repo.display()))?;
    let kernels = if c.kernels.is_empty() {
        read_kernels(&fs::read_to_string(repo.join(KERNELS_FILE)).context(KERNELS_FILE)?)?
    } else {
        c.kernels
            .iter()
            .map(|k| CiKernel::from_line(k))
            .collect::<Result<_>>()?
    };
    if c.matrix {
        println!("{}", matrix(&kernels));
        return Ok(0);
    }
    if let Some(dir) = &c.collect {
        let ok = collect(dir, &names(&kernels), &[], c.markdown)?;
        return Ok(if ok { 0 } else { 1 });
    }
    let start = Instant::now();
    let mut done = Vec::new();
    if !c.vms_only {
        for &name in CI_STEPS {
            if c.skip.iter().any(|s| s == name) {
                say(&format!("{name}: skipped (--skip)"));
                continue;
            }
            done.push(host_step(name, &repo));
        }
    }
    if !c.no_vms {
        done.extend(vm_steps(c, &kernels)?);
    }
    let total = start.elapsed().as_secs_f64();
    let failed: Vec<&str> = done
        .iter()
        .filter(|d| !d.ok)
        .map(|d| d.name.as_str())
        .collect();
    let line: Vec<String> = done
        .iter()
        .map(|d| {
            format!(
                "{} {} {:.1}s",
                d.name,
                if d.ok { "ok" } else { "FAILED" },
                d.secs
            )
        })
        .collect();
    say(&format!("steps: {}", line.join(", ")));
    if failed.is_empty() {
        say(&format!("passed in {total:.0}s"));
        Ok(0)
    } else {
        say(&format!("FAILED: {} ({total:.0}s)", failed.join(", ")));
        Ok(1)
    }
}

fn say(s: &str) {
    eprintln!("ci: {s}");
}

/// One CI kernel: KERNEL as `cargo xtask vmtest` takes it, and its guest's
/// architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiKernel {
    pub kernel: String,
    pub arch: Arch,
}

impl CiKernel {
    /// `KERNEL` or `KERNEL --arch ARCH`.
    pub fn from_line(line: &str) -> Result<CiKernel> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (kernel, arch) = match words.as_slice() {
            [k] => (*k, Arch::X86_64),
            [k, "--arch", a] => (
                *k,
                Arch::parse(a).with_context(|| format!("'{line}': --arch"))?,
            ),
            _ => bail!("one KERNEL [--arch ARCH] a line, not '{line}'"),
        };
        Ok(CiKernel {
            kernel: kernel.to_owned(),
            arch,
        })
    }

    /// Its name in tables, directories and artifacts: KERNEL, and for
    /// another architecture than x86_64 KERNEL-ARCH (`newest-arm64`).
    pub fn name(&self) -> String {
        self.arch.tagged(&self.kernel)
    }
}

fn names(kernels: &[CiKernel]) -> Vec<String> {
    kernels.iter().map(CiKernel::name).collect()
}

/// The kernels file: one `KERNEL [--arch ARCH]` a line; `#` starts a comment.
pub fn read_kernels(text: &str) -> Result<Vec<CiKernel>> {
    let kernels = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| CiKernel::from_line(l).with_context(|| KERNELS_FILE.to_owned()))
        .collect::<Result<Vec<_>>>()?;
    ensure!(!kernels.is_empty(), "{KERNELS_FILE} lists no kernel");
    Ok(kernels)
}

/// The GitHub Actions matrix: one entry a kernel, with its name (the job's,
/// the artifact's, the directory under target/ci) and architecture.
pub fn matrix(kernels: &[CiKernel]) -> serde_json::Value {
    let include: Vec<_> = kernels
        .iter()
        .map(|k| {
            serde_json::json!({
                "name": k.name(),
                "kernel": k.kernel,
                "arch": k.arch.name(),
            })
        })
        .collect();
    serde_json::json!({ "include": include })
}

/// One host step, its output streamed.
fn host_step(name: &str, repo: &Path) -> Done {
    let t = Instant::now();
    let ok = match name {
        "actionlint" => {
            say("actionlint: .github/workflows/*.yml, action.yml");
            lint::run(repo)
                .map_err(|e| say(&format!("actionlint: {e:#}")))
                .is_ok()
        }
        _ => {
            let mut cmd = host_command(name);
            say(&format!("{name}: {}", shown(&cmd)));
            match cmd.status() {
                Ok(s) => s.success(),
                Err(e) => {
                    say(&format!("{name}: cannot run it: {e}"));
                    false
                }
            }
        }
    };
    let secs = t.elapsed().as_secs_f64();
    say(&format!(
        "{name}: {} in {secs:.1}s",
        if ok { "ok" } else { "FAILED" }
    ));
    Done {
        name: name.into(),
        ok,
        secs,
    }
}

fn host_command(name: &str) -> Command {
    let mut cmd = match name {
        "fmt" => {
            let mut c = cargo();
            c.args(["fmt", "--all", "--check"]);
            c
        }
        "clippy" => {
            let mut c = cargo();
            c.args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]);
            c
        }
        // The VM runner's unit tests (fixture images, damaged ones included; no root).
        "xtask-tests" => {
            let mut c = cargo();
            c.args(["test", "--package", "xtask"]);
            c
        }
        // The README's test command, verbatim: built as the CI user, the test
        // binaries run as root through sudo (cargo's runner, .cargo/config.toml).
        "host-tests" => {
            let mut c = cargo();
            c.args(["sudo-test", "--", "--nocapture"]);
            c
        }
        // The command's and the suite's KTAP through prove, the kernel's
        // kunit_parser and kselftest's runner; it needs root.
        "check-ktap" if is_root() => Command::new("scripts/check-ktap"),
        "check-ktap" => {
            let mut c = Command::new("sudo");
            c.args(["-E", "env"])
                .arg(format!("PATH={}", env::var("PATH").unwrap_or_default()))
                .arg("scripts/check-ktap");
            c
        }
        other => unreachable!("step {other}"),
    };
    cmd.stdin(Stdio::null());
    cmd
}

/// One kernel's run, as ci saw it.
pub struct KernelRun {
    pub kernel: String,
    pub exit: i32,
    pub wall: Duration,
}

/// The guest build, the kernels, the table and the report.
fn vm_steps(c: &CiArgs, kernels: &[CiKernel]) -> Result<Vec<Done>> {
    let out = &c.out;
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
    }
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut done = Vec::new();

    // Built once, before the VMs start: each vmtest's own build is then a
    // no-op, and the kernels running at once do not wait on cargo's lock.
    // Once for each architecture (an arm64 guest's is a cross build).
    let mut archs: Vec<Arch> = kernels.iter().map(|k| k.arch).collect();
    archs.sort_by_key(|a| a.name());
    archs.dedup();
    for arch in archs {
        let t = Instant::now();
        let repo = repo_root();
        let mut build = build_command(&repo, arch, false, &[], false);
        let name = arch.tagged("guest-build");
        say(&format!("{name}: {}", shown(&build)));
        let ok = build.status().is_ok_and(|s| s.success());
        done.push(Done {
            name,
            ok,
            secs: t.elapsed().as_secs_f64(),
        });
    }

    let t = Instant::now();
    let jobs = c.jobs.min(kernels.len()).max(1);
    let names = names(kernels);
    say(&format!(
        "kernels: {} in VMs, {jobs} at a time, into {}",
        names.join(" "),
        out.display()
    ));
    let runs = run_kernels(kernels, out, jobs)?;
    let vms_secs = t.elapsed().as_secs_f64();
    let ok = collect(out, &names, &runs, false)?;
    done.push(Done {
        name: format!("kernels ({jobs} at a time)"),
        ok,
        secs: vms_secs,
    });
    Ok(done)
}

/// Each kernel's `vmtest --out DIR/KERNEL`, `jobs` at a time; every kernel
/// runs whatever the others do.
fn run_kernels(kernels: &[CiKernel], out: &Path, jobs: usize) -> Result<Vec<KernelRun>> {
    let exe = env::current_exe().context("finding xtask's own executable")?;
    let queue = Mutex::new(kernels.iter().cloned().collect::<VecDeque<_>>());
    let runs = Mutex::new(Vec::new());
    let stdout = Mutex::new(());
    thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some(k) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let r = run_kernel(&exe, &k, out, &stdout);
                runs.lock().unwrap().push(r);
            });
        }
    });
    Ok(runs.into_inner().unwrap())
}

/// A kernel's directory under DIR: its name, or a path's, made a file name.
pub fn kernel_dir(out: &Path, kernel: &str) -> PathBuf {
    out.join(kernel.replace('/', "_"))
}

fn run_kernel(exe: &Path, k: &CiKernel, out: &Path, stdout: &Mutex<()>) -> KernelRun {
    let kernel = &k.name();
    let dir = kernel_dir(out, kernel);
    let t = Instant::now();
    let exit = (|| -> Result<i32> {
        fs::create_dir_all(&dir)?;
        let log = Mutex::new(File::create(dir.join("vmtest.log"))?);
        let mut child = Command::new(exe)
            .arg("vmtest")
            .args(["--arch", k.arch.name()])
            .arg(&k.kernel)
            .arg("--out")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting vmtest")?;
        let (o, e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let prefix = format!("[{kernel}] ");
        thread::scope(|s| {
            s.spawn(|| relay(o, &prefix, &log, stdout));
            s.spawn(|| relay(e, &prefix, &log, stdout));
        });
        Ok(exit_code(child.wait()?))
    })()
    .unwrap_or_else(|e| {
        say(&format!("{kernel}: {e:#}"));
        2
    });
    KernelRun {
        kernel: kernel.to_owned(),
        exit,
        wall: t.elapsed(),
    }
}

/// Copies lines to the terminal, prefixed, and to the log.
fn relay(from: impl Read, prefix: &str, log: &Mutex<File>, stdout: &Mutex<()>) {
    for line in BufReader::new(from).split(b'\n').map_while(Result::ok) {
        let _ = log.lock().unwrap().write_all(&[&line[..], b"\n"].concat());
        let _g = stdout.lock().unwrap();
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(prefix.as_bytes());
        let _ = so.write_all(&line);
        let _ = so.write_all(b"\n");
    }
}

fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
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
/// which scripts/check-ktap checks against the kernel's own kunit_parser.
fn ktap(dir: &Path) -> Result<Ktap> {
    let file = dir.join("suite.ktap");
    ensure!(file.is_file(), "no suite.ktap");
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

/// One row of the table.
pub struct Row {
    pub kernel: String,
    pub summary: Option<Summary>,
    pub ktap: Option<Ktap>,
    /// ci's own clock, the fetch taken out; else the runner's total.
    pub wall: Option<f64>,
    pub verdict: String,
}

fn row(out: &Path, kernel: &str, run: Option<&KernelRun>) -> Row {
    let dir = kernel_dir(out, kernel);
    let summary = Summary::load(&dir).ok();
    let ktap = ktap(&dir);
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
        ktap: ktap.ok(),
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
fn collect(out: &Path, kernels: &[String], runs: &[KernelRun], markdown: bool) -> Result<bool> {
    let rows: Vec<Row> = kernels
        .iter()
        .map(|k| row(out, k, runs.iter().find(|r| &r.kernel == k)))
        .collect();
    let all_pass = rows.iter().all(|r| r.verdict == "PASS");
    if markdown {
        let report = report(out, kernels);
        print!("{}", markdown_summary(&rows, &report, out));
        return Ok(all_pass && report.is_ok());
    }
    println!(
        "ci: VM runs (fetch: getting the kernel; boot: qemu start to the command; VM: qemu \
         start to exit; wall: the whole run less the fetch)"
    );
    print!("{}", table(&rows, false));
    let report = report(out, kernels);
    match &report {
        Ok(text) => {
            print!("{text}");
            say(&format!(
                "report of the kernels: {}, {}",
                out.join("report.txt").display(),
                out.join("report.svg").display()
            ));
        }
        Err(e) => say(&format!("report: {e:#}")),
    }
    Ok(all_pass && report.is_ok())
}

/// `bpf-overhead report` over DIR/*/result.json into report.txt and .svg.
fn report(out: &Path, kernels: &[String]) -> Result<String> {
    let results: Vec<PathBuf> = kernels
        .iter()
        .map(|k| kernel_dir(out, k).join("result.json"))
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
        .arg(out.join("report.svg"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running bpf-overhead report")?;
    ensure!(
        o.status.success(),
        "bpf-overhead report failed ({})",
        o.status
    );
    fs::write(out.join("report.txt"), &o.stdout)?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// For $GITHUB_STEP_SUMMARY: the table, the report, and the chart inline
/// (also in the report artifact, as report.svg).
fn markdown_summary(rows: &[Row], report: &Result<String>, out: &Path) -> String {
    let mut s = String::from("## bpf-overhead: the suite on each kernel\n\n");
    s += &table(rows, true);
    s += "\nfetch: getting the kernel (apt, download, unpack; ~0 when cached); boot: qemu start \
          to the command; VM: qemu start to exit; wall: the whole run less the fetch. KTAP: \
          the suite's results as TAP::Parser reads them.\n\n";
    match report {
        Ok(text) => {
            s += "## The kernels side by side (`bpf-overhead report`)\n\n```\n";
            s += text;
            s += "```\n\n";
            if let Ok(svg) = fs::read(out.join("report.svg")) {
                s += &format!(
                    "<img alt=\"bpf-overhead report chart\" src=\"data:image/svg+xml;base64,{}\">\n\n",
                    base64(&svg)
                );
            }
        }
        Err(e) => s += &format!("No report: {e:#}\n"),
    }
    s
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_file() {
        let k = read_kernels(
            "# CI kernels\n5.10\n6.1  # bookworm\n\nnewest\nnewest --arch arm64 # TCG\n",
        )
        .unwrap();
        assert_eq!(names(&k), ["5.10", "6.1", "newest", "newest-arm64"]);
        assert_eq!(
            k[3],
            CiKernel {
                kernel: "newest".into(),
                arch: Arch::Arm64
            }
        );
        assert!(read_kernels("# none\n").is_err());
        for bad in ["6.1 6.12\n", "6.1 --arch\n", "6.1 --arch s390x\n"] {
            let msg = format!("{:#}", read_kernels(bad).unwrap_err());
            assert!(
                msg.starts_with(KERNELS_FILE) && !msg.contains('\n'),
                "{msg}"
            );
        }
        assert_eq!(
            matrix(&k[2..]).to_string(),
            r#"{"include":[{"arch":"x86_64","kernel":"newest","name":"newest"},{"arch":"arm64","kernel":"newest","name":"newest-arm64"}]}"#
        );
        let repo = repo_root();
        let ours = read_kernels(&fs::read_to_string(repo.join(KERNELS_FILE)).unwrap()).unwrap();
        assert_eq!(
            names(&ours),
            ["5.10", "6.1", "6.12", "newest", "6.12-arm64"]
        );
    }

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
        let s = Summary {
            kernel: "6.1".into(),
            release: "6.1.0-57-amd64".into(),
            fetch_s: 2.0,
            boot_s: Some(3.1),
            vm_s: 25.0,
            total_s: 30.0,
            ..Summary::default()
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

    #[test]
    fn base64_as_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
