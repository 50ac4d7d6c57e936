//! `cargo xtask vmtest`: boot a kernel under qemu and run the suite in it.
//!
//! The vmtest room: this task, its options ([`Args`]), and its two
//! `--against` modes, [`duet`] (two kernels at once) and [`exact`] (two
//! kernels counted in turn), which share them. It imports the parts (vm,
//! build, kernels, util), never another task.

pub mod boots;
pub mod duet;
pub mod exact;
pub mod explain;
mod mitigations;
mod options;

pub use options::{Args, Exact, Mode, VmtestCli};

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Result};

use crate::build::guest_build::build_tests;
use crate::build::tcg_plugin;
use crate::kernels::arch::Arch;
use crate::kernels::debian;
use crate::kernels::kernel::{kernel, Kernel};
use crate::util::env_vars::{ABSENT_ENV, KCONFIG_ENV, WINDOWS_ENV};
use crate::util::signal::check_signal;
use crate::util::{cache_dir, one_line, repo_root, say, secs, which, BadInput};
use crate::vm::initramfs::{busybox, initramfs};
use crate::vm::job::{guest_env, job_script, Bench, Expect, Job, Resume};
use crate::vm::out::{self, Out};
use crate::vm::summary::{self, VmtestJson};
use crate::vm::{self, Accel, Clock, Rules, Timeouts, Vm};

pub fn main(a: Args) -> i32 {
    vm::task_main(|| run(&a))
}

fn run(a: &Args) -> Result<i32> {
    let start = Instant::now();
    let repo = repo_root();
    let (k, bb) = fetch_kernel(a)?;
    let fetch = start.elapsed();
    check_signal()?;
    let initrd = initramfs(&k, &bb)?;
    let accel = vm::choose_accel(a.accel, a.arch, a.mode.clock())?;
    let plugin = plugin(a, &repo)?;
    let (rundir, rundir_path) = vm::job_dir()?;
    let out = open_out(a, &repo, &k.release)?;

    let kconfig = write_kconfig(&k, &rundir_path)?;
    let t = Instant::now();
    let job = prepare_job(a, &repo, &k, accel, kconfig.as_deref())?;
    let build = t.elapsed();
    let vm = guest(
        a,
        &k,
        accel,
        &initrd,
        &rundir_path,
        out.staging.path(),
        plugin.as_deref(),
    );
    let b = boots::run(boots::Booting {
        script: |r: &Resume| job.script(r),
        boot: || boot(a, &k, &vm),
        rundir: &rundir_path,
        staging: out.staging.path(),
        log: a.log.as_deref(),
        tests: matches!(a.job, Job::Tests(_)),
    })?;
    drop(rundir);
    let (rc, why, dir) = conclude(a, &b, &job, out);
    let timing = Timing {
        start,
        fetch,
        build,
    };
    let s = record(a, &k, accel, &b, &timing, &dir, (rc, why));
    let rc = save_summary(&s, &dir, rc);
    println!(
        "vmtest: kernel {} boot {} total {} exit {rc}",
        k.release,
        b.first_up.map_or("-".into(), secs),
        secs(b.vm_time)
    );
    Ok(rc)
}

/// `arch`'s qemu is on the PATH, or what to install.
pub(crate) fn qemu_installed(arch: Arch) -> Result<()> {
    ensure!(
        which(arch.qemu()).is_some(),
        "{} not found: apt-get install -y {}",
        arch.qemu(),
        arch.qemu_package()
    );
    Ok(())
}

/// qemu found, then KERNEL (fetched when it is Debian's) and the busybox
/// its initramfs is built around.
fn fetch_kernel(a: &Args) -> Result<(Kernel, PathBuf)> {
    qemu_installed(a.arch)?;
    let cache = cache_dir()?;
    let bb = busybox(a.arch, &cache)?;
    let k = kernel(
        &a.kernel,
        a.modules.as_deref(),
        a.config.as_deref(),
        a.arch,
        &cache,
        a.bzimage,
    )?;
    Ok((k, bb))
}

/// The boots judged, the guest's files moved out of `out`'s staging and,
/// as the mode asks, its mitigations compared and its counts explained:
/// the exit status, why, and the output directory.
fn conclude(a: &Args, b: &boots::Boots, job: &Prepared, out: Out) -> (i32, Vec<String>, PathBuf) {
    let (rc, why) = judge(a, &b.last, b.status.as_deref(), job.runs_tests(&b.resume));
    let (rc, why) = crate::vm::crash::judged(&b.resume.crashed, rc, why);
    let (rc, dir) = finish_out(out, rc);
    if a.mode.clock() == Clock::Instructions {
        mitigations::said(&dir);
    }
    (explained(a, &dir, rc), why, dir)
}

/// The guest's machine: `k` booted with `initrd`, its job in `rundir`,
/// its files shared through `staging` (the plugin's counts too).
fn guest<'a>(
    a: &'a Args,
    k: &'a Kernel,
    accel: Accel,
    initrd: &'a Path,
    rundir: &'a Path,
    staging: &'a Path,
    plugin: Option<&'a Path>,
) -> Vm<'a> {
    Vm {
        arch: a.arch,
        accel,
        smp: a.smp,
        memory: &a.memory,
        kernel: &k.boot,
        initrd,
        cmdline: vm::cmdline(a.arch, !a.arch.is_host(), rundir, true, &append(a)),
        rundir,
        out: Some(staging),
        clock: a.mode.clock(),
        plugin: plugin.map(|p| (p, vec![("out", staging.join(explain::COUNTS_FILE))])),
    }
}

/// Where a run's time went before it booted: `fetch` getting the kernel
/// ready, `build` the guest's test binaries; the run began at `start`.
struct Timing {
    start: Instant,
    fetch: Duration,
    build: Duration,
}

/// vmtest.json's record of the run and its verdict (`exit`, `why`); the
/// steps are the guest's, read from `dir`.
fn record(
    a: &Args,
    k: &Kernel,
    accel: Accel,
    b: &boots::Boots,
    t: &Timing,
    dir: &Path,
    (exit, why): (i32, Vec<String>),
) -> VmtestJson {
    VmtestJson {
        kernel: a.kernel.clone(),
        release: k.release.clone(),
        arch: a.arch.name().into(),
        accel: accel.name().into(),
        fetch_s: summary::tenths(t.fetch),
        downloaded_bytes: k.downloaded,
        build_s: summary::tenths(t.build),
        boot_s: b.first_up.map(summary::tenths),
        vm_s: summary::tenths(b.vm_time),
        total_s: summary::tenths(t.start.elapsed().saturating_sub(t.fetch)),
        exit,
        why,
        kernel_config: k.config.as_ref().map(|c| c.record()),
        boots: b.count,
        crashed: b.resume.crashed.clone(),
        steps: fs::read_to_string(dir.join(summary::STEPS_FILE))
            .map(|t| summary::parse_steps(&t))
            .unwrap_or_default(),
    }
}

/// The kernel's config in the job directory, for the command to record
/// with its result.
fn write_kconfig(k: &Kernel, rundir: &Path) -> Result<Option<PathBuf>> {
    let Some(c) = &k.config else {
        return Ok(None);
    };
    let f = rundir.join("kernel.config");
    // Its first line says where vmtest read it, for the record.
    crate::util::write_file(&f, format!("# vmtest: {}\n{}", c.source, c.text))?;
    Ok(Some(f))
}

/// `--explain`'s TCG plugin, built.
fn plugin(a: &Args, repo: &Path) -> Result<Option<PathBuf>> {
    ensure!(
        !a.mode.explains() || a.arch == Arch::X86_64,
        "--explain: the windows' marks are x86_64 instructions; explain an x86_64 kernel"
    );
    a.mode
        .explains()
        .then(|| tcg_plugin::build(repo))
        .transpose()
}

/// With `--explain`, a run that saved its result explained: its counts
/// split by function in DIR; exit 1 when a split does not add up, 2 when
/// a run that passed cannot be explained, saying why.
fn explained(a: &Args, dir: &Path, rc: i32) -> i32 {
    // A run that saved its result is explained, a regression too (exit 1
    // from the command's in-run --against): that is when it matters.
    if !a.mode.explains() || !dir.join("result.json").is_file() {
        return rc;
    }
    let written = explain::write(dir).and_then(|(split_rc, e)| {
        let svg = explain::svg::svg(&e).map_err(anyhow::Error::msg)?;
        crate::util::write_file(dir.join(explain::SVG_FILE), svg)?;
        // Build against build in this run (--bench-arg=--against ...).
        let c = explain::change::in_run(&e);
        if !c.is_empty() {
            let text = explain::change::table(&c);
            print!("\nB against A in this run:\n{text}");
            crate::util::write_file(dir.join(explain::IN_RUN_FILE), text)?;
        }
        Ok(split_rc)
    });
    match written {
        Ok(split_rc) => rc.max(split_rc),
        Err(e) => {
            say!("--explain: {}", one_line(&e));
            if rc == 0 {
                i32::from(crate::util::exit_status::ENVIRONMENT)
            } else {
                rc
            }
        }
    }
}

/// The output directory for `release` (`--out`, else under the target
/// directory), locked, with what an earlier run left there removed: it
/// must not pass for this one's.
fn open_out(a: &Args, repo: &Path, release: &str) -> Result<Out> {
    let out = Out::open(&out::dir(
        a.out.as_deref(),
        env::var("CARGO_TARGET_DIR").ok().as_deref(),
        repo,
        release,
    ))?;
    for stale in [summary::FILE, summary::STEPS_FILE] {
        let _ = fs::remove_file(out.dir.join(stale));
    }
    Ok(out)
}

/// Saves the summary into `dir`. A run that passed but whose summary
/// could not be saved exits 2; any other keeps its `rc`.
fn save_summary(s: &VmtestJson, dir: &Path, rc: i32) -> i32 {
    match s.save(dir) {
        Ok(()) => rc,
        Err(e) => {
            say!("{}", one_line(&e));
            if rc == 0 {
                2
            } else {
                rc
            }
        }
    }
}

/// The kernel command line's additions: `--exact` boots with `nokaslr`, so
/// that every boot lays the kernel out alike (a count may depend on where
/// things are: hash buckets of addresses, alignment).
fn append(a: &Args) -> String {
    match a.mode {
        Mode::Exact(_) => format!("nokaslr {}", a.append).trim_end().to_owned(),
        Mode::Timed => a.append.clone(),
    }
}

/// Boots the VM and waits for it; the boot and the guest's exit status.
pub(crate) fn boot(a: &Args, k: &Kernel, vm: &Vm) -> Result<(vm::Boot, Option<String>)> {
    say!(
        "booting {} ({}) accel={} timeout={}s",
        k.release,
        k.boot.file_name().unwrap_or_default().to_string_lossy(),
        vm.accel.name(),
        a.timeout
    );
    let timeouts = Timeouts {
        total: Duration::from_secs(a.timeout),
        alive: Duration::from_secs(a.alive_timeout),
        boot: Duration::from_secs(a.boot_timeout),
    };
    let o = vm::run(vm, a.verbose, &timeouts)?;
    let status = fs::read_to_string(vm.status_path()).ok();
    Ok((o, status))
}

/// The guest's job, before its script: the test binaries (built), the
/// command and the environment.
pub struct Prepared {
    job: Job,
    repo: PathBuf,
    exes: Vec<String>,
    bench: Option<Bench>,
    env: Vec<(String, Option<String>)>,
}

impl Prepared {
    /// The script of a boot that leaves out what `r` says.
    pub fn script(&self, r: &Resume) -> String {
        let exes: Vec<String> = self.exes_run(r);
        let bench = self
            .bench
            .as_ref()
            .filter(|_| r.runs("bpf-overhead"))
            .map(|b| r.bench(b));
        job_script(&self.repo, &self.env, &self.job, &exes, bench.as_ref())
    }

    /// Whether a boot that leaves out what `r` says runs a test binary.
    pub fn runs_tests(&self, r: &Resume) -> bool {
        !self.exes_run(r).is_empty()
    }

    fn exes_run(&self, r: &Resume) -> Vec<String> {
        let run = |e: &&String| r.runs(&crate::build::guest_build::test_name(e));
        self.exes.iter().filter(run).cloned().collect()
    }
}

/// The guest's job; in default mode it builds the test binaries first.
fn prepare_job(
    a: &Args,
    repo: &Path,
    k: &Kernel,
    accel: Accel,
    kconfig: Option<&Path>,
) -> Result<Prepared> {
    let (exes, command) = match &a.job {
        Job::Tests(_) => build_tests(repo, a.arch, a.all_tests, &a.cargo_args)?,
        _ => (Vec::new(), None),
    };
    // Exact: the command alone (the suite proves attach and count, which
    // an instruction clock does not change; it would only cost time).
    let exact = match &a.mode {
        Mode::Exact(x) => Some(x),
        Mode::Timed => None,
    };
    let exes = if exact.is_some() { Vec::new() } else { exes };
    let bench = match (&a.job, command) {
        (Job::Tests(_), _) if exact.is_some() && !a.bench => {
            bail!(BadInput(
                "--exact runs only the command: drop --no-bench".into()
            ))
        }
        (Job::Tests(t), _) if !a.bench || t.iter().any(|t| t == "--list") => None,
        (Job::Tests(_), None) => bail!("cargo test built no bpf-overhead command"),
        (Job::Tests(_), Some(exe)) => Some(match exact {
            Some(x) => Bench::exact(exe, x.rounds, &a.bench_args),
            None => Bench::new(exe, accel, &a.bench_args),
        }),
        _ => None,
    };
    let (absent, strict) = declared_absences(a, &k.release, repo);
    let absent = absent.as_deref();
    let host: Vec<(String, String)> = env::vars().collect();
    let emulator = exact.map(|_| vm::qemu_version(a.arch)).transpose()?;
    let mut env = guest_env(
        &a.job,
        a.mode.clock(),
        &a.env,
        accel,
        Expect { strict, absent },
        &host,
        emulator.as_deref(),
    );
    if let Some(f) = kconfig {
        env.push((KCONFIG_ENV.into(), Some(f.display().to_string())));
    }
    if a.mode.explains() {
        env.push((WINDOWS_ENV.into(), Some(vm::GUEST_OUT.into())));
    }
    Ok(Prepared {
        job: a.job.clone(),
        repo: repo.to_owned(),
        exes,
        bench,
        env,
    })
}

/// KERNEL and `--against`'s KERNEL_B, each with its own modules and
/// config, ready to boot (Debian ones fetched): what both of
/// `--against`'s modes start from.
fn both_kernels(a: &Args, b_kernel: &str, bzimage: bool) -> Result<(Kernel, Kernel)> {
    let cache = cache_dir()?;
    let ka = kernel(
        &a.kernel,
        a.modules.as_deref(),
        a.config.as_deref(),
        a.arch,
        &cache,
        bzimage,
    )?;
    let kb = kernel(
        b_kernel,
        a.against_modules.as_deref(),
        a.against_config.as_deref(),
        a.arch,
        &cache,
        bzimage,
    )?;
    Ok((ka, kb))
}

/// `--out`, else `<target dir>/vmtest/<what>/<name>` (a `/` in the name
/// as `_`): where `--against`'s two modes write.
fn out_dir(a: &Args, repo: &Path, what: &str, name: &str) -> PathBuf {
    if let Some(o) = &a.out {
        return PathBuf::from(o);
    }
    let target = env::var("CARGO_TARGET_DIR")
        .ok()
        .filter(|t| !t.is_empty())
        .map_or_else(|| repo.join("target"), PathBuf::from);
    target
        .join("vmtest")
        .join(what)
        .join(name.replace('/', "_"))
}

/// What the kernel is declared to lack, and whether the suite runs strict:
/// `--absent FILE`; else a Debian kernel's series file (ci/absent). A
/// kernel someone built is no Debian series' build (6.1.192 with FPROBE
/// would run what Debian's 6.1 lacks), so without `--absent` it runs
/// without strict mode, each skip saying why.
fn declared_absences(a: &Args, release: &str, repo: &Path) -> (Option<PathBuf>, bool) {
    if let Some(f) = &a.absent {
        say!("declared absences: {ABSENT_ENV}={f}");
        return (Some(PathBuf::from(f)), true);
    }
    if crate::kernels::kernel::is_path(&a.kernel) {
        say!(
            "a kernel you built: nothing declared absent, so the suite runs without strict \
             mode (each skip says why); --absent FILE declares what it lacks, for strict"
        );
        return (None, false);
    }
    let series = debian::series_of(release);
    let absent = absent_files(a.arch, &series)
        .into_iter()
        .map(|f| repo.join(f))
        .find(|f| f.is_file());
    if let Some(f) = &absent {
        say!(
            "kernel series {series} ({}): {ABSENT_ENV}={}",
            a.arch.name(),
            f.display()
        );
    }
    (absent, true)
}

/// Where a kernel series' declared absences may be, relative to the
/// repository, the first that exists being used: `ci/absent/<series>` for
/// x86_64 (none: every mechanism must run); for another architecture
/// `ci/absent/<arch>/<series>`, else `ci/absent/<arch>/default`, what any
/// kernel of that architecture lacks (arm64: the x86-only nop5 targets), so
/// that `newest` moving on needs no new file.
pub fn absent_files(arch: Arch, series: &str) -> Vec<PathBuf> {
    let base = Path::new("ci/absent");
    match arch {
        Arch::X86_64 => vec![base.join(series)],
        other => {
            let dir = base.join(other.name());
            vec![dir.join(series), dir.join("default")]
        }
    }
}

/// The exit status and why, said as it is decided; `ran_tests`: whether
/// the boot ran a test binary (one after a crash may run the command only).
fn judge(a: &Args, o: &vm::Boot, status: Option<&str>, ran_tests: bool) -> (i32, Vec<String>) {
    let rules = Rules {
        need_test_result: a.mode == Mode::Timed
            && ran_tests
            && matches!(&a.job, Job::Tests(t) if !t.iter().any(|t| t == "--list")),
        timeouts_secs: (a.timeout, a.alive_timeout, a.boot_timeout),
    };
    let (rc, why) = vm::verdict(o, status, &rules);
    if o.up.is_none() && !a.verbose && !o.log.is_empty() {
        say!("the guest's last console lines:");
        eprintln!("{}", vm::tail(&o.log, 40));
    }
    if let (None, Some(first)) = (o.up, o.first_output) {
        say!(
            "first console output {} after qemu started",
            secs(first - o.started)
        );
    }
    for w in &why {
        say!("{w}");
    }
    (rc, why)
}

/// Moves the guest's files into DIR; a failure to do so fails a passing run.
fn finish_out(out: Out, rc: i32) -> (i32, PathBuf) {
    let dir = out.dir.clone();
    let owner = out::owner(&dir);
    match out.finish(owner) {
        Ok(lines) => {
            for l in lines {
                say!("{l}");
            }
            (rc, dir)
        }
        Err(e) => {
            say!("{}", one_line(&e));
            (if rc == 0 { 2 } else { rc }, dir)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absences_per_series_and_architecture() {
        assert_eq!(
            absent_files(Arch::X86_64, "6.12"),
            [Path::new("ci/absent/6.12")]
        );
        assert_eq!(
            absent_files(Arch::Arm64, "6.12"),
            [
                Path::new("ci/absent/arm64/6.12"),
                Path::new("ci/absent/arm64/default")
            ]
        );
        // The files this repository has: a name and a reason a line, and
        // every arm64 list declares what the default one does.
        let default = fs::read_to_string(repo_root().join("ci/absent/arm64/default")).unwrap();
        let names = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| l.split('#').next().unwrap().trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect()
        };
        assert!(!names(&default).is_empty());
        for arch in [Arch::X86_64, Arch::Arm64] {
            for series in ["5.10", "6.1", "6.12", "7.3", "default"] {
                let f = repo_root().join(&absent_files(arch, series)[0]);
                let Ok(text) = fs::read_to_string(&f) else {
                    continue;
                };
                if arch == Arch::Arm64 {
                    for n in names(&default) {
                        assert!(names(&text).contains(&n), "{}: {n}", f.display());
                    }
                }
                for l in text.lines() {
                    let (name, why) = l.split_once('#').unwrap_or((l, ""));
                    assert!(
                        name.trim().is_empty() || !why.trim().is_empty(),
                        "{}: '{l}' gives no reason",
                        f.display()
                    );
                }
            }
        }
    }
}
