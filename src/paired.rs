//! Statistics of paired differences: A and B measured in the same round,
//! as close together in time as the schedule allows, and compared round by
//! round. What drifts slowly (the machine's speed state, a neighbour's
//! load) is common to both sides of a pair and cancels in the difference;
//! what is left is the difference and the fast noise.
//!
//! The test is Wilcoxon's signed-rank test, exact for the round counts a
//! run has: like the gate's rank test it assumes nothing of the noise's
//! shape, and a disturbed round counts by its rank, not by how far off it
//! is. The estimate and its interval are Hodges–Lehmann's: the median of
//! the Walsh averages (every mean of two differences, each with itself
//! included), and the distribution-free interval from their order
//! statistics. Pure functions on numbers, tested on fixed values.

use crate::stats::{ci_z, detect_z};

/// What a series of paired differences says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Hodges–Lehmann's estimate of the difference.
    pub estimate: f64,
    /// One-sided p-value of the signed-rank test, in the estimate's
    /// direction.
    pub p_value: f64,
    /// The difference's two-sided 90% interval (its one-sided 95% bounds).
    pub low: f64,
    pub high: f64,
    /// The smallest difference these pairs tell from noise 4 times in 5:
    /// the interval's half-width scaled from a 95% bound to the rank
    /// test's 80% power. Infinite with fewer than two pairs.
    pub detectable: f64,
}

/// Where a difference's 90% interval lies against ± a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Wholly above + threshold.
    Above,
    /// Wholly below - threshold.
    Below,
    /// Within ± threshold.
    Within,
    /// Across one of the bounds: the pairs cannot tell.
    Across,
}

impl Paired {
    /// Where the interval lies against ± `threshold`, a share of
    /// `reference` (the cost a change is measured against).
    pub fn interval(&self, reference: f64, threshold: f64) -> Interval {
        let reference = reference.abs().max(f64::MIN_POSITIVE);
        let (low, high) = (self.low / reference, self.high / reference);
        if low > threshold {
            Interval::Above
        } else if high < -threshold {
            Interval::Below
        } else if low >= -threshold && high <= threshold {
            Interval::Within
        } else {
            Interval::Across
        }
    }
}

/// `None` for no pairs or a non-finite one.
pub fn paired(diffs: &[f64]) -> Option<Paired> {
    if diffs.is_empty() || diffs.iter().any(|d| !d.is_finite()) {
        return None;
    }
    let walsh = walsh_averages(diffs);
    let estimate = crate::stats::median(&walsh);
    let (low, high) = interval(&walsh, diffs.len());
    let p_value = if estimate >= 0.0 {
        signed_rank_greater(diffs)
    } else {
        let flipped: Vec<f64> = diffs.iter().map(|d| -d).collect();
        signed_rank_greater(&flipped)
    };
    let detectable = if diffs.len() < 2 {
        f64::INFINITY
    } else {
        (high - low) / 2.0 * detect_z() / ci_z()
    };
    Some(Paired {
        estimate,
        p_value,
        low,
        high,
        detectable,
    })
}

/// A speed difference between a pair's two runs that only a change of
/// the machine's speed state makes: within one state, the two runs' speed
/// references differ by 1-3%.
pub const SPEED_STATE_CHANGE: f64 = 0.05;

/// `diffs` (B - A per round) with what the machine's speed explains taken
/// out, given each round's speed reference around A's run and around
/// B's ([`crate::measure::Sample::speed_ns`]).
///
/// A shared VM flips between speed states, and the slow state stretches a
/// BPF program's cost more than the base's, so a pair whose runs landed in
/// different states differs by that, not by B (docs/gate-power.md). When
/// some pair's speeds differ by more than [`SPEED_STATE_CHANGE`], each
/// difference loses what its speed difference explains (Theil–Sen's slope,
/// times that pair's). The reference is user-space work B does not touch,
/// so B's change stays. Unchanged otherwise, or without every speed.
pub fn speed_adjusted(diffs: &[f64], a_speed: &[f64], b_speed: &[f64]) -> Vec<f64> {
    if a_speed.len() != diffs.len() || b_speed.len() != diffs.len() {
        return diffs.to_vec();
    }
    let apart: Vec<f64> = a_speed
        .iter()
        .zip(b_speed)
        .map(|(a, b)| (b - a) / ((a + b) / 2.0))
        .collect();
    if !apart.iter().all(|d| d.is_finite()) || apart.iter().all(|d| d.abs() <= SPEED_STATE_CHANGE) {
        return diffs.to_vec();
    }
    let Some(slope) = crate::stats::theil_sen_slope(&apart, diffs) else {
        return diffs.to_vec();
    };
    diffs
        .iter()
        .zip(&apart)
        .map(|(d, apart)| d - slope * apart)
        .collect()
}

/// Every (d_i + d_j) / 2 for i ≤ j, sorted.
fn walsh_averages(diffs: &[f64]) -> Vec<f64> {
    let mut w = Vec::with_capacity(diffs.len() * (diffs.len() + 1) / 2);
    for (i, a) in diffs.iter().enumerate() {
        for b in &diffs[i..] {
            w.push((a + b) / 2.0);
        }
    }
    w.sort_by(f64::total_cmp);
    w
}

/// The 90% interval of the pseudo-median from `n` pairs' sorted Walsh
/// averages: the k-th from each end, k from the signed-rank statistic's
/// normal approximation (within one order statistic of the exact one
/// from 7 pairs on). Fewer pairs than that bound nothing: the whole
/// range of the averages.
fn interval(walsh: &[f64], n: usize) -> (f64, f64) {
    let total = walsh.len() as f64;
    let nf = n as f64;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    let k = (total / 2.0 - ci_z() * sd).floor().max(0.0) as usize;
    let k = k.min(walsh.len().saturating_sub(1) / 2);
    (walsh[k], walsh[walsh.len() - 1 - k])
}

/// One-sided p-value that the differences' centre is above zero, by the
/// signed-rank test: exact (every sign pattern counted, mid-ranks for
/// ties); zeros dropped, as Wilcoxon does. 1 with no nonzero difference.
pub fn signed_rank_greater(diffs: &[f64]) -> f64 {
    let mut nonzero: Vec<f64> = diffs.iter().copied().filter(|d| *d != 0.0).collect();
    if nonzero.is_empty() {
        return 1.0;
    }
    nonzero.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Mid-ranks, doubled so that they stay integers.
    let n = nonzero.len();
    let mut ranks2 = vec![0u64; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        // Ranks i+1..=j+1: their mean, doubled, is i + j + 2.
        for r in &mut ranks2[i..=j] {
            *r = (i + j + 2) as u64;
        }
        i = j + 1;
    }
    let observed: u64 = nonzero
        .iter()
        .zip(&ranks2)
        .filter(|(d, _)| **d > 0.0)
        .map(|(_, r)| r)
        .sum();
    // The number of sign patterns reaching each sum of positive ranks.
    let max: u64 = ranks2.iter().sum();
    let mut ways = vec![0f64; max as usize + 1];
    ways[0] = 1.0;
    for &r in &ranks2 {
        for s in (r as usize..=max as usize).rev() {
            ways[s] += ways[s - r as usize];
        }
    }
    let at_least: f64 = ways[observed as usize..].iter().sum();
    at_least / 2f64.powi(n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_positive_pairs_are_significant_from_five_on() {
        // 1/32: the one sign pattern of 32 with every rank positive.
        let p = signed_rank_greater(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((p - 1.0 / 32.0).abs() < 1e-12, "{p}");
        assert!(signed_rank_greater(&[1.0, 2.0, 3.0, 4.0]) > 0.05);
    }

    #[test]
    fn the_p_value_matches_a_table_value() {
        // n = 8, rank 2 negative: W+ = 34 of 36. W+ >= 34 when the
        // negative ranks sum to 2 or less: none, {1} or {2}, 3 of 256.
        let d = [1.0, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let p = signed_rank_greater(&d);
        assert!((p - 3.0 / 256.0).abs() < 1e-12, "{p}");
    }

    #[test]
    fn ties_take_mid_ranks() {
        // Three equal magnitudes, one negative: the same as no ties would
        // give by symmetry, and a valid probability.
        let p = signed_rank_greater(&[1.0, 1.0, -1.0, 2.0, 3.0]);
        assert!(p > 0.0 && p < 1.0, "{p}");
        assert!(signed_rank_greater(&[0.0, 0.0]) == 1.0);
    }

    #[test]
    fn a_clear_shift_is_estimated_and_bounded() {
        let d = [9.0, 11.0, 10.0, 10.5, 9.5, 10.2, 9.8];
        let p = paired(&d).unwrap();
        assert!((p.estimate - 10.0).abs() < 0.3, "{p:?}");
        assert!(p.low > 9.0 && p.high < 11.0 && p.low < p.estimate && p.estimate < p.high);
        assert!(p.p_value <= 1.0 / 128.0 + 1e-12);
    }

    #[test]
    fn one_wild_pair_moves_the_estimate_little() {
        let calm = [1.0, -1.0, 0.5, -0.5, 0.2, -0.2, 0.0, 0.1];
        let mut wild = calm;
        wild[3] = 500.0;
        let (a, b) = (paired(&calm).unwrap(), paired(&wild).unwrap());
        assert!(b.estimate - a.estimate < 1.0, "{a:?} {b:?}");
        assert!(b.p_value > 0.05, "{b:?}");
    }

    #[test]
    fn noise_around_zero_is_not_significant_and_spans_zero() {
        let d = [0.3, -0.2, 0.1, -0.4, 0.2, -0.1, 0.05];
        let p = paired(&d).unwrap();
        assert!(p.p_value > 0.05 && p.low < 0.0 && p.high > 0.0, "{p:?}");
    }

    #[test]
    fn a_pair_across_speed_states_loses_what_the_speed_explains() {
        // B costs 1 ns more; rounds 3 and 6 caught one side in the slow
        // state (speed 2.0 against 1.6), which adds 14 ns to it.
        let a_speed = [1.6, 1.6, 2.0, 1.6, 1.6, 1.6, 1.6];
        let b_speed = [1.6, 1.6, 1.6, 1.6, 1.6, 2.0, 1.6];
        let diffs = [1.1, 0.9, 1.0 - 14.0, 1.2, 0.8, 1.0 + 14.0, 1.0];
        let adjusted = speed_adjusted(&diffs, &a_speed, &b_speed);
        for d in &adjusted {
            assert!((d - 1.0).abs() < 0.3, "{adjusted:?}");
        }
        // Within one state, the pairs are left as they are.
        let steady = [1.6, 1.62, 1.58, 1.6, 1.61, 1.6, 1.59];
        assert_eq!(
            speed_adjusted(&diffs, &steady, &a_speed[..1].repeat(7)),
            diffs
        );
        assert_eq!(speed_adjusted(&diffs, &a_speed[..3], &b_speed), diffs);
    }

    #[test]
    fn one_pair_sees_nothing_and_nothing_is_no_pairs() {
        assert!(paired(&[1.0]).unwrap().detectable.is_infinite());
        assert!(paired(&[]).is_none());
        assert!(paired(&[f64::NAN]).is_none());
    }
}
