//! vmtest's options: as clap parses them ([`VmtestCli`]), checked
//! ([`Args`]), and its mode: timed, or exact.

use std::path::PathBuf;

use anyhow::{bail, ensure, Result};

use crate::kernels::arch::{arch, Arch};
use crate::util::values::{directory, env_pair, percent, positive, secs};
use crate::vm::job::{Job, EXACT_ROUNDS};
use crate::vm::{Accel, Clock};

/// vmtest's command line, as clap parses it; [`VmtestCli::checked`] makes
/// it [`Args`].
#[derive(clap::Args, Debug)]
pub struct VmtestCli {
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
    /// Whether a bare `--` ended the command line (set by the parser:
    /// clap gives it no value).
    #[arg(skip)]
    pub dashdash: bool,
    /// $VMTEST_ACCEL (set by the parser).
    #[arg(skip)]
    pub env_accel: Option<String>,
}

impl VmtestCli {
    /// The options checked: one KERNEL, one job, a known accelerator.
    pub fn checked(self) -> Result<Args> {
        let v = self;
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
            _ if v.dashdash => Job::Tests(Vec::new()),
            _ => Job::Tests(vec!["--nocapture".into()]),
        };
        let accel = match v.accel.as_deref().or(v.env_accel.as_deref()) {
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
}

/// `cargo xtask vmtest`'s arguments, checked.
#[derive(Debug, PartialEq)]
pub struct Args {
    pub kernel: String,
    pub arch: Arch,
    pub job: Job,
    pub cargo_args: Vec<String>,
    pub bench_args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub modules: Option<String>,
    /// `--config FILE`: KERNEL's config.
    pub config: Option<String>,
    /// `--absent FILE`: what KERNEL lacks, declared.
    pub absent: Option<String>,
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
    /// Run every test binary, not only [`crate::build::guest_build::GUEST_TESTS`].
    pub all_tests: bool,
    /// `--against KERNEL_B`: a duet of KERNEL and KERNEL_B, `sessions` times.
    pub against: Option<String>,
    pub against_modules: Option<String>,
    pub against_config: Option<String>,
    /// `--sessions`: with `--against` in the timed mode, the duets.
    pub sessions: u32,
    pub mode: Mode,
}

/// What the guest's figures are: times, or (`--exact`) counts.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// The suite, then the command, timed; with `--against`, a duet.
    Timed,
    /// `--exact`: TCG clocked by instructions, the command's figures in
    /// instructions per event; with `--against`, kernels counted in turn.
    Exact(Exact),
}

/// `--exact`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct Exact {
    /// `--explain`: each count split by function.
    pub explain: bool,
    /// `--rounds`: the command's rounds.
    pub rounds: u32,
    /// `--threshold`, in percent: with `--against`.
    pub threshold: f64,
    /// `--across-configs`: with `--against`, a verdict across kernels
    /// whose cost-changing options differ.
    pub across_configs: bool,
    /// `--calibration`: with `--against --explain`, a host's prices.
    pub calibration: Option<PathBuf>,
}

impl Mode {
    /// What the guest's clock counts.
    pub fn clock(&self) -> Clock {
        match self {
            Mode::Timed => Clock::Time,
            Mode::Exact(_) => Clock::Instructions,
        }
    }

    /// Whether each count is split by function (`--exact --explain`).
    pub fn explains(&self) -> bool {
        matches!(self, Mode::Exact(Exact { explain: true, .. }))
    }
}
