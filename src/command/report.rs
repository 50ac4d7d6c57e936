//! `bpf-overhead report FILE... [--svg OUT] [--format F]`: result files side
//! by side (a table, JSON, CSV or Markdown), or as kernel CI's records.

use std::path::Path;
use std::process::ExitCode;

use bpf_overhead::document::{Document, Need};
use bpf_overhead::render;
use bpf_overhead::render::formats::Sheet;
use bpf_overhead::safe_write::{Replace, Writer};
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
    let render = match args.format.sheet() {
        Sheet::Records(render) => return records(render, &docs, svg_out.as_deref()),
        Sheet::Matrix(render) => render,
    };
    // An --against run is two columns, A and B, side by side.
    let docs: Vec<(String, Document)> = docs
        .into_iter()
        .flat_map(|(label, doc)| match doc.side_b() {
            Some(b) => vec![
                (format!("{label} A"), doc.side_a()),
                (
                    format!(
                        "{label} B ({})",
                        doc.variant
                            .as_ref()
                            .map_or(String::new(), |v| v.to_string())
                    ),
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
    print(&render(&matrix))?;
    if let Some(out) = &svg_out {
        chart(&matrix, out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The chart of `matrix`, written to `out`.
fn chart(matrix: &Matrix, out: &Path) -> Result<(), Failure> {
    let svg = render::matrix::svg(matrix)
        .map_err(|e| Failure::Environment(format!("report: cannot draw the chart: {e}")))?;
    Writer::from_env()
        .write(out, svg.as_bytes(), Replace::Yes)
        .map_err(|e| {
            Failure::Environment(format!("report: cannot write {}: {e}", out.display()))
        })?;
    note(&format!("chart written to {}", out.display()));
    Ok(())
}

/// `--format kcidb|squad`: kernel CI's records of every file, in order.
/// Counts beside times, or an --against run (two sides under one name),
/// are bad input; results need no mechanism in common (but for a chart).
fn records(
    render: fn(&[&Document]) -> String,
    docs: &[(String, Document)],
    svg_out: Option<&Path>,
) -> Result<ExitCode, Failure> {
    side_by_side::same_unit(docs.iter().map(|(f, d)| (f.as_str(), d)))
        .map_err(|e| Failure::Input(format!("report: {e}")))?;
    if let Some((file, _)) = docs.iter().find(|(_, d)| d.variant.is_some()) {
        return Err(Failure::Input(format!(
            "report: {file} is an --against run, A and B: kernel CI's records carry one run's \
             figures per mechanism; report it as a table"
        )));
    }
    let matrix = match svg_out {
        Some(_) => Some(Matrix::new(docs).map_err(|e| Failure::Input(format!("report: {e}")))?),
        None => None,
    };
    for line in side_by_side::config_lines(docs) {
        note(&format!("report: {line}"));
    }
    let docs: Vec<&Document> = docs.iter().map(|(_, d)| d).collect();
    print(&render(&docs))?;
    if let (Some(matrix), Some(out)) = (&matrix, svg_out) {
        chart(matrix, out)?;
    }
    Ok(ExitCode::SUCCESS)
}
