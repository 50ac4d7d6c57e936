//! Judges saved runs again with the cross-run gate, as `--baseline` would,
//! and once more with what their results record of the measuring CPU's
//! conditions left out: on a shared machine busy enough, every run is
//! "disturbed" (other work above 10% of the CPU) and UNSURE for that
//! alone, which hides what the rest of the rule, the drift between runs
//! among it, would say of the same figures.
//!
//! ```sh
//! cargo run --release --example gate_rejudge -- BASELINE CANDIDATE.json...
//! ```
//!
//! BASELINE is a result file or a directory of them (a baseline set).
//! Prints, per candidate and mechanism: the verdict as judged, the verdict
//! with the conditions left out, and whether the drift alone made that
//! one UNSURE (`by drift`, with what the same figures gave with no drift).
//! scripts/gate-ok-check keeps its runs for this.

use std::path::{Path, PathBuf};

use bpf_overhead::document::Document;
use bpf_overhead::gate::{set::compare_set, Findings, Threshold};

fn load_baseline(path: &Path) -> Result<Vec<Document>, String> {
    if !path.is_dir() {
        return Ok(vec![Document::load(path)?]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.iter().map(|f| Document::load(f)).collect()
}

/// `doc` without its record of the CPU's conditions.
fn unconditioned(doc: &Document) -> Document {
    let mut doc = doc.clone();
    doc.context = None;
    doc
}

/// `ok`, or `UNSURE (by drift, else ok)`: the verdict, and where the
/// drift alone made it UNSURE, what the same figures gave with none.
fn verdict(findings: &Findings, name: &str) -> String {
    let Some(c) = findings.find(name) else {
        return "-".into();
    };
    if !c.by_drift {
        return c.verdict.label().into();
    }
    let undrifted = if c.detail.contains("could hide") {
        "ok"
    } else if c.change.unwrap_or(0.0) > 0.0 {
        "REGRESSED"
    } else {
        "improved"
    };
    format!("{} (by drift, else {undrifted})", c.verdict.label())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [baseline, candidates @ ..] = &args[..] else {
        eprintln!("usage: gate_rejudge BASELINE CANDIDATE.json...");
        std::process::exit(2);
    };
    if candidates.is_empty() {
        eprintln!("usage: gate_rejudge BASELINE CANDIDATE.json...");
        std::process::exit(2);
    }
    let run = || -> Result<(), String> {
        let baselines = load_baseline(Path::new(baseline))?;
        let plain: Vec<Document> = baselines.iter().map(unconditioned).collect();
        println!(
            "| candidate | mechanism | change | as judged | conditions left out |\n|---|---|---|---|---|"
        );
        for file in candidates {
            let doc = Document::load(Path::new(file))?;
            let judged = compare_set(&baselines, &doc, Threshold::ByTrigger);
            let left_out = compare_set(&plain, &unconditioned(&doc), Threshold::ByTrigger);
            let name = Path::new(file)
                .file_name()
                .map_or(file.clone(), |n| n.to_string_lossy().into_owned());
            for c in judged.comparisons.iter().filter(|c| c.change.is_some()) {
                println!(
                    "| {name} | {} | {:+.1}% | {} | {} |",
                    c.name,
                    c.change.unwrap_or(0.0) * 100.0,
                    verdict(&judged, &c.name),
                    verdict(&left_out, &c.name)
                );
            }
        }
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("gate_rejudge: {e}");
        std::process::exit(2);
    }
}
