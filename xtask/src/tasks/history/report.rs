//! The history report, a pure function of the builds, their counts and
//! their steps: history.txt (printed), history.tsv (every count, a
//! mechanism a row, a build a column), history.json and history.svg.

use std::fmt::Write as _;

use bpf_overhead_common::palette;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::Serialize;

use super::builds::Build;
use super::steps::Step;

/// One build as reported.
#[derive(Clone, Debug, Serialize)]
pub struct Counted {
    #[serde(flatten)]
    pub build: Build,
    /// counted, refused, failed (its VM) or not counted (fetching it failed).
    pub status: String,
    pub why: Option<String>,
    /// Each mechanism's instructions per event over its base.
    pub counts: Vec<(String, f64)>,
    /// Seconds fetching (download and unpack) and in the VM, when counted now
    /// or kept from when it was.
    pub fetch_s: Option<f64>,
    pub vm_s: Option<f64>,
    pub downloaded_bytes: Option<u64>,
    /// Whether this run counted it (false: kept from an earlier run).
    pub counted_now: bool,
}

/// A stable release between a step's two builds, and its subjects that
/// may explain the step.
#[derive(Clone, Debug, Serialize)]
pub struct StableNote {
    pub release: String,
    pub subjects: Vec<String>,
    /// Its subjects in all.
    pub of: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Located {
    #[serde(flatten)]
    pub step: Step,
    /// The upstream releases the step lies in, when the two builds are
    /// not adjacent ones, and how many.
    pub range: Option<String>,
    pub releases: Option<u64>,
    /// From the stable lists kept with the counts, else the later
    /// build's Debian changelog in the cache.
    pub stable: Vec<StableNote>,
    /// Why there are none, when neither could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub line: String,
    pub compiler: String,
    pub builds: Vec<Counted>,
    pub steps: Vec<Located>,
}

#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub series: String,
    pub arch: String,
    /// A step is a change beyond this share of the earlier count.
    pub threshold: f64,
    pub qemu: String,
    pub cpu: String,
    pub plan: String,
    pub lines: Vec<Line>,
}

fn count(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:+.1}"))
}

/// history.txt: what the history found, line by line.
pub fn text(h: &History) -> String {
    let mut o = String::new();
    let n: usize = h.lines.iter().map(|l| l.builds.len()).sum();
    let _ = writeln!(
        o,
        "history {} ({}): {n} builds in {} line(s); {}, -cpu {}; {}; a step: a count \
         that changed by more than {:.1}% from one build to the next",
        h.series,
        h.arch,
        h.lines.len(),
        h.qemu,
        h.cpu,
        h.plan,
        h.threshold * 100.0
    );
    for l in &h.lines {
        let of = |s: &str| l.builds.iter().filter(|b| b.status == s).count();
        let _ = writeln!(
            o,
            "\nline {} ({}): {} builds, {} counted, {} refused, {} failed, {} not counted",
            l.line,
            l.compiler,
            l.builds.len(),
            of("counted"),
            of("refused"),
            of("failed"),
            of("not counted")
        );
        builds_text(&mut o, l);
        steps_text(&mut o, l);
    }
    o
}

/// Each build of a line: its version, status and times.
fn builds_text(o: &mut String, l: &Line) {
    for b in &l.builds {
        let time = match (b.fetch_s, b.vm_s) {
            (_, None) => String::new(),
            (f, Some(v)) => format!(
                "  fetch {} vm {v:.0}s{}",
                f.map_or("-".into(), |f| format!("{f:.0}s")),
                if b.counted_now { "" } else { " (kept)" }
            ),
        };
        let _ = writeln!(
            o,
            "  {:<24} {:<22} {:<9} {}{}",
            b.build.release,
            b.build.version,
            b.status,
            b.why
                .as_deref()
                .map_or_else(|| b.build.suites.join(","), str::to_owned),
            time
        );
    }
}

/// A line's steps, each with its functions, then the stable releases.
fn steps_text(o: &mut String, l: &Line) {
    if l.steps.is_empty() {
        let _ = writeln!(
            o,
            "  no step: every count within the threshold across the line"
        );
        return;
    }
    let _ = writeln!(o, "  steps:");
    let mut i = 0;
    while i < l.steps.len() {
        let first = &l.steps[i];
        let n = l.steps[i..]
            .iter()
            .take_while(|s| s.step.from == first.step.from && s.step.to == first.step.to)
            .count();
        step_group(o, &l.steps[i..i + n]);
        i += n;
    }
}

/// The subjects the text names at most for a step's stable releases.
const SUBJECTS: usize = 8;

/// One pair of builds' steps: where they lie, each mechanism with the
/// functions that moved, then the stable commits that may explain them.
fn step_group(o: &mut String, group: &[Located]) {
    let first = &group[0];
    let range = match (&first.range, first.releases) {
        (Some(r), Some(n)) if n > 1 => {
            format!("; the step is somewhere in {r} ({n} stable releases)")
        }
        (Some(r), _) => format!("; the step is somewhere in {r}"),
        _ => "; adjacent releases".into(),
    };
    let _ = writeln!(
        o,
        "    at {} (after {}{range})",
        first.step.to, first.step.from
    );
    for s in group {
        let st = &s.step;
        let _ = writeln!(
            o,
            "      {:<24} {:>8} -> {:>8}  {:>8}  {}",
            st.mechanism,
            count(st.a),
            count(st.b),
            st.change
                .map_or("-".into(), |c| format!("{:+.2}%", c * 100.0)),
            st.verdict
        );
        if !st.functions.is_empty() {
            let f: Vec<String> = st
                .functions
                .iter()
                .take(4)
                .map(|m| format!("{} {:+.1}", m.function, m.change))
                .collect();
            let _ = writeln!(o, "        functions: {}", f.join(", "));
        }
        if let Some(e) = &st.explained {
            let _ = writeln!(o, "        {e}");
        }
        if let Some(p) = &st.path {
            let _ = writeln!(o, "        {p}");
        }
    }
    let mut said: Vec<(&str, &str)> = Vec::new();
    for n in group.iter().flat_map(|s| &s.stable) {
        for sub in &n.subjects {
            if !said.iter().any(|(_, s)| s == sub) {
                said.push((&n.release, sub));
            }
        }
    }
    if said.is_empty() {
        if let Some(u) = &first.unread {
            let _ = writeln!(o, "      {u}");
        }
        return;
    }
    // Those naming a function that moved first, whatever their release.
    let moved: Vec<String> = group
        .iter()
        .flat_map(|s| &s.step.functions)
        .map(|f| f.function.to_lowercase())
        .collect();
    let names = |sub: &str| {
        sub.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| moved.iter().any(|f| f.len() > 4 && *f == w.to_lowercase()))
    };
    said.sort_by_key(|(_, sub)| !names(sub));
    let _ = writeln!(o, "      stable commits that may explain it:");
    for (rel, sub) in said.iter().take(SUBJECTS) {
        let _ = writeln!(o, "        {rel}: {sub}");
    }
    if said.len() > SUBJECTS {
        let _ = writeln!(
            o,
            "        ... {} more in history.json",
            said.len() - SUBJECTS
        );
    }
}

/// history.tsv: every count, a mechanism a row, a build a column.
pub fn tsv(h: &History) -> String {
    let mut o = String::new();
    for l in &h.lines {
        let _ = write!(o, "{}", l.line);
        for b in &l.builds {
            let _ = write!(o, "\t{}", b.build.release);
        }
        o.push('\n');
        let mut names: Vec<&str> = Vec::new();
        for b in &l.builds {
            for (m, _) in &b.counts {
                if !names.contains(&m.as_str()) {
                    names.push(m);
                }
            }
        }
        for m in names {
            let _ = write!(o, "{m}");
            for b in &l.builds {
                let v = b.counts.iter().find(|(n, _)| n == m).map(|x| x.1);
                let _ = write!(o, "\t{}", v.map_or(String::new(), |v| format!("{v:.1}")));
            }
            o.push('\n');
        }
        o.push('\n');
    }
    o
}

/// Each name once, in order.
fn unique<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for n in names {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}

/// `m`'s count in each build of the line against its first, in percent.
fn relative(l: &Line, m: &str) -> Vec<(usize, f64)> {
    let at = |b: &Counted| b.counts.iter().find(|(n, _)| n == m).map(|x| x.1);
    let Some(first) = l.builds.iter().find_map(at) else {
        return Vec::new();
    };
    l.builds
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, (at(b)? - first) / first.abs().max(1.0) * 100.0)))
        .collect()
}

const PANEL: u32 = 380;
const WIDTH: u32 = 1200;

/// history.svg: a panel a line, the builds along x, each mechanism's count
/// as its change from the line's first count (%): one flat grey line for
/// those that never stepped, a coloured, named one for each that did.
pub fn svg(h: &History) -> String {
    let mut out = String::new();
    let height = PANEL * h.lines.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let panels = root.split_evenly((h.lines.len().max(1), 1));
        for (l, area) in h.lines.iter().zip(panels) {
            let _ = panel(l, &h.series, &area);
        }
        let _ = root.present();
    }
    out
}

/// One line's panel: its axes, then a grey line for each mechanism that
/// never stepped and a coloured, named one for each that did.
fn panel<DB: DrawingBackend>(
    l: &Line,
    series: &str,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let stepped = unique(l.steps.iter().map(|s| s.step.mechanism.as_str()));
    let names = unique(
        l.builds
            .iter()
            .flat_map(|b| b.counts.iter().map(|c| c.0.as_str())),
    );
    let mut chart = axes(l, series, &names, area)?;
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let points = |m: &str| -> Vec<(f64, f64)> {
        relative(l, m)
            .into_iter()
            .map(|(i, v)| (i as f64, v))
            .collect()
    };
    let (r, g, b) = palette::OTHER;
    let grey = RGBColor(r, g, b);
    for m in names.iter().filter(|m| !stepped.contains(m)) {
        chart
            .draw_series(LineSeries::new(points(m), grey.stroke_width(1)))
            .map_err(e)?;
    }
    for (k, m) in stepped.iter().enumerate() {
        let (r, g, b) = palette::nth(k);
        let colour = RGBColor(r, g, b);
        let pts = points(m);
        let last = pts.last().copied();
        chart
            .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
            .map_err(e)?;
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, colour.filled())))
            .map_err(e)?;
        if let Some((x, y)) = last {
            chart
                .draw_series(std::iter::once(Text::new(
                    m.to_string(),
                    (x + 0.15, y),
                    ("sans-serif", 11).into_font().color(&colour),
                )))
                .map_err(e)?;
        }
    }
    Ok(())
}

/// A panel's axes: the line's builds along x, labelled by their upstream
/// release, and room on y for every one of `names`' changes.
fn axes<'a, DB: DrawingBackend>(
    l: &Line,
    series: &str,
    names: &[&str],
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    let all: Vec<f64> = names
        .iter()
        .flat_map(|m| relative(l, m).into_iter().map(|p| p.1))
        .collect();
    let lo = all.iter().copied().fold(-2.0f64, f64::min) - 1.0;
    let hi = all.iter().copied().fold(2.0f64, f64::max) + 1.0;
    let n = l.builds.len().max(2);
    let labels: Vec<String> = l.builds.iter().map(|b| b.build.upstream.clone()).collect();
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{series} +{} ({}): count against the line's first build, %",
                l.line, l.compiler
            ),
            ("sans-serif", 16),
        )
        .margin(12)
        .margin_right(190)
        .x_label_area_size(46)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(n.min(40))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_style(("sans-serif", 10))
        .y_desc("change from the first build, %")
        .draw()
        .map_err(e)?;
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::history::builds::compiler;
    use crate::tasks::history::steps::Moved;

    fn build(rel: &str, up: &str, counts: &[(&str, f64)]) -> Counted {
        Counted {
            build: Build {
                release: rel.into(),
                version: format!("{up}-1"),
                upstream: up.into(),
                line: "deb12".into(),
                suites: vec!["bookworm-backports".into()],
                packages: vec![],
                refused: None,
            },
            status: "counted".into(),
            why: None,
            counts: counts.iter().map(|(m, c)| (m.to_string(), *c)).collect(),
            fetch_s: Some(14.0),
            vm_s: Some(62.0),
            downloaded_bytes: Some(100),
            counted_now: true,
        }
    }

    fn history() -> History {
        let step = Step {
            mechanism: "raw_tp".into(),
            from: "6.12.74+deb12-amd64".into(),
            to: "6.12.85+deb12-amd64".into(),
            a: Some(105.0),
            b: Some(121.0),
            change: Some(16.0 / 105.0),
            verdict: "REGRESSED".into(),
            functions: vec![Moved {
                function: "bpf_trace_run2".into(),
                a: 30.0,
                b: 43.0,
                change: 13.0,
            }],
            explained: None,
            path: None,
        };
        History {
            series: "6.12".into(),
            arch: "x86_64".into(),
            threshold: 0.01,
            qemu: "QEMU emulator version 7.2.22".into(),
            cpu: "max".into(),
            plan: "5 rounds of 200 events".into(),
            lines: vec![Line {
                line: "deb12".into(),
                compiler: compiler("deb12").into(),
                builds: vec![
                    build(
                        "6.12.74+deb12-amd64",
                        "6.12.74",
                        &[("raw_tp", 105.0), ("tp", 400.0)],
                    ),
                    build(
                        "6.12.85+deb12-amd64",
                        "6.12.85",
                        &[("raw_tp", 121.0), ("tp", 400.0)],
                    ),
                ],
                steps: vec![Located {
                    step,
                    range: Some("6.12.75..6.12.85".into()),
                    releases: Some(11),
                    stable: vec![
                        StableNote {
                            release: "6.12.77".into(),
                            subjects: vec!["tracing: a tracepoint fix".into()],
                            of: 200,
                        },
                        StableNote {
                            release: "6.12.80".into(),
                            subjects: vec!["bpf: do more in bpf_trace_run2".into()],
                            of: 300,
                        },
                    ],
                    unread: None,
                }],
            }],
        }
    }

    #[test]
    fn the_report_names_each_step_its_range_and_its_functions() {
        let t = text(&history());
        assert!(
            t.contains("line deb12 (bookworm's gcc): 2 builds, 2 counted"),
            "{t}"
        );
        assert!(
            t.contains("at 6.12.85+deb12-amd64 (after 6.12.74+deb12-amd64; the step is somewhere in 6.12.75..6.12.85 (11 stable releases))"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("raw_tp"))
            .unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["raw_tp", "+105.0", "->", "+121.0", "+15.24%", "REGRESSED"]
        );
        assert!(t.contains("functions: bpf_trace_run2 +13.0"), "{t}");
        assert!(
            t.contains(
                "explain it:\n        6.12.80: bpf: do more in bpf_trace_run2\n        \
                 6.12.77: tracing"
            ),
            "the commit naming a function that moved first: {t}"
        );
        let tsv = tsv(&history());
        assert_eq!(tsv.lines().nth(1).unwrap(), "raw_tp\t105.0\t121.0");
        let svg = svg(&history());
        assert!(svg.starts_with("<svg") && svg.contains("raw_tp"), "{svg}");
        let json = serde_json::to_value(history()).unwrap();
        assert_eq!(json["lines"][0]["steps"][0]["functions"][0]["change"], 13.0);
        assert_eq!(
            json["lines"][0]["builds"][0]["release"],
            "6.12.74+deb12-amd64"
        );
        assert!(json["lines"][0]["steps"][0].get("unread").is_none());
    }

    #[test]
    fn a_step_whose_commits_could_not_be_read_says_so_in_one_line() {
        let mut h = history();
        let s = &mut h.lines[0].steps[0];
        s.stable.clear();
        s.unread = Some("stable commits not read: no stable list kept back to 6.12.74".into());
        let t = text(&h);
        let said: Vec<&str> = t.lines().filter(|l| l.contains("not read")).collect();
        assert_eq!(
            said,
            ["      stable commits not read: no stable list kept back to 6.12.74"],
            "{t}"
        );
        assert!(!t.contains("may explain it"), "{t}");
    }
}
