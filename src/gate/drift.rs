//! The drift between runs, as the gate allows for it: how far a saved
//! baseline's median may have moved by this run's moment with nothing
//! changed ([`Drift`]), where it comes from and what would answer instead
//! ([`Allowance`], given by [`super::set`]), and what it did to a
//! comparison ([`DriftEffect`]). The rule that takes it on both sides is
//! [`super::verdict`].

use super::Verdict;

/// How far the baseline's median may lie, at this run's moment, from the
/// median its run measured, with nothing changed: the drift between runs.
/// The rule takes it on both sides ([`super::verdict`]): a change within it may
/// be drift, not a regression, and `ok` needs the change's interval,
/// widened by it, within the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Drift {
    /// None: both sides were measured at the same moment, or the rule is
    /// asked about the rounds alone.
    None,
    /// Up to ± this share of the old median (or of the floor).
    Share(f64),
    /// The baseline's median may lie this many ns below or above the
    /// median measured (the spread between a baseline set's runs).
    Ns { below: f64, above: f64 },
    /// Not known: any change may be drift, and any may hide in it.
    Unknown,
}

impl Drift {
    /// How far below and above, as shares of `reference` ns.
    pub(super) fn shares(self, reference: f64) -> (f64, f64) {
        match self {
            Drift::None => (0.0, 0.0),
            Drift::Share(s) => (s.abs(), s.abs()),
            Drift::Ns { below, above } => (below.max(0.0) / reference, above.max(0.0) / reference),
            Drift::Unknown => (f64::INFINITY, f64::INFINITY),
        }
    }
}

/// What the drift allowed did to a [`super::judge_drifting`] judgement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriftEffect {
    /// The verdict the same figures get with no drift: where it differs,
    /// the drift alone made the comparison UNSURE.
    pub undrifted: Verdict,
    /// The change's 90% interval widened by the drift, as shares: what
    /// `ok` needs within ± the threshold.
    pub widened: (f64, f64),
}

/// The drift allowed for one mechanism against a baseline, and what it
/// is in words, for the line of a comparison it makes UNSURE.
#[derive(Clone, Debug, PartialEq)]
pub struct Allowance {
    pub drift: Drift,
    /// What the drift is and where it comes from: `against a one-run
    /// baseline, runs of one kernel differ by up to ±100%...`.
    pub what: String,
    /// What would answer instead: `--against, or ...`.
    pub answer: String,
}

impl Allowance {
    /// No drift: the baseline stands for this run's moment.
    pub fn none() -> Self {
        Allowance {
            drift: Drift::None,
            what: String::new(),
            answer: String::new(),
        }
    }

    /// Why a comparison that would have been `undrifted` is UNSURE.
    pub(super) fn why(&self, undrifted: Verdict, effect: &DriftEffect, threshold: f64) -> String {
        let (lo, hi) = effect.widened;
        let consequence = match undrifted {
            Verdict::Unchanged if lo.is_finite() && hi.is_finite() => format!(
                "the change's interval widened by it, {:+.1}% to {:+.1}%, reaches beyond \
                 ±{:.1}%, so it could hide a change of the threshold",
                lo * 100.0,
                hi * 100.0,
                threshold * 100.0
            ),
            Verdict::Unchanged => "a change of the threshold could hide in it".into(),
            _ => "the change may be that drift".into(),
        };
        format!("UNSURE: {}, and {consequence}: {}", self.what, self.answer)
    }
}
