//! `bpf-overhead report`: several runs side by side ([`Matrix`]), as a
//! table and as an SVG chart of the same figures. Pure functions of the
//! matrix, tested on fixed documents.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;

use bpf_overhead_common::palette;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::side_by_side::{Cell, Matrix, ResultFile, Row};

/// What every figure is, for both renderers.
const WHAT: &str =
    "ns per event over the base measured in the same run: median ± sample stddev over its rounds";
/// The same, for counts (`vmtest --exact`).
const WHAT_EXACT: &str = "instructions per event over the base, counted under an instruction \
     clock (the fewest of the rounds less the base's); ▲ ▼ a change of more than 1% from the run \
     to the left";

pub(crate) fn what(m: &Matrix) -> &'static str {
    if m.exact {
        WHAT_EXACT
    } else {
        WHAT
    }
}

/// The chart's axis.
fn unit(m: &Matrix) -> &'static str {
    if m.exact {
        "instructions per event over the base"
    } else {
        "ns per event over the base"
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A run's column heading: its label, marked when emulated.
fn heading(run: &ResultFile) -> String {
    match &run.emulated {
        Some(_) => format!("{} (emulated)", run.label),
        None => run.label.clone(),
    }
}

fn overhead(median: f64, stddev: f64, rounds: usize) -> String {
    if rounds > 1 {
        format!("{median:+.1} ± {stddev:.1}")
    } else {
        format!("{median:+.1}")
    }
}

/// How long each run was: `100000 events`, or `~50 ms runs` when sized.
fn run_size(run: &ResultFile) -> String {
    match run.run_secs {
        Some(s) => format!("~{:.0} ms runs", s * 1e3),
        None => format!("{} events", run.iterations),
    }
}

/// What a run is: file, kernel, architecture, CPU, when, how much; and, when emulated,
/// that its figures are not performance figures.
pub(crate) fn describe(run: &ResultFile) -> String {
    let mut s = format!(
        "{}: kernel {} on {}, {}, {}, {} round{} of {}",
        run.file,
        run.kernel_release,
        run.arch,
        run.cpu_model,
        run.timestamp,
        run.repeats,
        if run.repeats == 1 { "" } else { "s" },
        run_size(run)
    );
    if let Some(how) = &run.emulated {
        let _ = write!(s, "; EMULATED ({how}): not performance figures");
    }
    s
}

/// The table: mechanisms down, runs across, each cell the mechanism's ns
/// per event over its base (`+20.8 ± 1.2`), a base's own ns per event in
/// parentheses, `skipped`, `FAILED`, or `-` when not in that run. Then
/// what each run is, and why mechanisms were skipped or failed.
pub fn table(m: &Matrix) -> String {
    let (header, rows) = cells(m);
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let render = |cells: &[String]| {
        let mut line = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[c] - cell.chars().count());
            if c == 0 {
                let _ = write!(line, "{cell}{pad}");
            } else {
                let _ = write!(line, "  {pad}{cell}");
            }
        }
        line.trim_end().to_string()
    };

    let mut out = String::new();
    let _ = writeln!(out, "bpf-overhead report: {}", what(m));
    out.push('\n');
    let _ = writeln!(out, "{}", render(&header));
    for row in &rows {
        let _ = writeln!(out, "{}", render(row));
    }
    out.push('\n');
    let width = m
        .runs
        .iter()
        .map(|r| heading(r).chars().count())
        .max()
        .unwrap_or(0);
    for run in &m.runs {
        let label = heading(run);
        let pad = " ".repeat(width - label.chars().count());
        let _ = writeln!(out, "{label}{pad}  {}", describe(run));
    }
    out.push('\n');
    let legend = if m.exact {
        "(ins)  a base's own instructions per event; -  not in that run"
    } else {
        "(ns)  a base's own ns per event; -  not in that run; ± only with more than one round"
    };
    let _ = writeln!(out, "{legend}");
    let notes = notes(m);
    if !notes.is_empty() {
        out.push('\n');
    }
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// The table's heading (`mechanism`, then each run's label) and its rows,
/// each cell as the table shows it: for every renderer of the table.
pub(crate) fn cells(m: &Matrix) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["mechanism".to_string()];
    header.extend(m.runs.iter().map(heading));
    let rows = m
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.name.clone()];
            let before = std::iter::once(&Cell::Missing).chain(&row.cells);
            cells.extend(row.cells.iter().zip(before).map(|(c, before)| match c {
                Cell::Overhead { median, .. } if m.exact => {
                    match crate::side_by_side::count_change(before, c) {
                        Some(ch) if ch > 0.0 => format!("{median:+.1} ▲{:+.1}%", ch * 100.0),
                        Some(ch) => format!("{median:+.1} ▼{:+.1}%", ch * 100.0),
                        None => format!("{median:+.1}"),
                    }
                }
                Cell::Overhead {
                    median,
                    stddev,
                    rounds,
                } => overhead(*median, *stddev, *rounds),
                Cell::Base { ns_per_event } if m.exact => format!("({ns_per_event:.1} ins)"),
                Cell::Base { ns_per_event } => format!("({ns_per_event:.1} ns)"),
                Cell::Skipped(_) => "skipped".into(),
                Cell::Failed(_) => "FAILED".into(),
                Cell::Missing => "-".into(),
            }));
            cells
        })
        .collect();
    (header, rows)
}

/// `skipped kprobe on 6.18.0, 6.12.0: <reason>`: one line per mechanism
/// and reason, naming the runs.
pub(crate) fn notes(m: &Matrix) -> Vec<String> {
    let mut notes = Vec::new();
    for row in &m.rows {
        let mut reasons: BTreeMap<(&str, String), Vec<&str>> = BTreeMap::new();
        for (cell, run) in row.cells.iter().zip(&m.runs) {
            let (word, why) = match cell {
                Cell::Skipped(why) => ("skipped", why),
                Cell::Failed(why) => ("FAILED", why),
                _ => continue,
            };
            reasons
                .entry((word, one_line(why)))
                .or_default()
                .push(&run.label);
        }
        for ((word, why), runs) in reasons {
            notes.push(format!("{word} {} on {}: {why}", row.name, runs.join(", ")));
        }
    }
    notes
}

fn colour(run: usize) -> RGBColor {
    let (r, g, b) = palette::nth(run);
    RGBColor(r, g, b)
}

const WIDTH: u32 = 960;
const FONT: &str = "sans-serif";
const TITLE_HEIGHT: u32 = 44;
const LEGEND_LINE: u32 = 22;
const BAR: u32 = 16;
const ROW_PAD: u32 = 14;
const PANEL_EXTRA: u32 = 36 + 50;
const FOOT_HEIGHT: u32 = 40;

fn row_height(runs: usize) -> u32 {
    BAR * runs as u32 + ROW_PAD
}

/// The chart of the table's figures: one panel per trigger (the comm
/// write, the uprobe targets' calls...), each with its own scale; per
/// mechanism one bar per run, its length the median ns over the base,
/// whiskers ± the stddev, the value at its end. `skipped`, `FAILED` and
/// `not run` are written where the bar would be. Emulated runs are drawn
/// hollow and named so in the legend. Bases have no bar: they are what
/// the bars are measured from.
pub fn svg(m: &Matrix) -> Result<String, String> {
    let panels = m.panels();
    let runs = m.runs.len();
    let legend_height = LEGEND_LINE * runs as u32 + 12;
    let panel_heights: Vec<u32> = panels
        .iter()
        .map(|(_, rows)| PANEL_EXTRA + row_height(runs) * rows.len() as u32)
        .collect();
    let height = TITLE_HEIGHT + legend_height + panel_heights.iter().sum::<u32>() + FOOT_HEIGHT;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        draw(&root, m, &panels, legend_height, &panel_heights).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    m: &Matrix,
    panels: &[(&str, Vec<&Row>)],
    legend_height: u32,
    panel_heights: &[u32],
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        format!("bpf-overhead: what attaching costs, in {}", unit(m)),
        (20, 12),
        (FONT, 22).into_font().style(FontStyle::Bold),
    ))?;

    // The legend: a swatch as the bars are drawn, and what the run is.
    for (i, run) in m.runs.iter().enumerate() {
        let y = (TITLE_HEIGHT + LEGEND_LINE * i as u32) as i32;
        let swatch = [(20, y + 2), (48, y + 16)];
        root.draw(&Rectangle::new(swatch, bar_style(run, i)))?;
        root.draw(&Text::new(
            legend(run),
            (56, y + 2),
            (FONT, 15)
                .into_font()
                .color(if run.emulated.is_some() { &RED } else { &BLACK }),
        ))?;
    }

    let mut top = TITLE_HEIGHT + legend_height;
    for ((trigger, rows), h) in panels.iter().zip(panel_heights) {
        let area = root.clone().shrink((0, top), (WIDTH, *h));
        panel(root, &area, m, trigger, rows)?;
        top += h;
    }
    if panels.is_empty() {
        root.draw(&Text::new(
            "nothing to chart: these runs measured bases only",
            (20, top as i32 + 10),
            (FONT, 15),
        ))?;
    }
    root.draw(&Text::new(
        "Bars: median over the rounds; whiskers: ± sample stddev (without a cap where cut at the edge); \
         hollow bars: emulated, not performance figures.",
        (20, top as i32 + 12),
        (FONT, 13).into_font().color(&RGBColor(0x55, 0x55, 0x55)),
    ))?;
    Ok(())
}

/// A legend line: the run's label (which names the architecture when the
/// runs are of several) and what it is, the emulation notice kept whole
/// however long the rest.
fn legend(run: &ResultFile) -> String {
    const ROOM: usize = 112;
    let mut what = format!(
        "{}: kernel {}, {}, {}, {}×{}",
        run.label,
        run.kernel_release,
        run.cpu_model,
        run.timestamp.split('T').next().unwrap_or(&run.timestamp),
        run.repeats,
        run_size(run)
    );
    let named = std::path::Path::new(&run.file)
        .file_name()
        .is_some_and(|name| name.to_string_lossy() == run.label);
    if !named && run.file != run.label {
        let _ = write!(what, ", {}", run.file);
    }
    let notice = run
        .emulated
        .as_ref()
        .map(|how| format!("; EMULATED ({how}): not performance figures"))
        .unwrap_or_default();
    let room = ROOM.saturating_sub(notice.chars().count()).max(20);
    if what.chars().count() > room {
        what = what.chars().take(room - 1).collect::<String>() + "…";
    }
    what + &notice
}

fn bar_style(run: &ResultFile, i: usize) -> ShapeStyle {
    if run.emulated.is_some() {
        colour(i).stroke_width(2)
    } else {
        colour(i).filled()
    }
}

const MARGIN_LEFT: u32 = 12;
const MARGIN_RIGHT: u32 = 28;
/// Roughly the width of a character of the values' 13-point text.
const CHAR_WIDTH: f64 = 6.6;

/// The value written after a bar.
fn value_label(median: f64, stddev: f64, rounds: usize, run: &ResultFile) -> String {
    let mut text = overhead(median, stddev, rounds);
    if run.emulated.is_some() {
        text.push_str(" (emulated)");
    }
    text
}

/// A bar's whisker, median ± stddev, cut to the scale `lo..=hi`: its ends,
/// each with whether it was cut. None with one round or no noise.
#[allow(clippy::type_complexity)]
fn whisker(
    median: f64,
    stddev: f64,
    rounds: usize,
    lo: f64,
    hi: f64,
) -> Option<((f64, bool), (f64, bool))> {
    if rounds < 2 || stddev <= 0.0 {
        return None;
    }
    let (a, b) = (median - stddev, median + stddev);
    Some(((a.max(lo), a < lo), (b.min(hi), b > hi)))
}

/// A panel's chart: ns over the base across, one band per row down.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    m: &Matrix,
    trigger: &str,
    rows: &[&Row],
) -> DrawResult<DB> {
    let mut bases: Vec<&str> = rows.iter().map(|r| r.base.as_str()).collect();
    bases.dedup();
    let (lo, hi) = extent(m, rows);
    let name_width = rows.iter().map(|r| r.name.len()).max().unwrap_or(4) as u32 * 9 + 16;
    let plot_width = f64::from(WIDTH - name_width - MARGIN_LEFT - MARGIN_RIGHT);
    let x = x_range(m, rows, lo, hi, plot_width);
    let n = rows.len() as f64;
    let caption = format!("{trigger} — over {}", bases.join(", "));
    let mut chart = frame(area, caption, (x.clone(), n), name_width, unit(m))?;
    let band = 0.84 / m.runs.len() as f64;
    if lo < 0.0 {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (0.0, n)],
            BLACK.stroke_width(1),
        )))?;
    }
    for (i, row) in rows.iter().enumerate() {
        let row_top = n - i as f64;
        if i > 0 {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x.start, row_top), (x.end, row_top)],
                RGBColor(0xE4, 0xE4, 0xE4).stroke_width(1),
            )))?;
        }
        // The mechanism's name, left of the plot, centred on its bars.
        let (px, py) = chart.backend_coord(&(x.start, row_top - 0.5));
        let (ox, oy) = root.get_base_pixel();
        root.draw(&Text::new(
            row.name.clone(),
            (px - ox - 8, py - oy),
            (FONT, 15)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        for (j, (cell, run)) in row.cells.iter().zip(&m.runs).enumerate() {
            let top = row_top - 0.08 - band * j as f64;
            bar(&mut chart, cell, run, j, top, band, (lo, hi))?;
        }
    }
    Ok(())
}

/// The scale of a panel: every median, and the whiskers of real runs. An
/// emulated run's noise would squash the rest: its whiskers are cut at
/// the edge.
fn extent(m: &Matrix, rows: &[&Row]) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for row in rows {
        for (cell, run) in row.cells.iter().zip(&m.runs) {
            if let Cell::Overhead { median, stddev, .. } = cell {
                let noise = if run.emulated.is_some() { 0.0 } else { *stddev };
                lo = lo.min(median - noise);
                hi = hi.max(median + noise);
            }
        }
    }
    (lo, hi)
}

/// The x axis of a panel whose scale is `lo..hi`, `plot_width` pixels
/// wide: a margin each side, and room on the right for the value written
/// after each bar or whisker: end + its width in data units (which depend
/// on the right edge) must fit.
fn x_range(m: &Matrix, rows: &[&Row], lo: f64, hi: f64, plot_width: f64) -> Range<f64> {
    let span = hi - lo;
    let left = lo - 0.02 * span;
    let mut right = hi + 0.02 * span;
    for row in rows {
        for (cell, run) in row.cells.iter().zip(&m.runs) {
            if let Cell::Overhead {
                median,
                stddev,
                rounds,
            } = cell
            {
                let end = whisker(*median, *stddev, *rounds, lo, hi).map_or(*median, |w| w.1 .0);
                let share = (value_label(*median, *stddev, *rounds, run).chars().count() as f64
                    * CHAR_WIDTH
                    + 10.0)
                    / plot_width;
                right = right.max((end.max(0.0) - share * left) / (1.0 - share.min(0.9)));
            }
        }
    }
    left..right
}

/// A panel's frame: its caption, the x axis and its grid, `n` rows, and
/// `name_width` pixels left of the plot for the mechanisms' names.
fn frame<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: String,
    (x, n): (Range<f64>, f64),
    name_width: u32,
    unit: &str,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 17).into_font().style(FontStyle::Bold))
        .margin_left(MARGIN_LEFT)
        .margin_right(MARGIN_RIGHT)
        .margin_top(4)
        .x_label_area_size(44)
        .y_label_area_size(name_width)
        .build_cartesian_2d(x, 0.0..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(10)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc(unit)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 14))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0xDD, 0xDD, 0xDD))
        .draw()?;
    Ok(chart)
}

/// One run's `cell` of a row, the `j`th band from `top` down, `band`
/// high, on the scale `lo..hi`: its bar, whisker and value, or what it
/// is instead (`skipped`, `FAILED`, `not run`). A base's cell has none.
fn bar<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    cell: &Cell,
    run: &ResultFile,
    j: usize,
    top: f64,
    band: f64,
    (lo, hi): (f64, f64),
) -> DrawResult<DB> {
    let bottom = top - band * 0.82;
    let mid = (top + bottom) / 2.0;
    let grey = RGBColor(0x77, 0x77, 0x77);
    let label = |text: String, at: f64, colour: RGBColor| {
        EmptyElement::at((at, mid))
            + Text::new(
                text,
                (6, 0),
                (FONT, 13)
                    .into_font()
                    .color(&colour)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            )
    };
    let (median, stddev, rounds) = match cell {
        Cell::Overhead {
            median,
            stddev,
            rounds,
        } => (*median, *stddev, *rounds),
        Cell::Skipped(_) => {
            chart.draw_series(std::iter::once(label("skipped".into(), 0.0, grey)))?;
            return Ok(());
        }
        Cell::Failed(_) => {
            chart.draw_series(std::iter::once(label("FAILED".into(), 0.0, RED)))?;
            return Ok(());
        }
        Cell::Missing => {
            chart.draw_series(std::iter::once(label("not run".into(), 0.0, grey)))?;
            return Ok(());
        }
        Cell::Base { .. } => return Ok(()),
    };
    chart.draw_series(std::iter::once(Rectangle::new(
        [(0.0, top), (median, bottom)],
        bar_style(run, j),
    )))?;
    let mut end = median;
    if let Some(((a, a_cut), (b, b_cut))) = whisker(median, stddev, rounds, lo, hi) {
        let cap = band * 0.22;
        let mut segments = vec![vec![(a, mid), (b, mid)]];
        // A cut end has no cap: the noise goes on.
        if !a_cut {
            segments.push(vec![(a, mid - cap), (a, mid + cap)]);
        }
        if !b_cut {
            segments.push(vec![(b, mid - cap), (b, mid + cap)]);
        }
        for segment in segments {
            chart.draw_series(std::iter::once(PathElement::new(
                segment,
                BLACK.stroke_width(1),
            )))?;
        }
        end = end.max(b);
    }
    let text = value_label(median, stddev, rounds, run);
    chart.draw_series(std::iter::once(label(text, end.max(0.0), BLACK)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side_by_side::tests::matrix;

    /// Two kernels' counts: raw_tp 105 -> 121 instructions (+15.2%), tp
    /// 431 -> 432 (+0.2%).
    #[test]
    fn counts_are_marked_where_they_change_by_more_than_one_percent() {
        use crate::stats::Summary;
        let doc = |release: &str, raw_tp: f64, tp: f64| {
            let mut d = crate::document::fixtures::document();
            d.unit = crate::document::Unit::Instructions;
            d.kernel_release = release.into();
            d.mechanism_mut("raw_tp").unwrap().overhead_ns = Summary::of(&[raw_tp]);
            d.mechanism_mut("tp").unwrap().overhead_ns = Summary::of(&[tp]);
            d
        };
        let m = Matrix::new(&[
            ("a.json".into(), doc("6.1.0", 105.0, 431.0)),
            ("b.json".into(), doc("6.12.0", 121.0, 432.0)),
        ])
        .unwrap();
        let text = table(&m);
        assert!(
            text.starts_with("bpf-overhead report: instructions per event over the base"),
            "{text}"
        );
        let row = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap();
        assert!(row("raw_tp ").ends_with("+105.0  +121.0 ▲+15.2%"), "{text}");
        let tp: Vec<&str> = row("tp ").split_whitespace().collect();
        assert_eq!(tp, ["tp", "+431.0", "+432.0"], "{text}");
        assert!(svg(&m)
            .unwrap()
            .contains("instructions per event over the base"));
    }

    #[test]
    fn table_has_runs_across_and_mechanisms_down() {
        let text = table(&matrix());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("bpf-overhead report: ns per event over the base"));
        let header = lines[2];
        assert!(
            header.starts_with("mechanism") && header.ends_with("6.1.0 (emulated)"),
            "{text}"
        );
        let cols: Vec<usize> = ["6.18.0", "6.12.0", "6.1.0 (emulated)"]
            .iter()
            .map(|h| header.find(h).unwrap() + h.len())
            .collect();
        let row = |name: &str| *lines.iter().find(|l| l.starts_with(name)).unwrap();
        // Right-aligned under their headings.
        let raw_tp = row("raw_tp ");
        let mut from = 0;
        for (cell, end) in ["+100.0 ± 1.0", "+150.0 ± 10.0", "+100.0 ± 1.0"]
            .iter()
            .zip(&cols)
        {
            let found = from
                + raw_tp[from..]
                    .find(cell)
                    .unwrap_or_else(|| panic!("{cell} in {raw_tp}"));
            from = found + cell.len();
            let chars_before = raw_tp[..found].chars().count() + cell.chars().count();
            let header_chars = header[..*end].chars().count();
            assert_eq!(
                chars_before, header_chars,
                "{cell} not under its heading:\n{text}"
            );
        }
        assert!(row("kprobe ").contains("skipped"), "{text}");
        assert!(row("kprobe ").contains("+250.0 ± 10.0"), "{text}");
        let tp = row("tp ");
        assert!(tp.contains(" - ") && tp.ends_with("FAILED"), "{tp}");
        assert!(row("base ").contains("(952.4 ns)"), "{text}");
        assert!(
            text.contains("6.1.0 (emulated)  c.json: kernel 6.1.0 on x86_64, Test CPU, 2026-05-01T12:00:00Z, 3 rounds of 100000 events; EMULATED (tcg): not performance figures"),
            "{text}"
        );
        assert!(
            text.contains("\n6.12.0            results/b.json: kernel 6.12.0"),
            "{text}"
        );
        assert!(
            text.contains("skipped kprobe on 6.18.0, 6.1.0: kernel has no kprobes\n"),
            "{text}"
        );
        assert!(
            text.contains("FAILED tp on 6.1.0: tp: attach failed\n"),
            "{text}"
        );
    }

    #[test]
    fn one_round_has_no_noise_to_show() {
        assert_eq!(overhead(20.04, 0.0, 1), "+20.0");
        assert_eq!(overhead(-3.26, 1.04, 5), "-3.3 ± 1.0");
    }

    /// The texts of the SVG: plotters writes each on its own line.
    fn texts(svg: &str) -> Vec<&str> {
        svg.lines().filter(|l| !l.starts_with('<')).collect()
    }

    /// `<rect>` elements with an attribute.
    fn rects<'a>(svg: &'a str, attr: &str) -> Vec<&'a str> {
        svg.lines()
            .filter(|l| l.contains("<rect") && l.contains(attr))
            .collect()
    }

    fn width(rect: &str) -> f64 {
        let at = rect.find("width=\"").unwrap() + 7;
        rect[at..].split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn svg_draws_a_bar_per_measured_cell_emulated_ones_hollow() {
        let svg = svg(&matrix()).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        // Run 1 (blue, filled): legend swatch + raw_tp + tp.
        let blue = rects(&svg, "fill=\"#0072B2\"");
        assert_eq!(blue.len(), 3, "{blue:?}");
        // Run 2 (orange, filled): swatch + kprobe + raw_tp; tp not run.
        let orange = rects(&svg, "fill=\"#E69F00\"");
        assert_eq!(orange.len(), 3, "{orange:?}");
        // raw_tp's bar in run 2 is 1.5 times run 1's (150 vs 100 ns).
        let ratio = width(orange[2]) / width(blue[1]);
        assert!((ratio - 1.5).abs() < 0.03, "{ratio}: {orange:?} {blue:?}");
        // Run 3 is emulated: hollow bars (swatch + raw_tp; tp failed).
        let green = rects(&svg, "stroke=\"#009E73\"");
        assert_eq!(green.len(), 2, "{green:?}");
        assert!(
            green.iter().all(|r| r.contains("fill=\"none\"")),
            "{green:?}"
        );
        assert!(rects(&svg, "fill=\"#009E73\"").is_empty());
        let texts = texts(&svg);
        for text in [
            "6.1.0: kernel 6.1.0, Test CPU, 2026-05-01, 3×100000 events, c.json; \
             EMULATED (tcg): not performance figures",
            "6.12.0: kernel 6.12.0, Test CPU, 2026-05-01, 3×100000 events, results/b.json",
            "+100.0 ± 1.0 (emulated)",
            "+100.0 ± 1.0",
            "+150.0 ± 10.0",
            "+250.0 ± 10.0",
            "skipped",
            "FAILED",
            "not run",
            "raw_tp",
            "kprobe",
            "tp",
            "task_rename — over base",
        ] {
            assert!(texts.contains(&text), "{text} not in the SVG:\n{texts:#?}");
        }
        assert!(!texts.contains(&"base"), "a base has no bar");
    }

    #[test]
    fn whiskers_are_cut_at_the_scale() {
        assert_eq!(
            whisker(100.0, 10.0, 3, 0.0, 200.0),
            Some(((90.0, false), (110.0, false)))
        );
        assert_eq!(
            whisker(100.0, 500.0, 3, -50.0, 200.0),
            Some(((-50.0, true), (200.0, true)))
        );
        assert_eq!(
            whisker(100.0, 10.0, 1, 0.0, 200.0),
            None,
            "one round: no noise"
        );
    }

    #[test]
    fn emulated_noise_sets_no_scale_and_every_value_fits() {
        let mut m = matrix();
        // The emulated run's raw_tp: +100 ± 900.
        m.rows[2].cells[2] = Cell::Overhead {
            median: 100.0,
            stddev: 900.0,
            rounds: 5,
        };
        let svg = svg(&m).unwrap();
        let lines: Vec<&str> = svg.lines().collect();
        let mut values = 0;
        for (i, line) in lines.iter().enumerate() {
            if !(line.starts_with('+') || line.starts_with('-')) || !line.contains(" ± ") {
                continue;
            }
            let tag = lines[i - 1];
            let at = tag.find(" x=\"").unwrap() + 4;
            let x: f64 = tag[at..].split('"').next().unwrap().parse().unwrap();
            let end = x + line.chars().count() as f64 * CHAR_WIDTH;
            assert!(end <= f64::from(WIDTH), "{line} ends at {end}");
            values += 1;
        }
        assert_eq!(values, 5, "{svg}");
        // The scale is set by real runs: kprobe's +250 ± 10 bar, not the
        // emulated ±900, takes most of the plot.
        let orange = rects(&svg, "fill=\"#E69F00\"");
        assert!(width(orange[1]) > 500.0, "{orange:?}");
    }

    #[test]
    fn legend_keeps_the_emulation_notice_whole() {
        let mut m = matrix();
        m.runs[2].cpu_model = "A CPU with a very long model name, ".repeat(5);
        let line = legend(&m.runs[2]);
        assert!(line.chars().count() <= 112, "{line}");
        assert!(
            line.ends_with("…; EMULATED (tcg): not performance figures"),
            "{line}"
        );
    }

    #[test]
    fn svg_has_a_panel_per_trigger() {
        let mut m = matrix();
        m.rows[3].trigger = "uprobe_target".into();
        m.rows[3].base = "base-nop".into();
        let svg = svg(&m).unwrap();
        let texts = texts(&svg);
        assert!(texts.contains(&"task_rename — over base"), "{texts:#?}");
        assert!(
            texts.contains(&"uprobe_target — over base-nop"),
            "{texts:#?}"
        );
        let axes = texts.iter().filter(|t| **t == "ns per event over the base");
        assert_eq!(axes.count(), 2, "{texts:#?}");
    }
}
