//! `cargo xtask ci`'s options, the host steps it may skip among them.

use std::path::PathBuf;

use crate::util::values::positive_usize;

/// `cargo xtask ci`'s options.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CiArgs {
    /// Print the CI kernels (ci/kernels) as a GitHub Actions matrix,
    /// {"kernel":[...]}, and exit
    #[arg(long, conflicts_with = "collect")]
    pub matrix: bool,
    /// Kernels booted at once. A VM under TCG keeps about half a host CPU busy (its
    /// guest waits on timers and 9p): on 2 CPUs the four CI kernels took 130-135 s one at
    /// a time, 82-84 s two at a time (27-46 s each), 62-64 s all four at once; but in
    /// the fresh-clone rehearsals four at once took 94-115 s, one kernel up to 100 s, past
    /// the 90 s budget a kernel. Two keeps each kernel well inside it
    #[arg(long, short = 'j', value_name = "N", default_value_t = 2, value_parser = positive_usize)]
    pub jobs: usize,
    /// Only these kernels, each as a line of ci/kernels (comma-separated or repeated;
    /// default: ci/kernels), e.g. --kernel "6.1,6.12 --arch arm64"
    #[arg(long = "kernel", value_name = "KERNEL", value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Leave out a step: fmt, clippy, xtask-tests, actionlint, host-tests, slow-tests, check-ktap,
    /// check-kselftest (repeatable or comma-separated)
    #[arg(long, value_name = "STEP", value_delimiter = ',', value_parser = step)]
    pub skip: Vec<Step>,
    /// Only the host steps: no kernel, no report
    #[arg(long = "no-vms", conflicts_with = "vms_only")]
    pub no_vms: bool,
    /// Only the kernels and the report
    #[arg(long = "vms-only")]
    pub vms_only: bool,
    /// Where each kernel's files and the report go (emptied first)
    #[arg(long, value_name = "DIR", default_value = "target/ci")]
    pub out: PathBuf,
    /// Run nothing: summarize the kernels' results already in DIR/<kernel>/ (as the
    /// workflow's last job does with the artifacts) and write the report there
    #[arg(long, value_name = "DIR")]
    pub collect: Option<PathBuf>,
    /// With --collect: the table and the report in Markdown, for $GITHUB_STEP_SUMMARY
    #[arg(long, requires = "collect")]
    pub markdown: bool,
}

/// The host steps of `cargo xtask ci`, in the order they run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Fmt,
    Clippy,
    XtaskTests,
    Actionlint,
    HostTests,
    SlowTests,
    CheckKtap,
    CheckKselftest,
}

impl Step {
    /// Its name, as `--skip` takes it and the log says it.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map_or_else(String::new, |v| v.get_name().to_owned())
    }
}

/// `--skip`'s value parser (clap's): a host step's name.
pub fn step(v: &str) -> Result<Step, String> {
    <Step as clap::ValueEnum>::from_str(v, false).map_err(|_| {
        let names: Vec<String> = <Step as clap::ValueEnum>::value_variants()
            .iter()
            .map(|s| s.name())
            .collect();
        format!("wants one of {}", names.join(", "))
    })
}
