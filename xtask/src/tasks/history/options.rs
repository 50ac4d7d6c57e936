//! `cargo xtask history`'s options, and what every part of a history run
//! shares: what a count depends on besides its build, and where a run
//! keeps and writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::builds::Build;
use super::kept::Key;
use crate::kernels::arch::{arch, Arch};
use crate::util::values::{percent, positive, positive_usize};
use crate::vm::job::EVERY_FUNCTION;

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
    /// kretprobe.multi-all-loop, fentry/fexit/fsession.multi-all-loop): twice the time, and no step of theirs is judged
    #[arg(long = "every-function")]
    pub every_function: bool,
    /// Count only these mechanisms (and their bases), comma-separated or
    /// repeated: the command's -m [default: all]
    #[arg(
        short = 'm',
        long = "mechanism",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub mechanisms: Vec<String>,
    /// The command's rounds per build; each count is the fewest of them
    #[arg(long, value_name = "N", default_value_t = ROUNDS, value_parser = positive)]
    pub rounds: u32,
    /// Builds counted at once (each VM keeps one host CPU busy)
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1, value_parser = positive_usize)]
    pub jobs: usize,
    /// Price the steps whose kinds of events changed (an int3 fewer, a
    /// system call more) for the host that made FILE
    /// (`bpf-overhead calibrate --save FILE`), not on instructions alone
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Where the counts are kept [default: <cache>/history/<arch>]
    #[arg(long, value_name = "DIR")]
    pub kept: Option<PathBuf>,
    /// Where the report and each build's run go [default: target/history/SERIES]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl HistoryArgs {
    /// `-m`'s names, sorted and each once (so that `-m a,b` and `-m b,a`
    /// keep the same counts); empty for all. A link on every function
    /// needs --every-function, else --skip would drop it.
    pub fn selection(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = self
            .mechanisms
            .iter()
            .map(|m| m.trim().to_string())
            .collect();
        if names.iter().any(String::is_empty) {
            return Err("-m: an empty mechanism name (see bpf-overhead --list)".into());
        }
        if let Some(m) = names
            .iter()
            .find(|m| !self.every_function && EVERY_FUNCTION.contains(&m.as_str()))
        {
            return Err(format!(
                "-m {m}: a link on every function, counted only with --every-function"
            ));
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The command's plan, as kept counts are keyed: rounds, events, what
    /// is left out and, with -m, what is counted.
    pub fn plan(&self, selection: &[String]) -> String {
        let mut plan = format!("{} rounds of 200 events", self.rounds);
        if !self.every_function {
            plan.push_str(", the links on every function left out");
        }
        if !selection.is_empty() {
            plan.push_str(&format!(", only {}", selection.join(",")));
        }
        plan
    }
}

/// What every count of this history depends on besides the build.
pub struct Setting {
    pub qemu: String,
    pub cpu: String,
    pub plan: String,
    pub programs: String,
    /// `-m`'s mechanisms ([`HistoryArgs::selection`]), empty for all.
    pub selection: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: HistoryArgs,
    }

    fn args(argv: &[&str]) -> HistoryArgs {
        Cli::try_parse_from(std::iter::once("history").chain(argv.iter().copied()))
            .unwrap()
            .a
    }

    /// -m changes the plan, and so the key counts are kept under; its
    /// order does not.
    #[test]
    fn m_selects_and_keys_the_counts() {
        let all = args(&["6.12"]);
        assert_eq!(all.selection().unwrap(), Vec::<String>::new());
        let one = args(&["6.12", "-m", "uprobe-nop"]);
        assert_eq!(one.selection().unwrap(), ["uprobe-nop"]);
        let plan = |a: &HistoryArgs| a.plan(&a.selection().unwrap());
        assert_eq!(
            plan(&one),
            "5 rounds of 200 events, the links on every function left out, only uprobe-nop"
        );
        assert_ne!(plan(&all), plan(&one));
        let ab = args(&["6.12", "-m", "raw_tp,fentry"]);
        let ba = args(&["6.12", "-m", "fentry", "--mechanism", "raw_tp,fentry"]);
        assert_eq!(plan(&ab), plan(&ba));
        let e = args(&["6.12", "-m", "kprobe.multi-all-loop"]).selection();
        assert!(e.unwrap_err().contains("--every-function"));
        let ok = args(&["6.12", "--every-function", "-m", "kprobe.multi-all-loop"]);
        assert_eq!(ok.selection().unwrap(), ["kprobe.multi-all-loop"]);
        assert!(args(&["6.12", "-m", "a,,b"]).selection().is_err());
    }
}
