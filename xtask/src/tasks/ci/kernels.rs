//! The CI kernels (`ci/kernels`): each a KERNEL, its architecture and what
//! its guest runs, read from the file and given to the workflow's matrix.

use anyhow::{bail, ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::tasks::ci::collect::EXACT_SUFFIX;

/// The CI kernels, one a line: both `cargo xtask ci` and the GitHub workflow
/// (through `cargo xtask ci --matrix`) read it.
pub const KERNELS_FILE: &str = "ci/kernels";

/// One CI kernel: KERNEL as `cargo xtask vmtest` takes it, and its guest's
/// architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiKernel {
    pub kernel: String,
    pub arch: Arch,
    pub run: Run,
}

/// What a CI kernel's guest runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// The suite, then the command.
    Suite,
    /// `--kselftest`: the kselftest collection from its tarball (`cargo
    /// xtask kselftest`) through run_kselftest.sh, in a busybox-only root
    /// (scripts/kselftest-guest).
    Kselftest,
    /// `--exact`: the command's counts under the instruction clock
    /// (`vmtest --exact --accel tcg`).
    Exact,
}

impl CiKernel {
    /// `KERNEL [--arch ARCH] [--kselftest | --exact]`.
    pub fn from_line(line: &str) -> Result<CiKernel> {
        let usage =
            || format!("one KERNEL [--arch ARCH] [--kselftest | --exact] a line, not '{line}'");
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((kernel, mut rest)) = words.split_first() else {
            bail!(usage());
        };
        ensure!(!kernel.starts_with('-'), usage());
        let (mut arch, mut run) = (Arch::X86_64, Run::Suite);
        loop {
            rest = match rest {
                [] => break,
                ["--arch", a, more @ ..] => {
                    arch = Arch::parse(a).with_context(|| format!("'{line}': --arch"))?;
                    more
                }
                ["--kselftest", more @ ..] if run == Run::Suite => {
                    run = Run::Kselftest;
                    more
                }
                ["--exact", more @ ..] if run == Run::Suite => {
                    run = Run::Exact;
                    more
                }
                _ => bail!(usage()),
            };
        }
        Ok(CiKernel {
            kernel: (*kernel).to_owned(),
            arch,
            run,
        })
    }

    /// Its name in tables, directories and artifacts: KERNEL, and for
    /// another architecture than x86_64 KERNEL-ARCH (`newest-arm64`), with
    /// `-kselftest` after it for a kselftest run (`6.12-arm64-kselftest`),
    /// `-exact` for counts (`6.12-exact`).
    pub fn name(&self) -> String {
        let name = self.arch.tagged(&self.kernel);
        match self.run {
            Run::Kselftest => format!("{name}-kselftest"),
            Run::Exact => format!("{name}{EXACT_SUFFIX}"),
            Run::Suite => name,
        }
    }
}

pub fn names(kernels: &[CiKernel]) -> Vec<String> {
    kernels.iter().map(CiKernel::name).collect()
}

/// The kernels file: one `KERNEL [--arch ARCH] [--kselftest | --exact]` a
/// line; `#` starts a comment.
pub fn read_kernels(text: &str) -> Result<Vec<CiKernel>> {
    let kernels = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| CiKernel::from_line(l).with_context(|| KERNELS_FILE.to_owned()))
        .collect::<Result<Vec<_>>>()?;
    ensure!(!kernels.is_empty(), "{KERNELS_FILE} lists no kernel");
    Ok(kernels)
}

/// The GitHub Actions matrix: one entry a kernel, with its name (the job's,
/// the artifact's, the directory under target/ci) and architecture.
pub fn matrix(kernels: &[CiKernel]) -> serde_json::Value {
    let include: Vec<_> = kernels
        .iter()
        .map(|k| {
            serde_json::json!({
                "name": k.name(),
                "kernel": k.kernel,
                "arch": k.arch.name(),
                "kselftest": k.run == Run::Kselftest,
                "exact": k.run == Run::Exact,
            })
        })
        .collect();
    serde_json::json!({ "include": include })
}
