//! Summary statistics over the repeats of one measurement: median, mean,
//! sample standard deviation, min and max. Pure functions on numbers, so
//! they are tested on fixed values, never on timings.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

pub use bpf_overhead_common::document::{mean, median, stddev, Summary};

/// One-sided Mann–Whitney test: the p-value of "`x` tends to be larger
/// than `y`" against "both come from one distribution". Free of any
/// assumption about the shape of the noise, and a lone outlier (an
/// interrupt storm in one round) moves it by one rank at most. Exact for
/// small samples (the distribution of U counted over every ordering;
/// ties count half, rounded towards "no difference"); 1 when either
/// side is empty.
pub fn mann_whitney_greater(x: &[f64], y: &[f64]) -> f64 {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    if m * n > EXACT_PAIRS {
        return mann_whitney_normal(x, y);
    }
    let u = u_statistic(x, y).floor() as usize;
    // ways[k]: orderings of m x's and n y's with U = k, built up one
    // sample at a time (Mann and Whitney's recurrence).
    let mut ways = vec![vec![vec![0f64; m * n + 1]; n + 1]; m + 1];
    for i in 0..=m {
        for j in 0..=n {
            if i == 0 || j == 0 {
                ways[i][j][0] = 1.0;
                continue;
            }
            for k in 0..=i * j {
                let with_x_last = if k >= j { ways[i - 1][j][k - j] } else { 0.0 };
                ways[i][j][k] = with_x_last + ways[i][j - 1][k];
            }
        }
    }
    let all: f64 = ways[m][n].iter().sum();
    let tail: f64 = ways[m][n][u..].iter().sum();
    tail / all
}

/// Mann and Whitney's U: the pairs (a of `x`, b of `y`) with a > b, ties
/// counting half.
fn u_statistic(x: &[f64], y: &[f64]) -> f64 {
    x.iter()
        .map(|a| {
            y.iter()
                .map(|b| match a.total_cmp(b) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                })
                .sum::<f64>()
        })
        .sum()
}

/// Above this many pairs, [`mann_whitney_greater`] uses the normal
/// approximation (the exact count's table grows as (m n)^2).
const EXACT_PAIRS: usize = 900;

/// The normal approximation of U, with a continuity correction: within
/// 0.002 of the exact p-value from 30 + 30 samples on.
fn mann_whitney_normal(x: &[f64], y: &[f64]) -> f64 {
    let (m, n) = (x.len() as f64, y.len() as f64);
    let u = u_statistic(x, y);
    let z = (u - m * n / 2.0 - 0.5) / (m * n * (m + n + 1.0) / 12.0).sqrt();
    upper_tail(z)
}

/// P(Z > z) for a standard normal Z.
pub fn upper_tail(z: f64) -> f64 {
    Normal::standard().sf(z)
}

/// P(T > t) for Student's t with `df` degrees of freedom (df ≥ 1); NaN
/// for a `df` that is not positive.
pub fn student_upper_tail(t: f64, df: f64) -> f64 {
    // statrs panics on a NaN t: it gets 1, as an infinite one gets its limit.
    if !t.is_finite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |dist| dist.sf(t))
}

/// A spread that one odd value cannot inflate: 1.4826 times the median
/// absolute deviation (the standard deviation for normal noise); the
/// plain standard deviation where over half the values are equal.
pub fn robust_sd(values: &[f64]) -> f64 {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = 1.4826 * median(&deviations);
    if mad > 0.0 {
        mad
    } else {
        stddev(values)
    }
}

/// Theil–Sen's slope of `y` on `x`: the median of the slopes between
/// every two points whose `x` differ. One wild point moves it little,
/// where it would set a least-squares slope. `None` with no two such
/// points.
pub fn theil_sen_slope(x: &[f64], y: &[f64]) -> Option<f64> {
    let points: Vec<(f64, f64)> = x.iter().copied().zip(y.iter().copied()).collect();
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, &(x0, y0)) in points.iter().enumerate() {
        for &(x1, y1) in &points[i + 1..] {
            if x1 != x0 {
                slopes.push((y1 - y0) / (x1 - x0));
            }
        }
    }
    (!slopes.is_empty()).then(|| median(&slopes))
}

/// The `p` quantile of the standard normal (0 < p < 1).
pub fn normal_quantile(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (df ≥ 1).
pub fn student_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |dist| dist.inverse_cdf(p))
}

/// z of a one-sided test at p = 0.05 plus z of 80% power (2.49).
pub fn detect_z() -> f64 {
    ci_z() + normal_quantile(0.80)
}

/// z of a one-sided 95% bound, a two-sided 90% interval (1.645).
pub fn ci_z() -> f64 {
    normal_quantile(0.95)
}

/// The smallest shift between two series like `a` and `b` that the
/// one-sided rank test ([`mann_whitney_greater`], p ≤ 0.05) finds 4 times
/// in 5: 2.49 standard errors of the difference, over the square root of
/// the rank test's efficiency against the t test (3/π). `None` with
/// fewer than two values on either side.
pub fn detectable_ns(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let var = |v: &[f64]| robust_sd(v).powi(2) / v.len() as f64;
    let efficiency = 3.0 / std::f64::consts::PI;
    Some(detect_z() * (var(a) + var(b)).sqrt() / efficiency.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theil_sen_ignores_one_wild_point() {
        let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let mut y: Vec<f64> = x.iter().map(|x| 2.0 * x + 1.0).collect();
        assert!(close(theil_sen_slope(&x, &y).unwrap(), 2.0));
        y[4] = 100.0;
        let slope = theil_sen_slope(&x, &y).unwrap();
        assert!((slope - 2.0).abs() < 0.5, "{slope}");
        assert_eq!(theil_sen_slope(&[1.0, 1.0], &[0.0, 5.0]), None);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn odd_count() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 5.0, 4.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        // Sum of squares 10 over n-1 = 4.
        assert!(close(s.stddev, 2.5f64.sqrt()), "{}", s.stddev);
        assert_eq!((s.min, s.max), (1.0, 5.0));
        assert_eq!(s.samples, vec![3.0, 1.0, 2.0, 5.0, 4.0], "order kept");
    }

    #[test]
    fn even_count_median_is_the_middle_mean() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[10.0, 20.0]), 15.0);
    }

    #[test]
    fn known_stddev() {
        // The textbook set: population stddev 2, sample stddev sqrt(32/7).
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(stddev(&v), (32.0f64 / 7.0).sqrt()));
        assert_eq!(mean(&v), 5.0);
        assert_eq!(median(&v), 4.5);
    }

    #[test]
    fn one_value_has_no_spread() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(
            (s.median, s.mean, s.stddev, s.min, s.max),
            (42.0, 42.0, 0.0, 42.0, 42.0)
        );
        assert_eq!(s.relative_stddev(), 0.0);
    }

    #[test]
    fn nothing_or_non_finite_is_no_summary() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::INFINITY]), None);
        assert_eq!(Summary::of(&[f64::NAN]), None);
    }

    #[test]
    fn relative_stddev() {
        let s = Summary::of(&[90.0, 110.0]).unwrap();
        assert!(close(s.relative_stddev(), 200f64.sqrt() / 100.0));
    }

    #[test]
    fn mann_whitney_on_known_orderings() {
        // 5 v 5, every x above every y: 1 ordering of C(10, 5) = 252.
        let y = [1.0, 2.0, 3.0, 4.0, 5.0];
        let x = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(mann_whitney_greater(&x, &y), 1.0 / 252.0));
        // The other way round: nothing suggests x is larger.
        assert!(close(mann_whitney_greater(&y, &x), 1.0));
        // One y above one x (U = 24): 2 orderings of 252.
        let x = [4.5, 7.0, 8.0, 9.0, 10.0];
        assert!(close(mann_whitney_greater(&x, &y), 2.0 / 252.0));
        // 3 v 3 at best reaches 1/20.
        assert!(close(
            mann_whitney_greater(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]),
            0.05
        ));
        assert_eq!(mann_whitney_greater(&[], &y), 1.0);
    }

    #[test]
    fn the_normal_approximation_follows_the_exact_test() {
        // 30 + 30 values, interleaved with a shift: the exact count and
        // the approximation agree.
        let x: Vec<f64> = (0..30).map(|i| f64::from(i) + 3.5).collect();
        let y: Vec<f64> = (0..30).map(f64::from).collect();
        let exact = mann_whitney_greater(&x, &y);
        let approx = mann_whitney_normal(&x, &y);
        assert!((exact - approx).abs() < 0.002, "{exact} vs {approx}");
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) + 0.5).collect();
        let y: Vec<f64> = (0..40).map(f64::from).collect();
        assert!(
            mann_whitney_greater(&x, &y) > 0.3,
            "a tiny shift is no evidence"
        );
        assert!((upper_tail(1.645) - 0.05).abs() < 1e-4 && close(upper_tail(0.0), 0.5));
        assert!((upper_tail(-1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn the_robust_spread_ignores_one_odd_value() {
        let quiet = [10.0, 11.0, 9.0, 10.0, 12.0, 8.0, 10.0];
        let mut odd = quiet;
        odd[3] = 1000.0;
        assert!(robust_sd(&odd) < 2.0 * robust_sd(&quiet));
        assert!(stddev(&odd) > 100.0);
        assert_eq!(
            robust_sd(&[5.0, 5.0, 5.0, 6.0]),
            stddev(&[5.0, 5.0, 5.0, 6.0])
        );
    }

    #[test]
    fn what_can_be_detected_shrinks_with_rounds_and_grows_with_noise() {
        let noisy: Vec<f64> = (0..8).map(|i| 100.0 + f64::from(i % 4) * 10.0).collect();
        let quiet: Vec<f64> = (0..8).map(|i| 100.0 + f64::from(i % 4)).collect();
        let more: Vec<f64> = (0..32).map(|i| 100.0 + f64::from(i % 4) * 10.0).collect();
        let d = |v: &[f64]| detectable_ns(v, v).unwrap();
        assert!(d(&quiet) < d(&noisy) / 5.0);
        assert!(
            (d(&more) - d(&noisy) / 2.0).abs() < 1e-9,
            "a quarter of the variance"
        );
        assert_eq!(detectable_ns(&[1.0], &quiet), None);
    }

    #[test]
    fn mann_whitney_ties_count_half() {
        // All equal: U = 12.5 of 25, p = P(U >= 12) > 0.5.
        let p = mann_whitney_greater(&[1.0; 5], &[1.0; 5]);
        assert!(p > 0.5 && p < 1.0, "{p}");
    }

    #[test]
    fn student_tail_matches_the_table() {
        // One-sided 95% quantiles (df 1, 2, 10) and a 99% one (df 2).
        for (t, df, p) in [
            (6.314, 1.0, 0.05),
            (2.920, 2.0, 0.05),
            (1.812, 10.0, 0.05),
            (6.965, 2.0, 0.01),
        ] {
            let got = student_upper_tail(t, df);
            assert!((got - p).abs() < 2e-4, "t {t} df {df}: {got}");
        }
        assert!((student_upper_tail(0.0, 3.0) - 0.5).abs() < 1e-9);
        assert!((student_upper_tail(-2.920, 2.0) - 0.95).abs() < 2e-4);
    }

    #[test]
    fn quantiles_match_the_printed_tables() {
        // Student's t, one-sided 95%: df 1, 10, 11 (where a table that
        // stops at 10 fell back to the normal's 1.645), 30; the normal's.
        for (df, t) in [(1.0, 6.314), (10.0, 1.812), (11.0, 1.796), (30.0, 1.697)] {
            let got = student_quantile(0.95, df);
            assert!((got - t).abs() < 5e-4, "df {df}: {got}");
        }
        assert!((ci_z() - 1.645).abs() < 5e-4 && (detect_z() - 2.487).abs() < 1e-3);
        assert!(student_quantile(0.95, 0.0).is_nan());
    }
}
