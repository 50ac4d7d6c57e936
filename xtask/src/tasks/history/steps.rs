//! Steps: a count that changed between two builds of one line that follow
//! each other (refused or failed builds aside) by more than the
//! threshold. Counts are exact, so a step is a fact, not a statistic:
//! judged by the same rule as `vmtest --against --exact`.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::util::document::Document;
use crate::util::exact_counts::{verdicts, Verdict};

/// A function's share of a step, from `--explain` on its two builds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    pub function: String,
    pub a: f64,
    pub b: f64,
    pub change: f64,
}

/// One mechanism's step, at the first build that shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub mechanism: String,
    /// The build before and the build that shows it (releases).
    pub from: String,
    pub to: String,
    /// Instructions per event over base, before and after.
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (b − a) / |a|.
    pub change: Option<f64>,
    /// REGRESSED, improved, new (first counted here) or LOST.
    pub verdict: String,
    /// The functions that moved, largest first (empty until explained).
    pub functions: Vec<Moved>,
    /// What the --explain run did not account for, if it ran.
    pub explained: Option<String>,
    /// Where its kinds of events changed: how, and how it was judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The steps between each counted build of a line and the next one:
/// `docs` are the builds' results in line order (None: not counted).
pub fn steps(builds: &[(&str, Option<&Document>)], threshold: f64) -> Result<Vec<Step>> {
    let counted: Vec<(&str, &Document)> = builds
        .iter()
        .filter_map(|(r, d)| d.map(|d| (*r, d)))
        .collect();
    let mut out = Vec::new();
    for w in counted.windows(2) {
        let ((ra, da), (rb, db)) = (w[0], w[1]);
        for r in verdicts(da, db, threshold)? {
            if !matches!(
                r.verdict,
                Verdict::Regressed | Verdict::Improved | Verdict::New | Verdict::Lost
            ) {
                continue;
            }
            out.push(Step {
                mechanism: r.mechanism,
                from: ra.to_owned(),
                to: rb.to_owned(),
                a: r.a,
                b: r.b,
                change: r.change,
                verdict: r.verdict.exact_word().to_owned(),
                functions: Vec::new(),
                explained: None,
                path: None,
            });
        }
    }
    flips(&mut out, threshold);
    Ok(out)
}

/// A step that the next build undoes (back within the threshold of the
/// count before it) is no change of the kernel but a count with two
/// values, the second in every round of one build (fexit's +229.0 and
/// +243.8 on 6.16.12, 6.17.8 and 6.17.13): both are kept, not judged.
fn flips(steps: &mut [Step], threshold: f64) {
    for i in 0..steps.len() {
        let back = steps[i + 1..].iter().position(|t| {
            let s = &steps[i];
            t.mechanism == s.mechanism
                && t.from == s.to
                && matches!((s.a, t.b), (Some(a), Some(b)) if (b - a).abs() <= threshold * a.abs())
        });
        if let Some(j) = back {
            for k in [i, i + 1 + j] {
                steps[k].verdict = FLIP.into();
            }
        }
    }
}

/// What a step that the next build undid is called.
pub const FLIP: &str = "two values: not judged";

/// The steps' pairs of builds, each once, with the mechanisms that
/// changed by a count (not new or lost): what `--explain` splits.
pub fn pairs(steps: &[Step]) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
    for s in steps
        .iter()
        .filter(|s| s.a.is_some() && s.b.is_some() && s.verdict != FLIP)
    {
        match out.iter_mut().find(|p| p.0 == s.from && p.1 == s.to) {
            Some(p) => p.2.push(s.mechanism.clone()),
            None => out.push((s.from.clone(), s.to.clone(), vec![s.mechanism.clone()])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::util::document::fixtures::counted as doc;

    #[test]
    fn a_step_at_the_first_build_that_shows_it() {
        let a = doc(&[("raw_tp", 105.0), ("kprobe", 396.0)]);
        let b = doc(&[("raw_tp", 105.0), ("kprobe", 396.5)]);
        let c = doc(&[("raw_tp", 121.0), ("kprobe", 396.5), ("fentry", 168.0)]);
        let d = doc(&[("raw_tp", 121.0), ("kprobe", 380.0), ("fentry", 168.0)]);
        let builds = [
            ("6.12.43", Some(&a)),
            ("6.12.57", Some(&b)),
            ("6.12.69", None),
            ("6.12.73", Some(&c)),
            ("6.12.74", Some(&d)),
        ];
        let s = steps(&builds, 0.01).unwrap();
        let got: Vec<(&str, &str, &str, &str)> = s
            .iter()
            .map(|s| {
                (
                    s.mechanism.as_str(),
                    s.from.as_str(),
                    s.to.as_str(),
                    s.verdict.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("raw_tp", "6.12.57", "6.12.73", "REGRESSED"),
                ("fentry", "6.12.57", "6.12.73", "new"),
                ("kprobe", "6.12.73", "6.12.74", "improved"),
            ]
        );
        assert!((s[0].change.unwrap() - 16.0 / 105.0).abs() < 1e-12);
        assert_eq!(
            pairs(&s),
            [
                (
                    "6.12.57".into(),
                    "6.12.73".into(),
                    vec!["raw_tp".to_string()]
                ),
                (
                    "6.12.73".into(),
                    "6.12.74".into(),
                    vec!["kprobe".to_string()]
                ),
            ]
        );
        // fexit's two values: up at one build, back at the next.
        let f = |c: f64| doc(&[("fexit", c)]);
        let (x, y, z, w) = (f(229.0), f(243.8), f(229.0), f(211.0));
        let s = steps(
            &[
                ("a", Some(&x)),
                ("b", Some(&y)),
                ("c", Some(&z)),
                ("d", Some(&w)),
            ],
            0.01,
        )
        .unwrap();
        let v: Vec<&str> = s.iter().map(|s| s.verdict.as_str()).collect();
        assert_eq!(v, [FLIP, FLIP, "improved"]);
        assert_eq!(pairs(&s).len(), 1, "only the last is split");
        // Nothing moved: no step.
        assert!(steps(&[("x", Some(&a)), ("y", Some(&a))], 0.01)
            .unwrap()
            .is_empty());
    }
}
