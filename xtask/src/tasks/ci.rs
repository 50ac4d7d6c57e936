//! `cargo xtask ci`: what .ci/run runs. The host steps (lint, tests, KTAP
//! checks), then every CI kernel in a VM (`vmtest`, N at a time), then the
//! table and the report ([`crate::tasks::ci::collect`]).
//!
//! The ci room: this task, its options ([`options`]), CI's table and
//! report ([`collect`]), actionlint ([`lint`]), the suite's test time
//! ([`test_time`]), the room it needs ([`space`]), the VMs' order
//! ([`queue`]) and the exact comparison of two kernels ([`against`]).
//! It imports the parts (vm, build, kernels, util), never another task.

pub mod against;
pub mod collect;
pub mod kernels;
pub mod lint;
pub mod options;
pub mod queue;
pub mod space;
pub mod test_time;

use std::collections::VecDeque;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::build::guest_build::build_command;
use crate::kernels::arch::Arch;
use crate::tasks::ci::against::AGAINST;
use crate::tasks::ci::collect::{collect, kernel_dir, KernelRun};
use crate::tasks::ci::kernels::names;
pub use crate::tasks::ci::kernels::{matrix, read_kernels, CiKernel, Run, KERNELS_FILE};
use crate::tasks::ci::options::{CiArgs, Step};
use crate::tasks::ci::queue::Job;
use crate::util::env_vars::KCIDB_PYTHON_ENV;
use crate::util::{cargo, is_root, one_line, repo_root, run_relayed, sh_quote, shown};
use crate::vm::job::skip_every_function;

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
    let avail = space::available(&repo).with_context(|| format!("statvfs {}", repo.display()))?;
    if let Some(line) = space::shortfall(avail, space::NEEDED, &repo) {
        say(&line);
        return Ok(2);
    }
    let start = Instant::now();
    let mut done = Vec::new();
    if !c.vms_only {
        for &step in <Step as clap::ValueEnum>::value_variants() {
            if c.skip.contains(&step) {
                say(&format!("{}: skipped (--skip)", step.name()));
                continue;
            }
            done.push(host_step(step, &repo));
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

/// One host step, its output streamed.
fn host_step(step: Step, repo: &Path) -> Done {
    let t = Instant::now();
    let name = step.name();
    let ok = match host_command(step) {
        None => {
            say("actionlint: .github/workflows/*.yml, action.yml");
            lint::run(repo)
                .map_err(|e| say(&format!("actionlint: {e:#}")))
                .is_ok()
        }
        Some(mut cmd) => {
            if matches!(step, Step::HostTests | Step::SlowTests) {
                // The tests validate the command's KCIDB records with it
                // (tests/cli_kernel_ci.rs), and fail in CI without it.
                match lint::kcidb_python() {
                    Ok(python) => {
                        cmd.env(KCIDB_PYTHON_ENV, python);
                    }
                    Err(e) => say(&format!("{name}: no Python with kcidb-io: {e:#}")),
                }
            }
            say(&format!("{name}: {}", shown(&cmd)));
            let status = if step == Step::HostTests {
                test_time::run(cmd)
            } else {
                cmd.status()
            };
            match status {
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
    Done { name, ok, secs }
}

/// A step's command; actionlint has none (it runs in this process).
fn host_command(step: Step) -> Option<Command> {
    let mut cmd = match step {
        Step::Fmt => {
            let mut c = cargo();
            c.args(["fmt", "--all", "--check"]);
            c
        }
        Step::Clippy => {
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
        // The VM runner's unit tests (fixture images, damaged ones included; no
        // root), and the TCG plugin's.
        Step::XtaskTests => {
            let mut c = cargo();
            c.args(["test", "--package", "xtask"]);
            c.args(["--package", "bpf-overhead-tcg-plugin"]);
            c
        }
        // The README's test command, verbatim: built as the CI user, the test
        // binaries run as root through sudo (cargo's runner, .cargo/config.toml).
        Step::HostTests => {
            let mut c = cargo();
            c.args(["sudo-test", "--", "--nocapture"]);
            c
        }
        // The tests left out of it for their time (#[ignore] with why).
        Step::SlowTests => {
            let mut c = cargo();
            c.args(["sudo-test", "--", "--ignored", "--nocapture"]);
            c
        }
        // The command's and the suite's KTAP through prove, the kernel's
        // kunit_parser and kselftest's runner; it needs root.
        Step::CheckKtap if is_root() => Command::new("scripts/check-ktap"),
        Step::CheckKtap => {
            let mut c = Command::new("sudo");
            c.args(["-E", "env"])
                .arg(format!("PATH={}", env::var("PATH").unwrap_or_default()))
                .arg("scripts/check-ktap");
            c
        }
        // The in-tree drop-in, installed with a kernel tree's own Makefile
        // and compared with `cargo xtask kselftest`'s layout (no root).
        Step::CheckKselftest => Command::new("scripts/check-kselftest"),
        Step::Actionlint => return None,
    };
    cmd.stdin(Stdio::null());
    Some(cmd)
}

/// What the VMs run, built before they start: each vmtest's own build is
/// then a no-op, and the kernels running at once do not wait on cargo's
/// lock.
fn builds(kernels: &[CiKernel], out: &Path) -> Vec<Done> {
    let mut done = Vec::new();
    // Once for each architecture (an arm64 guest's is a cross build).
    for arch in archs(kernels, false) {
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

    // The kselftest kernels' tarballs, one per architecture.
    let exe = crate::util::own_exe();
    for arch in archs(kernels, true) {
        let t = Instant::now();
        let mut cmd = Command::new(&exe);
        cmd.args(["kselftest", "--arch", arch.name(), "--out"])
            .arg(kselftest_dir(out, arch))
            .stdin(Stdio::null());
        let name = format!("kselftest-{}", arch.name());
        say(&format!("{name}: {}", shown(&cmd)));
        let ok = cmd.status().is_ok_and(|s| s.success());
        done.push(Done {
            name,
            ok,
            secs: t.elapsed().as_secs_f64(),
        });
    }

    done
}

/// The guest build, the kernels, the table and the report.
fn vm_steps(c: &CiArgs, kernels: &[CiKernel]) -> Result<Vec<Done>> {
    let out = &c.out;
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
    }
    crate::util::create_dir_all(out)?;
    let mut done = builds(kernels, out);

    let t = Instant::now();
    let jobs = c.jobs.min(kernels.len()).max(1);
    let names = names(kernels);
    let x86 = |k: &str| {
        kernels
            .iter()
            .any(|c| c.kernel == k && c.arch == Arch::X86_64)
    };
    let mut queue: Vec<Job> = kernels.iter().cloned().map(Job::Kernel).collect();
    if x86(AGAINST.0) && x86(AGAINST.1) {
        queue.push(Job::Against);
    }
    let walls = queue::Walls::load();
    let queue = queue::order(queue, &walls.known);
    say(&format!(
        "kernels: {} in VMs, {jobs} at a time (longest first: {}), into {}",
        names.join(" "),
        queue.iter().map(Job::name).collect::<Vec<_>>().join(" "),
        out.display()
    ));
    let (runs, against) = run_jobs(queue, out, jobs)?;
    let vms_secs = t.elapsed().as_secs_f64();
    let ok = collect(out, &names, &runs, false)?;
    done.push(Done {
        name: format!("kernels ({jobs} at a time)"),
        ok,
        secs: vms_secs,
    });
    let mut kept: Vec<(String, f64)> = runs
        .iter()
        .map(|r| (r.kernel.clone(), r.wall.as_secs_f64()))
        .collect();
    if let Some(a) = against {
        let a = a?;
        kept.push((Job::Against.name(), a.secs));
        done.push(a);
    }
    // The next run's order; a cache that cannot be written costs only that.
    if let Err(e) = walls.keep(kept) {
        say(&format!("the kernels' walls not kept: {}", one_line(&e)));
    }

    // The guests' kselftest output through the parsers kernel CI uses.
    let outputs: Vec<_> = kernels
        .iter()
        .filter(|k| k.run == Run::Kselftest)
        .map(|k| kernel_dir(out, &k.name()).join(KSELFTEST_OUTPUT))
        .collect();
    if !outputs.is_empty() {
        let t = Instant::now();
        let mut cmd = Command::new("scripts/check-kselftest");
        cmd.arg("--no-install").args(&outputs).stdin(Stdio::null());
        say(&format!("kselftest-parse: {}", shown(&cmd)));
        let ok = cmd.status().is_ok_and(|s| s.success());
        done.push(Done {
            name: "kselftest-parse".into(),
            ok,
            secs: t.elapsed().as_secs_f64(),
        });
    }
    Ok(done)
}

/// The architectures of the kernels that run the suite (`kselftest`
/// false) or the kselftest collection (true), each once.
fn archs(kernels: &[CiKernel], kselftest: bool) -> Vec<Arch> {
    let mut archs: Vec<Arch> = kernels
        .iter()
        .filter(|k| (k.run == Run::Kselftest) == kselftest)
        .map(|k| k.arch)
        .collect();
    archs.sort_by_key(|a| a.name());
    archs.dedup();
    archs
}

/// Where `cargo xtask kselftest` writes an architecture's layout in DIR.
fn kselftest_dir(out: &Path, arch: Arch) -> PathBuf {
    out.join(format!("kselftest-{}", arch.name()))
}

/// What scripts/kselftest-guest saves: run_kselftest.sh's output.
pub const KSELFTEST_OUTPUT: &str = "kselftest.ktap";

/// The guest's job for a kselftest kernel: scripts/kselftest-guest on the
/// architecture's tarball (an absolute path: the host root is the guest's).
fn kselftest_cmd(out: &Path, arch: Arch) -> Result<String> {
    let tarball =
        std::path::absolute(kselftest_dir(out, arch))?.join("kselftest-packages/kselftest.tar.gz");
    Ok(format!(
        "sh scripts/kselftest-guest {}",
        sh_quote(&tarball.display().to_string())
    ))
}

/// The queue's jobs, `jobs` at a time: each kernel's `vmtest --out
/// DIR/KERNEL`, and the comparison; every job runs whatever the others do.
fn run_jobs(
    queue: Vec<Job>,
    out: &Path,
    jobs: usize,
) -> Result<(Vec<KernelRun>, Option<Result<Done>>)> {
    let exe = crate::util::own_exe();
    let queue = Mutex::new(VecDeque::from(queue));
    let runs = Mutex::new(Vec::new());
    let against_done = Mutex::new(None);
    let stdout = Mutex::new(());
    thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some(job) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                match job {
                    Job::Kernel(k) => {
                        let r = run_kernel(&exe, &k, out, &stdout);
                        runs.lock().unwrap().push(r);
                    }
                    Job::Against => {
                        let t = Instant::now();
                        let done = against::run(out, &stdout).map(|ok| Done {
                            name: Job::Against.name(),
                            ok,
                            secs: t.elapsed().as_secs_f64(),
                        });
                        *against_done.lock().unwrap() = Some(done);
                    }
                }
            });
        }
    });
    Ok((
        runs.into_inner().unwrap(),
        against_done.into_inner().unwrap(),
    ))
}

fn run_kernel(exe: &Path, k: &CiKernel, out: &Path, stdout: &Mutex<()>) -> KernelRun {
    let kernel = &k.name();
    let dir = kernel_dir(out, kernel);
    let t = Instant::now();
    let exit = (|| -> Result<i32> {
        crate::util::create_dir_all(&dir)?;
        let log = Mutex::new(crate::util::create_file(dir.join("vmtest.log"))?);
        let mut cmd = Command::new(exe);
        cmd.arg("vmtest")
            .args(["--arch", k.arch.name()])
            .arg(&k.kernel)
            .arg("--out")
            .arg(&dir);
        match k.run {
            // The suite in the same boot has attached and counted them; in
            // the command's run after it, their attach and detach took 170
            // of 187 s (7.3 under TCG), for figures emulation makes no
            // figures of. The exact runs count them.
            Run::Suite => {
                cmd.args(skip_every_function());
            }
            Run::Kselftest => {
                cmd.arg("--cmd").arg(kselftest_cmd(out, k.arch)?);
            }
            Run::Exact => {
                cmd.args(["--exact", "--accel", "tcg"]);
            }
        }
        run_relayed(&mut cmd, &format!("[{kernel}] "), &log, stdout).context("starting vmtest")
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
                arch: Arch::Arm64,
                run: Run::Suite,
            }
        );
        let ex = read_kernels("6.12 --exact\n6.12 --arch arm64 --exact\n").unwrap();
        assert_eq!(names(&ex), ["6.12-exact", "6.12-arm64-exact"]);
        assert!(ex.iter().all(|k| k.run == Run::Exact));
        assert_eq!(archs(&ex, false), [Arch::Arm64, Arch::X86_64]);
        assert!(read_kernels("6.12 --exact --kselftest\n").is_err());
        let ks = read_kernels("6.12 --kselftest\n6.12 --arch arm64 --kselftest\n").unwrap();
        assert_eq!(names(&ks), ["6.12-kselftest", "6.12-arm64-kselftest"]);
        assert!(ks.iter().all(|k| k.run == Run::Kselftest));
        assert_eq!(ks[1].arch, Arch::Arm64);
        assert_eq!(archs(&ks, true), [Arch::Arm64, Arch::X86_64]);
        assert!(archs(&ks, false).is_empty());
        assert_eq!(
            kselftest_cmd(Path::new("/ci"), Arch::Arm64).unwrap(),
            "sh scripts/kselftest-guest /ci/kselftest-arm64/kselftest-packages/kselftest.tar.gz"
        );
        assert!(read_kernels("# none\n").is_err());
        for bad in [
            "6.1 6.12\n",
            "6.1 --arch\n",
            "6.1 --arch s390x\n",
            "--kselftest\n",
        ] {
            let msg = format!("{:#}", read_kernels(bad).unwrap_err());
            assert!(
                msg.starts_with(KERNELS_FILE) && !msg.contains('\n'),
                "{msg}"
            );
        }
        assert_eq!(
            matrix(&k[2..]).to_string(),
            r#"{"include":[{"arch":"x86_64","exact":false,"kernel":"newest","kselftest":false,"name":"newest"},{"arch":"arm64","exact":false,"kernel":"newest","kselftest":false,"name":"newest-arm64"}]}"#
        );
        let repo = repo_root();
        let ours = read_kernels(&fs::read_to_string(repo.join(KERNELS_FILE)).unwrap()).unwrap();
        assert_eq!(
            names(&ours),
            [
                "5.10",
                "6.1",
                "6.12",
                "newest",
                "6.12-arm64",
                "6.12-kselftest",
                "6.12-arm64-kselftest",
                "5.10-exact",
                "6.1-exact",
                "6.12-exact",
                "newest-exact",
                "6.12-arm64-exact"
            ]
        );
    }
}
