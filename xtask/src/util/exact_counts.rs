//! Exact counts read from the command's result documents, and B's judged
//! against A's per mechanism by the one exact rule ([`super::exact_rule`]):
//! what `vmtest --against --exact` and `history` both judge by.

use std::path::Path;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};

use super::document::{Document, MechanismResult, Status, Unit};
use super::exact_rule::{judge_ranges, ExactChange};
pub use super::verdict::Verdict;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub mechanism: String,
    /// Instructions per event over base, A's and B's.
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (B − A) / |A|.
    pub change: Option<f64>,
    pub verdict: Verdict,
    /// Where its kinds of events changed: how, and how it was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A mechanism's count in one document: none when it was not counted.
struct Count {
    name: String,
    count: Option<f64>,
    skipped: bool,
    /// A link on every function's spread ([`spread`]).
    every: Option<f64>,
    /// Its rounds' most instructions per event less their fewest.
    rounds: f64,
}

/// A link on at least this many functions is a link on every function.
const EVERY_FUNCTION: u64 = 1000;

/// For a mechanism with a link on every function (kprobe.multi-all-loop,
/// kretprobe.multi-all-loop): its rounds' spread, as a share of its count.
/// Whatever else the kernel runs during a round (the tick, RCU's work)
/// runs the program on each function it calls, so few rounds run clean
/// and the fewest of 7 is not the same from boot to boot.
fn spread(m: &MechanismResult) -> Option<f64> {
    if m.attach?.functions < EVERY_FUNCTION {
        return None;
    }
    let ins = round_ins(m)?;
    let (lo, hi) = ins.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let count = m.overhead_ns.as_ref()?.median;
    (!ins.is_empty()).then(|| (hi - lo) / count.abs().max(1.0))
}

/// Each round's instructions per event (from its events per million).
fn round_ins(m: &MechanismResult) -> Option<Vec<f64>> {
    let rates = &m.k_events_per_sec.as_ref()?.samples;
    Some(rates.iter().map(|k| 1e6 / k).collect())
}

/// How far above its fewest a mechanism's rounds recur: the most
/// instructions per event that at least two rounds share (within half an
/// instruction) less the fewest. A value one round alone reached is an
/// interrupt's (a tick adds ~15000 instructions to the run it lands in),
/// not a second value of the count.
fn rounds(m: &MechanismResult) -> Option<f64> {
    let ins = round_ins(m)?;
    let lo = ins.iter().copied().fold(f64::INFINITY, f64::min);
    let recurring = ins
        .iter()
        .copied()
        .filter(|v| ins.iter().filter(|w| (*w - v).abs() <= 0.5).count() >= 2)
        .fold(lo, f64::max);
    (!ins.is_empty()).then_some(recurring - lo)
}

/// The result document at `path`, as the command wrote it.
pub fn read_document(path: &Path) -> Result<Document> {
    let text = super::document::read_result_file(path)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("reading {}", path.display()))?;
    Document::from_json(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("parsing {}", path.display()))
}

/// A result document's counts: each mechanism (bases aside), its
/// instructions per event over its base, and whether it was skipped.
/// Refuses a document that is not exact.
fn counts(doc: &Document, name: &str) -> Result<Vec<Count>> {
    ensure!(
        doc.unit == Unit::Instructions,
        "{name}: counts {}, not instructions: not an exact run",
        doc.unit
    );
    Ok(doc
        .mechanisms
        .iter()
        .filter(|m| !m.is_base())
        .map(|m| Count {
            name: m.name.clone(),
            count: m
                .overhead_ns
                .as_ref()
                .filter(|_| m.is_ok())
                .map(|o| o.median),
            skipped: m.status == Status::Skipped,
            every: spread(m),
            rounds: rounds(m).unwrap_or(0.0),
        })
        .collect())
}

/// B against A, per mechanism either counted, in A's order then B's new
/// ones. `threshold`: a share (0.01 for 1%) of A's count.
pub fn verdicts(a: &Document, b: &Document, threshold: f64) -> Result<Vec<Row>> {
    let (ca, cb) = (counts(a, "A")?, counts(b, "B")?);
    fn of<'c>(c: &'c [Count], n: &str) -> Option<&'c Count> {
        c.iter().find(|x| x.name == n)
    }
    let mut rows = Vec::new();
    for x in &ca {
        let Some(va) = x.count else { continue };
        let other = of(&cb, &x.name);
        let vb = other.and_then(|o| o.count);
        let (change, verdict) = match (vb, other) {
            (None, Some(y)) if y.skipped => (None, Verdict::Absent),
            (None, _) => (None, Verdict::Lost),
            (Some(vb), Some(y)) => {
                let (change, v) = judge_ranges((va, va + x.rounds), (vb, vb + y.rounds), threshold);
                let spread = x.every.into_iter().chain(y.every).fold(0.0, f64::max);
                let v = match v {
                    _ if spread > threshold => Verdict::Spread,
                    ExactChange::Regressed => Verdict::Regressed,
                    ExactChange::Improved => Verdict::Improved,
                    ExactChange::Unchanged => Verdict::Unchanged,
                };
                (Some(change), v)
            }
            (Some(_), None) => unreachable!("a count comes from a mechanism"),
        };
        rows.push(Row {
            mechanism: x.name.clone(),
            a: Some(va),
            b: vb,
            change,
            verdict,
            path: None,
        });
    }
    for y in &cb {
        if y.count.is_some() && of(&ca, &y.name).and_then(|o| o.count).is_none() {
            rows.push(Row {
                mechanism: y.name.clone(),
                a: None,
                b: y.count,
                change: None,
                verdict: Verdict::New,
                path: None,
            });
        }
    }
    Ok(rows)
}

/// 1 when B regressed or lost a mechanism, else 0.
pub fn exit_code(rows: &[Row]) -> i32 {
    let regressed = rows
        .iter()
        .any(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Lost));
    i32::from(if regressed {
        super::exit_status::REGRESSED
    } else {
        super::exit_status::OK
    })
}

/// The verdicts as a table.
pub fn table(rows: &[Row], name_a: &str, name_b: &str, threshold: f64) -> String {
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.1}"));
    let mut lines = vec![
        format!(
            "exact: B {name_b} against A {name_a}: guest instructions per event over base, \
             threshold {:.2}%",
            threshold * 100.0
        ),
        String::new(),
    ];
    let mut cells = vec![["mechanism", "A", "B", "B-A", "change", "verdict"].map(String::from)];
    for r in rows {
        let diff = r.a.zip(r.b).map(|(a, b)| b - a);
        cells.push([
            r.mechanism.clone(),
            f(r.a),
            f(r.b),
            f(diff),
            r.change
                .map_or("-".into(), |c| format!("{:+.2}%", c * 100.0)),
            r.verdict.exact_word().into(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &cells {
        let mut l = format!("{:<w$}", r[0], w = widths[0]);
        for c in 1..6 {
            l += &format!("  {:>w$}", r[c], w = widths[c]);
        }
        lines.push(l.trim_end().to_owned());
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    lines.push(String::new());
    lines.push(format!(
        "{} REGRESSED, {} improved, {} unchanged, {} new, {} absent in B, {} LOST",
        count(Verdict::Regressed),
        count(Verdict::Improved),
        count(Verdict::Unchanged),
        count(Verdict::New),
        count(Verdict::Absent),
        count(Verdict::Lost)
    ));
    if count(Verdict::Spread) > 0 {
        lines.push(format!(
            "{} not judged: a link on every function runs its program on whatever else the \
             kernel does in a round (the tick, RCU), so its rounds spread beyond the threshold \
             and the fewest is not the same from boot to boot",
            count(Verdict::Spread)
        ));
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::util::document::{fixtures, AttachCost, Summary};

    /// A document of `unit` whose mechanisms are `(name, base, count)`;
    /// a name ending in `!` failed, one without a count was skipped.
    fn doc(unit: Unit, ms: &[(&str, &str, Option<f64>)]) -> Document {
        let mut d = fixtures::document();
        d.unit = unit;
        let template = d.mechanisms[2].clone();
        d.mechanisms = ms
            .iter()
            .map(|(n, base, c)| MechanismResult {
                name: n.trim_end_matches('!').into(),
                base: (*base).into(),
                status: match (c, *n == *base, n.ends_with("!")) {
                    (_, _, true) => Status::Failed,
                    (Some(_), _, _) | (_, true, _) => Status::Ok,
                    _ => Status::Skipped,
                },
                overhead_ns: c.and_then(|c| Summary::of(&[c])),
                k_events_per_sec: None,
                ..template.clone()
            })
            .collect();
        d
    }

    #[test]
    fn rounds_of_two_values_are_judged_by_their_range() {
        // fexit on 6.12.57 and 6.12.69 (+deb12): 1027.9 a base event; its
        // rounds 1257.9 or 1271.5 (+230.0 or +243.6) on one, all 1270.5 on the other.
        let fexit = |count: f64, ins: &[f64]| {
            let mut d = doc(
                Unit::Instructions,
                &[("base", "base", None), ("fexit", "base", Some(count))],
            );
            let k: Vec<f64> = ins.iter().map(|i| 1e6 / i).collect();
            d.mechanisms[1].k_events_per_sec = Summary::of(&k);
            d
        };
        let a = fexit(230.0, &[1257.9, 1257.9, 1257.9, 1271.5, 1271.5]);
        let b = fexit(243.6, &[1270.5, 1270.5, 1270.8, 1270.5, 1270.5]);
        assert_eq!(
            verdicts(&a, &b, 0.01).unwrap()[0].verdict,
            Verdict::Unchanged
        );
        assert_eq!(
            verdicts(&b, &a, 0.01).unwrap()[0].verdict,
            Verdict::Unchanged
        );
        // raw_tp on 6.18.15 then 7.2.6: one round a tick landed in is no
        // second value, and the step of +33 is judged.
        let raw_tp = |count: f64, ins: &[f64]| {
            let mut d = fexit(count, ins);
            d.mechanisms[1].name = "raw_tp".into();
            d
        };
        let before = raw_tp(121.0, &[1077.8, 1077.8, 1077.8, 1077.8, 1155.0]);
        let after = raw_tp(154.0, &[1181.8; 5]);
        assert_eq!(
            verdicts(&before, &after, 0.01).unwrap()[0].verdict,
            Verdict::Regressed
        );
        let c = fexit(260.0, &[1287.9, 1287.9]);
        assert_eq!(
            verdicts(&a, &c, 0.01).unwrap()[0].verdict,
            Verdict::Regressed
        );
    }

    /// A's counts: five mechanisms over one base.
    fn a() -> Document {
        doc(
            Unit::Instructions,
            &[
                ("base", "base", None),
                ("raw_tp", "base", Some(100.0)),
                ("tp", "base", Some(400.0)),
                ("fentry", "base", Some(200.0)),
                ("kprobe", "base", Some(300.0)),
                ("lsm", "base", Some(50.0)),
            ],
        )
    }

    #[test]
    fn verdicts_by_threshold_alone() {
        let b = doc(
            Unit::Instructions,
            &[
                ("base", "base", None),
                ("raw_tp", "base", Some(101.5)),
                ("tp", "base", Some(396.0)),
                ("fentry", "base", Some(201.9)),
                ("kprobe", "base", None),
                ("lsm!", "base", None),
                ("kprobe.multi", "base", Some(280.0)),
            ],
        );
        let rows = verdicts(&a(), &b, 0.01).unwrap();
        let got: Vec<(&str, Verdict)> = rows
            .iter()
            .map(|r| (r.mechanism.as_str(), r.verdict))
            .collect();
        assert_eq!(
            got,
            [
                ("raw_tp", Verdict::Regressed),
                ("tp", Verdict::Unchanged),
                ("fentry", Verdict::Unchanged),
                ("kprobe", Verdict::Absent),
                ("lsm", Verdict::Lost),
                ("kprobe.multi", Verdict::New),
            ]
        );
        assert_eq!(exit_code(&rows), 1);
    }

    /// A link on every function whose rounds spread beyond the threshold:
    /// not judged, whichever way it moved.
    #[test]
    fn a_link_on_every_function_that_spreads_is_not_judged() {
        let every = |count: f64, rates: &[f64]| {
            let mut d = doc(
                Unit::Instructions,
                &[("base", "base", None), ("all", "base", Some(count))],
            );
            d.mechanisms[1].attach = Some(AttachCost {
                functions: 46248,
                seconds: 1.0,
                memory_kib: None,
            });
            d.mechanisms[1].k_events_per_sec = Summary::of(rates);
            d
        };
        // 1e6/k: 500 and 505 instructions per event, 1% of a count of 500.
        let (all_a, all_b) = (
            every(500.0, &[2000.0, 1980.2]),
            every(520.0, &[2000.0, 2000.0]),
        );
        let rows = verdicts(&all_a, &all_b, 0.005).unwrap();
        assert_eq!(rows[0].verdict, Verdict::Spread);
        assert_eq!(exit_code(&rows), 0);
        assert!(table(&rows, "a", "b", 0.005).contains("1 not judged"));
        assert_eq!(
            verdicts(&all_a, &all_b, 0.02).unwrap()[0].verdict,
            Verdict::Regressed
        );
    }

    #[test]
    fn a_document_against_itself_is_unchanged() {
        let rows = verdicts(&a(), &a(), 0.01).unwrap();
        assert!(rows.iter().all(|r| r.verdict == Verdict::Unchanged));
        assert_eq!(exit_code(&rows), 0);
    }

    #[test]
    fn a_cheaper_count_is_improved_and_tabled_as_such() {
        let cheaper = doc(Unit::Instructions, &[("raw_tp", "base", Some(98.0))]);
        let r = verdicts(&a(), &cheaper, 0.01).unwrap();
        assert_eq!(r[0].verdict, Verdict::Improved);
        let text = table(&r, "6.1", "6.12", 0.01);
        let row = text.lines().find(|l| l.starts_with("raw_tp")).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["raw_tp", "+100.0", "+98.0", "-2.0", "-2.00%", "improved"]
        );
    }

    #[test]
    fn a_timed_run_is_refused() {
        let timed = doc(Unit::Ns, &[("raw_tp", "base", Some(100.0))]);
        let exact = doc(Unit::Instructions, &[("raw_tp", "base", Some(100.0))]);
        let e = verdicts(&exact, &timed, 0.01).unwrap_err().to_string();
        assert_eq!(e, "B: counts ns, not instructions: not an exact run");
        let old = doc(Unit::Ns, &[]);
        assert!(verdicts(&old, &exact, 0.01).is_err());
    }
}
