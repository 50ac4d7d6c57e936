//! When a mechanism's path changes between two kernels (one int3 trap
//! fewer, one system call more), its instructions no longer say whether
//! it got dearer: a trap costs a real CPU hundreds of instructions' time.
//! Such a mechanism is judged by its price on the host that asks (a
//! `bpf-overhead calibrate` of it, `--calibration`), and without one it is
//! not judged on instructions alone. Where the kinds of events did not
//! change, instructions stay the rule (docs/exact.md).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use bpf_overhead_common::calibration::Calibration;

use crate::tasks::vmtest::explain::kinds::PATH;
use crate::tasks::vmtest::explain::{Explained, Split};
use crate::util::exact_counts::{Row, Verdict};

/// A change of a kind by less than this per event is no change of path.
const LEAST_CHANGE: f64 = 0.5;

/// A host's prices (a calibration's `weights`: ns per instruction and per
/// event of each kind) and whose they are.
pub struct Prices {
    pub host: String,
    weights: BTreeMap<String, f64>,
}

impl Prices {
    /// A calibration written by `bpf-overhead calibrate --save`.
    pub fn read(path: &Path) -> Result<Prices> {
        let cal = Calibration::read(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        Ok(Prices {
            host: cal.host.cpu_model,
            weights: cal.weights,
        })
    }

    /// `s`'s estimated ns per event over its base.
    fn of(&self, s: &Split) -> f64 {
        let w = |k: &str| self.weights.get(k).copied().unwrap_or(0.0);
        w("instructions") * s.count
            + s.kinds
                .iter()
                .filter(|k| k.per_event.abs() >= 0.05)
                .map(|k| w(&k.kind) * k.per_event)
                .sum::<f64>()
    }
}

/// B's kinds of path less A's, the ones that changed: `(kind, change)`.
fn path_change(a: &Split, b: &Split) -> Vec<(&'static str, f64)> {
    let of = |s: &Split, k: &str| {
        s.kinds
            .iter()
            .find(|x| x.kind == k)
            .map_or(0.0, |x| x.per_event)
    };
    PATH.iter()
        .map(|k| (*k, of(b, k) - of(a, k)))
        .filter(|(_, d)| d.abs() >= LEAST_CHANGE)
        .collect()
}

/// Judges again each judged row whose path changed: by `prices` where
/// given, else [`Verdict::PathChanged`]. One line for each, saying why,
/// also kept in the row (`path`).
pub fn rejudge(
    rows: &mut [Row],
    ea: &Explained,
    eb: &Explained,
    prices: Option<&Prices>,
    threshold: f64,
) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows.iter_mut() {
        if !matches!(
            r.verdict,
            Verdict::Regressed | Verdict::Improved | Verdict::Unchanged
        ) {
            continue;
        }
        let (Some(sa), Some(sb)) = (ea.split(&r.mechanism), eb.split(&r.mechanism)) else {
            continue;
        };
        let change = path_change(sa, sb);
        if change.is_empty() {
            continue;
        }
        let kinds: Vec<String> = change
            .iter()
            .map(|(k, d)| format!("{}{} {k}", if *d < 0.0 { "−" } else { "+" }, fmt(d.abs())))
            .collect();
        let ins = sb.count - sa.count;
        let head = format!(
            "{}: path changed: {}; {ins:+.0} ins",
            r.mechanism,
            kinds.join(", ")
        );
        match prices {
            Some(p) => {
                let (pa, pb) = (p.of(sa), p.of(sb));
                let rel = (pb - pa) / pa.abs().max(f64::MIN_POSITIVE);
                r.verdict = if rel > threshold {
                    Verdict::Regressed
                } else if rel < -threshold {
                    Verdict::Improved
                } else {
                    Verdict::Unchanged
                };
                r.path = Some(format!(
                    "{head}, est. {:+.0} ns on {} ({:+.1}%): {}",
                    pb - pa,
                    p.host,
                    rel * 100.0,
                    r.verdict.exact_word()
                ));
            }
            None => {
                r.verdict = Verdict::PathChanged;
                r.path = Some(format!(
                    "{head}: not judged on instructions alone; price it for a host with \
                     --calibration FILE (bpf-overhead calibrate)"
                ));
            }
        }
        notes.extend(r.path.clone());
    }
    notes
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::vmtest::explain::kinds::Kind;

    fn split(m: &str, count: f64, kinds: &[(&str, f64)]) -> Split {
        Split {
            mechanism: m.into(),
            base: "base-nop5".into(),
            count,
            functions: Vec::new(),
            sum: count,
            residual: 0.0,
            kinds: kinds
                .iter()
                .map(|(k, v)| Kind {
                    kind: (*k).into(),
                    per_event: *v,
                })
                .collect(),
        }
    }

    fn explained(s: Split) -> Explained {
        Explained {
            unit: "instructions".into(),
            kernel: "k".into(),
            emulator: "q".into(),
            mechanisms: vec![s],
        }
    }

    fn row(a: f64, b: f64, verdict: Verdict) -> Row {
        Row {
            mechanism: "uprobe-nop5".into(),
            a: Some(a),
            b: Some(b),
            change: Some((b - a) / a),
            verdict,
            path: None,
        }
    }

    /// 6.18's nop5: the int3 trap and its iret become a system call and
    /// its sysret, in 111 instructions more.
    fn sides() -> (Explained, Explained) {
        (
            explained(split(
                "uprobe-nop5",
                1151.9,
                &[("int3", 1.0), ("iret", 1.0), ("ret", 44.0)],
            )),
            explained(split(
                "uprobe-nop5",
                1262.9,
                &[("syscall", 1.0), ("sysret", 1.0), ("ret", 35.0)],
            )),
        )
    }

    fn prices() -> Prices {
        Prices {
            host: "AMD EPYC".into(),
            weights: BTreeMap::from([
                ("instructions".into(), 0.0),
                ("iret".into(), 124.3),
                ("syscall".into(), 168.6),
                ("ret".into(), 11.5),
            ]),
        }
    }

    #[test]
    fn a_changed_path_is_judged_by_its_price() {
        let (a, b) = sides();
        let mut rows = vec![row(1151.9, 1262.9, Verdict::Regressed)];
        let notes = rejudge(&mut rows, &a, &b, Some(&prices()), 0.01);
        assert_eq!(rows[0].verdict, Verdict::Improved, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "uprobe-nop5: path changed: −1 int3, +1 syscall, −1 iret, +1 sysret; +111 ins, est. -59 ns on AMD EPYC"
            ),
            "{notes:?}"
        );
    }

    #[test]
    fn without_prices_a_changed_path_is_not_judged_on_instructions() {
        let (a, b) = sides();
        let mut rows = vec![row(1151.9, 1262.9, Verdict::Regressed)];
        let notes = rejudge(&mut rows, &a, &b, None, 0.01);
        assert_eq!(rows[0].verdict, Verdict::PathChanged);
        assert!(
            notes[0].contains("not judged on instructions alone"),
            "{notes:?}"
        );
    }

    #[test]
    fn the_same_path_keeps_the_instructions_rule() {
        let (a, _) = sides();
        let b = explained(split(
            "uprobe-nop5",
            1300.0,
            &[("int3", 1.0), ("iret", 1.0), ("ret", 50.0)],
        ));
        let mut rows = vec![row(1151.9, 1300.0, Verdict::Regressed)];
        assert!(rejudge(&mut rows, &a, &b, Some(&prices()), 0.01).is_empty());
        assert_eq!(rows[0].verdict, Verdict::Regressed);
    }
}
