//! The exact verdict rule, written once: an exact count (instructions per
//! event under QEMU's instruction clock) has no noise, so B against A is
//! judged by a threshold alone. The command's in-run gate
//! (`gate::against`) and xtask's `vmtest --exact --against` both use it.

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

/// The same rule for counts whose rounds do not all agree: a few
/// mechanisms take one of two values from round to round (fexit and lsm
/// 230 or 244 on 6.12, the return uprobes two values ~36 apart), so the
/// fewest of a few rounds may be either. `a` and `b` are each side's
/// (fewest, most that recurs) over its rounds; a change is judged only where B's
/// rounds and A's are apart by more than the threshold, its size still
/// from the fewest.
pub fn judge_ranges(a: (f64, f64), b: (f64, f64), threshold: f64) -> (f64, ExactChange) {
    let (change, verdict) = judge_counts(a.0, b.0, threshold);
    let t = threshold * a.0.abs().max(f64::MIN_POSITIVE);
    let verdict = match verdict {
        ExactChange::Regressed if b.0 - a.1 > t => ExactChange::Regressed,
        ExactChange::Improved if a.0 - b.1 > t => ExactChange::Improved,
        _ => ExactChange::Unchanged,
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

    #[test]
    fn rounds_that_overlap_are_no_change() {
        // fexit on two 6.12 builds: rounds of 230 and 243.7, then all 243.7.
        let (change, v) = judge_ranges((230.0, 243.7), (243.7, 243.7), 0.01);
        assert!(change > 0.05);
        assert_eq!(v, ExactChange::Unchanged);
        assert_eq!(
            judge_ranges((243.7, 243.7), (230.0, 243.7), 0.01).1,
            ExactChange::Unchanged
        );
        // Apart by more than the threshold: judged, from the fewest.
        let (change, v) = judge_ranges((295.0, 295.0), (342.0, 343.0), 0.01);
        assert_eq!(v, ExactChange::Regressed);
        assert!((change - 47.0 / 295.0).abs() < 1e-12);
        assert_eq!(
            judge_ranges((342.0, 342.0), (295.0, 296.0), 0.01).1,
            ExactChange::Improved
        );
        // One value a side: judge_counts.
        for (a, b) in [(100.0, 102.0), (100.0, 98.0), (100.0, 100.5)] {
            assert_eq!(
                judge_ranges((a, a), (b, b), 0.01).1,
                judge_counts(a, b, 0.01).1
            );
        }
    }
}
