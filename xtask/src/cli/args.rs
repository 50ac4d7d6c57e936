//! xtask's command line, parsed with clap (derive): one `Task` enum whose
//! variants are the tasks, each with its room's options; their names are
//! clap's, from the enum ([`tasks`]).
//!
//! Bad input gives one line (no usage block) and exit 2.

use anyhow::{bail, ensure, Result};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::help::{
    CI_ABOUT, CI_AFTER, HISTORY_AFTER, KSELFTEST_AFTER, VMTEST_ABOUT, VMTEST_AFTER, VMTEST_USAGE,
};
use crate::kernels::arch::{arch, Arch};
use crate::tasks::ci::options::CiArgs;
use crate::tasks::flakes::FlakesArgs;
use crate::tasks::history::HistoryArgs;
use crate::tasks::kselftest::KselftestArgs;
use crate::tasks::vmtest::{Args, Exact, Mode};
use crate::util::values::{directory, env_pair, percent, positive, secs};
use crate::vm::job::{Job, EXACT_ROUNDS};
use crate::vm::Accel;

#[derive(Parser, Debug)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "The project's tooling",
    disable_help_subcommand = true,
    disable_version_flag = true
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand, Debug)]
enum Task {
    /// Run the suite in a VM booted on another kernel (a Debian kernel by series or
    /// release, or one you built)
    #[command(long_about = VMTEST_ABOUT, override_usage = VMTEST_USAGE, after_help = VMTEST_AFTER)]
    Vmtest(Box<VmtestCli>),
    /// CI: lint, host tests, every CI kernel in a VM, the report
    #[command(long_about = CI_ABOUT, after_help = CI_AFTER)]
    Ci(CiArgs),
    /// kselftest's install layout and tarball of a bpf_overhead collection, its
    /// programs static, for kernel CI (docs/kernel-ci.md)
    #[command(after_help = KSELFTEST_AFTER)]
    Kselftest(KselftestArgs),
    /// Hunt flaky tests: the README's test command N times alone, beside a CPU hog
    /// and beside disk writes; how often each test failed
    Flakes(FlakesArgs),
    /// Every Debian build of a series counted exactly (vmtest --exact), and the build
    /// where each count changed, split by function (docs/history.md)
    #[command(after_help = HISTORY_AFTER)]
    History(Box<HistoryArgs>),
}

/// The tasks' names, as clap derives them from [`Task`]: each its room's
/// name under tasks/.
pub fn tasks() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

#[derive(clap::Args, Debug)]
struct VmtestCli {
    /// A Debian series, newest, a release or a path (see below)
    #[arg(value_name = "KERNEL")]
    kernel: Option<String>,
    /// A second KERNEL, only to refuse it with a line that says why
    #[arg(value_name = "KERNEL", hide = true)]
    more_kernels: Vec<String>,
    /// libtest arguments for each test executable (default: --nocapture)
    #[arg(last = true, value_name = "TEST-ARGS")]
    test_args: Option<Vec<String>>,
    /// Run this bash code instead (no cargo build)
    #[arg(long, value_name = "SHELL CODE", allow_hyphen_values = true)]
    cmd: Option<String>,
    /// Run PROG with ARGS (everything after --exec): a cargo runner,
    /// CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$PWD/scripts/vmtest 6.1 --exec"
    #[arg(long, value_name = "PROG ARGS", num_args = 1.., allow_hyphen_values = true)]
    exec: Option<Vec<String>>,
    /// Extra argument for `cargo test --no-run` (repeatable)
    #[arg(long = "cargo-arg", value_name = "ARG", allow_hyphen_values = true)]
    cargo_args: Vec<String>,
    /// Default mode: extra argument for the bpf-overhead command run after the tests
    /// (repeatable), e.g. --bench-arg=--baseline --bench-arg=/abs/base.json
    #[arg(long = "bench-arg", value_name = "ARG", allow_hyphen_values = true)]
    bench_args: Vec<String>,
    /// Extra guest environment variable (repeatable; overrides the above)
    #[arg(long, value_name = "NAME=VALUE", value_parser = env_pair)]
    env: Vec<(String, String)>,
    /// Modules for a KERNEL given as a path
    #[arg(long, value_name = "DIR")]
    modules: Option<String>,
    /// The .config of a KERNEL given as a path, checked against ci/vmtest.config before
    /// boot and recorded (default: the image's own, CONFIG_IKCONFIG, else the build tree's
    /// .config for <tree>/arch/x86/boot/bzImage or <tree>/vmlinux)
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// Force the accelerator (also env VMTEST_ACCEL). Default: kvm only if /dev/kvm is
    /// usable and the CPU has vmx or svm, else tcg (-accel tcg,thread=single); --exact
    /// always takes tcg
    #[arg(long, value_name = "kvm|tcg")]
    accel: Option<String>,
    /// Kill the VM after SECS seconds (exit 124)
    #[arg(long, value_name = "SECS", default_value_t = 1800, value_parser = secs)]
    timeout: u64,
    /// Fail when the guest prints nothing for SECS seconds after qemu starts (early
    /// console output comes within a second)
    #[arg(long = "alive-timeout", value_name = "SECS", default_value_t = 30, value_parser = secs)]
    alive_timeout: u64,
    /// Fail when the guest has not reached the command after SECS
    #[arg(long = "boot-timeout", value_name = "SECS", default_value_t = 300, value_parser = secs)]
    boot_timeout: u64,
    /// Guest memory
    #[arg(long, value_name = "SIZE", default_value = "2G")]
    memory: String,
    /// Guest CPUs [default: 2; 1 with --exact, under which Debian's 6.1 hangs bringing up a
    /// second CPU]
    #[arg(long, value_name = "N", value_parser = positive)]
    smp: Option<u32>,
    /// Extra kernel command line
    #[arg(
        long,
        value_name = "ARGS",
        default_value = "",
        allow_hyphen_values = true
    )]
    append: String,
    /// Where the guest's files go (default: <target dir>/vmtest/<release>, the target
    /// dir being $CARGO_TARGET_DIR or the repository's target/)
    #[arg(long, value_name = "DIR", value_parser = directory)]
    out: Option<String>,
    /// Default mode: skip the bpf-overhead command run after the tests
    #[arg(long = "no-bench")]
    no_bench: bool,
    /// Default mode: build and run every test binary (the dev profile), not only overhead
    /// and cleanup
    #[arg(long = "all-tests")]
    all_tests: bool,
    /// Also keep the console log in FILE
    #[arg(long, value_name = "FILE")]
    log: Option<String>,
    /// Stream the kernel's boot messages too (else shown only on failure)
    #[arg(long)]
    verbose: bool,
    /// Boot the bzImage even when its vmlinux has a PVH entry
    #[arg(long)]
    bzimage: bool,
    /// The guest's architecture: x86_64 (default) or arm64 (Debian's arm64 kernel
    /// under qemu-system-aarch64, TCG; the tests cross-built)
    #[arg(long, value_name = "ARCH", default_value = "x86_64", value_parser = arch)]
    arch: Arch,
    /// Judge KERNEL_B against KERNEL, measured at the same time on this machine: a duet
    /// of two VMs, each on its own host CPU, running the bpf-overhead command's same
    /// fixed plan (no test suite), --sessions times (see "Kernel against kernel" below)
    #[arg(long, value_name = "KERNEL_B", conflicts_with_all = ["cmd", "exec"])]
    against: Option<String>,
    /// With --against: modules for a KERNEL_B given as a path (--modules is KERNEL's)
    #[arg(long = "against-modules", value_name = "DIR", requires = "against")]
    against_modules: Option<String>,
    /// With --against: the .config of a KERNEL_B given as a path (--config is KERNEL's)
    #[arg(long = "against-config", value_name = "FILE", requires = "against")]
    against_config: Option<String>,
    /// A file of the mechanisms KERNEL lacks (as ci/absent/<series>): the suite runs strict
    /// against it. A Debian kernel's series has its own; a kernel you built has none unless
    /// given, and then runs without strict mode (each skip says why)
    #[arg(long, value_name = "FILE")]
    absent: Option<String>,
    /// With --against --exact: give a verdict although the two kernels differ in options
    /// that change costs (lock debugging, sanitizers, preemption, mitigations, tracers)
    #[arg(long = "across-configs", requires = "exact")]
    across_configs: bool,
    /// With --against: duets to boot, the host CPUs swapped between the sides each time
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = positive, requires = "against")]
    sessions: u32,
    /// Exact counts: TCG clocked by the guest's instructions (-icount shift=0), so the
    /// command's figures are instructions per event, the same on any host
    #[arg(long)]
    exact: bool,
    /// With --against --exact: B's count beyond A's by more than PERCENT is REGRESSED
    /// (less by more: improved)
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, value_parser = percent, requires = "exact")]
    threshold: f64,
    /// With --exact: each count split by function (a TCG plugin counts instructions per
    /// address in each timed run; docs/explain.md); with --against, the change too
    #[arg(long, requires = "exact")]
    explain: bool,
    /// With --against --exact --explain: a mechanism whose kinds of events changed (a
    /// trap, a system call) is judged by its price on this host (bpf-overhead calibrate
    /// --save FILE), not by its instructions
    #[arg(long, value_name = "FILE", requires = "explain")]
    calibration: Option<std::path::PathBuf>,
    /// With --exact: the command's rounds; each count is the fewest of them (a tick lands
    /// in a run of 200 events one time in 8 to 30)
    #[arg(long, value_name = "N", default_value_t = EXACT_ROUNDS, value_parser = positive, requires = "exact")]
    rounds: u32,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// --help (of xtask or a task): print it, exit 0.
    Help(String),
    Vmtest(Box<Args>),
    Ci(CiArgs),
    Kselftest(KselftestArgs),
    Flakes(FlakesArgs),
    History(Box<HistoryArgs>),
}

/// Parses xtask's arguments (without the program name). `env_accel`:
/// $VMTEST_ACCEL. Errors are one line, without the task's prefix.
pub fn parse(argv: &[String], env_accel: Option<&str>) -> Result<Parsed> {
    let cli = match Cli::try_parse_from(std::iter::once("xtask").chain(argv.iter().map(|s| &**s))) {
        Ok(c) => c,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return Ok(Parsed::Help(e.render().to_string()));
        }
        Err(e) => bail!("{}", one_line(&e)),
    };
    match cli.task {
        Task::Vmtest(v) => {
            // clap gives no value for a bare trailing `--`: that is "no test
            // arguments", not the default --nocapture.
            let dashdash = argv
                .iter()
                .take_while(|a| *a != "--exec" && !a.starts_with("--exec="))
                .any(|a| a == "--");
            vmtest_args(v, dashdash, env_accel).map(|a| Parsed::Vmtest(Box::new(a)))
        }
        Task::Ci(c) => Ok(Parsed::Ci(c)),
        Task::Kselftest(k) => Ok(Parsed::Kselftest(k)),
        Task::Flakes(f) => Ok(Parsed::Flakes(f)),
        Task::History(h) => Ok(Parsed::History(h)),
    }
}

fn vmtest_args(v: Box<VmtestCli>, dashdash: bool, env_accel: Option<&str>) -> Result<Args> {
    let kernel = match (v.kernel, v.more_kernels.first()) {
        (None, _) => bail!(
            "no KERNEL given: a Debian series (6.1, 6.12), newest, a release (6.1.0-57-amd64) \
             or a path to a bzImage/vmlinux"
        ),
        (Some(k), None) => k,
        (Some(a), Some(b)) => {
            bail!("more than one KERNEL given ({a}, {b}); test arguments go after --")
        }
    };
    ensure!(
        v.cmd.is_none() || v.exec.is_none(),
        "--cmd and --exec: give one of them"
    );
    let job = match (v.cmd, v.exec, v.test_args) {
        (Some(c), _, _) => Job::Cmd(c),
        (_, Some(e), _) => Job::Exec(e),
        (_, _, Some(t)) => Job::Tests(t),
        _ if dashdash => Job::Tests(Vec::new()),
        _ => Job::Tests(vec!["--nocapture".into()]),
    };
    let accel = match v.accel.as_deref().or(env_accel) {
        None | Some("") => None,
        Some("kvm") => Some(Accel::Kvm),
        Some("tcg") => Some(Accel::Tcg),
        Some(o) => bail!("--accel/VMTEST_ACCEL must be kvm or tcg, not '{o}'"),
    };
    Ok(Args {
        kernel,
        arch: v.arch,
        job,
        cargo_args: v.cargo_args,
        bench_args: v.bench_args,
        env: v.env,
        modules: v.modules,
        config: v.config,
        accel,
        timeout: v.timeout,
        alive_timeout: v.alive_timeout,
        boot_timeout: v.boot_timeout,
        memory: v.memory,
        // Exact: one vCPU. Under the instruction clock Debian's 6.1 stops
        // at "x86: Booting SMP configuration" with two; what is counted is
        // the measuring CPU's anyway.
        smp: v.smp.unwrap_or(if v.exact { 1 } else { 2 }),
        append: v.append,
        log: v.log,
        verbose: v.verbose,
        bzimage: v.bzimage,
        out: v.out,
        bench: !v.no_bench,
        all_tests: v.all_tests,
        against: v.against,
        against_modules: v.against_modules,
        against_config: v.against_config,
        absent: v.absent,
        sessions: v.sessions,
        mode: match v.exact {
            true => Mode::Exact(Exact {
                explain: v.explain,
                rounds: v.rounds,
                threshold: v.threshold,
                across_configs: v.across_configs,
                calibration: v.calibration,
            }),
            false => Mode::Timed,
        },
    })
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(s) => Some(s.join(", ")),
        _ => None,
    }
}

/// A clap error as one line: `--timeout needs a value (see --help)`.
fn one_line(e: &clap::Error) -> String {
    let arg = context(e, ContextKind::InvalidArg).unwrap_or_default();
    // "--timeout <SECS>" -> "--timeout"
    let opt = arg.split([' ', '=']).next().unwrap_or_default().to_owned();
    let value = context(e, ContextKind::InvalidValue);
    match e.kind() {
        ErrorKind::UnknownArgument if arg.starts_with('-') => {
            format!("unknown option {arg} (see --help)")
        }
        ErrorKind::UnknownArgument => format!("unexpected argument '{arg}' (see --help)"),
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            format!(
                "no task given; tasks: {} (cargo xtask --help)",
                tasks().join(", ")
            )
        }
        ErrorKind::InvalidSubcommand => format!(
            "unknown task '{}'; tasks: {} (cargo xtask --help)",
            context(e, ContextKind::InvalidSubcommand).unwrap_or_default(),
            tasks().join(", ")
        ),
        ErrorKind::MissingRequiredArgument => format!("{opt} is needed too (see --help)"),
        ErrorKind::ArgumentConflict => {
            let other = context(e, ContextKind::PriorArg).unwrap_or_default();
            let other = other.split([' ', '=']).next().unwrap_or_default();
            format!("{opt} and {other} do not go together (see --help)")
        }
        ErrorKind::InvalidValue if value.as_deref().is_none_or(str::is_empty) => {
            format!("{opt} needs a value (see --help)")
        }
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(e)
                .map(|s| s.to_string())
                .unwrap_or_else(|| "is invalid".into());
            format!("{opt} {why}, not '{}'", value.unwrap_or_default())
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            format!(
                "{} (see --help)",
                first.strip_prefix("error: ").unwrap_or(first)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_task(s: &[&str]) -> Result<Parsed> {
        parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>(), None)
    }

    /// vmtest's arguments; `None` for --help.
    fn p(s: &[&str]) -> Result<Option<Args>> {
        let mut argv = vec!["vmtest"];
        argv.extend_from_slice(s);
        Ok(match parse_task(&argv)? {
            Parsed::Vmtest(a) => Some(*a),
            Parsed::Help(_) => None,
            Parsed::Ci(_) | Parsed::Kselftest(_) | Parsed::Flakes(_) | Parsed::History(_) => {
                unreachable!()
            }
        })
    }

    #[test]
    fn history_options() {
        let h = |s: &[&str]| match parse_task(s) {
            Ok(Parsed::History(h)) => Ok(*h),
            Ok(_) => unreachable!(),
            Err(e) => Err(format!("{e:#}")),
        };
        let a = h(&["history", "6.12"]).unwrap();
        assert_eq!(
            (a.series.as_str(), a.rounds, a.jobs, a.threshold),
            ("6.12", 5, 1, 1.0)
        );
        assert!(!a.every_function && !a.no_count && !a.list);
        let a = h(&["history", "6.16..7.3", "--since", "6.18.5", "-j", "2"]).unwrap();
        assert_eq!((a.since.as_deref(), a.jobs), (Some("6.18.5"), 2));
        assert!(h(&["history", "6.12", "--matrix"])
            .unwrap_err()
            .contains("--list"));
        assert!(h(&["history", "6.12", "--only", "x", "--no-count"]).is_err());
        assert!(h(&["history"]).unwrap_err().contains("SERIES"));
    }

    fn e(s: &[&str]) -> String {
        let m = format!("{:#}", p(s).unwrap_err());
        assert!(!m.contains('\n'), "{m}");
        m
    }

    #[test]
    fn defaults_and_test_args() {
        let a = p(&["6.1"]).unwrap().unwrap();
        assert_eq!(a.kernel, "6.1");
        assert_eq!(a.job, Job::Tests(vec!["--nocapture".into()]));
        assert_eq!((a.timeout, a.alive_timeout, a.accel), (1800, 30, None));
        assert_eq!(a.arch, Arch::X86_64);
        let a = p(&["--arch", "arm64", "6.12"]).unwrap().unwrap();
        assert_eq!((a.arch, a.kernel.as_str()), (Arch::Arm64, "6.12"));
        assert_eq!((a.boot_timeout, a.memory.as_str(), a.smp), (300, "2G", 2));
        let a = p(&["6.12", "--", "--nocapture", "fentry"])
            .unwrap()
            .unwrap();
        assert_eq!(
            a.job,
            Job::Tests(vec!["--nocapture".into(), "fentry".into()])
        );
        let a = p(&["--timeout=60", "--accel", "tcg", "x", "--"])
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.timeout, a.accel, a.job),
            (60, Some(Accel::Tcg), Job::Tests(vec![]))
        );
        assert!(p(&["-h"]).unwrap().is_none());
        assert!(p(&["--help"]).unwrap().is_none());
        let a = p(&["6.1"]).unwrap().unwrap();
        assert_eq!((a.out, a.bench), (None, true));
        let a = p(&["6.1", "--out", "o/6.1", "--no-bench"])
            .unwrap()
            .unwrap();
        assert_eq!((a.out.as_deref(), a.bench), (Some("o/6.1"), false));
        let a = p(&["--out=x", "6.1"]).unwrap().unwrap();
        assert_eq!(a.out.as_deref(), Some("x"));
        let a = p(&["6.1", "--bench-arg=--baseline", "--bench-arg", "/b.json"])
            .unwrap()
            .unwrap();
        assert_eq!(a.bench_args, ["--baseline", "/b.json"]);
    }

    #[test]
    fn against_names_kernel_b_and_its_sessions() {
        let a = p(&["6.1", "--against", "6.12"]).unwrap().unwrap();
        assert_eq!(
            (a.kernel.as_str(), a.against.as_deref()),
            ("6.1", Some("6.12"))
        );
        assert_eq!(a.sessions, 3);
        let a = p(&[
            "6.1",
            "--against",
            "b/bzImage",
            "--against-modules",
            "m",
            "--sessions",
            "5",
        ])
        .unwrap()
        .unwrap();
        assert_eq!((a.against_modules.as_deref(), a.sessions), (Some("m"), 5));
        assert!(e(&["6.1", "--sessions", "2"]).contains("--against"));
        assert!(e(&["6.1", "--against", "6.12", "--cmd", "true"]).contains("do not go together"));
        let a = p(&["6.1", "--against", "6.12", "--exact"])
            .unwrap()
            .unwrap();
        assert_eq!(a.smp, 1);
        let x = |a: Args| match a.mode {
            Mode::Exact(x) => x,
            Mode::Timed => panic!("--exact gives the exact mode"),
        };
        assert_eq!(x(a).threshold, 1.0);
        assert_eq!(p(&["6.1"]).unwrap().unwrap().mode, Mode::Timed);
        assert_eq!(
            p(&["6.1", "--exact", "--smp", "2"]).unwrap().unwrap().smp,
            2
        );
        let a = p(&["6.1", "--exact", "--threshold", "0.5"])
            .unwrap()
            .unwrap();
        assert_eq!(x(a).threshold, 0.5);
        assert!(e(&["6.1", "--threshold", "2"]).contains("--exact"));
        assert!(e(&["6.1", "--explain"]).contains("--exact"));
        assert!(p(&["6.1", "--exact", "--explain"])
            .unwrap()
            .unwrap()
            .mode
            .explains());
        assert!(e(&["6.1", "--exact", "--threshold", "0"]).contains("between 0 and 100"));
    }

    #[test]
    fn exec_takes_everything_after_it() {
        let a = p(&[
            "6.12",
            "--exec",
            "/t/overhead-123",
            "--nocapture",
            "--timeout",
            "5",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            a.job,
            Job::Exec(
                ["/t/overhead-123", "--nocapture", "--timeout", "5"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(a.timeout, 1800);
        let a = p(&[
            "--cmd",
            "true",
            "6.1",
            "--env",
            "A=b=c",
            "--cargo-arg",
            "--release",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.job, Job::Cmd("true".into()));
        assert_eq!(a.env, [("A".to_string(), "b=c".to_string())]);
        assert_eq!(a.cargo_args, ["--release"]);
    }

    #[test]
    fn bad_input_is_one_line() {
        assert!(e(&[]).starts_with("no KERNEL given"));
        assert!(e(&["6.1", "6.12"]).starts_with("more than one KERNEL given (6.1, 6.12)"));
        assert!(e(&["6.1", "--bogus"]).starts_with("unknown option --bogus"));
        assert!(e(&["6.1", "--timeout"]).starts_with("--timeout needs a value"));
        assert_eq!(
            e(&["6.1", "--timeout", "0"]),
            "--timeout wants a positive number of seconds, not '0'"
        );
        assert!(e(&["6.1", "--smp", "x"]).starts_with("--smp wants a positive number"));
        assert!(e(&["6.1", "--accel", "hvf"]).contains("must be kvm or tcg"));
        assert_eq!(
            e(&["6.1", "--arch", "s390x"]),
            "--arch wants x86_64 or arm64, not 's390x'"
        );
        assert!(e(&["6.1", "--env", "noequals"]).contains("--env wants NAME=VALUE"));
        assert!(e(&["6.1", "--exec"]).starts_with("--exec needs a value"));
        assert!(e(&["6.1", "--out"]).starts_with("--out needs a value"));
        assert!(e(&["6.1", "--out="]).starts_with("--out wants a directory"));
        let env = parse(&["vmtest".to_string(), "6.1".to_string()], Some("xen")).unwrap_err();
        assert!(format!("{env:#}").contains("not 'xen'"));
    }

    #[test]
    fn tasks_and_ci_options() {
        let msg = |s: &[&str]| format!("{:#}", parse_task(s).unwrap_err());
        assert_eq!(
            msg(&[]),
            "no task given; tasks: vmtest, ci, kselftest, flakes, history (cargo xtask --help)"
        );
        assert!(msg(&["bogus"]).starts_with("unknown task 'bogus'"));
        assert!(matches!(parse_task(&["--help"]), Ok(Parsed::Help(_))));
        let Ok(Parsed::Help(h)) = parse_task(&["vmtest", "--help"]) else {
            panic!("vmtest --help")
        };
        for want in [
            "KERNEL is one of:",
            "--alive-timeout",
            "Exit status:",
            "vmtest.json",
        ] {
            assert!(h.contains(want), "{want}");
        }
        // One KERNEL only: --help must not offer a second.
        assert!(!h.contains("[KERNEL]..."), "{h}");
        let Ok(Parsed::Ci(c)) = parse_task(&["ci"]) else {
            panic!("ci")
        };
        assert_eq!(
            (c.jobs, c.matrix, c.out.as_path()),
            (2, false, "target/ci".as_ref())
        );
        let Ok(Parsed::Ci(c)) =
            parse_task(&["ci", "-j1", "--kernel", "6.1,newest", "--skip=fmt,clippy"])
        else {
            panic!("ci options")
        };
        assert_eq!(
            (c.jobs, c.kernels),
            (1, vec!["6.1".into(), "newest".into()])
        );
        assert_eq!(c.skip, ["fmt", "clippy"]);
        assert!(msg(&["ci", "--skip", "lint"]).starts_with("--skip wants one of fmt, clippy"));
        assert!(msg(&["ci", "--jobs", "0"]).starts_with("--jobs wants a positive number"));
        assert_eq!(
            msg(&["ci", "--markdown"]),
            "--collect is needed too (see --help)"
        );
        assert!(msg(&["ci", "--no-vms", "--vms-only"]).contains("do not go together"));
    }
}
