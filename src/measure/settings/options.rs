//! A run's settings, each in one typed home: the command line parses
//! into these types, the plan holds an [`Options`], every run takes it,
//! and the load writes it to the BPF object's read-only data.

use std::num::{NonZeroU64, NonZeroUsize};

use crate::measure::mechanism::trigger::{DEFAULT_BATCH, MAX_BATCH};
use bpf_overhead_common::bpf_consts::MAX_PROG_WORK;
pub use bpf_overhead_common::document::Counting;

/// test_overhead's MAX_CNT.
pub const DEFAULT_ITERATIONS: NonZeroU64 = NonZeroU64::new(100_000).unwrap();

#[derive(Clone, Debug)]
pub struct Options {
    /// Events per mechanism run; a base fires `Mechanism::events` of
    /// them.
    pub iterations: NonZeroU64,
    /// CPU to pin to; `None`: CPU 0, or the first allowed CPU if 0 is not.
    pub cpu: Option<usize>,
    /// Turn on the kernel's BPF run-time stats for this run, for the
    /// program's own run time. They add two clock reads per program run,
    /// so runs with and without them are not comparable.
    pub bpf_stats: bool,
    /// Loop iterations per driver run, for the kernel-loop trigger.
    pub batch: Batch,
    /// Extra work the program does per hit.
    pub prog_work: ProgWork,
    /// How the comm and call triggers' programs count a hit.
    pub counting: Counting,
    /// Every program also takes the kernel stack on each hit
    /// (`--stacktrace`, upstream's bench option).
    pub stacktrace: bool,
    /// Threads firing at once, each on its own CPU (`--producers`).
    pub producers: NonZeroUsize,
    /// Where its events are slow, a timed run fires only what its lead-in
    /// says fits in this, down to a tenth of them ([`crate::measure::fitted`]).
    pub longest_run: Option<std::time::Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            iterations: DEFAULT_ITERATIONS,
            cpu: None,
            bpf_stats: false,
            batch: Batch::default(),
            prog_work: ProgWork::default(),
            counting: Counting::default(),
            stacktrace: false,
            producers: NonZeroUsize::MIN,
            longest_run: None,
        }
    }
}

/// Loop iterations per BPF_PROG_TEST_RUN of a kernel-loop driver, 1 to
/// [`MAX_BATCH`] (upstream's range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch(u32);

impl Batch {
    pub fn new(n: u32) -> Option<Self> {
        (1..=MAX_BATCH).contains(&n).then_some(Self(n))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for Batch {
    fn default() -> Self {
        Self(DEFAULT_BATCH)
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for ProgWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Rounds of extra work every program does per hit (`--prog-work`), 0 to
/// [`MAX_PROG_WORK`], the bound of the program's work loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgWork(u32);

impl ProgWork {
    pub fn new(n: u32) -> Option<Self> {
        (n <= MAX_PROG_WORK).then_some(Self(n))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    /// The program takes every shared constant from the generated header
    /// and defines none of them itself.
    #[test]
    fn the_bpf_program_takes_its_constants_from_the_header() {
        use bpf_overhead_common::bpf_consts::{c_header, C_DEFINES, C_HEADER};
        let src = include_str!("../../../bpf/overhead.bpf.c");
        assert!(src.contains(&format!("#include \"{C_HEADER}\"")));
        for (name, _) in C_DEFINES {
            assert!(!src.contains(&format!("#define {name}")), "{name}");
            assert!(src.contains(name), "{name} is unused");
        }
        let built = include_str!(concat!(env!("OUT_DIR"), "/bpf_consts.h"));
        assert_eq!(built, c_header(), "the header the object was built with");
    }
}
