//! A and B side by side, for `--against`: each mechanism's B side (the
//! variant's options) is measured in the same rounds as its A side,
//! bracketed by the same base runs, in turns so that neither side always
//! comes first. The scheduler (`super`) runs the rounds; this is what it
//! does differently for B.

use super::MechanismRuns;
use crate::measure::{Mechanism, Sample, Variant};
use crate::paired::Interval;

impl MechanismRuns {
    /// A mechanism's B side, for `--against`.
    fn b_side(mechanism: Mechanism) -> Self {
        Self {
            is_b: true,
            ..Self::new(mechanism)
        }
    }

    /// With `--against`, per round, B's overhead minus A's, in ns: the
    /// pairs a comparison inside one run is judged on.
    pub fn pairs_ns(&self) -> Option<Vec<f64>> {
        let b = self.against.as_ref()?;
        Some(
            b.overheads()
                .iter()
                .zip(self.overheads())
                .map(|(b, a)| b - a)
                .collect(),
        )
    }

    /// [`Self::pairs_ns`] as the in-run gate judges them: less what the
    /// machine's speed explains ([`crate::paired::speed_adjusted`]).
    pub(super) fn judged_pairs_ns(&self) -> Option<Vec<f64>> {
        let b = self.against.as_ref()?;
        let speeds = |o: &MechanismRuns| o.samples.iter().map(|s| s.speed_ns).collect::<Vec<_>>();
        Some(crate::paired::speed_adjusted(
            &self.pairs_ns()?,
            &speeds(self),
            &speeds(b),
        ))
    }

    /// In-run (`None` otherwise): whether the pairs see `target` of
    /// A's cost and decide against `threshold` (their interval within ±
    /// it or wholly beyond it), else more rounds could: a B 7% costlier,
    /// seen as precisely as asked, can still reach below 5%. Precision
    /// first, so that no run stops on a few pairs that happen to lie
    /// beyond the threshold.
    pub(super) fn pairs_sure(&self, threshold: f64, target: f64) -> Option<bool> {
        if !self.b_ok() {
            return None;
        }
        let pairs = self.judged_pairs_ns()?;
        Some(crate::paired::paired(&pairs).is_some_and(|p| {
            let reference = self.reference_ns();
            p.detectable / reference <= target
                && p.interval(reference, threshold) != Interval::Across
        }))
    }

    /// B's runs, when it is to be measured with A in this round.
    pub(super) fn b_ok(&self) -> bool {
        self.against.as_ref().is_some_and(|b| b.is_ok())
    }

    /// Gives B the problem A just had: B is not measured without A.
    pub(super) fn share_with_b(&mut self) {
        if let Some(b) = self.against.as_mut() {
            b.set(self.status, self.reason.clone().unwrap_or_default());
        }
    }
}

/// A B side beside every mechanism that is not a base (the variant never
/// changes a base).
pub(super) fn add_b_sides(per_mechanism: &mut [MechanismRuns], variant: &Variant) {
    for o in per_mechanism.iter_mut().filter(|o| !o.mechanism.is_base()) {
        // B's mechanism: the same, or (object=) the other build's program.
        o.against = variant
            .b_of(o.mechanism)
            .map(|b| Box::new(MechanismRuns::b_side(b)));
    }
}

/// A B side timed with BPF stats on (`--against bpf-stats`) has its
/// program's run time from every round: no stats run needed.
pub(super) fn prog_run_times_from_rounds(per_mechanism: &mut [MechanismRuns]) {
    for b in per_mechanism
        .iter_mut()
        .filter_map(|o| o.against.as_deref_mut())
    {
        let ns: Vec<f64> = b
            .samples
            .iter()
            .filter_map(Sample::prog_ns_per_event)
            .collect();
        if !ns.is_empty() {
            b.prog_ns_per_event = Some(crate::stats::median(&ns));
        }
    }
}

/// Which side of a mechanism a run is: A, or with `--against`, B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    A,
    B,
}

pub(super) fn side(
    per_mechanism: &mut [MechanismRuns],
    (i, side): (usize, Side),
) -> &mut MechanismRuns {
    match side {
        Side::A => &mut per_mechanism[i],
        Side::B => per_mechanism[i]
            .against
            .as_deref_mut()
            .expect("a B side is scheduled only where it was planned"),
    }
}

/// The runs of `wanted` mechanisms in round `round`: each one's A, and
/// B beside it where there is one, in turns (A then B in odd rounds, B
/// then A in even ones) so that neither side always comes first.
pub(super) fn sides(
    per_mechanism: &[MechanismRuns],
    wanted: &[usize],
    round: usize,
) -> Vec<(usize, Side)> {
    let mut runs = Vec::new();
    for &i in wanted {
        if !per_mechanism[i].b_ok() {
            runs.push((i, Side::A));
        } else if round % 2 == 1 {
            runs.extend([(i, Side::A), (i, Side::B)]);
        } else {
            runs.extend([(i, Side::B), (i, Side::A)]);
        }
    }
    runs
}
