//! The settings a document records as words, typed: each serializes to
//! the word results have always held, and reads back the older words too.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bpf_consts::{COUNT_ATOMIC, COUNT_FILTER, COUNT_PLAIN};

/// What every time in a document counts (`unit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Times are times.
    #[default]
    #[serde(rename = "ns")]
    Ns,
    /// Times count the guest's instructions, under an emulator whose clock
    /// advances 1 ns a guest instruction ([`Emulation::TcgIcount`]).
    #[serde(rename = "instructions")]
    Instructions,
}

impl Unit {
    /// `ns` or `instructions`, as the document says it.
    pub fn word(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Instructions => "instructions",
        }
    }

    /// What one figure per event counts, for a line of text.
    pub fn per_event(self) -> &'static str {
        match self {
            Unit::Ns => "ns/event",
            Unit::Instructions => "instructions/event",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// How the runs of different mechanisms were ordered (`order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    /// Every mechanism once per round, in turn (version 1).
    #[serde(rename = "round-robin")]
    RoundRobin,
    /// Rounds in which each base runs before and after each of its
    /// mechanisms (version 2).
    #[serde(rename = "bracketed")]
    Bracketed,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::RoundRobin => "round-robin",
            Order::Bracketed => "bracketed",
        })
    }
}

/// The emulator a run ran under (`emulated`), as its runner named it in
/// `BPF_OVERHEAD_EMULATED`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Emulation {
    /// QEMU's TCG: rates are no performance figures.
    Tcg,
    /// TCG whose guest clock counts instructions (`-icount shift=0`: 1 ns a
    /// guest instruction): times are counts (`cargo xtask vmtest --exact`).
    TcgIcount,
    /// Any other emulator its runner named.
    Other(String),
}

impl Emulation {
    pub fn word(&self) -> &str {
        match self {
            Emulation::Tcg => "tcg",
            Emulation::TcgIcount => "tcg-icount",
            Emulation::Other(name) => name,
        }
    }

    /// Whether its clock counts instructions, so that times are counts.
    pub fn counts_instructions(&self) -> bool {
        *self == Emulation::TcgIcount
    }
}

impl From<String> for Emulation {
    fn from(s: String) -> Self {
        match s.as_str() {
            "tcg" => Emulation::Tcg,
            "tcg-icount" => Emulation::TcgIcount,
            _ => Emulation::Other(s),
        }
    }
}

impl From<&str> for Emulation {
    fn from(s: &str) -> Self {
        s.to_owned().into()
    }
}

impl From<Emulation> for String {
    fn from(e: Emulation) -> Self {
        e.word().to_owned()
    }
}

impl fmt::Display for Emulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What B changed of A in a comparison of one document (`against`):
/// another option in the same run (`--against`), or another kernel at the
/// same time (`cargo xtask vmtest --against --duet`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Variant {
    /// `prog-work=N`: B's program did N rounds of extra work per hit.
    ProgWork(u32),
    /// `bpf-stats`: the kernel's BPF run-time stats on during B's runs.
    BpfStats,
    /// `counting=MODE`: B's programs counted hits another way.
    Counting(Counting),
    /// `stacktrace`: B's programs also took the kernel stack on each hit.
    Stacktrace,
    /// `object=FILE`: B is another build of the `--object` programs.
    Object(String),
    /// Another kernel, by its label: two kernels measured at once.
    Kernel(String),
}

impl From<String> for Variant {
    fn from(s: String) -> Self {
        let typed = match s.split_once('=') {
            None if s == "bpf-stats" => Some(Variant::BpfStats),
            None if s == "stacktrace" => Some(Variant::Stacktrace),
            Some(("prog-work", n)) => n.parse().ok().map(Variant::ProgWork),
            Some(("counting", mode)) => Counting::parse(mode).ok().map(Variant::Counting),
            Some(("object", file)) if !file.is_empty() => Some(Variant::Object(file.into())),
            _ => None,
        };
        typed.unwrap_or(Variant::Kernel(s))
    }
}

impl From<Variant> for String {
    fn from(v: Variant) -> Self {
        v.to_string()
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Variant::ProgWork(n) => write!(f, "prog-work={n}"),
            Variant::BpfStats => f.write_str("bpf-stats"),
            Variant::Counting(c) => write!(f, "counting={c}"),
            Variant::Stacktrace => f.write_str("stacktrace"),
            Variant::Object(path) => write!(f, "object={path}"),
            Variant::Kernel(label) => f.write_str(label),
        }
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
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

impl TryFrom<String> for Counting {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        Counting::parse(&s)
    }
}

impl From<Counting> for String {
    fn from(c: Counting) -> Self {
        c.name().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: T) -> String {
        serde_json::to_string(&v).unwrap()
    }

    fn read<T: for<'de> Deserialize<'de>>(s: &str) -> T {
        serde_json::from_str(&format!("{s:?}")).unwrap()
    }

    #[test]
    fn each_setting_serializes_to_its_word() {
        assert_eq!(json(Unit::Instructions), "\"instructions\"");
        assert_eq!(json(Order::RoundRobin), "\"round-robin\"");
        assert_eq!(json(Emulation::TcgIcount), "\"tcg-icount\"");
        assert_eq!(json(Counting::EveryAtomic), "\"every-atomic\"");
        assert_eq!(json(Variant::ProgWork(16)), "\"prog-work=16\"");
        for word in [
            "prog-work=16",
            "bpf-stats",
            "counting=none",
            "stacktrace",
            "object=b.o",
            "6.12",
        ] {
            assert_eq!(read::<Variant>(word).to_string(), word);
        }
        assert_eq!(
            read::<Variant>("kernel B"),
            Variant::Kernel("kernel B".into())
        );
        assert_eq!(read::<Emulation>("kvm"), Emulation::Other("kvm".into()));
    }

    /// Results written before the lead-in count name every-event modes
    /// by their older words.
    #[test]
    fn older_counting_words_still_read() {
        assert_eq!(read::<Counting>("plain"), Counting::Every);
        assert_eq!(read::<Counting>("atomic"), Counting::EveryAtomic);
        assert_eq!(read::<Counting>("filter"), Counting::EveryCheck);
        assert!(serde_json::from_str::<Counting>("\"fast\"").is_err());
    }
}
