//! `bpf-overhead report FILE... [--svg OUT]`: result files side by side.

use std::process::ExitCode;

use bpf_overhead::document::{Document, Need};
use bpf_overhead::render;
use bpf_overhead::side_by_side::{self, Matrix};

use super::cli::ReportArgs;
use super::save::{save_target, SaveTarget};
use crate::{note, print, Failure};

/// `report FILE... [--svg OUT]`: the table on stdout, the chart into OUT.
/// No files, an unreadable or foreign one, or results with nothing in
/// common are bad input.
pub fn report(args: &ReportArgs) -> Result<ExitCode, Failure> {
    if args.files.is_empty() {
        return Err(Failure::Input(
            "report: no result files: bpf-overhead report FILE... [--svg OUT], each FILE \
             written by --save or --format json"
                .into(),
        ));
    }
    let svg_out = match &args.svg {
        Some(out) => match save_target(out, None, false)? {
            SaveTarget::File(path) => Some(path),
            SaveTarget::Set(_) => {
                return Err(Failure::Input(format!(
                    "cannot save to {}: it is a directory; name a file to write",
                    out.display()
                )))
            }
        },
        None => None,
    };
    let docs = args
        .files
        .iter()
        .map(|path| {
            Document::read(path, Need::Any)
                .map(|doc| (path.display().to_string(), doc))
                .map_err(|e| Failure::Input(format!("report: {}", e.about(path))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // An --against run is two columns, A and B, side by side.
    let docs: Vec<(String, Document)> = docs
        .into_iter()
        .flat_map(|(label, doc)| match doc.side_b() {
            Some(b) => vec![
                (format!("{label} A"), doc.side_a()),
                (
                    format!("{label} B ({})", doc.against.as_deref().unwrap_or("")),
                    b,
                ),
            ],
            None => vec![(label, doc)],
        })
        .collect();
    let matrix = Matrix::new(&docs).map_err(|e| Failure::Input(format!("report: {e}")))?;
    for line in side_by_side::config_lines(&docs) {
        note(&format!("report: {line}"));
    }
    print(&render::matrix::table(&matrix))?;
    if let Some(out) = &svg_out {
        let svg = render::matrix::svg(&matrix)
            .map_err(|e| Failure::Runtime(format!("report: cannot draw the chart: {e}")))?;
        std::fs::write(out, svg).map_err(|e| {
            Failure::Runtime(format!("report: cannot write {}: {e}", out.display()))
        })?;
        note(&format!("chart written to {}", out.display()));
    }
    Ok(ExitCode::SUCCESS)
}
