//! Output lines. The first one is test_overhead's, byte for byte, so
//! existing greps keep working: `task_rename fentry\t2710K events per sec`.

use crate::measure::Sample;
use crate::mechanism::Mechanism;

/// Environment variable set by scripts/vmtest to the emulator in use
/// (`tcg`): rates measured there are not performance figures.
pub const EMULATED_ENV: &str = "BPF_OVERHEAD_EMULATED";

/// `Some("tcg")` when running under an emulator (see [`EMULATED_ENV`]).
pub fn emulated() -> Option<String> {
    std::env::var(EMULATED_ENV)
        .ok()
        .filter(|v| !v.is_empty() && v != "0")
}

/// `<trigger> <mechanism>\t<N>K events per sec`, plus ` (emulated: tcg)`
/// when [`emulated`] says so.
pub fn selftest_line(sample: &Sample) -> String {
    selftest_line_for(sample.mechanism, sample.k_events_per_sec())
}

/// [`selftest_line`] for a rate that is not one sample's (the CLI's median).
pub fn selftest_line_for(mechanism: Mechanism, k_events_per_sec: u64) -> String {
    let mut line = format!(
        "{} {}\t{}K events per sec",
        mechanism.trigger().label(),
        mechanism.name(),
        k_events_per_sec
    );
    if let Some(how) = emulated() {
        line.push_str(&format!(" (emulated: {how}, not a performance figure)"));
    }
    line
}

/// Extra cost per event against the base of the same trigger.
pub fn overhead_ns(sample: &Sample, base: &Sample) -> f64 {
    sample.ns_per_event() - base.ns_per_event()
}

/// `  overhead +37.2 ns/event over base (4301K events per sec), hits 100000/100000`
pub fn detail_line(sample: &Sample, base: &Sample) -> String {
    let mut line = format!(
        "  {}: {:+.1} ns/event over {} ({}K events per sec), {:.3}x base rate",
        sample.mechanism.name(),
        overhead_ns(sample, base),
        base.mechanism.name(),
        base.k_events_per_sec(),
        sample.events_per_sec() / base.events_per_sec(),
    );
    if let Some(hits) = sample.hits {
        line.push_str(&format!(", hits {hits}/{}", sample.iterations));
    }
    if let Some(ns) = sample.prog_ns_per_event() {
        line.push_str(&format!(", program {ns:.1} ns/event"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(m: &str, ns: u64, hits: Option<u64>) -> Sample {
        Sample {
            mechanism: m.parse().unwrap(),
            iterations: 100_000,
            elapsed: Duration::from_nanos(ns),
            hits,
            prog_run: None,
            cpu: 0,
        }
    }

    #[test]
    fn selftest_format() {
        std::env::remove_var(EMULATED_ENV);
        let s = sample("fentry", 36_900_000, Some(100_000));
        assert_eq!(
            selftest_line(&s),
            "task_rename fentry\t2710K events per sec"
        );
        let u = sample("uprobe-nop", 100_000_000, Some(100_000));
        assert_eq!(
            selftest_line(&u),
            "uprobe_target uprobe-nop\t1000K events per sec"
        );
    }

    #[test]
    fn overhead_against_base() {
        let base = sample("base", 36_456_000, None); // 2743K/s, 364.56 ns
        let kprobe = sample("kprobe", 41_339_000, Some(100_000)); // 2419K/s
        assert!((overhead_ns(&kprobe, &base) - 48.83).abs() < 0.01);
        let line = detail_line(&kprobe, &base);
        assert!(
            line.contains("+48.8 ns/event over base (2743K events per sec)"),
            "{line}"
        );
        assert!(line.contains("hits 100000/100000"), "{line}");
        assert_eq!(Mechanism::Kprobe.base(), base.mechanism);
    }
}
