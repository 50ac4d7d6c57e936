//! Prices for exact counts: what a host's clock says each instruction and
//! each kind of event costs there, fitted over the mechanisms it can run.
//!
//! An exact count is the same on every host, but time is not
//! instructions: a trap or a system call costs a real CPU hundreds of
//! cycles in one instruction. So the price of a mechanism on a host is
//! modelled as `a * instructions + sum(w_k * events of kind k)`, all per
//! event over its base, with every weight at least 0, and fitted by least
//! squares to the host's own ns over base of the same mechanisms. Each
//! mechanism is also priced by a fit made without it (leave-one-out): the
//! error that says how far a price can be trusted on a mechanism the fit
//! has not seen. Pure: the command reads the files and renders.

pub use bpf_overhead_common::calibration::LeftOut;
use bpf_overhead_common::kinds::KINDS;
use serde::{Deserialize, Serialize};

/// What a fit weighs: instructions, then the kinds of events in common's
/// order ([`KINDS`]). Non-negative weights let the fit leave out what costs nothing
/// more on this host.
pub const FEATURES: [&str; 1 + KINDS.len()] = {
    let mut f = ["instructions"; 1 + KINDS.len()];
    let mut i = 0;
    while i < KINDS.len() {
        f[i + 1] = KINDS[i];
        i += 1;
    }
    f
};

/// Fewer events of a kind per event than this are an interrupt's or a
/// window edge's, not the path's: left out of a point.
pub const LEAST_KIND: f64 = 0.05;

/// One mechanism: its count, its kinds (per event over the base, in
/// [`FEATURES`]' order after instructions) and, where measured, its ns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub mechanism: String,
    /// [`FEATURES`]' values.
    pub x: Vec<f64>,
    /// The host's ns per event over the base.
    pub ns: f64,
}

impl Point {
    /// A point from a count and its kinds by name (unknown kinds ignored).
    pub fn new<'a>(
        mechanism: &str,
        instructions: f64,
        kinds: impl IntoIterator<Item = (&'a str, f64)>,
        ns: f64,
    ) -> Point {
        let mut x = vec![0.0; FEATURES.len()];
        x[0] = instructions;
        for (kind, v) in kinds.into_iter().filter(|(_, v)| v.abs() >= LEAST_KIND) {
            if let Some(i) = FEATURES.iter().position(|f| *f == kind) {
                x[i] += v;
            }
        }
        Point {
            mechanism: mechanism.to_owned(),
            x,
            ns,
        }
    }
}

/// Non-negative least squares, by exact coordinate descent on the normal
/// equations: small problems (a few features, tens of points), so plain
/// sweeps converge well within the cap. Features no point has get 0.
pub fn fit(points: &[Point]) -> Vec<f64> {
    let n = FEATURES.len();
    let mut h = vec![vec![0.0; n]; n];
    let mut g = vec![0.0; n];
    for p in points {
        for ((gi, hi), xi) in g.iter_mut().zip(h.iter_mut()).zip(&p.x) {
            *gi += xi * p.ns;
            for (hij, xj) in hi.iter_mut().zip(&p.x) {
                *hij += xi * xj;
            }
        }
    }
    let mut w = vec![0.0; n];
    for _ in 0..20_000 {
        let mut moved = 0.0f64;
        for j in 0..n {
            if h[j][j] <= 0.0 {
                continue;
            }
            let grad: f64 = (0..n).map(|k| h[j][k] * w[k]).sum::<f64>() - g[j];
            let next = (w[j] - grad / h[j][j]).max(0.0);
            moved = moved.max((next - w[j]).abs());
            w[j] = next;
        }
        if moved < 1e-12 {
            break;
        }
    }
    w
}

/// A point's price under `weights`.
pub fn price(weights: &[f64], x: &[f64]) -> f64 {
    weights.iter().zip(x).map(|(w, v)| w * v).sum()
}

/// Each point priced by a fit of the others.
pub fn leave_one_out(points: &[Point]) -> Vec<LeftOut> {
    (0..points.len())
        .map(|i| {
            let others: Vec<Point> = points
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, p)| p.clone())
                .collect();
            let p = &points[i];
            let priced_ns = price(&fit(&others), &p.x);
            LeftOut {
                mechanism: p.mechanism.clone(),
                ns: p.ns,
                priced_ns,
                error: (priced_ns - p.ns) / p.ns.abs().max(f64::MIN_POSITIVE),
            }
        })
        .collect()
}

/// The pairs the clock separates by more than `apart` (0.15: 15%) whose
/// prices (leave-one-out) put them the other way round.
pub fn misordered(rows: &[LeftOut], apart: f64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for a in rows {
        for b in rows {
            if a.ns > b.ns * (1.0 + apart) && a.priced_ns <= b.priced_ns {
                out.push((a.mechanism.clone(), b.mechanism.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mechanisms priced 0.5 ns an instruction and 300 ns an int3 trap,
    /// with an iret each trap that costs nothing more.
    fn points() -> Vec<Point> {
        let p = |m: &str, ins: f64, traps: f64| {
            Point::new(
                m,
                ins,
                [("int3", traps), ("iret", traps)],
                0.5 * ins + 300.0 * traps,
            )
        };
        vec![
            p("raw_tp", 120.0, 0.0),
            p("tp", 420.0, 0.0),
            p("uprobe-nop", 1180.0, 1.0),
            p("uprobe-push", 1280.0, 1.0),
            p("uretprobe-nop", 2130.0, 2.0),
            p("uprobe-multi", 1090.0, 1.0),
        ]
    }

    #[test]
    fn a_fit_finds_the_prices_that_made_the_figures() {
        let w = fit(&points());
        assert!((w[0] - 0.5).abs() < 1e-6, "{w:?}");
        // The trap and its return share 300 ns: together exact.
        assert!((w[1] + w[5] - 300.0).abs() < 1e-3, "{w:?}");
        assert!(w.iter().all(|&v| v >= 0.0));
    }

    #[test]
    fn leaving_one_out_prices_it_from_the_others() {
        let rows = leave_one_out(&points());
        assert_eq!(rows.len(), 6);
        assert!(rows.iter().all(|r| r.error.abs() < 1e-6), "{rows:?}");
        assert!(misordered(&rows, 0.15).is_empty());
    }

    #[test]
    fn weights_stay_non_negative() {
        // More instructions, less time: the instructions' weight stops at 0.
        let pts = vec![
            Point::new("a", 100.0, [], 50.0),
            Point::new("b", 200.0, [], 10.0),
        ];
        let w = fit(&pts);
        assert!(w.iter().all(|&v| v >= 0.0), "{w:?}");
    }

    #[test]
    fn a_kind_met_once_cannot_be_priced_without_it() {
        let mut pts = points();
        pts.push(Point::new("uprobe-ret", 1870.0, [("debug", 1.0)], 9000.0));
        let rows = leave_one_out(&pts);
        let ret = rows.iter().find(|r| r.mechanism == "uprobe-ret").unwrap();
        assert!(ret.error < -0.5, "{ret:?}");
    }
}
