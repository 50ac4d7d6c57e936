//! The guest's job: its environment and the script the init runs (the test
//! executables, then the command; or the user's command).

use std::path::Path;

use crate::build::guest_build::test_name;
use crate::util::document::Emulation;
use crate::util::env_vars::{
    ABSENT_ENV, CACHE_ENV, EMULATED_ENV, EMULATOR_ENV, ENV_PREFIX, KTAP_ENV, PROGRESS_ENV,
    STRICT_ENV,
};
use crate::util::sh_quote;
use crate::vm;
use crate::vm::crash::{self, Crash};
use crate::vm::summary;
use crate::vm::{Accel, Clock};

#[derive(Debug, PartialEq, Eq, Clone)]
pub enum Job {
    /// Build and run the test executables with these libtest arguments.
    Tests(Vec<String>),
    /// Run bash code.
    Cmd(String),
    /// Run a program with its arguments.
    Exec(Vec<String>),
}

/// After the tests, the command saves its result into the output directory.
pub struct Bench {
    pub exe: String,
    pub args: Vec<String>,
}

impl Bench {
    /// Under TCG the smallest plan that still writes a whole result: its
    /// figures are no performance figures, the result says it is emulated,
    /// and the suite has already proven every count. What it costs is
    /// loading and attaching each program once (no warm-up under
    /// emulation); 10000 events x 3 rounds took 36-71 s a kernel here.
    /// `extra` (--bench-arg) comes last, e.g. a --baseline to gate on.
    pub fn new(exe: String, accel: Accel, extra: &[String]) -> Bench {
        let mut args: Vec<String> = Vec::new();
        if accel == Accel::Tcg {
            args.extend(
                ["--iterations", "1000", "--repeat", "1", "--no-prog-stats"].map(String::from),
            );
        }
        args.push("--save".into());
        args.push(format!("{}/result.json", vm::GUEST_OUT));
        args.extend(extra.iter().cloned());
        Bench { exe, args }
    }
}

/// The links on every function: their attach and detach are half an
/// exact run's instructions, and their counts spread beyond any
/// threshold from boot to boot (docs/exact.md), so no step of theirs
/// could be judged (`cargo xtask history` leaves them out).
pub const EVERY_FUNCTION: &[&str] = &[
    "kprobe.multi-all-loop",
    "kretprobe.multi-all-loop",
    "fentry.multi-all-loop",
    "fexit.multi-all-loop",
    "fsession.multi-all-loop",
];

/// `vmtest`'s arguments that leave [`EVERY_FUNCTION`] out of the command's
/// run after the tests.
pub fn skip_every_function() -> [String; 2] {
    [
        "--bench-arg=--skip".to_owned(),
        format!("--bench-arg={}", EVERY_FUNCTION.join(",")),
    ]
}

/// The plan of `--exact`: under an instruction clock a run is a count, and
/// the command keeps each mechanism's smallest (what no tick landed in).
/// Runs of 200 events (0.2-0.6M instructions; a tick every 4M) make a
/// tick-free one all but sure among [`EXACT_ROUNDS`] rounds; no budget
/// beyond them, no prog-stats run.
pub const EXACT_PLAN: &[&str] = &["--iterations", "200", "--budget", "0", "--no-prog-stats"];

/// The rounds of `--exact` unless `--rounds` says otherwise.
pub const EXACT_ROUNDS: u32 = 7;

impl Bench {
    /// `--exact`: [`EXACT_PLAN`] with `rounds` rounds, then `extra`.
    pub fn exact(exe: String, rounds: u32, extra: &[String]) -> Bench {
        let mut args: Vec<String> = EXACT_PLAN.iter().map(|s| s.to_string()).collect();
        args.extend(["--repeat".to_owned(), rounds.to_string()]);
        args.push("--save".into());
        args.push(format!("{}/result.json", vm::GUEST_OUT));
        args.extend(extra.iter().cloned());
        Bench { exe, args }
    }
}

/// What the guest's suite is to expect of the kernel: strict mode or not,
/// and the file of what it is declared to lack.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    pub strict: bool,
    pub absent: Option<&'a Path>,
}

/// The guest environment, in order of precedence (later wins); `extra`:
/// the user's `--env` pairs, last.
pub fn guest_env(
    job: &Job,
    clock: Clock,
    extra: &[(String, String)],
    accel: Accel,
    expect: Expect<'_>,
    host: &[(String, String)],
    emulator: Option<&str>,
) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = host
        .iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && k != CACHE_ENV)
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    env.push(("VMTEST_OUT".into(), Some(vm::GUEST_OUT.into())));
    // Which mechanism a crash of the guest kernel happened in (vm/crash.rs).
    env.push((PROGRESS_ENV.into(), Some(progress_file())));
    // The suite's KTAP outlives the VM (a host path would be read-only there).
    if let Job::Tests(_) = job {
        env.push((
            KTAP_ENV.into(),
            Some(format!("{}/suite.ktap", vm::GUEST_OUT)),
        ));
    }
    if expect.strict {
        env.push((STRICT_ENV.into(), Some("1".into())));
    }
    env.push(("RUST_BACKTRACE".into(), Some("0".into())));
    // Rates under TCG are not performance figures: the suite labels them.
    // Exact: the guest's clock counts its instructions, and the command
    // records which emulator counted them.
    let emulated = match (accel, clock) {
        (Accel::Tcg, Clock::Instructions) => Some(Emulation::TcgIcount),
        (Accel::Tcg, Clock::Time) => Some(Emulation::Tcg),
        (Accel::Kvm, _) => None,
    };
    env.push((EMULATED_ENV.into(), emulated.map(String::from)));
    if clock == Clock::Instructions {
        env.push((EMULATOR_ENV.into(), emulator.map(String::from)));
    }
    if let Some(f) = expect.absent {
        env.push((ABSENT_ENV.into(), Some(f.display().to_string())));
    }
    for (k, v) in extra {
        env.push((k.clone(), Some(v.clone())));
    }
    env
}

/// The guest's progress file, in the output share.
fn progress_file() -> String {
    format!("{}/{}", vm::GUEST_OUT, crash::PROGRESS_FILE)
}

/// What a boot after a crash leaves out: the steps that finished, the
/// steps other than the suite that crashed (they would crash again), and
/// for the command, every mechanism that crashed (`--skip`). The suite
/// itself leaves out the mechanisms its KTAP file has a result for.
#[derive(Debug, Default)]
pub struct Resume {
    pub done: Vec<String>,
    pub crashed: Vec<Crash>,
}

impl Resume {
    /// Whether the test binary of step `name` is run.
    pub fn runs(&self, name: &str) -> bool {
        !self.done.iter().any(|d| d == name)
            && !self
                .crashed
                .iter()
                .any(|c| c.step == name && c.step != crash::SUITE)
    }

    /// `bench` with `--skip` for each mechanism that crashed.
    pub fn bench(&self, bench: &Bench) -> Bench {
        let mut args = bench.args.clone();
        for c in &self.crashed {
            args.push(format!("--skip={}", c.mechanism));
        }
        Bench {
            exe: bench.exe.clone(),
            args,
        }
    }
}

pub fn job_script(
    repo: &Path,
    env: &[(String, Option<String>)],
    job: &Job,
    exes: &[String],
    bench: Option<&Bench>,
) -> String {
    let mut s = String::from("# generated by cargo xtask vmtest\n");
    // VMTEST_TOOLS: the init's busybox applets, when the host root's own
    // programs are of another architecture.
    s += "export PATH=${VMTEST_TOOLS:+$VMTEST_TOOLS:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n";
    s += "export HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8\n";
    s += &format!(
        "export CARGO_MANIFEST_DIR={}\n",
        sh_quote(&repo.display().to_string())
    );
    for (k, v) in env {
        match v {
            Some(v) => s += &format!("export {k}={}\n", sh_quote(v)),
            None => s += &format!("unset {k}\n"),
        }
    }
    s += &format!("cd {} || exit 125\n", sh_quote(&repo.display().to_string()));
    match job {
        Job::Cmd(c) => {
            s += c;
            s.push('\n');
        }
        Job::Exec(argv) => {
            s += &argv
                .iter()
                .map(|a| sh_quote(a))
                .collect::<Vec<_>>()
                .join(" ");
            s.push('\n');
        }
        Job::Tests(targs) => s += &tests_script(repo, targs, exes, bench),
    }
    s
}

/// Default mode: each test executable, then the command; exit status = the
/// first failing one's.
fn tests_script(repo: &Path, targs: &[String], exes: &[String], bench: Option<&Bench>) -> String {
    let mut s = String::new();
    s += "rc=0\n";
    let shown = |e: &String| {
        Path::new(e)
            .strip_prefix(repo)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| e.clone())
    };
    // Each step's exit status and times, for vmtest.json.
    let step = |name: &str| {
        format!(
            "printf '%s\\t%s\\t%s\\t%s\\n' {} $r $t $EPOCHREALTIME >>{}/{}\n",
            sh_quote(name),
            vm::GUEST_OUT,
            summary::STEPS_FILE
        )
    };
    // Before and after each step, for the host to tell which one crashed.
    let mark = |prefix: &str, name: &str| {
        format!(
            "echo {} >>{}\n",
            sh_quote(&format!("{prefix}{name}")),
            progress_file()
        )
    };
    for e in exes {
        let line = format!("vmtest: running {} {}", shown(e), targs.join(" "));
        s += &format!("echo {}\n", sh_quote(line.trim_end()));
        s += &mark(crash::STEP, &test_name(e));
        s += "t=$EPOCHREALTIME\n";
        s += &sh_quote(e);
        for t in targs {
            s += " ";
            s += &sh_quote(t);
        }
        s += "\nr=$?; [ $rc -ne 0 ] || rc=$r\n";
        s += &step(&test_name(e));
        s += &mark(crash::DONE, &test_name(e));
    }
    if let Some(b) = bench {
        let words: Vec<String> = std::iter::once(&b.exe)
            .chain(&b.args)
            .map(|w| sh_quote(w))
            .collect();
        let line = format!("vmtest: running {} {}", shown(&b.exe), b.args.join(" "));
        s += &format!("echo {}\n", sh_quote(&line));
        s += &mark(crash::STEP, "bpf-overhead");
        // stderr piped: no progress bar on the serial console; its
        // output (and a gate's verdict) kept in command.log.
        // POSIX sh (no PIPESTATUS, no SECONDS): an arm64 guest runs this
        // with busybox's sh.
        s += &format!(
            "t=$EPOCHREALTIME\n{{ {} 2>&1; echo $? >/tmp/vmtest-command.rc; }} | tee {}/command.log\n",
            words.join(" "),
            vm::GUEST_OUT
        );
        s += "r=$(cat /tmp/vmtest-command.rc); [ $rc -ne 0 ] || rc=$r\n";
        s += &step("bpf-overhead");
        s += &mark(crash::DONE, "bpf-overhead");
        s += "echo \"vmtest: bpf-overhead exit $r in $(( ${EPOCHREALTIME%.*} - ${t%.*} ))s\"\n";
    }
    s += "exit $rc\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Expect<'static> = Expect {
        strict: true,
        absent: None,
    };
    use crate::tasks::vmtest::Args;

    fn args(v: &[&str]) -> Args {
        let argv: Vec<String> = std::iter::once("vmtest")
            .chain(v.iter().copied())
            .map(String::from)
            .collect();
        use crate::cli::args::{parse, Parsed, Task};
        match parse(&argv, None).unwrap() {
            Parsed::Task(Task::Vmtest(v)) => v.checked().unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn guest_environment() {
        let a = args(&["6.1", "--env", "BPF_OVERHEAD_STRICT=0"]);
        let host = [
            ("BPF_OVERHEAD_CACHE".to_string(), "/c".to_string()),
            ("BPF_OVERHEAD_X".to_string(), "y z".to_string()),
            (
                "BPF_OVERHEAD_KTAP".to_string(),
                "/host/suite.ktap".to_string(),
            ),
            ("HOME".to_string(), "/root".to_string()),
        ];
        let env = guest_env(
            &a.job,
            a.mode.clock(),
            &a.env,
            Accel::Tcg,
            Expect {
                strict: true,
                absent: Some(Path::new("/r/ci/absent/6.1")),
            },
            &host,
            None,
        );
        let s = job_script(
            Path::new("/r"),
            &env,
            &a.job,
            &["/r/target/t-1".into()],
            None,
        );
        let want = "export BPF_OVERHEAD_X='y z'\n\
                    export BPF_OVERHEAD_KTAP=/host/suite.ktap\n\
                    export VMTEST_OUT=/run/vmtest-out\n\
                    export BPF_OVERHEAD_PROGRESS=/run/vmtest-out/progress\n\
                    export BPF_OVERHEAD_KTAP=/run/vmtest-out/suite.ktap\n\
                    export BPF_OVERHEAD_STRICT=1\n\
                    export RUST_BACKTRACE=0\n\
                    export BPF_OVERHEAD_EMULATED=tcg\n\
                    export BPF_OVERHEAD_ABSENT=/r/ci/absent/6.1\n\
                    export BPF_OVERHEAD_STRICT=0\n\
                    cd /r || exit 125\n\
                    rc=0\n\
                    echo 'vmtest: running target/t-1 --nocapture'\n\
                    echo 'vmtest-step t' >>/run/vmtest-out/progress\n\
                    t=$EPOCHREALTIME\n\
                    /r/target/t-1 --nocapture\n\
                    r=$?; [ $rc -ne 0 ] || rc=$r\n\
                    printf '%s\\t%s\\t%s\\t%s\\n' t $r $t $EPOCHREALTIME >>/run/vmtest-out/steps.tsv\n\
                    echo 'vmtest-done t' >>/run/vmtest-out/progress\n\
                    exit $rc\n";
        assert!(s.ends_with(want), "{s}");
        assert!(!s.contains("BPF_OVERHEAD_CACHE") && !s.contains("HOME=/root\n"));
        let a = args(&["6.1", "--exec", "/bin/x", "a b"]);
        let env = guest_env(
            &a.job,
            a.mode.clock(),
            &a.env,
            Accel::Kvm,
            STRICT,
            &[],
            None,
        );
        let s = job_script(Path::new("/r"), &env, &a.job, &[], None);
        assert!(s.contains("unset BPF_OVERHEAD_EMULATED\n"));
        assert!(!s.contains("BPF_OVERHEAD_ABSENT"));
        assert!(s.contains("export VMTEST_OUT=/run/vmtest-out\n"));
        assert!(
            !s.contains("BPF_OVERHEAD_KTAP"),
            "only the suite writes KTAP"
        );
        assert!(s.ends_with("cd /r || exit 125\n/bin/x 'a b'\n"));
    }

    #[test]
    fn the_command_saves_its_result_after_the_tests() {
        let a = args(&["6.1"]);
        let env = guest_env(
            &a.job,
            a.mode.clock(),
            &a.env,
            Accel::Tcg,
            STRICT,
            &[],
            None,
        );
        let bench = Bench::new(
            "/r/target/debug/bpf-overhead".into(),
            Accel::Tcg,
            &["--baseline".into(), "/b.json".into()],
        );
        let s = job_script(
            Path::new("/r"),
            &env,
            &a.job,
            &["/r/target/t-1".into()],
            Some(&bench),
        );
        let want = "steps.tsv\n\
             echo 'vmtest-done t' >>/run/vmtest-out/progress\n\
             echo 'vmtest: running target/debug/bpf-overhead --iterations 1000 --repeat 1 \
             --no-prog-stats --save /run/vmtest-out/result.json --baseline /b.json'\n\
             echo 'vmtest-step bpf-overhead' >>/run/vmtest-out/progress\n\
             t=$EPOCHREALTIME\n\
             { /r/target/debug/bpf-overhead --iterations 1000 --repeat 1 \
             --no-prog-stats --save /run/vmtest-out/result.json --baseline /b.json \
             2>&1; echo $? >/tmp/vmtest-command.rc; } | tee /run/vmtest-out/command.log\n\
             r=$(cat /tmp/vmtest-command.rc); [ $rc -ne 0 ] || rc=$r\n\
             printf '%s\\t%s\\t%s\\t%s\\n' bpf-overhead $r $t $EPOCHREALTIME \
             >>/run/vmtest-out/steps.tsv\n\
             echo 'vmtest-done bpf-overhead' >>/run/vmtest-out/progress\n\
             echo \"vmtest: bpf-overhead exit $r in $(( ${EPOCHREALTIME%.*} - ${t%.*} ))s\"\n\
             exit $rc\n";
        assert!(s.ends_with(want), "{s}");
        let kvm = Bench::new("/b".into(), Accel::Kvm, &[]);
        assert_eq!(kvm.args, ["--save", "/run/vmtest-out/result.json"]);
    }
}
