//! `cargo xtask vmtest KERNEL --against KERNEL_B`: both kernels measured on
//! this machine at the same time, B judged against A.
//!
//! A *duet* (Bulej et al., arXiv 2001.05811): both kernels booted at once,
//! each VM pinned to its own host CPU, each running the bpf-overhead
//! command alone with the same fixed plan, started together once both
//! guests are up (a file each writes into its output share, and one the
//! runner writes back). What the host does during the measurement weighs
//! on both guests at once, so it cancels in the pairs of their rounds.
//! The host CPUs are swapped between the sides every session, so that a
//! difference between the two CPUs (another job pinned to one of them)
//! does not pass for one between the kernels. Both kernels boot with
//! `nokaslr`: every session lays each kernel out alike. The host's
//! bpf-overhead then judges the sessions (`bpf-overhead compare`, which
//! pairs round r of B with round r of A and corrects for the number of
//! mechanisms judged); its exit status is the task's.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde::Serialize;

use crate::build::guest_build::build_tests;
use crate::kernels::kernel::Kernel;
use crate::tasks::vmtest::Args;
use crate::util::kconfig::{self, KernelConfig};
use crate::util::signal::{check_signal, signalled};
use crate::util::{exit_code, relay, repo_root, say, secs, sh_quote, shown};
use crate::vm::job::Job;
use crate::vm::out::STAGING;
use crate::vm::{self, Accel};

/// What a guest writes into its output share once it is up, and what the
/// runner writes back to start it.
const READY: &str = "duet.ready";
const GO: &str = "duet.go";

pub fn main(a: Args) -> i32 {
    vm::task_main(|| run(&a))
}

/// The duet's summary, `vmtest.json` in its output directory.
#[derive(Serialize)]
struct Summary {
    kernel: String,
    against: String,
    release: String,
    against_release: String,
    accel: String,
    /// Each kernel's config as read before boot (null: unknown).
    kernel_config: Option<KernelConfig>,
    against_kernel_config: Option<KernelConfig>,
    /// The command's arguments in both guests.
    plan: Vec<String>,
    sessions: Vec<Session>,
    /// `bpf-overhead compare`'s findings (its --format json), if it ran.
    compare: Option<serde_json::Value>,
    exit: i32,
    why: Vec<String>,
    total_s: f64,
}

#[derive(Serialize)]
struct Session {
    /// Host CPU of A's VM and of B's.
    cpu_a: usize,
    cpu_b: usize,
    exit_a: i32,
    exit_b: i32,
    /// How long the guest that was up first waited for the other.
    waited_s: Option<f64>,
    secs: f64,
}

/// What a duet needs of its arguments and the host, checked before any
/// download: the host CPUs the two VMs are pinned to.
fn duet_cpus(a: &Args) -> Result<Vec<usize>> {
    ensure!(
        a.arch.is_host() && a.arch.name() == "x86_64",
        "--against runs x86_64 guests on an x86_64 host (the host's bpf-overhead judges them)"
    );
    ensure!(
        matches!(&a.job, Job::Tests(_)),
        "--against runs the bpf-overhead command's fixed plan: no --cmd or --exec"
    );
    ensure!(
        a.bench,
        "--against is the bpf-overhead command: no --no-bench"
    );
    super::qemu_installed(a.arch)?;
    let cpus = allowed_cpus()?;
    ensure!(
        cpus.len() >= 2,
        "a duet needs two host CPUs, one per VM; this process may use {}",
        cpus.len()
    );
    Ok(cpus)
}

fn run(a: &Args) -> Result<i32> {
    let start = Instant::now();
    let b_kernel = a.against.as_deref().context("--against")?;
    let cpus = duet_cpus(a)?;
    let repo = repo_root();
    // Both kernels fetched first: a download must not run beside a VM.
    let (ka, kb) = super::both_kernels(a, b_kernel, a.bzimage)?;
    check_signal()?;
    let (ca, cb) = configs(&ka, &kb);
    let d = Duet::new(a, b_kernel, &repo)?;
    let dir = out_dir(a, &repo, &ka.release, &kb.release);
    clear_out(&dir)?;
    say!(
        "duet: B {} against A {}, {} session(s), {} each, into {}",
        kb.release,
        ka.release,
        a.sessions,
        d.plan.join(" "),
        dir.display()
    );
    let (sessions, why) = d.sessions(&dir, &cpus)?;
    let (exit, compare) = if why.is_empty() {
        judge(&d.exe, &dir, a.sessions as usize)?
    } else {
        // A VM that failed: the environment's, not a regression.
        (i32::from(crate::util::exit_status::ENVIRONMENT), None)
    };
    for w in &why {
        say!("{w}");
    }
    let summary = Summary {
        kernel: a.kernel.clone(),
        against: b_kernel.to_owned(),
        release: ka.release.clone(),
        against_release: kb.release.clone(),
        accel: d.accel.name().into(),
        kernel_config: ca,
        against_kernel_config: cb,
        plan: d.plan,
        sessions,
        compare,
        exit,
        why,
        total_s: (start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    };
    let json = serde_json::to_string_pretty(&summary)?;
    crate::util::write_file(dir.join("vmtest.json"), json + "\n")?;
    println!(
        "vmtest: kernel {} against {} sessions {} total {} exit {exit}",
        ka.release,
        kb.release,
        a.sessions,
        secs(start.elapsed())
    );
    Ok(exit)
}

/// Each kernel's config as recorded, A's and B's; how they differ said.
fn configs(ka: &Kernel, kb: &Kernel) -> (Option<KernelConfig>, Option<KernelConfig>) {
    let [ca, cb] = [ka, kb].map(|k| k.config.as_ref().map(|c| c.record()));
    if let Some(line) = ca
        .as_ref()
        .zip(cb.as_ref())
        .and_then(|(x, y)| kconfig::differences_line(x, y))
    {
        say!("{line}");
    }
    (ca, cb)
}

/// The command's fixed plan, the same in both guests: exactly so many
/// rounds (no budget), so that round r of one is measured beside round r
/// of the other. TCG: the rounds the emulated suite can afford.
fn plan(accel: Accel, extra: &[String]) -> Vec<String> {
    let (iterations, repeat) = match accel {
        Accel::Tcg => ("1000", "8"),
        Accel::Kvm => ("100000", "10"),
    };
    let mut p: Vec<String> = [
        "--iterations",
        iterations,
        "--repeat",
        repeat,
        "--budget",
        "0",
        "--no-prog-stats",
    ]
    .map(String::from)
    .to_vec();
    p.extend(extra.iter().cloned());
    p
}

/// `--out`, else `<target dir>/vmtest/against/<release>--<release B>`.
fn out_dir(a: &Args, repo: &Path, ra: &str, rb: &str) -> PathBuf {
    super::out_dir(a, repo, "against", &format!("{ra}--{rb}"))
}

/// DIR, created, without what an earlier duet left there (its sessions'
/// directories, its summary and the comparison): they must not pass for
/// this one's. Anything else in DIR stays.
fn clear_out(dir: &Path) -> Result<()> {
    crate::util::create_dir_all(dir)?;
    for e in fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let session = name
            .strip_prefix('s')
            .is_some_and(|n| n.parse::<usize>().is_ok());
        if session && e.path().is_dir() {
            fs::remove_dir_all(e.path())
                .with_context(|| format!("removing {}", e.path().display()))?;
        } else if ["vmtest.json", "compare.txt", "compare.json"].contains(&name.as_str()) {
            fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

/// The guest's job: say it is up, wait for the runner's word (at most
/// 10 minutes: a partner that never comes up is the runner's to report),
/// then the command.
fn guest_script(exe: &str, plan: &[String]) -> String {
    let words: Vec<String> = std::iter::once(exe)
        .chain(plan.iter().map(String::as_str))
        .map(sh_quote)
        .collect();
    format!(
        ": >\"$VMTEST_OUT/{READY}\"\n\
         i=0; while [ ! -e \"$VMTEST_OUT/{GO}\" ] && [ $i -lt 12000 ]; do sleep 0.05; i=$((i+1)); done\n\
         rm -f \"$VMTEST_OUT/{READY}\" \"$VMTEST_OUT/{GO}\"\n\
         echo \"vmtest: duet: measuring\"\n\
         {} --save \"$VMTEST_OUT/result.json\"\n",
        words.join(" ")
    )
}

/// What every session of a duet shares: this runner (each side is a
/// vmtest of its own), the arguments, and the guests' command and plan.
struct Duet<'a> {
    xtask: PathBuf,
    a: &'a Args,
    accel: Accel,
    b_kernel: &'a str,
    exe: String,
    plan: Vec<String>,
}

impl<'a> Duet<'a> {
    /// The guests' bpf-overhead, built, and the plan it runs under the
    /// accelerator chosen.
    fn new(a: &'a Args, b_kernel: &'a str, repo: &Path) -> Result<Self> {
        let (_, exe) = build_tests(repo, a.arch, false, &a.cargo_args)?;
        let exe = exe.context("cargo test built no bpf-overhead command")?;
        let accel = vm::choose_accel(a.accel, a.arch, a.mode.clock())?;
        Ok(Duet {
            xtask: crate::util::own_exe(),
            a,
            accel,
            b_kernel,
            exe,
            plan: plan(accel, &a.bench_args),
        })
    }

    /// Every session, into DIR's s1, s2...: the host CPUs swapped from
    /// one to the next. Why each VM that failed did.
    fn sessions(&self, dir: &Path, cpus: &[usize]) -> Result<(Vec<Session>, Vec<String>)> {
        let mut sessions = Vec::new();
        let mut why = Vec::new();
        for s in 0..self.a.sessions as usize {
            let cpu = (cpus[s % 2], cpus[(s + 1) % 2]);
            let sd = dir.join(format!("s{}", s + 1));
            let session = self.session(&sd, cpu)?;
            for (side, rc) in [("A", session.exit_a), ("B", session.exit_b)] {
                if rc != 0 {
                    why.push(format!(
                        "session {}: {side}'s VM exited {rc} (see {})",
                        s + 1,
                        sd.join(side.to_lowercase()).join("vmtest.log").display()
                    ));
                }
            }
            sessions.push(session);
            check_signal()?;
        }
        Ok((sessions, why))
    }

    /// One session: both VMs at once, A's on host CPU `cpu.0`, B's on `cpu.1`.
    fn session(&self, dir: &Path, cpu: (usize, usize)) -> Result<Session> {
        let t = Instant::now();
        let script = guest_script(&self.exe, &self.plan);
        let append = format!("nokaslr {}", self.a.append).trim().to_owned();
        let stdout = Mutex::new(());
        let sides = [
            ("a", self.a.kernel.as_str(), cpu.0),
            ("b", self.b_kernel, cpu.1),
        ];
        let mut children: Vec<(Child, PathBuf)> = Vec::new();
        let (mut pipes, mut logs) = (Vec::new(), Vec::new());
        for (side, k, c) in sides {
            let out = dir.join(side);
            crate::util::create_dir_all(&out)?;
            let mut cmd = self.vmtest(side, k, &out, (&script, &append));
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            pin(&mut cmd, c);
            say!(
                "duet {}: {k} on host CPU {c}, into {}",
                side.to_uppercase(),
                out.display()
            );
            let mut child = cmd.spawn().context("starting vmtest")?;
            logs.push(Mutex::new(crate::util::create_file(
                out.join("vmtest.log"),
            )?));
            let (o, e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
            pipes.push((format!("[{}] ", side.to_uppercase()), o, e));
            children.push((child, out));
        }
        let mut waited = None;
        let exits = thread::scope(|s| -> Result<Vec<i32>> {
            for ((prefix, o, e), log) in pipes.into_iter().zip(&logs) {
                let (so, p) = (&stdout, prefix.clone());
                s.spawn(move || relay(o, &prefix, log, so));
                s.spawn(move || relay(e, &p, log, so));
            }
            waited = start_together(&mut children)?;
            let mut exits = Vec::new();
            for (child, _) in children.iter_mut() {
                exits.push(exit_code(child.wait()?));
            }
            Ok(exits)
        })?;
        Ok(Session {
            cpu_a: cpu.0,
            cpu_b: cpu.1,
            exit_a: exits[0],
            exit_b: exits[1],
            waited_s: waited.map(|w: Duration| (w.as_secs_f64() * 100.0).round() / 100.0),
            secs: (t.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        })
    }

    /// The vmtest of `side` ("a" or "b"): kernel `k` with that side's
    /// modules and config, booted with `append`, running `script`, its
    /// output into `out`.
    fn vmtest(&self, side: &str, k: &str, out: &Path, (script, append): (&str, &str)) -> Command {
        let a = self.a;
        let mut cmd = Command::new(&self.xtask);
        cmd.arg("vmtest").arg(k).arg("--out").arg(out);
        cmd.args(["--append", append, "--cmd", script]);
        cmd.args(["--accel", self.accel.name()]);
        cmd.args(["--memory", &a.memory, "--smp", &a.smp.to_string()]);
        cmd.args(["--timeout", &a.timeout.to_string()]);
        cmd.args(["--boot-timeout", &a.boot_timeout.to_string()]);
        cmd.args(["--alive-timeout", &a.alive_timeout.to_string()]);
        let (modules, config) = if side == "a" {
            (&a.modules, &a.config)
        } else {
            (&a.against_modules, &a.against_config)
        };
        if let Some(m) = modules {
            cmd.args(["--modules", m]);
        }
        if let Some(c) = config {
            cmd.args(["--config", c]);
        }
        for (k, v) in &a.env {
            cmd.args(["--env", &format!("{k}={v}")]);
        }
        cmd
    }
}

/// Waits until both guests are up, then tells both to start; a VM that
/// ends first lets the other start alone (its session then fails). How
/// long the first one up waited.
fn start_together(children: &mut [(Child, PathBuf)]) -> Result<Option<Duration>> {
    let mut up: Vec<Option<Instant>> = vec![None; children.len()];
    loop {
        for (i, (child, out)) in children.iter_mut().enumerate() {
            if up[i].is_none() && (staged(out, READY).is_some() || child.try_wait()?.is_some()) {
                up[i] = Some(Instant::now());
            }
        }
        if up.iter().all(Option::is_some) {
            break;
        }
        if let Some(sig) = signalled() {
            bail!("interrupted (signal {sig})");
        }
        thread::sleep(Duration::from_millis(10));
    }
    for (_, out) in children.iter() {
        if let Some(stage) = staged(out, READY).and_then(|r| r.parent().map(Path::to_path_buf)) {
            crate::util::write_file(stage.join(GO), b"")?;
        }
    }
    let times: Vec<Instant> = up.into_iter().flatten().collect();
    Ok(match (times.iter().min(), times.iter().max()) {
        (Some(first), Some(last)) => Some(*last - *first),
        _ => None,
    })
}

/// `name` in the staging directory of the vmtest writing into `out`.
fn staged(out: &Path, name: &str) -> Option<PathBuf> {
    fs::read_dir(out)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(STAGING))
        .map(|e| e.path().join(name))
        .find(|p| p.exists())
}

/// The host's bpf-overhead over every session's two results: its exit
/// status and findings; its table in compare.txt and on the terminal.
fn judge(exe: &str, dir: &Path, sessions: usize) -> Result<(i32, Option<serde_json::Value>)> {
    let result = |i: usize, side: &str| dir.join(format!("s{i}")).join(side).join("result.json");
    let mut cmd = Command::new(exe);
    cmd.arg("compare");
    cmd.args((1..=sessions).map(|i| result(i, "a")));
    cmd.arg("--against");
    cmd.args((1..=sessions).map(|i| result(i, "b")));
    cmd.args(["--format", "json"]);
    say!("{}", shown(&cmd));
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", shown(&cmd)))?;
    let text = String::from_utf8_lossy(&o.stderr);
    print!("{text}");
    crate::util::write_file(dir.join("compare.txt"), text.as_bytes())?;
    crate::util::write_file(dir.join("compare.json"), &o.stdout)?;
    let findings = serde_json::from_slice(&o.stdout).ok();
    Ok((exit_code(o.status), findings))
}

/// Pins the child (and so its qemu) to host CPU `cpu`.
fn pin(cmd: &mut Command, cpu: usize) {
    // SAFETY: between fork and exec only the async-signal-safe
    // sched_setaffinity runs, on a set built on the stack.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set for the call to fill.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    ensure!(
        rc == 0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_guests_run_the_same_fixed_plan_after_the_word() {
        let p = plan(Accel::Tcg, &["-m".into(), "raw_tp-loop".into()]);
        assert_eq!(
            p.join(" "),
            "--iterations 1000 --repeat 8 --budget 0 --no-prog-stats -m raw_tp-loop"
        );
        let s = guest_script("/r/bpf-overhead", &p);
        let ready = s.find(READY).unwrap();
        let go = s.find(GO).unwrap();
        let run = s.find("/r/bpf-overhead").unwrap();
        assert!(ready < go && go < run, "{s}");
        assert!(s.contains("--save \"$VMTEST_OUT/result.json\""));
    }

    #[test]
    fn a_staged_file_is_found_in_the_staging_directory_only() {
        let d = tempfile::tempdir().unwrap();
        assert!(staged(d.path(), READY).is_none());
        fs::write(d.path().join(READY), b"").unwrap();
        assert!(staged(d.path(), READY).is_none(), "not staged");
        let stage = d.path().join(format!("{STAGING}x"));
        fs::create_dir(&stage).unwrap();
        fs::write(stage.join(READY), b"").unwrap();
        assert_eq!(staged(d.path(), READY), Some(stage.join(READY)));
    }

    #[test]
    fn an_earlier_duet_is_cleared_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["s1/a", "s7/b", "keep"] {
            fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        for f in ["vmtest.json", "compare.json", "notes.txt"] {
            fs::write(d.path().join(f), b"").unwrap();
        }
        clear_out(d.path()).unwrap();
        let mut left: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["keep", "notes.txt"]);
    }

    #[test]
    fn this_process_may_use_some_cpu() {
        assert!(!allowed_cpus().unwrap().is_empty());
    }
}
