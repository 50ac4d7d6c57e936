//! `bpf-overhead calibrate`: this host's prices for exact counts
//! (bpf_overhead::price), fitted from its own timed result against a
//! guest's counts of the same mechanisms, saved with the host's identity;
//! and, with `--price`, an exact count priced for this host.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use bpf_overhead::document::{Document, Need};
use bpf_overhead::measure::kernel::{host, round_trip};
use bpf_overhead::price::{self, Point, FEATURES};
use bpf_overhead_common::calibration::{Calibration, Identity, SCHEMA};
use serde_json::Value;

use super::cli::CalibrateArgs;
use crate::{print, Failure};

/// The pairs the clock separates by more than this must be priced in the
/// same order.
const APART: f64 = 0.15;

/// A fit whose median leave-one-out error is over this prices nothing.
const MOST_FIT_ERROR: f64 = 0.5;

/// This host's identity, which its prices belong to.
fn here() -> Identity {
    Identity {
        cpu_model: host::cpu_model(),
        kernel_release: host::kernel_release(),
        mitigations: host::mitigations(),
    }
}

/// A syscall round trip's runs: enough calls that a tick is noise, the
/// fewest of a few runs so that a preemption is not.
const ROUND_TRIP_CALLS: u32 = 200_000;
const ROUND_TRIP_RUNS: u32 = 5;

pub fn calibrate(args: &CalibrateArgs) -> Result<ExitCode, Failure> {
    let exact = read_json(&args.exact, "--exact")?;
    let counts = counts_of(&exact, &args.exact)?;
    if let Some(cal) = &args.price {
        return price_with(cal, &exact, &counts);
    }
    let Some(host_file) = &args.host else {
        return Err(Failure::Input(
            "calibrate: give --host RESULT (this host's run, --save) to fit, or --price \
             CALIBRATION to price"
                .into(),
        ));
    };
    let here = here();
    let points = points_of(host_file, &counts, &here)?;
    if points.len() < 3 {
        return Err(Failure::Input(format!(
            "calibrate: {} mechanisms in both files; a fit needs at least 3 (measure the \
             comm and call families here, count them with vmtest --exact --explain)",
            points.len()
        )));
    }
    let weights = price::fit(&points);
    let left_out = price::leave_one_out(&points);
    let mut sizes: Vec<f64> = left_out.iter().map(|r| r.error.abs()).collect();
    sizes.sort_by(f64::total_cmp);
    let cal = Calibration {
        schema: SCHEMA.into(),
        host: here,
        guest_kernel: str_of(&exact["kernel"]),
        emulator: str_of(&exact["emulator"]),
        weights: FEATURES
            .iter()
            .zip(&weights)
            .map(|(f, w)| (f.to_string(), *w))
            .collect(),
        fit_error: sizes[sizes.len() / 2],
        left_out,
        round_trips: BTreeMap::from([(
            "syscall".to_owned(),
            round_trip::syscall_ns(ROUND_TRIP_CALLS, ROUND_TRIP_RUNS),
        )]),
    };
    print(&fit_table(&cal))?;
    if let Some(out) = &args.save {
        let text = serde_json::to_string_pretty(&cal).expect("a calibration serializes") + "\n";
        bpf_overhead::safe_write::write(out, text).map_err(|e| {
            Failure::Input(format!("calibrate: cannot save to {}: {e}", out.display()))
        })?;
        eprintln!("bpf-overhead: calibration saved to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The points of a fit: each mechanism timed in `host_file`, a run of this
/// host (`here`), with its count.
fn points_of(
    host_file: &Path,
    counts: &ExactCounts,
    here: &Identity,
) -> Result<Vec<Point>, Failure> {
    let doc = Document::read(host_file, Need::Complete)
        .map_err(|e| Failure::Input(format!("calibrate: {}", e.about(host_file))))?;
    if doc.unit != bpf_overhead::document::Unit::Ns {
        return Err(Failure::Input(format!(
            "calibrate: {} counts {}, not time: give a timed run of this host",
            host_file.display(),
            doc.unit
        )));
    }
    if doc.cpu_model != here.cpu_model || doc.kernel_release != here.kernel_release {
        return Err(Failure::Input(format!(
            "calibrate: {} was measured on {} ({}), not this host ({}, {}): measure here",
            host_file.display(),
            doc.cpu_model,
            doc.kernel_release,
            here.cpu_model,
            here.kernel_release
        )));
    }
    let points: Vec<Point> = doc
        .mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .filter_map(|m| {
            let ns = m.overhead_ns.as_ref()?.median;
            let (ins, kinds) = counts.get(&m.name)?;
            Some(Point::new(
                &m.name,
                *ins,
                kinds.iter().map(|(k, v)| (k.as_str(), *v)),
                ns,
            ))
        })
        .collect();
    Ok(points)
}

/// The fit's table: weights, each mechanism left out, the summary.
fn fit_table(cal: &Calibration) -> String {
    let mut t = format!(
        "calibration: {} ({}), against {}'s counts\nprices, ns each: ",
        cal.host.cpu_model, cal.host.kernel_release, cal.guest_kernel
    );
    let w: Vec<String> = cal
        .weights
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .map(|(k, v)| format!("{k} {v:.3}"))
        .collect();
    let _ = writeln!(t, "{}", w.join(", "));
    let _ = writeln!(
        t,
        "{:<24} {:>10} {:>14} {:>8}",
        "mechanism", "host ns", "priced ns (LOO)", "error"
    );
    for r in &cal.left_out {
        let _ = writeln!(
            t,
            "{:<24} {:>10.1} {:>14.1} {:>+7.1}%",
            r.mechanism,
            r.ns,
            r.priced_ns,
            r.error * 100.0
        );
    }
    let worst = cal
        .left_out
        .iter()
        .map(|r| r.error.abs())
        .fold(0.0, f64::max);
    let wrong = price::misordered(&cal.left_out, APART);
    let _ = writeln!(
        t,
        "fit error (left out): median {:.1}%, worst {:.1}%; pairs the clock separates by over {:.0}% priced the other way: {}",
        cal.fit_error * 100.0,
        worst * 100.0,
        APART * 100.0,
        if wrong.is_empty() {
            "none".to_owned()
        } else {
            wrong.iter().map(|(a, b)| format!("{a} > {b}")).collect::<Vec<_>>().join(", ")
        }
    );
    if let Some(rt) = cal.round_trips.get("syscall") {
        let w = |k: &str| cal.weights.get(k).copied().unwrap_or(0.0);
        let _ = writeln!(
            t,
            "a system call's round trip here (getppid, the fewest of {ROUND_TRIP_RUNS} runs): \
             {rt:.1} ns; the fit prices a syscall and its sysret at {:.1} ns",
            w("syscall") + w("sysret")
        );
    }
    t
}

/// `--price`: the exact counts priced with a saved calibration of this host.
fn price_with(cal_file: &Path, exact: &Value, counts: &ExactCounts) -> Result<ExitCode, Failure> {
    let bad = |why: String| Failure::Input(format!("calibrate: {}: {why}", cal_file.display()));
    let cal = Calibration::read(cal_file).map_err(bad)?;
    let here = here();
    if cal.host != here {
        return Err(bad(format!(
            "made on another host ({}, {}, or other mitigations): calibrate this one",
            cal.host.cpu_model, cal.host.kernel_release
        )));
    }
    // NaN too: a fit that cannot say how good it is prices nothing.
    if cal.fit_error.is_nan() || cal.fit_error > MOST_FIT_ERROR {
        return Err(bad(format!(
            "its fit is off by {:.0}% (median, left out): over {:.0}%, it prices nothing",
            cal.fit_error * 100.0,
            MOST_FIT_ERROR * 100.0
        )));
    }
    let weights: Vec<f64> = FEATURES
        .iter()
        .map(|f| cal.weights.get(*f).copied().unwrap_or(0.0))
        .collect();
    let mut t = format!(
        "{}'s counts priced for this host ({}), estimated ns per event over the base, beside the count\n",
        str_of(&exact["kernel"]),
        cal.host.cpu_model
    );
    let _ = writeln!(
        t,
        "{:<24} {:>10} {:>10}  kinds",
        "mechanism", "ins", "est. ns"
    );
    for (m, (ins, kinds)) in counts {
        let p = Point::new(m, *ins, kinds.iter().map(|(k, v)| (k.as_str(), *v)), 0.0);
        let kinds: Vec<String> = kinds.iter().map(|(k, v)| format!("{k} {v:+.1}")).collect();
        let _ = writeln!(
            t,
            "{m:<24} {:>+10.1} {:>10.1}  {}",
            ins,
            price::price(&weights, &p.x),
            if kinds.is_empty() {
                "none".into()
            } else {
                kinds.join(", ")
            }
        );
    }
    print(&t)?;
    Ok(ExitCode::SUCCESS)
}

/// Per mechanism of an explain.json: its count and its kinds.
type ExactCounts = BTreeMap<String, (f64, Vec<(String, f64)>)>;

fn counts_of(exact: &Value, path: &Path) -> Result<ExactCounts, Failure> {
    let bad = |why: &str| Failure::Input(format!("calibrate: {}: {why}", path.display()));
    if exact["unit"] != "instructions" {
        return Err(bad(
            "not an explain.json of `cargo xtask vmtest --exact --explain`",
        ));
    }
    let mut out = BTreeMap::new();
    for m in exact["mechanisms"]
        .as_array()
        .ok_or_else(|| bad("no mechanisms"))?
    {
        let name = m["mechanism"]
            .as_str()
            .ok_or_else(|| bad("a mechanism without a name"))?;
        let count = m["count"]
            .as_f64()
            .filter(|c| c.is_finite() && c.abs() < 1e9)
            .ok_or_else(|| bad(&format!("{name}: no sensible count")))?;
        let mut kinds = Vec::new();
        for k in m["kinds"].as_array().into_iter().flatten() {
            let (Some(kind), Some(v)) = (k["kind"].as_str(), k["per_event"].as_f64()) else {
                return Err(bad(&format!("{name}: a kind without its name or figure")));
            };
            if !v.is_finite() || v.abs() > 1e6 {
                return Err(bad(&format!("{name}: {kind} {v} per event")));
            }
            kinds.push((kind.to_owned(), v));
        }
        out.insert(name.to_owned(), (count, kinds));
    }
    Ok(out)
}

fn read_json(path: &Path, what: &str) -> Result<Value, Failure> {
    let text = fs::read_to_string(path).map_err(|e| {
        Failure::Input(format!(
            "calibrate: cannot read {what} {}: {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("calibrate: {}: not JSON: {e}", path.display())))
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or("?").to_owned()
}
