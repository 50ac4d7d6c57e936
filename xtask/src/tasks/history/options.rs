//! `cargo xtask history`'s options, and what every part of a history run
//! shares: what a count depends on besides its build, and where a run
//! keeps and writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::builds::Build;
use super::kept::Key;
use crate::kernels::arch::{arch, Arch};
use crate::util::values::{percent, positive, positive_usize};

/// The links on every function: their attach and detach are half an
/// exact run's instructions, and their counts spread beyond any
/// threshold from boot to boot (docs/exact.md), so no step of theirs
/// could be judged.
pub const EVERY_FUNCTION: &[&str] = &["kprobe.multi-all-loop", "kretprobe.multi-all-loop"];

/// The command's rounds per build: a tick (every 4M instructions) lands in
/// a run of 200 events at most one time in 5 (the return uprobes' 0.8M), so
/// in all of 5 rounds one time in 3000, adding under 1% to their counts.
pub const ROUNDS: u32 = 5;

/// `cargo xtask history`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct HistoryArgs {
    /// A Debian series (6.12, 6.1) or a range of series (6.16..7.3)
    #[arg(value_name = "SERIES")]
    pub series: String,
    /// The builds' architecture: x86_64 or arm64
    #[arg(long, value_name = "ARCH", default_value = "x86_64", value_parser = arch)]
    pub arch: Arch,
    /// Only builds of this upstream release (6.12.74) or build (6.12.74+deb12-amd64) and later
    #[arg(long, value_name = "RELEASE")]
    pub since: Option<String>,
    /// Only builds up to this upstream release or build
    #[arg(long, value_name = "RELEASE")]
    pub until: Option<String>,
    /// A step: a count that changed by more than PERCENT from one build to the next
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, value_parser = percent)]
    pub threshold: f64,
    /// Print the builds, each with its version, suites and whether it is kept, and exit
    #[arg(long)]
    pub list: bool,
    /// With --list: the builds to count as a GitHub Actions matrix, {"build":[...]}
    #[arg(long, requires = "list")]
    pub matrix: bool,
    /// Count only this build (a release, e.g. one job of a fan-out) and keep it
    #[arg(long, value_name = "RELEASE", conflicts_with = "list")]
    pub only: Option<String>,
    /// Count nothing: report from the kept counts (e.g. a fan-out's merge)
    #[arg(long = "no-count", conflicts_with = "only")]
    pub no_count: bool,
    /// No --explain runs on the builds either side of a step
    #[arg(long = "no-explain")]
    pub no_explain: bool,
    /// Count the links on every function too (kprobe.multi-all-loop,
    /// kretprobe.multi-all-loop): twice the time, and no step of theirs is judged
    #[arg(long = "every-function")]
    pub every_function: bool,
    /// The command's rounds per build; each count is the fewest of them
    #[arg(long, value_name = "N", default_value_t = ROUNDS, value_parser = positive)]
    pub rounds: u32,
    /// Builds counted at once (each VM keeps one host CPU busy)
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1, value_parser = positive_usize)]
    pub jobs: usize,
    /// Where the counts are kept [default: <cache>/history/<arch>]
    #[arg(long, value_name = "DIR")]
    pub kept: Option<PathBuf>,
    /// Where the report and each build's run go [default: target/history/SERIES]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// What every count of this history depends on besides the build.
pub struct Setting {
    pub qemu: String,
    pub cpu: String,
    pub plan: String,
    pub programs: String,
}

impl Setting {
    pub fn key(&self, b: &Build) -> Key {
        Key {
            release: b.release.clone(),
            version: b.version.clone(),
            qemu: self.qemu.clone(),
            cpu: self.cpu.clone(),
            plan: self.plan.clone(),
            programs: self.programs.clone(),
        }
    }
}

/// Where this run keeps and writes, and what it counted.
pub struct Runs<'a> {
    pub kept: &'a Path,
    pub out: &'a Path,
    pub cache: &'a Path,
    /// Builds whose fetch or VM failed now, with why and its exit.
    pub failed: &'a BTreeMap<String, (String, i32)>,
    /// Builds counted now.
    pub now: &'a [&'a str],
}
