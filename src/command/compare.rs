//! `bpf-overhead compare A... --against B...`: B judged against A from
//! runs made at the same time (a duet of two kernels), round by round.

use std::path::PathBuf;
use std::process::ExitCode;

use bpf_overhead::document::{Document, Need};
use bpf_overhead::gate::{duet, Findings, Threshold};
use bpf_overhead::render::formats::CompareFormat;
use bpf_overhead::{render, side_by_side};

use super::cli::CompareArgs;
use crate::{exit, print, Failure};

pub fn compare(args: &CompareArgs) -> Result<ExitCode, Failure> {
    let load = |files: &[PathBuf]| -> Result<Vec<Document>, Failure> {
        files
            .iter()
            .map(|f| {
                Document::read(f, Need::Complete)
                    .map_err(|e| Failure::Input(format!("compare: {}", e.about(f))))
            })
            .collect()
    };
    let (a, b) = (load(&args.a)?, load(&args.against)?);
    let names: Vec<String> = args
        .a
        .iter()
        .chain(&args.against)
        .map(|f| f.display().to_string())
        .collect();
    side_by_side::same_unit(names.iter().map(String::as_str).zip(a.iter().chain(&b)))
        .map_err(|e| Failure::Input(format!("compare: {e}")))?;
    let name = |docs: &[Document]| kernels(docs);
    let (name_a, name_b) = (name(&a), name(&b));
    let doc = duet::pair_sessions(&a, &b, &format!("kernel {name_b}"))
        .map_err(|e| Failure::Input(format!("compare: {e}")))?;
    // Before any verdict: kernels built with other cost-changing options.
    if let (Some(ca), Some(cb)) = (
        a.first().and_then(|d| d.kernel_config.as_ref()),
        b.first().and_then(|d| d.kernel_config.as_ref()),
    ) {
        if let Some(line) = bpf_overhead::kconfig::differences_line(ca, cb) {
            eprintln!("compare: {line}");
        }
    }
    let threshold = args.threshold.unwrap_or(Threshold::ByTrigger);
    let findings = duet::compare(&a, &b, &doc, threshold);
    let mut text = render::duet_report(&doc, &findings, &name_a, &name_b);
    if let Some(e) = &doc.emulated {
        text.push_str(&format!(
            "compare: emulated ({e}): these figures are no performance figures\n"
        ));
    }
    let code = exit_code(&findings);
    match args.format {
        CompareFormat::Table => print(&text)?,
        CompareFormat::Json => {
            eprint!("{text}");
            let json = findings_json(&doc, &findings, &name_a, &name_b, code);
            print(&format!("{json:#}\n"))?;
        }
    }
    Ok(ExitCode::from(code))
}

/// The kernels of some runs: one release, or each one's.
fn kernels(docs: &[Document]) -> String {
    let mut releases: Vec<&str> = docs.iter().map(|d| d.kernel_release.as_str()).collect();
    releases.dedup();
    releases.join(", ")
}

/// 0 passed and decided, 1 a regression, [`exit::UNDECIDED`] otherwise.
fn exit_code(findings: &Findings) -> u8 {
    if !findings.passed() {
        exit::REGRESSED
    } else if !findings.conclusive_pass() {
        exit::UNDECIDED
    } else {
        exit::OK
    }
}

/// The findings as data (what `cargo xtask vmtest --against` keeps in its
/// vmtest.json): per mechanism the verdict, A's and B's median overhead,
/// the difference of the pairs and its test.
fn findings_json(
    doc: &Document,
    findings: &Findings,
    a: &str,
    b: &str,
    exit: u8,
) -> serde_json::Value {
    let comparisons: Vec<serde_json::Value> = findings
        .comparisons
        .iter()
        .map(|c| {
            let m = doc.mechanism(&c.name);
            let median = |m: Option<&bpf_overhead::document::MechanismResult>| {
                m.and_then(|m| m.overhead_ns.as_ref()).map(|s| s.median)
            };
            serde_json::json!({
                "name": c.name,
                "verdict": c.verdict.label(),
                "a_overhead_ns": median(m),
                "b_overhead_ns": median(m.and_then(|m| m.side_b.as_deref())),
                "diff_ns": c.diff_ns,
                "change": c.change,
                "p_value": c.p_value,
                "detectable": c.detectable,
                "pairs": m.and_then(|m| m.pairs_ns.as_ref()).map(|p| p.samples.len()),
                "detail": c.detail,
            })
        })
        .collect();
    serde_json::json!({
        "a": a,
        "b": b,
        "emulated": doc.emulated,
        "threshold": findings.threshold.describe(),
        "correction": "holm",
        "warnings": findings.warnings.iter().map(render::duet_warning).collect::<Vec<_>>(),
        "exit": exit,
        "comparisons": comparisons,
    })
}
