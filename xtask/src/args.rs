//! `cargo xtask vmtest` arguments.

use anyhow::{bail, ensure, Context, Result};

pub const USAGE: &str = "\
Usage: cargo xtask vmtest [OPTIONS] KERNEL [-- TEST-ARGS...]
       cargo xtask vmtest [OPTIONS] KERNEL --exec PROG [ARGS...]
       (scripts/vmtest is the same command)

Boot KERNEL under qemu and run this crate's test binaries in it as root, with the
host's root file system mounted read-only over 9p (plus a RAM overlay, so everything
looks writable), and exit with their status.

KERNEL is one of:
  5.10, 6.1, 6.12, 7.3  a Debian kernel series: its newest release with modules, from
                        bullseye-security, bookworm(-security), trixie(-security,
                        -backports) or sid
  newest                the newest Debian kernel that has modules
  6.1.0-57-amd64        an exact Debian release (or one of its package names)
  PATH                  a bzImage or vmlinux you built; modules: only what is built in,
                        unless --modules DIR (a modules_install root or lib/modules/<ver>)
Debian kernels are fetched with the runner's own apt configuration (sources, lists and
state in CACHE/apt, never the host's), unpacked (not installed) and checked in a temporary
directory, then moved to CACHE/kernels/<release>/ with the vmlinux extracted from the
bzImage and the initramfs. CACHE is $BPF_OVERHEAD_CACHE or ~/.cache/bpf-overhead.
Damaged images (size against the boot header, payload that does not decompress
completely to a whole ELF) are refused before boot.

What runs in the guest (cwd = repo root; env VMTEST_OUT (see Output),
BPF_OVERHEAD_STRICT=1, BPF_OVERHEAD_EMULATED=tcg under TCG,
BPF_OVERHEAD_ABSENT=<repo>/ci/absent/<series> when that file exists, RUST_BACKTRACE=0,
CARGO_MANIFEST_DIR, and any BPF_OVERHEAD_* from the host environment):
  default              `cargo test --release --no-run --test overhead --test cleanup` on the
                       host, then each test executable with TEST-ARGS (default:
                       --nocapture), in order, with BPF_OVERHEAD_KTAP=$VMTEST_OUT/suite.ktap;
                       then the bpf-overhead command it built saves $VMTEST_OUT/result.json
                       (under TCG: --iterations 1000 --repeat 1 --no-prog-stats; the result
                       says it is emulated); exit status = the first failing one's
                       What the kernel decides, and only that, runs in the guest:
                       overhead (every mechanism attaches, or skips as declared, and
                       counts exactly) and cleanup (nothing is left in the kernel). The
                       other binaries test the command line, signals and pure logic, which
                       no kernel changes: they run on the host (--all-tests runs them here
                       too). Release builds: under TCG a debug build spends twice as long
                       in user space. Under TCG (BPF_OVERHEAD_EMULATED=tcg) the suite
                       fires 10000 events a mechanism with no warm-up run: counting is as
                       exact, and no rate measured there is a performance figure
  --cmd 'SHELL CODE'   run this bash code instead (no cargo build)
  --exec PROG ARGS...  run PROG with ARGS (everything after --exec): a cargo runner,
                       CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=\"$PWD/scripts/vmtest 6.1 --exec\"

Output: DIR (--out) is shared into the guest read-write (9p, tag `out`) at $VMTEST_OUT
(/run/vmtest-out): the guest writes into a fresh directory DIR/.vmtest-run.*, whose files
are renamed into DIR once the VM has exited (each whole; same names replaced, and said so).
One run at a time per DIR (a lock); as root, the files take DIR's owner.

Options:
  --cargo-arg ARG      extra argument for `cargo test --no-run` (repeatable)
  --env NAME=VALUE     extra guest environment variable (repeatable; overrides the above)
  --modules DIR        modules for a KERNEL given as a path
  --accel kvm|tcg      force the accelerator (also env VMTEST_ACCEL). Default: kvm only if
                       /dev/kvm is usable and the CPU has vmx or svm, else tcg
                       (-accel tcg,thread=single)
  --timeout SECS       kill the VM after SECS seconds (default 1800; exit 124)
  --alive-timeout SECS fail when the guest prints nothing for SECS seconds after qemu
                       starts (default 30: early console output comes within a second)
  --boot-timeout SECS  fail when the guest has not reached the command after SECS (default 300)
  --memory SIZE        guest memory (default 2G)
  --smp N              guest CPUs (default 2)
  --append ARGS        extra kernel command line
  --out DIR            where the guest's files go (default: <target dir>/vmtest/<release>,
                       the target dir being $CARGO_TARGET_DIR or the repository's target/)
  --no-bench           default mode: skip the bpf-overhead command run after the tests
  --all-tests          default mode: build and run every test binary (debug build), not
                       only overhead and cleanup
  --log FILE           also keep the console log in FILE
  --verbose            stream the kernel's boot messages too (else shown only on failure)
  --bzimage            boot the bzImage even when its vmlinux has a PVH entry
  -h, --help           this text

The last line is e.g. `vmtest: kernel 6.1.0-57-amd64 boot 3.1s total 30.2s exit 0`.
Exit status: the guest command's; 2 for bad input or setup errors (unknown kernel,
damaged image, missing host tools, build failure); 1 when the guest panicked (oops=panic),
showed no sign of life, never reached the command, gave no exit status, or (default
mode) printed no cargo `test result:` line; 124 on timeout.

Host packages: qemu-system-x86 busybox-static (apt-get install -y ...); apt and dpkg-deb.
";

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Accel {
    Kvm,
    Tcg,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Job {
    /// Build and run the test executables with these libtest arguments.
    Tests(Vec<String>),
    /// Run bash code.
    Cmd(String),
    /// Run a program with its arguments.
    Exec(Vec<String>),
}

#[derive(Debug, PartialEq, Eq)]
pub struct Args {
    pub kernel: String,
    pub job: Job,
    pub cargo_args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub modules: Option<String>,
    pub accel: Option<Accel>,
    pub timeout: u64,
    pub alive_timeout: u64,
    pub boot_timeout: u64,
    pub memory: String,
    pub smp: u32,
    pub append: String,
    pub log: Option<String>,
    pub verbose: bool,
    pub bzimage: bool,
    pub out: Option<String>,
    pub bench: bool,
    /// Run every test binary, not only [`crate::vmtest::GUEST_TESTS`].
    pub all_tests: bool,
}

/// `Ok(None)`: --help.
pub fn parse(argv: &[String], env_accel: Option<&str>) -> Result<Option<Args>> {
    let mut a = Args {
        kernel: String::new(),
        job: Job::Tests(vec!["--nocapture".into()]),
        cargo_args: Vec::new(),
        env: Vec::new(),
        modules: None,
        accel: None,
        timeout: 1800,
        alive_timeout: 30,
        boot_timeout: 300,
        memory: "2G".into(),
        smp: 2,
        append: String::new(),
        log: None,
        verbose: false,
        bzimage: false,
        out: None,
        bench: true,
        all_tests: false,
    };
    let mut accel = env_accel.map(str::to_owned);
    let mut cmd = None;
    let mut it = argv.iter().peekable();
    while let Some(arg) = it.next() {
        let (opt, inline) = match arg.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .with_context(|| format!("{opt} needs a value (see --help)")),
            }
        };
        let secs = |v: String, opt: &str| -> Result<u64> {
            match v.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => bail!("{opt} wants a positive number of seconds, not '{v}'"),
            }
        };
        match opt {
            "-h" | "--help" => return Ok(None),
            "--cmd" => cmd = Some(Job::Cmd(value()?)),
            "--exec" => {
                let rest: Vec<String> = it.by_ref().cloned().collect();
                ensure!(!rest.is_empty(), "--exec needs a command");
                cmd = Some(Job::Exec(rest));
            }
            "--cargo-arg" => a.cargo_args.push(value()?),
            "--env" => {
                let v = value()?;
                let (k, val) = v.split_once('=').context("--env wants NAME=VALUE")?;
                ensure!(
                    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                    "--env wants NAME=VALUE, not '{v}'"
                );
                a.env.push((k.to_owned(), val.to_owned()));
            }
            "--modules" => a.modules = Some(value()?),
            "--accel" => accel = Some(value()?),
            "--timeout" => a.timeout = secs(value()?, opt)?,
            "--alive-timeout" => a.alive_timeout = secs(value()?, opt)?,
            "--boot-timeout" => a.boot_timeout = secs(value()?, opt)?,
            "--memory" => a.memory = value()?,
            "--smp" => {
                let v = value()?;
                a.smp = match v.parse() {
                    Ok(n) if n > 0 => n,
                    _ => bail!("--smp wants a positive number, not '{v}'"),
                };
            }
            "--append" => a.append = value()?,
            "--log" => a.log = Some(value()?),
            "--verbose" => a.verbose = true,
            "--bzimage" => a.bzimage = true,
            "--out" => {
                let v = value()?;
                ensure!(!v.is_empty(), "--out wants a directory");
                a.out = Some(v);
            }
            "--no-bench" => a.bench = false,
            "--all-tests" => a.all_tests = true,
            "--" => {
                a.job = Job::Tests(it.by_ref().cloned().collect());
            }
            o if o.starts_with('-') && o.len() > 1 => bail!("unknown option {o} (see --help)"),
            k => {
                ensure!(
                    a.kernel.is_empty(),
                    "more than one KERNEL given ({}, {k}); test arguments go after --",
                    a.kernel
                );
                a.kernel = k.to_owned();
            }
        }
    }
    ensure!(
        !a.kernel.is_empty(),
        "no KERNEL given: a Debian series (6.1, 6.12), newest, a release (6.1.0-57-amd64) \
         or a path to a bzImage/vmlinux"
    );
    if let Some(c) = cmd {
        a.job = c;
    }
    a.accel = match accel.as_deref() {
        None | Some("") => None,
        Some("kvm") => Some(Accel::Kvm),
        Some("tcg") => Some(Accel::Tcg),
        Some(o) => bail!("--accel/VMTEST_ACCEL must be kvm or tcg, not '{o}'"),
    };
    Ok(Some(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Result<Option<Args>> {
        parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>(), None)
    }

    fn e(s: &[&str]) -> String {
        let m = format!("{:#}", p(s).unwrap_err());
        assert!(!m.contains('\n'));
        m
    }

    #[test]
    fn defaults_and_test_args() {
        let a = p(&["6.1"]).unwrap().unwrap();
        assert_eq!(a.kernel, "6.1");
        assert_eq!(a.job, Job::Tests(vec!["--nocapture".into()]));
        assert_eq!((a.timeout, a.alive_timeout, a.accel), (1800, 30, None));
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
        let a = p(&["6.1"]).unwrap().unwrap();
        assert_eq!((a.out, a.bench), (None, true));
        let a = p(&["6.1", "--out", "o/6.1", "--no-bench"])
            .unwrap()
            .unwrap();
        assert_eq!((a.out.as_deref(), a.bench), (Some("o/6.1"), false));
        let a = p(&["--out=x", "6.1"]).unwrap().unwrap();
        assert_eq!(a.out.as_deref(), Some("x"));
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
        assert!(e(&["6.1", "6.12"]).starts_with("more than one KERNEL"));
        assert!(e(&["6.1", "--bogus"]).starts_with("unknown option --bogus"));
        assert!(e(&["6.1", "--timeout"]).starts_with("--timeout needs a value"));
        assert!(e(&["6.1", "--timeout", "0"]).contains("positive number of seconds"));
        assert!(e(&["6.1", "--accel", "hvf"]).contains("must be kvm or tcg"));
        assert!(e(&["6.1", "--env", "noequals"]).contains("NAME=VALUE"));
        assert!(e(&["6.1", "--exec"]).contains("--exec needs a command"));
        assert!(e(&["6.1", "--out"]).starts_with("--out needs a value"));
        assert!(e(&["6.1", "--out="]).starts_with("--out wants a directory"));
        let env = parse(&["6.1".to_string()], Some("xen")).unwrap_err();
        assert!(format!("{env:#}").contains("not 'xen'"));
    }
}
