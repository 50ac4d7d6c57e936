//! The exact verdict rule, written once: an exact count (instructions per
//! event under QEMU's instruction clock) has no noise, so B against A is
//! judged by a threshold alone. The command's in-run gate
//! (`gate::against`) and xtask's `vmtest --exact --against` both use it;
//! xtask includes this file by path (`#[path]`), so it stands alone: no
//! `crate::` or `super::` paths.

/// What a change in an exact count is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExactChange {
    /// B costs more than A by more than the threshold.
    Regressed,
    /// B costs less than A by more than the threshold.
    Improved,
    /// Within the threshold.
    Unchanged,
}

/// B's count against A's: the change as a share of A's count, and what it
/// is at `threshold` (a share: 0.01 for 1%). A count of zero is taken as
/// the smallest positive number, so that any cost over it is a change.
pub fn judge_counts(a: f64, b: f64, threshold: f64) -> (f64, ExactChange) {
    let change = (b - a) / a.abs().max(f64::MIN_POSITIVE);
    let verdict = if change > threshold {
        ExactChange::Regressed
    } else if change < -threshold {
        ExactChange::Improved
    } else {
        ExactChange::Unchanged
    };
    (change, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_threshold_either_way_and_nothing_else() {
        assert_eq!(judge_counts(100.0, 102.0, 0.01).1, ExactChange::Regressed);
        assert_eq!(judge_counts(100.0, 98.0, 0.01).1, ExactChange::Improved);
        assert_eq!(judge_counts(100.0, 101.0, 0.01).1, ExactChange::Unchanged);
        assert_eq!(judge_counts(100.0, 99.0, 0.01).1, ExactChange::Unchanged);
        let (change, v) = judge_counts(121.0, 131.2, 0.01);
        assert!((change - 10.2 / 121.0).abs() < 1e-12);
        assert_eq!(v, ExactChange::Regressed);
        assert_eq!(judge_counts(0.0, 1.0, 0.01).1, ExactChange::Regressed);
    }
}
