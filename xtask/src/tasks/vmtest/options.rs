//! vmtest's options, checked ([`Args`]), and its mode: timed, or exact.

use std::path::PathBuf;

use crate::kernels::arch::Arch;
use crate::vm::job::Job;
use crate::vm::{Accel, Clock};

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
