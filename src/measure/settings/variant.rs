//! What B changes of A in an in-run comparison (`--against VARIANT`): A
//! runs with the run's own options, B with a variant's, round by round
//! in the same run, so that what drifts between moments of the machine
//! is common to both.

use std::fmt;

use bpf_overhead_common::document::Variant as Recorded;

use super::options::{Counting, Options, ProgWork};
use crate::measure::mechanism::catalogue::Mechanism;
use crate::measure::objects::builds::Against;

/// A variant of a run's options, for B.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `prog-work=N`: B's program does N rounds of extra work per hit
    /// (the synthetic change of the power experiments; 0 against 0 is A/A).
    ProgWork(ProgWork),
    /// `bpf-stats`: the kernel's BPF run-time stats on during B's runs
    /// (`BPF_ENABLE_STATS`): what enabling them costs a mechanism. Its
    /// base runs without, as every base does: stats cost only where a
    /// program runs.
    BpfStats,
    /// `counting=MODE`: B's programs count hits another way (`--counting`):
    /// what a way of counting costs beside A's.
    Counting(Counting),
    /// `stacktrace`: B's programs also take the kernel stack on each hit
    /// (`--stacktrace`): what that costs on top of the mechanism.
    Stacktrace,
    /// `object=FILE`: B is another build of the `--object` programs, each
    /// paired with A's of the same program name (see [`Against`]).
    Object(Against),
}

impl Variant {
    /// B's options: `a`'s, changed by the variant.
    pub fn apply(&self, a: &Options) -> Options {
        let mut b = a.clone();
        match self {
            Variant::ProgWork(work) => b.prog_work = *work,
            Variant::BpfStats => b.bpf_stats = true,
            Variant::Counting(c) => b.counting = *c,
            Variant::Stacktrace => b.stacktrace = true,
            Variant::Object(_) => {}
        }
        b
    }

    /// The mechanism B measures for A's `a`, if it has a B side: `a`
    /// itself with other options, or its program from B's object.
    pub fn b_of(&self, a: Mechanism) -> Option<Mechanism> {
        match self {
            Variant::ProgWork(_)
            | Variant::BpfStats
            | Variant::Counting(_)
            | Variant::Stacktrace => Some(a),
            Variant::Object(against) => against.b_of(a),
        }
    }

    /// As a result records it: what B changed, without B's pairing.
    pub fn recorded(&self) -> Recorded {
        match self {
            Variant::ProgWork(work) => Recorded::ProgWork(work.get()),
            Variant::BpfStats => Recorded::BpfStats,
            Variant::Counting(c) => Recorded::Counting(*c),
            Variant::Stacktrace => Recorded::Stacktrace,
            Variant::Object(against) => Recorded::Object(against.path.display().to_string()),
        }
    }

    /// Any of the forms [`Variant`] lists; the error says what is accepted.
    pub fn parse(s: &str) -> Result<Self, String> {
        const ACCEPTED: &str =
            "expected prog-work=N, bpf-stats, counting=MODE, stacktrace or object=FILE";
        match s.split_once('=') {
            None if s == "bpf-stats" => Ok(Variant::BpfStats),
            None if s == "stacktrace" => Ok(Variant::Stacktrace),
            Some(("object", file)) if !file.is_empty() => {
                Ok(Variant::Object(Against::new(file.into())))
            }
            Some(("counting", mode)) => Counting::parse(mode).map(Variant::Counting),
            Some(("prog-work", n)) => n
                .parse::<u32>()
                .ok()
                .and_then(ProgWork::new)
                .map(Variant::ProgWork)
                .ok_or_else(|| {
                    format!(
                        "prog-work={n}: N must be 0 to {}",
                        bpf_overhead_common::bpf_consts::MAX_PROG_WORK
                    )
                }),
            _ => Err(format!("unknown variant {s:?}: {ACCEPTED}")),
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.recorded().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_print_alike() {
        for s in [
            "prog-work=0",
            "prog-work=16",
            "bpf-stats",
            "counting=every-atomic",
            "counting=every",
            "counting=none",
            "stacktrace",
        ] {
            assert_eq!(Variant::parse(s).unwrap().to_string(), s);
        }
        // The names before the lead-in count: every event.
        assert_eq!(
            Variant::parse("counting=atomic").unwrap().to_string(),
            "counting=every-atomic"
        );
    }

    #[test]
    fn bad_variants_say_what_is_accepted() {
        assert!(Variant::parse("fast")
            .unwrap_err()
            .contains("prog-work=N, bpf-stats, counting=MODE, stacktrace or object=FILE"));
        assert!(Variant::parse("counting=fast")
            .unwrap_err()
            .contains("lead-in, every, every-atomic"));
        assert!(Variant::parse("prog-work=x").unwrap_err().contains("0 to"));
        assert!(Variant::parse("prog-work=99999999").is_err());
    }

    #[test]
    fn b_differs_from_a_by_the_variant_only() {
        let a = Options::default();
        let b = Variant::parse("prog-work=7").unwrap().apply(&a);
        assert_eq!(
            (b.prog_work.get(), b.bpf_stats, b.iterations),
            (7, false, a.iterations)
        );
        assert!(Variant::BpfStats.apply(&a).bpf_stats);
        assert!(Variant::Stacktrace.apply(&a).stacktrace && !a.stacktrace);
    }
}
