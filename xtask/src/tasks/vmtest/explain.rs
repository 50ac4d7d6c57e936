//! `cargo xtask vmtest KERNEL --exact --explain`: each mechanism's count
//! split by function.
//!
//! The guest's command marks each timed run's events as a window
//! (src/measure/running/window.rs) and lists, in its result, the windows
//! of each mechanism's timed runs and of its base's runs around them. The
//! TCG plugin (tcg-plugin/) counts the instructions at each guest address
//! inside each window. Here each address is named ([`symbols`]) and, per
//! mechanism and function, the count follows the rule of the count itself:
//! the fewest instructions per event in any of its runs, less the fewest
//! in any of its base's. An interrupt only adds instructions, so a
//! function that only an interrupt runs is zero in some run. What the
//! functions add up to is shown beside the count, with the residual.

pub mod change;
pub mod fewest;
pub mod kinds;
pub mod svg;
pub mod symbols;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use crate::util::document::{Document, MechanismResult};
use crate::util::exact_counts::read_document;
use symbols::{Elf, Made, Map, Name, Region, Sorted, Symbols};

/// What the plugin writes (`-plugin ...,out=`), in the run's folder.
pub const COUNTS_FILE: &str = "counts.txt";
/// What the command writes ([`crate::util::env_vars::WINDOWS_ENV`]).
const WINDOWS_LOG: &str = "windows.log";
const KALLSYMS: &str = "kallsyms";
/// What this writes.
pub const FILE: &str = "explain.json";
pub const TABLE_FILE: &str = "explain.txt";
pub const KTAP_FILE: &str = "explain.ktap";
pub const SVG_FILE: &str = "explain.svg";
/// With an in-run `--against VARIANT`: B's change against A, split.
pub const IN_RUN_FILE: &str = "explain-against.txt";

/// Functions shown per mechanism in the table; the rest are "other".
const TOP: usize = 8;

/// One function's share of a count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub function: String,
    pub region: Region,
    /// Instructions per event over the base's.
    pub per_event: f64,
}

/// One mechanism's count, split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub mechanism: String,
    pub base: String,
    /// The count: instructions per event over the base's.
    pub count: f64,
    /// Largest first (by size); none of zero.
    pub functions: Vec<Part>,
    /// What the functions add up to, and the count less that.
    pub sum: f64,
    pub residual: f64,
    /// The kinds of events per event over the base's ([`kinds`]); none
    /// in splits made before they were counted.
    #[serde(default)]
    pub kinds: Vec<kinds::Kind>,
}

impl Split {
    /// `raw_tp +121.0 UNIT over base: functions add up to +121.0, residual +0.0`.
    pub fn summary(&self, unit: &str) -> String {
        format!(
            "{} {} {unit} over {}: functions add up to {}, residual {}",
            self.mechanism,
            signed(self.count),
            self.base,
            signed(self.sum),
            signed(self.residual)
        )
    }
}

/// `explain.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Explained {
    pub unit: String,
    pub kernel: String,
    pub emulator: String,
    pub mechanisms: Vec<Split>,
}

impl Explained {
    /// `mechanism`'s split, if it has one.
    pub fn split(&self, mechanism: &str) -> Option<&Split> {
        self.mechanisms.iter().find(|s| s.mechanism == mechanism)
    }
}

/// Per window: each function's instructions per event.
type PerWindow = fewest::Windows<Name>;

/// One window the command recorded: `window N MECHANISM EVENTS`, then
/// the code the kernel made at run time: all of it with its extent
/// (`code ADDRESS LENGTH NAME`, from perf), or its programs (`prog`, the
/// same) and what else kallsyms listed, if read (`sym ADDRESS TYPE NAME
/// [MODULE]`).
#[derive(Debug, Default)]
struct Recorded {
    mechanism: String,
    events: u64,
    made: Made,
}

fn parse_log(text: &str) -> Result<(Vec<Map>, BTreeMap<u64, Recorded>)> {
    let mut maps = Vec::new();
    let mut windows: BTreeMap<u64, Recorded> = BTreeMap::new();
    let mut last = None;
    let hex = |s: &str| u64::from_str_radix(s, 16).with_context(|| format!("not hex: {s}"));
    for (i, l) in text.lines().enumerate() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let bad = || format!("{WINDOWS_LOG} line {}: '{l}'", i + 1);
        match f[..] {
            ["map", start, end, offset, path, ..] => maps.push(Map {
                start: hex(start).with_context(bad)?,
                end: hex(end).with_context(bad)?,
                offset: hex(offset).with_context(bad)?,
                path: path.to_owned(),
            }),
            ["window", n, mechanism, events] => {
                let n: u64 = n.parse().with_context(bad)?;
                let events = events.parse().with_context(bad)?;
                windows.insert(
                    n,
                    Recorded {
                        mechanism: mechanism.to_owned(),
                        events,
                        made: Made::default(),
                    },
                );
                last = Some(n);
            }
            ["sym", a, _, name, ..] => {
                let w = last.and_then(|n| windows.get_mut(&n)).with_context(bad)?;
                w.made
                    .sym
                    .push((hex(a).with_context(bad)?, name.to_owned()));
            }
            ["prog" | "code", a, len, name] => {
                let w = last.and_then(|n| windows.get_mut(&n)).with_context(bad)?;
                let a = hex(a).with_context(bad)?;
                let len: u64 = len.parse().with_context(bad)?;
                w.made.progs.push((a, a + len, name.to_owned()));
            }
            _ => bail!("{}: unexpected", bad()),
        }
    }
    Ok((maps, windows))
}

/// The plugin's file: per window, the instructions at each address.
fn parse_counts(text: &str) -> Result<BTreeMap<u64, Vec<kinds::Counted>>> {
    let mut windows = BTreeMap::new();
    let mut open: Option<(u64, Vec<kinds::Counted>)> = None;
    for (i, l) in text.lines().enumerate() {
        let bad = || format!("{COUNTS_FILE} line {}: '{l}'", i + 1);
        let (a, b) = l.split_once(' ').with_context(bad)?;
        match (a, &mut open) {
            ("window", None) => open = Some((b.parse().with_context(bad)?, Vec::new())),
            ("total", Some(_)) => {
                let (n, counts) = open.take().expect("matched");
                let total: u64 = b.parse().with_context(bad)?;
                ensure!(
                    counts.iter().map(|c| c.1).sum::<u64>() == total,
                    "{}: the window's counts do not add up to it",
                    bad()
                );
                windows.insert(n, counts);
            }
            (a, Some((_, counts))) => {
                let (n, class) = match b.split_once(' ') {
                    Some((n, class)) => (n, Some(class.to_owned())),
                    None => (b, None),
                };
                counts.push((
                    u64::from_str_radix(a, 16).with_context(bad)?,
                    n.parse().with_context(bad)?,
                    class,
                ))
            }
            _ => bail!("{}: unexpected", bad()),
        }
    }
    Ok(windows)
}

/// Each window's instructions per event, by function.
fn per_window(
    counts: &BTreeMap<u64, Vec<kinds::Counted>>,
    recorded: &BTreeMap<u64, Recorded>,
    symbols: &Symbols,
) -> Result<PerWindow> {
    let mut out = PerWindow::new();
    for (n, r) in recorded {
        let Some(c) = counts.get(n) else {
            bail!(
                "window {n} ({}) is in {WINDOWS_LOG} but not in {COUNTS_FILE}: \
                 was the plugin loaded?",
                r.mechanism
            );
        };
        let made = r.made.sorted();
        let mut f: HashMap<Name, f64> = HashMap::new();
        for &(a, k, _) in c {
            *f.entry(symbols.name(a, &made)).or_default() += k as f64;
        }
        for v in f.values_mut() {
            *v /= r.events.max(1) as f64;
        }
        out.insert(*n, f);
    }
    Ok(out)
}

/// Per function, its fewest instructions per event in any of `windows`.
fn least(windows: &[u64], per: &PerWindow) -> BTreeMap<Name, f64> {
    fewest::least(windows, per)
}

/// Every function of either side, in name order, with its figure on
/// each (zero where that side has none).
pub(super) fn side_by_side(
    a: &BTreeMap<Name, f64>,
    b: &BTreeMap<Name, f64>,
) -> Vec<(Name, f64, f64)> {
    fewest::side_by_side(a, b)
}

/// The suffix of B's side of an in-run comparison (`--against VARIANT`).
pub const B_SIDE: &str = " (B)";

/// Each counted mechanism of the result `doc`, split by function, and
/// after each its B side of an in-run comparison, if any (`raw_tp (B)`).
fn splits(doc: &Document, per: &PerWindow, kinds: &kinds::KindWindows) -> Result<Vec<Split>> {
    ensure!(
        doc.exact(),
        "the result is not an exact run's (unit: {})",
        doc.unit
    );
    let mut out = Vec::new();
    for m in &doc.mechanisms {
        out.extend(split(m, m.name.clone(), per, kinds));
        if let Some(b) = &m.side_b {
            out.extend(split(b, m.name.clone() + B_SIDE, per, kinds));
        }
    }
    Ok(out)
}

/// One mechanism's split, if it was counted in windows.
fn split(
    m: &MechanismResult,
    mechanism: String,
    per: &PerWindow,
    kinds: &kinds::KindWindows,
) -> Option<Split> {
    let count = m.overhead_ns.as_ref()?.median;
    let (runs, bases) = (m.windows.as_ref()?, m.base_windows.as_ref()?);
    let mut parts: Vec<Part> = side_by_side(&least(runs, per), &least(bases, per))
        .into_iter()
        .map(|((region, function), a, b)| Part {
            function,
            region,
            per_event: a - b,
        })
        .filter(|p| p.per_event != 0.0)
        .collect();
    parts.sort_by(|x, y| {
        y.per_event
            .abs()
            .total_cmp(&x.per_event.abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    let sum: f64 = parts.iter().map(|p| p.per_event).sum();
    Some(Split {
        mechanism,
        base: m.base.clone(),
        count,
        functions: parts,
        sum,
        residual: count - sum,
        kinds: kinds::over_base(runs, bases, kinds),
    })
}

/// Reads a finished `vmtest --exact --explain` run's folder and splits
/// its counts.
pub fn explain(dir: &Path) -> Result<Explained> {
    let read = |f: &str| {
        fs::read_to_string(dir.join(f)).with_context(|| format!("{}", dir.join(f).display()))
    };
    let doc = read_document(&dir.join("result.json"))?;
    let (maps, recorded) = parse_log(&read(WINDOWS_LOG)?)?;
    let counts = parse_counts(&read(COUNTS_FILE)?)?;
    let mut elves = HashMap::new();
    for m in &maps {
        if let Ok(e) = Elf::read(Path::new(&m.path)) {
            elves.insert(m.path.clone(), e);
        }
    }
    let symbols = Symbols {
        kernel: Sorted::new(symbols::kallsyms(&read(KALLSYMS)?)),
        maps,
        elves,
    };
    let per = per_window(&counts, &recorded, &symbols)?;
    let events = recorded.iter().map(|(n, r)| (*n, r.events)).collect();
    let kinds = kinds::per_window(&counts, &events, &symbols.kernel);
    Ok(Explained {
        unit: "instructions".into(),
        kernel: doc.kernel_release.clone(),
        emulator: doc.emulator.clone().unwrap_or_else(|| "?".into()),
        mechanisms: splits(&doc, &per, &kinds)?,
    })
}

pub(super) fn signed(v: f64) -> String {
    format!("{v:+.1}")
}

/// The table: per mechanism its count, its top functions and the rest.
pub fn table(e: &Explained) -> String {
    let mut t = String::new();
    for s in &e.mechanisms {
        let _ = writeln!(t, "{}", s.summary("ins/ev"));
        let _ = writeln!(t, "  kinds: {}", kinds::line(&s.kinds));
        for p in s.functions.iter().take(TOP) {
            let _ = writeln!(
                t,
                "  {:>9}  {:<6} {}",
                signed(p.per_event),
                region_word(p.region),
                p.function
            );
        }
        let rest = &s.functions[s.functions.len().min(TOP)..];
        if !rest.is_empty() {
            let v: f64 = rest.iter().map(|p| p.per_event).sum();
            let _ = writeln!(t, "  {:>9}  other  ({} functions)", signed(v), rest.len());
        }
    }
    t
}

pub(super) fn region_word(r: Region) -> &'static str {
    match r {
        Region::Kernel => "kernel",
        Region::Bpf => "bpf",
        Region::User => "user",
    }
}

/// The most a split's functions may miss its count by, as a share of it
/// (or half an instruction per event, if that is more): beyond it the
/// split is not trusted.
const MOST_MISSED: f64 = 0.01;

/// The mechanisms whose functions do not add up to their count.
pub fn not_adding_up(e: &Explained) -> Vec<String> {
    e.mechanisms
        .iter()
        .filter(|s| s.residual.abs() > (MOST_MISSED * s.count.abs()).max(0.5))
        .map(|s| {
            format!(
                "{} (count {}, residual {})",
                s.mechanism,
                signed(s.count),
                signed(s.residual)
            )
        })
        .collect()
}

/// KTAP version 1 for kernel CI: one test per mechanism, passing when its
/// functions add up to its count, its largest functions as diagnostics.
pub fn ktap(e: &Explained) -> String {
    let off = not_adding_up(e);
    let mut t = format!("KTAP version 1\n1..{}\n", e.mechanisms.len());
    for (i, s) in e.mechanisms.iter().enumerate() {
        let _ = writeln!(t, "# {}", s.summary("instructions per event"));
        let _ = writeln!(
            t,
            "# {}: kinds per event: {}",
            s.mechanism,
            kinds::line(&s.kinds)
        );
        for p in s.functions.iter().take(TOP) {
            let _ = writeln!(
                t,
                "# {}: {} {} instructions per event",
                s.mechanism,
                p.function,
                signed(p.per_event)
            );
        }
        let ok = !off
            .iter()
            .any(|o| o.starts_with(&format!("{} (", s.mechanism)));
        let _ = writeln!(
            t,
            "{}ok {} explain_{}",
            if ok { "" } else { "not " },
            i + 1,
            s.mechanism.replace(['-', '.'], "_")
        );
    }
    t
}

/// Explains the run in `dir`: writes explain.json, explain.txt and
/// explain.ktap there and prints the table. Exit 1 when a split does not
/// add up; the splits, for the picture.
pub fn write(dir: &Path) -> Result<(i32, Explained)> {
    let e = explain(dir)?;
    let text = table(&e);
    crate::util::write_file(dir.join(FILE), serde_json::to_string_pretty(&e)? + "\n")?;
    crate::util::write_file(dir.join(TABLE_FILE), &text)?;
    crate::util::write_file(dir.join(KTAP_FILE), ktap(&e))?;
    print!("{text}");
    let off = not_adding_up(&e);
    if !off.is_empty() {
        crate::util::say!(
            "--explain: functions do not add up to the count within 1%: {}",
            off.join(", ")
        );
        return Ok((1, e));
    }
    Ok((0, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(f: &str) -> Name {
        (Region::Kernel, f.to_owned())
    }

    fn window(parts: &[(&str, f64)]) -> HashMap<Name, f64> {
        parts.iter().map(|(f, v)| (name(f), *v)).collect()
    }

    #[test]
    fn per_function_the_fewest_of_the_runs_less_the_base() {
        let mut per = PerWindow::new();
        // The base: the loop (10), a tick in the second run.
        per.insert(0, window(&[("loop", 10.0)]));
        per.insert(2, window(&[("loop", 10.0), ("tick", 4.0)]));
        // The mechanism: the loop, the probe; a tick in the first run.
        per.insert(1, window(&[("loop", 10.0), ("probe", 30.0), ("tick", 5.0)]));
        per.insert(3, window(&[("loop", 10.0), ("probe", 30.0)]));
        let mut doc = crate::util::document::fixtures::counted(&[("raw_tp", 30.0)]);
        doc.mechanisms[0].windows = Some(vec![0, 2]);
        doc.mechanisms[1].windows = Some(vec![1, 3]);
        doc.mechanisms[1].base_windows = Some(vec![0, 2]);
        let s = splits(&doc, &per, &kinds::KindWindows::new()).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[0].functions,
            [Part {
                function: "probe".into(),
                region: Region::Kernel,
                per_event: 30.0
            }]
        );
        assert_eq!((s[0].sum, s[0].residual), (30.0, 0.0));
    }

    fn explained(residual: f64) -> Explained {
        Explained {
            unit: "instructions".into(),
            kernel: "6.12.118+deb13-amd64".into(),
            emulator: "QEMU emulator version 7.2.22".into(),
            mechanisms: vec![Split {
                mechanism: "raw_tp".into(),
                base: "base".into(),
                count: 121.0,
                functions: vec![Part {
                    function: "bpf_trace_run2".into(),
                    region: Region::Kernel,
                    per_event: 121.0 - residual,
                }],
                sum: 121.0 - residual,
                residual,
                kinds: Vec::new(),
            }],
        }
    }

    #[test]
    fn ktap_passes_a_split_that_adds_up_and_fails_one_that_does_not() {
        let k = ktap(&explained(0.0));
        assert!(k.starts_with("KTAP version 1\n1..1\n"), "{k}");
        assert!(k.contains("# raw_tp: bpf_trace_run2 +121.0 instructions per event\n"));
        assert!(k.ends_with("\nok 1 explain_raw_tp\n"), "{k}");
        assert!(ktap(&explained(2.0)).ends_with("\nnot ok 1 explain_raw_tp\n"));
        assert_eq!(not_adding_up(&explained(1.0)), Vec::<String>::new());
    }

    /// explain.json's fields are the ones docs/explain.md lists.
    #[test]
    fn the_json_is_as_documented() {
        let doc =
            std::fs::read_to_string(crate::util::repo_root().join("docs/explain.md")).unwrap();
        let v = serde_json::to_value(explained(0.0)).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        for (what, v) in [
            ("explain.json", &v),
            ("mechanisms[]", &v["mechanisms"][0]),
            ("functions[]", &v["mechanisms"][0]["functions"][0]),
        ] {
            let line = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{what}` |")))
                .unwrap_or_else(|| panic!("docs/explain.md has no row for {what}"));
            let mut documented: Vec<String> = line
                .split('`')
                .skip(3)
                .step_by(2)
                .map(String::from)
                .collect();
            documented.sort();
            assert_eq!(keys(v), documented, "{what}");
        }
    }

    #[test]
    fn counts_are_read_per_window_and_checked() {
        let c =
            parse_counts("window 0\nffffffff81000000 3\n10 2 int3\ntotal 5\nwindow 1\ntotal 0\n")
                .unwrap();
        assert_eq!(
            c[&0],
            [
                (0xffff_ffff_8100_0000, 3, None),
                (0x10, 2, Some("int3".to_owned()))
            ]
        );
        assert!(c[&1].is_empty());
        let e = parse_counts("window 0\n10 2\ntotal 3\n").unwrap_err();
        assert!(format!("{e:#}").contains("do not add up"), "{e:#}");
    }

    #[test]
    fn the_log_names_maps_windows_and_their_code() {
        let (maps, w) = parse_log(
            "map 5555000 5556000 1000 /x/bpf-overhead\n\
             window 0 base 200\n\
             window 1 raw_tp 200\n\
             prog ffffffffc0001000 96 bpf_prog_6deef7357e7b4530_prog_raw_tp\n\
             sym ffffffffc0001000 t bpf_prog_6deef7357e7b4530_prog_raw_tp [bpf]\n",
        )
        .unwrap();
        assert_eq!(maps[0].path, "/x/bpf-overhead");
        assert_eq!(w[&1].made.sym[0].1, "bpf_prog_6deef7357e7b4530_prog_raw_tp");
        assert!(w[&0].made.sym.is_empty());
        assert_eq!(w[&1].made.progs[0].1, 0xffff_ffff_c000_1060);
        assert!(parse_log("sym 1 t x [bpf]\n").is_err());
    }
}
