//! explain.svg: per mechanism one bar of its count, cut into its largest
//! functions, each function in one colour across the mechanisms.

use bpf_overhead_common::palette;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Explained, Split};

const WIDTH: u32 = 1200;
const LABELS: i32 = 190;
const ROW: i32 = 24;
const TOP: i32 = 44;
const FONT: &str = "sans-serif";
/// Functions drawn per bar; the rest is one grey piece.
const PIECES: usize = 6;
/// Room for the names right of a bar, and how many are named there.
const NAMES: i32 = 420;
const NAMED: usize = 3;
const OTHER: RGBColor = RGBColor(palette::OTHER.0, palette::OTHER.1, palette::OTHER.2);

/// A function's colour: the same wherever it appears.
fn colour(name: &str) -> RGBColor {
    let h = name
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    let (r, g, b) = palette::nth(h as usize);
    RGBColor(r, g, b)
}

/// The pieces of a bar: its largest functions that add, and the rest.
fn pieces(s: &Split) -> Vec<(String, f64, RGBColor)> {
    let mut p: Vec<(String, f64, RGBColor)> = s
        .functions
        .iter()
        .filter(|f| f.per_event > 0.0)
        .take(PIECES)
        .map(|f| (f.function.clone(), f.per_event, colour(&f.function)))
        .collect();
    let shown: f64 = p.iter().map(|x| x.1).sum();
    if s.count - shown > 0.0 {
        p.push(("other".into(), s.count - shown, OTHER));
    }
    p
}

/// One mechanism's row at `y`: its name and count, its bar cut into
/// pieces (`scale` pixels an instruction), its largest functions named.
fn bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    s: &Split,
    y: i32,
    scale: f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let right = Pos::new(HPos::Right, VPos::Center);
    let label = format!("{} {:+.1}", s.mechanism, s.count);
    root.draw(&Text::new(
        label,
        (LABELS - 6, y + ROW / 2),
        TextStyle::from((FONT, 12).into_font()).pos(right),
    ))
    .map_err(err)?;
    let mut x = f64::from(LABELS);
    for (name, v, c) in pieces(s) {
        let w = v * scale;
        let (x0, x1) = (x.round() as i32, (x + w).round() as i32);
        root.draw(&Rectangle::new(
            [(x0, y + 2), (x1, y + ROW - 2)],
            c.filled(),
        ))
        .map_err(err)?;
        // A name that fits inside its piece (about 6.5 px a letter).
        if f64::from(x1 - x0) > 6.5 * name.len() as f64 + 6.0 {
            root.draw(&Text::new(
                name,
                (x0 + 3, y + ROW / 2),
                TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
        x += w;
    }
    let names: Vec<String> = s
        .functions
        .iter()
        .filter(|f| f.per_event > 0.0)
        .take(NAMED)
        .map(|f| format!("{} {:+.0}", f.function, f.per_event))
        .collect();
    root.draw(&Text::new(
        names.join(", "),
        (x.round() as i32 + 6, y + ROW / 2),
        (FONT, 11)
            .into_font()
            .color(&RGBColor(0x33, 0x33, 0x33))
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))
    .map_err(err)?;
    Ok(())
}

/// explain.svg: a title, a bar a mechanism ([`bar`]), and how to read them.
pub fn svg(e: &Explained) -> Result<String, String> {
    let rows = e.mechanisms.len() as i32;
    let height = (TOP + ROW * rows + 40) as u32;
    let most = e
        .mechanisms
        .iter()
        .map(|s| s.count.max(s.sum))
        .fold(1.0, f64::max);
    // Room right of the longest bar for the names of its largest pieces.
    let scale = f64::from(WIDTH as i32 - LABELS - NAMES) / most;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let title = format!(
            "bpf-overhead --explain: instructions per event over the base, by function ({})",
            e.kernel
        );
        root.draw(&Text::new(
            title,
            (10, 10),
            (FONT, 18).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        for (i, s) in e.mechanisms.iter().enumerate() {
            bar(&root, s, TOP + ROW * i as i32, scale)?;
        }
        let foot = "Each bar: the count, cut into its largest functions (the same colour for a \
                    function in every bar; the three largest named after it) and the rest (grey); \
                    shares below the base's are not drawn.";
        root.draw(&Text::new(
            foot,
            (10, TOP + ROW * rows + 14),
            (FONT, 12).into_font().color(&RGBColor(0x55, 0x55, 0x55)),
        ))
        .map_err(err)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::symbols::Region;
    use super::super::Part;
    use super::*;

    #[test]
    fn a_bar_per_mechanism_its_pieces_adding_to_the_count() {
        let part = |f: &str, v: f64| Part {
            function: f.into(),
            region: Region::Kernel,
            per_event: v,
        };
        let s = Split {
            mechanism: "raw_tp".into(),
            base: "base".into(),
            count: 121.0,
            functions: vec![
                part("bpf_trace_run2", 43.0),
                part("prog", 34.0),
                part("x", -2.0),
            ],
            sum: 75.0,
            residual: 46.0,
            kinds: Vec::new(),
        };
        let p = pieces(&s);
        assert_eq!(p.iter().map(|x| x.1).sum::<f64>(), 121.0);
        assert_eq!(p.last().unwrap().0, "other");
        assert_eq!(colour("migrate_enable"), colour("migrate_enable"));
        let e = Explained {
            unit: "instructions".into(),
            kernel: "6.12".into(),
            emulator: "q".into(),
            mechanisms: vec![s],
        };
        let svg = svg(&e).unwrap();
        assert!(svg.contains("bpf_trace_run2"), "{svg}");
        assert_eq!(
            svg.matches("<rect").count(),
            1 + 3,
            "background and three pieces"
        );
    }
}
