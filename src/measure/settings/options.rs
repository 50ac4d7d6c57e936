//! A run's settings, each in one typed home: the command line parses
//! into these types, the plan holds an [`Options`], every run takes it,
//! and the load writes it to the BPF object's read-only data.

use std::num::{NonZeroU64, NonZeroUsize};

use super::bpf_consts::{COUNT_ATOMIC, COUNT_FILTER, COUNT_PLAIN, MAX_PROG_WORK};
use crate::measure::mechanism::trigger::{DEFAULT_BATCH, MAX_BATCH};

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

/// Which events the programs of the comm and call triggers count, and how
/// (`--counting`). By default only the untimed lead-in before each timed
/// run is counted, and checked exactly; during the timed events the
/// programs do what test_overhead's do, so the figure is the mechanism's,
/// not our counting's. The `every*` modes count (or check) each timed
/// event too, to measure what that costs (docs/benchmark.md). The kernel
/// loop counts every event atomically whatever this says, as upstream's
/// bench does, and session programs always count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Counting {
    /// The lead-in's events counted (the thread check and a plain add),
    /// the timed events not: hits are the lead-in's.
    #[default]
    LeadIn,
    /// Every event counted with the thread check and a plain add, the
    /// least an exact count needs (before: `plain`).
    Every,
    /// Every event counted with the thread check and a lock-prefixed add,
    /// as upstream's bench counts (before: `atomic`).
    EveryAtomic,
    /// Every event runs the thread check alone: no count, none checked
    /// (before: `filter`).
    EveryCheck,
    /// Nothing counted, the lead-in included: test_overhead's programs
    /// throughout, and no hits checked.
    None,
}

impl Counting {
    pub const ALL: [Counting; 5] = [
        Self::LeadIn,
        Self::Every,
        Self::EveryAtomic,
        Self::EveryCheck,
        Self::None,
    ];

    /// The program's `counting` value: how it counts while counting is on.
    pub fn bpf_value(self) -> u32 {
        match self {
            Self::LeadIn | Self::Every | Self::None => COUNT_PLAIN,
            Self::EveryAtomic => COUNT_ATOMIC,
            Self::EveryCheck => COUNT_FILTER,
        }
    }

    /// Whether the lead-in's hits are counted, and so checked.
    pub fn counts_lead_in(self) -> bool {
        matches!(self, Self::LeadIn | Self::Every | Self::EveryAtomic)
    }

    /// Whether the timed events' hits are counted, and so checked.
    pub fn counts_timed(self) -> bool {
        matches!(self, Self::Every | Self::EveryAtomic)
    }

    /// Whether the program's switch is on during the timed events: they
    /// run the thread check (and the count, if any).
    pub fn on_when_timed(self) -> bool {
        matches!(self, Self::Every | Self::EveryAtomic | Self::EveryCheck)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::LeadIn => "lead-in",
            Self::Every => "every",
            Self::EveryAtomic => "every-atomic",
            Self::EveryCheck => "every-check",
            Self::None => "none",
        }
    }

    /// A mode by its name, or by the name results written before the
    /// lead-in count gave it (`plain`, `atomic`, `filter`: every event).
    pub fn parse(s: &str) -> Result<Self, String> {
        let old = match s {
            "plain" => Some(Self::Every),
            "atomic" => Some(Self::EveryAtomic),
            "filter" => Some(Self::EveryCheck),
            _ => None,
        };
        old.or_else(|| Self::ALL.into_iter().find(|c| c.name() == s))
            .ok_or_else(|| {
                format!(
                    "counting {s:?}: expected lead-in, every, every-atomic, every-check or none"
                )
            })
    }
}

impl std::fmt::Display for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
