//! How much a mechanism's own cost must change to matter: one type for
//! what a run's rounds aim to see (the plan), and what the gate,
//! `--against` and `compare` judge by.

use crate::measure::Trigger;

/// The default share on the comm and syscall triggers, whose overheads
/// are a small part of a system call's cost and drift further apart
/// between runs (a raw_tp over a comm write: up to +17.3% in 380 A/A
/// comparisons, 2 above 15%).
pub const COMM_THRESHOLD: f64 = 0.15;

/// The default share on the kernel loop, the call trigger and test runs
/// (the largest change in the same A/A comparisons was +3.5%; a 10%
/// change was seen as +8.0% at the least).
pub const DEFAULT_THRESHOLD: f64 = 0.06;

/// A change of a mechanism's own cost, as a fraction of it, that counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// `--threshold`: the same for every mechanism.
    Fixed(f64),
    /// The defaults: [`COMM_THRESHOLD`] on the comm and syscall triggers,
    /// [`DEFAULT_THRESHOLD`] on the others.
    ByTrigger,
}

impl Threshold {
    /// The threshold of a mechanism fired by `trigger`.
    pub fn of(self, trigger: Trigger) -> f64 {
        match (self, trigger) {
            (Threshold::Fixed(t), _) => t,
            (Threshold::ByTrigger, Trigger::TaskRename | Trigger::Syscall(_)) => COMM_THRESHOLD,
            (Threshold::ByTrigger, Trigger::Call(_) | Trigger::Loop(_) | Trigger::TestRun(_)) => {
                DEFAULT_THRESHOLD
            }
        }
    }

    /// The same, for a result document's trigger label: a label this
    /// build does not know gets the kernel loop's.
    pub fn of_label(self, label: &str) -> f64 {
        Trigger::by_label(label).map_or_else(|| self.of_unknown(), |t| self.of(t))
    }

    fn of_unknown(self) -> f64 {
        match self {
            Threshold::Fixed(t) => t,
            Threshold::ByTrigger => DEFAULT_THRESHOLD,
        }
    }

    /// `--threshold PERCENT`: `6` or `6%`, from 0 to below 100.
    pub fn parse(s: &str) -> Result<Threshold, String> {
        let s = s.trim();
        let v: f64 = s
            .trim_end_matches('%')
            .parse()
            .map_err(|e| format!("{e}"))?;
        if !(0.0..100.0).contains(&v) {
            return Err(format!(
                "{s} is out of range: must be a percentage from 0 to below 100"
            ));
        }
        Ok(Threshold::Fixed(v / 100.0))
    }

    /// For the report's first line: `6%`, or `6% (15% on the comm and
    /// syscall triggers)`.
    pub fn describe(self) -> String {
        let pct = |t: f64| (t * 1000.0).round() / 10.0;
        match self {
            Threshold::Fixed(t) => format!("{}%", pct(t)),
            Threshold::ByTrigger => format!(
                "{}% ({}% on the comm and syscall triggers)",
                pct(DEFAULT_THRESHOLD),
                pct(COMM_THRESHOLD)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::mechanism::syscall::Syscall;
    use crate::measure::Mechanism;

    /// The plan aims at what the gate judges by: a syscall mechanism's
    /// threshold is the comm's in both, read from the trigger or from its
    /// label in a result document.
    #[test]
    fn a_syscall_mechanism_gets_one_threshold_in_plan_and_gate() {
        for syscall in Syscall::ALL {
            let trigger = Trigger::Syscall(syscall);
            let planned = Threshold::ByTrigger.of(trigger);
            assert_eq!(planned, COMM_THRESHOLD, "{}", trigger.label());
            assert_eq!(Threshold::ByTrigger.of_label(trigger.label()), planned);
        }
    }

    #[test]
    fn every_trigger_of_the_catalogue_reads_back_from_its_label() {
        for m in Mechanism::all() {
            let t = m.trigger();
            assert_eq!(
                Threshold::ByTrigger.of_label(t.label()),
                Threshold::ByTrigger.of(t)
            );
        }
        assert_eq!(Threshold::ByTrigger.of_label("task_rename"), COMM_THRESHOLD);
        assert_eq!(
            Threshold::ByTrigger.of_label("kernel_loop"),
            DEFAULT_THRESHOLD
        );
        assert_eq!(
            Threshold::ByTrigger.of_label("no_such_trigger"),
            DEFAULT_THRESHOLD
        );
        assert_eq!(Threshold::Fixed(0.2).of_label("task_rename"), 0.2);
    }

    #[test]
    fn percentages_parse_once() {
        assert_eq!(Threshold::parse("6"), Ok(Threshold::Fixed(0.06)));
        assert_eq!(Threshold::parse(" 12.5% "), Ok(Threshold::Fixed(0.125)));
        assert!(Threshold::parse("100")
            .unwrap_err()
            .contains("out of range"));
        assert!(Threshold::parse("x").is_err());
    }
}
