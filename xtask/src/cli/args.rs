//! xtask's command line, parsed with clap (derive): one `Task` enum whose
//! variants are the tasks, each with its room's options; their names are
//! clap's, from the enum ([`tasks`]).
//!
//! Bad input gives one line (no usage block) and exit 2.

use anyhow::{bail, Result};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::help::{
    CI_ABOUT, CI_AFTER, HISTORY_AFTER, KSELFTEST_AFTER, VMTEST_ABOUT, VMTEST_AFTER, VMTEST_USAGE,
};
use crate::tasks::ci::options::CiArgs;
use crate::tasks::flakes::FlakesArgs;
use crate::tasks::history::HistoryArgs;
use crate::tasks::kselftest::KselftestArgs;
use crate::tasks::vmtest::VmtestCli;

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

/// The tasks, each with its room's options.
#[derive(Subcommand, Debug)]
pub enum Task {
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

/// What the command line asks for: --help's text (of xtask or a task:
/// print it, exit 0), or a task with its options.
#[derive(Debug)]
pub enum Parsed {
    Help(String),
    Task(Task),
}

/// Parses xtask's arguments (without the program name). `env_accel`:
/// $VMTEST_ACCEL. Errors are one line, without the task's prefix.
pub fn parse(argv: &[String], env_accel: Option<&str>) -> Result<Parsed> {
    let mut cli =
        match Cli::try_parse_from(std::iter::once("xtask").chain(argv.iter().map(|s| &**s))) {
            Ok(c) => c,
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                return Ok(Parsed::Help(e.render().to_string()));
            }
            Err(e) => bail!("{}", one_line(&e)),
        };
    if let Task::Vmtest(v) = &mut cli.task {
        // clap gives no value for a bare trailing `--`: that is "no test
        // arguments", not the default --nocapture.
        v.dashdash = argv
            .iter()
            .take_while(|a| *a != "--exec" && !a.starts_with("--exec="))
            .any(|a| a == "--");
        v.env_accel = env_accel.map(String::from);
    }
    Ok(Parsed::Task(cli.task))
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
    use crate::kernels::arch::Arch;
    use crate::tasks::ci::options::Step;
    use crate::tasks::vmtest::{Args, Mode};
    use crate::vm::job::Job;
    use crate::vm::Accel;

    fn parse_task(s: &[&str]) -> Result<Parsed> {
        parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>(), None)
    }

    /// vmtest's arguments; `None` for --help.
    fn p(s: &[&str]) -> Result<Option<Args>> {
        let mut argv = vec!["vmtest"];
        argv.extend_from_slice(s);
        Ok(match parse_task(&argv)? {
            Parsed::Task(Task::Vmtest(v)) => Some(v.checked()?),
            Parsed::Help(_) => None,
            Parsed::Task(other) => panic!("not vmtest: {other:?}"),
        })
    }

    #[test]
    fn history_options() {
        let h = |s: &[&str]| match parse_task(s) {
            Ok(Parsed::Task(Task::History(h))) => Ok(*h),
            Ok(other) => panic!("not history: {other:?}"),
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
        let argv = ["vmtest".to_string(), "6.1".to_string()];
        let Ok(Parsed::Task(Task::Vmtest(v))) = parse(&argv, Some("xen")) else {
            panic!("vmtest 6.1 parses");
        };
        assert!(format!("{:#}", v.checked().unwrap_err()).contains("not 'xen'"));
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
        let Ok(Parsed::Task(Task::Ci(c))) = parse_task(&["ci"]) else {
            panic!("ci")
        };
        assert_eq!(
            (c.jobs, c.matrix, c.out.as_path()),
            (2, false, "target/ci".as_ref())
        );
        let Ok(Parsed::Task(Task::Ci(c))) =
            parse_task(&["ci", "-j1", "--kernel", "6.1,newest", "--skip=fmt,clippy"])
        else {
            panic!("ci options")
        };
        assert_eq!(
            (c.jobs, c.kernels),
            (1, vec!["6.1".into(), "newest".into()])
        );
        assert_eq!(c.skip, [Step::Fmt, Step::Clippy]);
        assert!(msg(&["ci", "--skip", "lint"]).starts_with("--skip wants one of fmt, clippy"));
        assert!(msg(&["ci", "--jobs", "0"]).starts_with("--jobs wants a positive number"));
        assert_eq!(
            msg(&["ci", "--markdown"]),
            "--collect is needed too (see --help)"
        );
        assert!(msg(&["ci", "--no-vms", "--vms-only"]).contains("do not go together"));
    }
}
