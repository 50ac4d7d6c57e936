//! Every renderer, each a pure function of what it renders: the human
//! table, KTAP for kselftest runners, test_overhead's own lines and the
//! suite's detail line (of a result [`Document`]), the gate report (of a
//! gate's [`Findings`]) and `--list` (of a survey). JSON is the document itself:
//! [`Document::to_json`]. [`matrix`] renders several documents side by
//! side, as a table and an SVG chart; [`kcidb`] and [`squad`] as kernel
//! CI's records. [`formats`] says which renderer each output format uses
//! and what it sends where. All tested on fixed values.

mod findings;
pub mod formats;
mod heading;
pub mod kcidb;
mod ktap;
pub mod matrix;
pub mod metrics;
pub mod pairs;
pub mod squad;
pub mod tabular;

/// The gate's findings of one regression, raw_tp's +25%: what kernel CI's
/// records must fail (kcidb.rs' and squad.rs' tests).
#[cfg(test)]
fn raw_tp_regressed() -> crate::gate::Findings {
    crate::gate::Findings {
        threshold: crate::gate::Threshold::ByTrigger,
        warnings: Vec::new(),
        comparisons: vec![crate::gate::Comparison {
            name: "raw_tp".into(),
            verdict: crate::gate::Verdict::Regressed,
            change: Some(0.25),
            diff_ns: Some(25.0),
            p_value: Some(0.01),
            detectable: Some(0.05),
            detail: "80.0 -> 100.0 ns (+25.0%)".into(),
            by_drift: false,
        }],
    }
}

use findings::conclusion;
pub use findings::{gate_report, warning};
pub use ktap::{ktap, ktap_diagnostic, ktap_header, ktap_result, KtapResult};
pub use pairs::{against_report, duet_report, duet_warning};

use std::fmt::Write as _;

use crate::document::{Document, MechanismResult, Status};
use crate::gate::fmt_ratio;
use crate::measure::{AttachCost, Mechanism, Site};
use crate::pipeline::Availability;

/// A heading line or two saying what was measured where.
fn heading(doc: &Document) -> Vec<String> {
    let mut lines = vec![
        format!(
            "bpf-overhead {}: kernel {} on {}, {}, pinned to CPU {}",
            doc.tool_version, doc.kernel_release, doc.arch, doc.cpu_model, doc.cpu
        ),
        format!(
            "{} per run; up to {} timed round{}{}, {} with its base{}",
            doc.run_secs.map_or_else(
                || format!("{} events", doc.iterations),
                |s| format!("~{:.0} ms", s * 1e3)
            ),
            doc.repeats,
            if doc.repeats == 1 { "" } else { "s" },
            match doc.warmup_runs {
                0 => ", no warm-up".to_owned(),
                n => format!(" after {n} warm-up"),
            },
            doc.order,
            doc.context.as_ref().map_or(String::new(), |c| format!(
                "; CPU {}: {:.1}% stolen, {:.1}% other work, {} preemptions, load {:.2}-{:.2}",
                c.cpu, c.steal_pct, c.other_pct, c.involuntary_switches, c.load_start, c.load_end
            ))
        ),
    ];
    lines.extend(heading::provenance(doc));
    if let Some(signal) = &doc.interrupted {
        // A round's count is its mechanisms': a base runs around each of
        // its mechanisms, so it has more runs than there were rounds (a
        // plan of bases alone: one a round).
        let runs = |bases: bool| {
            doc.mechanisms
                .iter()
                .filter(|m| m.is_base() == bases)
                .filter_map(|m| m.k_events_per_sec.as_ref())
                .map(|k| k.samples.len())
                .max()
        };
        let rounds = runs(false).or_else(|| runs(true)).unwrap_or(0);
        lines.push(format!(
            "INTERRUPTED ({signal}): incomplete, {rounds} of {} rounds ran",
            doc.repeats
        ));
    }
    lines
}

fn k(v: f64) -> String {
    format!("{v:.0}")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The table's column headings.
pub const TABLE_COLUMNS: [&str; 10] = [
    "mechanism",
    "K ev/s",
    "min–max",
    "mean ± sd",
    "ns/ev",
    "overhead",
    "sees",
    "ratio",
    "prog ns",
    "rounds",
];

/// The columns of an exact run's table: counts, not times.
pub const EXACT_COLUMNS: [&str; 10] = [
    "mechanism",
    "ev/M ins",
    "min–max",
    "mean ± sd",
    "ins/ev",
    "ins over",
    "sees",
    "ratio",
    "prog ins",
    "rounds",
];

/// What an exact run's columns mean.
const EXACT_LEGEND: [&str; 6] = [
    "ev/M ins  events per million guest instructions (the guest's clock counts them): median of the rounds, min–max, mean ± sd",
    "ins/ev    guest instructions per event: the fewest of any round (an interrupt only adds; the fewest is a run none landed in)",
    "ins over  instructions per event over the base (the same trigger, nothing attached): the fewest of the mechanism's rounds less the fewest of its base's runs around them",
    "ratio     rate / base rate in the same round, median",
    "prog ins  the BPF program's own instructions per run (run_time_ns / run_cnt under the instruction clock), where the run had BPF stats",
    "rounds    timed runs",
];

/// What the table's columns mean, under it.
const TABLE_LEGEND: [&str; 7] = [
    "K ev/s    thousands of events per second: median of the timed runs, min–max, mean ± sample stddev",
    "ns/ev     median time per event",
    "overhead  ns per event over the base (the same trigger, nothing attached) in the runs just before and after, median over the rounds: what --baseline compares",
    "sees      the smallest change of the overhead this run could tell from noise against a baseline as noisy (rank test, p = 0.05, 4 times in 5)",
    "ratio     rate / base rate in the same round, median",
    "prog ns   the BPF program's own run time (run_time_ns / run_cnt), from one extra run with BPF stats on (an object's: from its timed runs)",
    "rounds    timed runs: a mechanism runs more rounds until it sees a change of the threshold, within --budget",
];

/// The human table: per mechanism the median rate, its range, mean ±
/// stddev, ns/event, the overhead over its base, the rate as a ratio to
/// base and the program's own run time. Skip and failure reasons follow.
pub fn table(doc: &Document) -> String {
    let columns = if doc.exact() {
        EXACT_COLUMNS
    } else {
        TABLE_COLUMNS
    };
    let mut rows = vec![columns.map(String::from).to_vec()];
    let mut notes = Vec::new();
    for m in &doc.mechanisms {
        let (row, note) = table_row(m);
        rows.push(row);
        notes.extend(note);
    }
    let mut out = String::new();
    for line in heading(doc) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    for line in aligned(&rows) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    let legend: &[&str] = if doc.exact() {
        &EXACT_LEGEND
    } else {
        &TABLE_LEGEND
    };
    for legend in legend {
        let _ = writeln!(out, "{legend}");
    }
    notes.extend(
        doc.mechanisms
            .iter()
            .filter_map(|m| Some(attach_line(&m.name, m.attach.as_ref()?))),
    );
    notes.extend(nop_note(doc));
    if let Some(scaling) = scaling_table(doc) {
        out.push('\n');
        out.push_str(&scaling);
    }
    if !notes.is_empty() {
        out.push('\n');
    }
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// A mechanism's row of the table; for one skipped or failed, the word
/// alone, and a note of why.
fn table_row(m: &MechanismResult) -> (Vec<String>, Option<String>) {
    let mut row = vec![m.name.clone()];
    let (Status::Ok, Some(rate)) = (&m.status, &m.k_events_per_sec) else {
        let word = if m.status == Status::Skipped {
            "skipped"
        } else {
            "FAILED"
        };
        row.push(word.into());
        let note = format!(
            "{word} {}: {}",
            m.name,
            one_line(m.reason.as_deref().unwrap_or("no reason given"))
        );
        return (row, Some(note));
    };
    row.push(k(rate.median));
    row.push(format!("{}–{}", k(rate.min), k(rate.max)));
    row.push(format!("{} ± {}", k(rate.mean), k(rate.stddev)));
    row.push(m.ns_per_event.map_or("-".into(), |ns| format!("{ns:.1}")));
    if m.is_base() {
        row.extend(["(base)", "-", "1", "-"].map(String::from));
    } else {
        row.push(
            m.overhead_ns
                .as_ref()
                .map_or("-".into(), |o| format!("{:+.1}", o.median)),
        );
        row.push(
            m.detectable
                .map_or("-".into(), |d| format!("±{:.1}%", d * 100.0)),
        );
        row.push(
            m.ratio_to_base
                .as_ref()
                .map_or("-".into(), |r| fmt_ratio(r.median)),
        );
        row.push(
            m.prog_ns_per_event
                .map_or("-".into(), |ns| format!("{ns:.1}")),
        );
    }
    row.push(rate.samples.len().to_string());
    (row, None)
}

/// `rows` (the header first) as lines of aligned columns: the first
/// left-aligned, the others right-aligned two spaces apart, a short row
/// padded no further than its last cell.
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let render = |cells: &[String]| -> String {
        let mut line = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        line.trim_end().to_string()
    };
    rows.iter().map(|row| render(row)).collect()
}

/// With several producers: per mechanism the total rate, each producer's
/// rate and the scaling over one producer in the same rounds (medians).
pub fn scaling_table(doc: &Document) -> Option<String> {
    if doc.producers < 2 {
        return None;
    }
    let mut out = String::new();
    for m in doc.mechanisms.iter().filter(|m| m.is_ok()) {
        let (Some(rate), Some(per), Some(scaling)) =
            (&m.k_events_per_sec, &m.producers, &m.scaling)
        else {
            continue;
        };
        let per: Vec<String> = per
            .iter()
            .map(|p| format!("cpu{} {}", p.cpu, k(p.k_events_per_sec.median)))
            .collect();
        let _ = writeln!(
            out,
            "  {:<22} total {:>9}  {}  scaling {:.2}x over one producer",
            m.name,
            k(rate.median),
            per.join(" "),
            scaling.median
        );
    }
    if out.is_empty() {
        return None;
    }
    out.insert_str(
        0,
        &format!(
            "{} producers, one per CPU (K events/s, medians):\n",
            doc.producers
        ),
    );
    if doc.emulated.is_some() {
        let _ = writeln!(
            out,
            "  (emulated: vCPUs are threads of one emulator, often run one at a time; \
             scaling here says nothing of hardware)"
        );
    }
    Some(out)
}

/// What attaching took, where that is a cost of its own: `kprobe.multi-all-loop
/// attached to 42352 functions in 3.52 s, taking 5.1 MiB`.
pub fn attach_line(name: &str, a: &AttachCost) -> String {
    let memory = match a.memory_kib {
        Some(kib) => format!(", taking {:.1} MiB", kib as f64 / 1024.0),
        None => String::new(),
    };
    format!(
        "{name} attached to {} functions in {:.2} s{memory}",
        a.functions, a.seconds
    )
}

/// Which nop this kernel optimizes uprobes on, as the probes themselves
/// showed it: what uprobe-nop5 and uprobe-nop10 left at their
/// instruction (a call where the kernel optimized the probe, an int3
/// where every hit traps), beside the figures of the uprobes and USDT
/// probes on a nop. Figures alone for results that did not record it.
pub fn nop_note(doc: &Document) -> Option<String> {
    let ok = |name: &str| doc.mechanism(name).filter(|m| m.is_ok());
    let unit = doc.per_event();
    let figures: Vec<String> = [
        "uprobe-nop",
        "uprobe-nop5",
        "uprobe-nop10",
        "usdt",
        "usdt-nop5",
        "usdt-nop10",
    ]
    .into_iter()
    .filter_map(|name| {
        let o = ok(name)?.overhead_ns.as_ref()?.median;
        Some(format!("{name} {o:+.1} {unit}"))
    })
    .collect();
    if !figures
        .iter()
        .any(|f| f.contains("nop5") || f.contains("nop10"))
    {
        return None;
    }
    let site = |name: &str| ok(name).and_then(|m| m.site);
    Some(
        match nop_sentence(site("uprobe-nop5"), site("uprobe-nop10")) {
            Some(sentence) => format!("{}: {sentence}", figures.join(", ")),
            None => figures.join(", "),
        },
    )
}

/// `this kernel optimizes uprobes on a 10-byte nop (nop5: traps)`, or the
/// other way round, or neither, from what a uprobe on each left at its
/// nop (`None`: it did not run). `None` when neither ran.
pub fn nop_sentence(nop5: Option<Site>, nop10: Option<Site>) -> Option<String> {
    if nop5.is_none() && nop10.is_none() {
        return None;
    }
    let how = |site: Option<Site>| match site {
        Some(Site::Call) => "optimized",
        Some(Site::Int3) => "traps",
        Some(Site::Untouched) => "no probe seen",
        None => "not run",
    };
    Some(
        match (nop5 == Some(Site::Call), nop10 == Some(Site::Call)) {
            (false, true) => format!(
                "this kernel optimizes uprobes on a 10-byte nop (nop5: {})",
                how(nop5)
            ),
            (true, false) => format!(
                "this kernel optimizes uprobes on a 5-byte nop (nop10: {})",
                how(nop10)
            ),
            (true, true) => "this kernel optimizes uprobes on a 5-byte and a 10-byte nop".into(),
            (false, false) => format!(
                "this kernel optimizes uprobes on neither nop (nop5: {}, nop10: {})",
                how(nop5),
                how(nop10)
            ),
        },
    )
}

/// test_overhead's lines, exactly: `task_rename raw_tp\t1107K events per
/// sec`, one per measured mechanism (bases included), from the median
/// rate. Skipped and failed mechanisms print nothing here.
pub fn selftest(doc: &Document) -> String {
    let mut out = String::new();
    for line in doc.mechanisms.iter().filter_map(|m| selftest_line(doc, m)) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// `<trigger> <mechanism>\t<N>K events per sec`, N the median rate
/// truncated as test_overhead truncates, plus ` (emulated: tcg, not a
/// performance figure)` for a document measured under emulation. `None`
/// unless the mechanism was measured.
pub fn selftest_line(doc: &Document, m: &MechanismResult) -> Option<String> {
    let rate = m.k_events_per_sec.as_ref().filter(|_| m.is_ok())?;
    let mut line = format!(
        "{} {}\t{}K events per sec",
        m.trigger, m.name, rate.median as u64
    );
    if doc.exact() {
        let _ = write!(
            line,
            " ({}: counted in guest instructions, the figure is events per million \
             instructions)",
            doc.emulated.as_ref().map_or("exact", |e| e.word())
        );
    } else if let Some(how) = &doc.emulated {
        let _ = write!(line, " (emulated: {how}, not a performance figure)");
    }
    Some(line)
}

/// The suite's second line, against the base measured in the same round:
/// `  raw_tp: +82.6 ns/event over base (1750K events per sec), 0.874x base
/// rate, hits 100000/100000`; for a base, its ns per event, and how many
/// events it fired when its trigger scales them. `None` unless measured.
pub fn detail_line(doc: &Document, m: &MechanismResult) -> Option<String> {
    let ns = m.ns_per_event.filter(|_| m.is_ok())?;
    let unit = doc.per_event();
    if m.is_base() {
        let mut line = format!("  {}: {ns:.1} {unit}", m.name);
        if m.events_per_run > doc.iterations {
            let _ = write!(
                line,
                " ({} events per run, {}x the iterations: one event alone is too short to time well)",
                m.events_per_run,
                m.events_per_run / doc.iterations.max(1)
            );
        }
        return Some(line);
    }
    let base = doc.mechanism(&m.base)?;
    let mut line = format!(
        "  {}: {:+.1} {unit} over {} ({}K events per sec), {:.3}x base rate",
        m.name,
        m.overhead_ns.as_ref()?.median,
        m.base,
        base.k_events_per_sec.as_ref()?.median as u64,
        m.ratio_to_base.as_ref()?.median,
    );
    if let Some(hits) = &m.hits {
        let per_run: Vec<String> = hits.iter().map(u64::to_string).collect();
        let _ = write!(line, ", hits {}/{}", per_run.join(","), m.events_per_run);
    }
    if let Some(ns) = m.prog_ns_per_event {
        let _ = write!(line, ", program {ns:.1} {unit}");
    }
    Some(line)
}

/// An exact run's diagnostic line: counts, no statistics.
fn exact_figures_line(m: &MechanismResult) -> Option<String> {
    let mut s = format!(
        "{}: {:.1} instructions per event (fewest of {} rounds)",
        m.name,
        m.ns_per_event?,
        m.k_events_per_sec.as_ref()?.samples.len()
    );
    if let Some(o) = &m.overhead_ns {
        let _ = write!(
            s,
            ", {:+.1} instructions per event over {}",
            o.median, m.base
        );
    }
    Some(s)
}

/// One diagnostic line of figures, for KTAP.
fn figures_line(m: &MechanismResult) -> Option<String> {
    let rate = m.k_events_per_sec.as_ref()?;
    let mut s = format!(
        "{}: {}K events per sec (median of {}, min {} max {}, mean {} ± {})",
        m.name,
        k(rate.median),
        rate.samples.len(),
        k(rate.min),
        k(rate.max),
        k(rate.mean),
        k(rate.stddev)
    );
    if let Some(o) = &m.overhead_ns {
        let _ = write!(s, ", {:+.1} ns/event over {}", o.median, m.base);
    }
    if let Some(d) = m.detectable {
        let _ = write!(s, ", sees a change of ±{:.1}%", d * 100.0);
    }
    if let Some(r) = &m.ratio_to_base {
        let _ = write!(s, ", ratio to base {}", fmt_ratio(r.median));
    }
    if let Some(ns) = m.prog_ns_per_event {
        let _ = write!(s, ", program {ns:.1} ns/event");
    }
    Some(s)
}

/// `--list`: every mechanism, whether this kernel runs it, its hook and
/// needs; then the reason for each "no" or "error".
pub fn list(survey: &[(Mechanism, Availability)]) -> String {
    let header = ["mechanism", "supported", "hook", "needs"].map(String::from);
    let mut reasons = Vec::new();
    let mut attached = Vec::new();
    let rows: Vec<[String; 4]> = survey
        .iter()
        .map(|(m, availability)| {
            let supported = match availability {
                Availability::Yes(attach, _) => {
                    attached.extend(attach.map(|a| attach_line(m.name(), &a)));
                    "yes"
                }
                Availability::Unknown => "?",
                Availability::No(why) => {
                    reasons.push(format!("{m}: {}", one_line(why)));
                    "no"
                }
                Availability::Broken(why) => {
                    reasons.push(format!("{m}: {}", one_line(why)));
                    "error"
                }
            };
            [
                m.name().into(),
                supported.into(),
                m.hook().into(),
                m.needs().into(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            rows.iter()
                .chain(std::iter::once(&header))
                .map(|r| r[c].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if survey.iter().any(|(_, a)| *a == Availability::Unknown) {
        let _ = writeln!(
            out,
            "\n(run as root to find out which ones this kernel supports)"
        );
    }
    let site = |name: &str| {
        survey.iter().find_map(|(m, a)| match a {
            Availability::Yes(_, site) if m.name() == name => *site,
            _ => None,
        })
    };
    attached.extend(nop_sentence(site("uprobe-nop5"), site("uprobe-nop10")));
    if !reasons.is_empty() || !attached.is_empty() {
        out.push('\n');
    }
    for r in attached.into_iter().chain(reasons) {
        let _ = writeln!(out, "{r}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    fn attach_cost() -> AttachCost {
        AttachCost {
            functions: 42352,
            seconds: 3.517,
            memory_kib: Some(5222),
        }
    }

    #[test]
    fn attach_costs_show_in_the_table_the_list_and_ktap() {
        let line = "kprobe.multi-all-loop attached to 42352 functions in 3.52 s, taking 5.1 MiB";
        let mut doc = document();
        doc.mechanisms[1].name = "kprobe.multi-all-loop".into();
        doc.mechanisms[1].attach = Some(attach_cost());
        assert!(table(&doc).lines().any(|l| l == line), "{}", table(&doc));
        let ktap = ktap::ktap(&doc, None);
        assert!(ktap.lines().any(|l| l == format!("# {line}")), "{ktap}");
        let m: Mechanism = "kprobe.multi-all-loop".parse().unwrap();
        let listed = list(&[(m, Availability::Yes(Some(attach_cost()), None))]);
        assert!(listed.lines().any(|l| l == line), "{listed}");
        let unread = AttachCost {
            memory_kib: None,
            ..attach_cost()
        };
        assert_eq!(
            attach_line("x", &unread),
            "x attached to 42352 functions in 3.52 s"
        );
    }

    #[test]
    fn table_has_every_column_and_the_skip_reason() {
        let text = table(&document());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0]
            .starts_with("bpf-overhead 0.1.0: kernel 6.18.0 on x86_64, Test CPU, pinned to CPU 0"));
        assert!(
            lines[1].contains("100000 events per run; up to 3 timed rounds"),
            "{text}"
        );
        let header = lines[3];
        for col in TABLE_COLUMNS {
            assert!(header.contains(col), "{header}");
        }
        let raw_tp = lines.iter().find(|l| l.starts_with("raw_tp")).unwrap();
        // median 945, range, mean ± sd, overhead median +100.0, ratio, prog.
        for cell in [
            "945",
            "900–990",
            "945 ± 45",
            "+100.0",
            "±25.0%",
            "0.900",
            "20.5",
        ] {
            assert!(raw_tp.contains(cell), "{cell} not in {raw_tp:?}");
        }
        let base = lines.iter().find(|l| l.starts_with("base")).unwrap();
        assert!(base.contains("1050") && base.contains("(base)"), "{base}");
        let kprobe = lines.iter().find(|l| l.starts_with("kprobe")).unwrap();
        assert!(kprobe.ends_with("skipped"), "{kprobe}");
        assert!(
            text.contains("skipped kprobe: kernel has no kprobes"),
            "{text}"
        );
        // Columns line up: every row's cells end where the header's do.
        // (In characters: "±" is two bytes.)
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        let at = header.find("ratio").unwrap();
        let end_of_ratio = header[..at].chars().count() + "ratio".len();
        let cell: String = chars(raw_tp)[end_of_ratio - 5..end_of_ratio]
            .iter()
            .collect();
        assert_eq!(cell, "0.900", "{text}");
        assert!(!text.contains("INTERRUPTED"), "{text}");
    }

    #[test]
    fn an_interrupted_result_says_so_in_its_heading() {
        let mut doc = document();
        doc.interrupted = Some("SIGINT".into());
        doc.repeats = 5;
        // A base's runs bracket each of its mechanisms: more than rounds.
        let base = doc.mechanisms.iter_mut().find(|m| m.is_base()).unwrap();
        let k = base.k_events_per_sec.as_mut().unwrap();
        k.samples = [k.samples.clone(), k.samples.clone(), k.samples.clone()].concat();
        let text = table(&doc);
        assert!(
            text.lines()
                .any(|l| l == "INTERRUPTED (SIGINT): incomplete, 3 of 5 rounds ran"),
            "{text}"
        );
    }

    #[test]
    fn selftest_lines_are_test_overheads() {
        assert_eq!(
            selftest(&document()),
            "task_rename base\t1050K events per sec\n\
             task_rename raw_tp\t945K events per sec\n\
             task_rename tp\t890K events per sec\n"
        );
    }

    #[test]
    fn the_nop_note_says_which_nop_the_probes_left_a_call_on() {
        let mut doc = document();
        assert_eq!(nop_note(&doc), None);
        for (name, ns, site) in [
            ("uprobe-nop", 450.0, Site::Int3),
            ("uprobe-nop5", 440.0, Site::Int3),
            ("uprobe-nop10", 200.0, Site::Call),
        ] {
            let mut m = doc.mechanism("raw_tp").unwrap().clone();
            m.name = name.into();
            m.overhead_ns = crate::stats::Summary::of(&[ns]);
            m.site = Some(site);
            doc.mechanisms.push(m);
        }
        let note = nop_note(&doc).unwrap();
        assert!(
            note.ends_with(
                "uprobe-nop10 +200.0 ns/event: this kernel optimizes uprobes on a 10-byte nop \
                 (nop5: traps)"
            ),
            "{note}"
        );
        assert!(table(&doc).contains(&note));
        // The sites decide, not the figures.
        doc.mechanism_mut("uprobe-nop10").unwrap().site = Some(Site::Int3);
        doc.mechanism_mut("uprobe-nop5").unwrap().site = Some(Site::Call);
        assert!(nop_note(&doc)
            .unwrap()
            .ends_with("on a 5-byte nop (nop10: traps)"));
        doc.mechanism_mut("uprobe-nop5").unwrap().site = Some(Site::Int3);
        assert!(nop_note(&doc)
            .unwrap()
            .ends_with("on neither nop (nop5: traps, nop10: traps)"));
        // A kernel that refuses the nop10: it did not run.
        doc.mechanism_mut("uprobe-nop10").unwrap().status = Status::Skipped;
        doc.mechanism_mut("uprobe-nop5").unwrap().site = Some(Site::Call);
        assert!(nop_note(&doc)
            .unwrap()
            .ends_with("on a 5-byte nop (nop10: not run)"));
        // Results that did not record the sites: the figures alone.
        doc.mechanism_mut("uprobe-nop5").unwrap().site = None;
        assert_eq!(
            nop_note(&doc).unwrap(),
            "uprobe-nop +450.0 ns/event, uprobe-nop5 +440.0 ns/event"
        );
        let listed = list(&[
            (
                "uprobe-nop5".parse().unwrap(),
                Availability::Yes(None, Some(Site::Int3)),
            ),
            (
                "uprobe-nop10".parse().unwrap(),
                Availability::Yes(None, Some(Site::Call)),
            ),
        ]);
        assert!(
            listed.contains("\nthis kernel optimizes uprobes on a 10-byte nop (nop5: traps)\n"),
            "{listed}"
        );
    }

    #[test]
    fn failures_are_not_ok_with_their_reason() {
        let mut doc = document();
        let tp = doc.mechanism_mut("tp").unwrap();
        tp.status = Status::Failed;
        tp.reason = Some("tp: attach failed\n(twice)".into());
        tp.k_events_per_sec = None;
        let text = ktap(&doc, None);
        assert!(
            text.contains("# tp: tp: attach failed (twice)\nnot ok 4 tp\n"),
            "{text}"
        );
        let text = table(&doc);
        assert!(
            text.contains("FAILED tp: tp: attach failed (twice)"),
            "{text}"
        );
    }

    #[test]
    fn an_exact_run_says_instructions() {
        let mut doc = document();
        doc.unit = crate::document::Unit::Instructions;
        doc.emulated = Some("tcg-icount".into());
        doc.emulator = Some("QEMU emulator version 7.2.22".into());
        let text = table(&doc);
        assert!(
            text.contains("EXACT (tcg-icount): counted in guest instructions"),
            "{text}"
        );
        assert!(text.contains("(QEMU emulator version 7.2.22)"), "{text}");
        let header = text.lines().find(|l| l.starts_with("mechanism")).unwrap();
        assert!(
            header.contains("ins/ev") && header.contains("ins over"),
            "{header}"
        );
        assert!(!header.split("  ").any(|c| c.trim() == "ns/ev"), "{header}");
        assert!(!text.contains("EMULATED"), "{text}");
        let k = ktap(&doc, None);
        assert!(k.contains("# raw_tp: 1058.2 instructions per event (fewest of 3 rounds), +100.0 instructions per event over base"), "{k}");
    }

    /// A time unit beside a figure, or a time's column, in a line of text:
    /// `+1903.7 ns/event`, `(952.4 ns)`, `prog ns`. An exact run's output
    /// must have none.
    fn time_units(text: &str) -> Vec<String> {
        const UNITS: [&str; 3] = ["ns", "ns/event", "ns/ev"];
        let figure = |t: &str| {
            t.trim_start_matches(['+', '±', '~'])
                .trim_end_matches(['%', 'x'])
                .parse::<f64>()
                .is_ok()
        };
        text.lines()
            .filter(|line| {
                let tokens: Vec<&str> = line
                    .split(|c: char| c.is_whitespace() || "(),;:\"[]{}=".contains(c))
                    .filter(|t| !t.is_empty())
                    .collect();
                line.contains("prog ns")
                    || tokens
                        .windows(2)
                        .any(|w| figure(w[0]) && UNITS.contains(&w[1]))
            })
            .map(str::to_owned)
            .collect()
    }

    /// The same in records: every line of their JSON, and any string in
    /// them that starts with a time unit (`"unit": "ns"`, `"ns per event"`).
    fn time_units_in_records(json: &str) -> Vec<String> {
        fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => {
                    let first = s.split(|c: char| c.is_whitespace()).next().unwrap_or("");
                    if ["ns", "ns/event", "ns/ev"].contains(&first) {
                        out.push(s.clone());
                    }
                    out.extend(time_units(s));
                }
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                serde_json::Value::Object(o) => o.values().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = time_units(json);
        for line in json.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<serde_json::Value>(line) {
                Ok(v) => walk(&v, &mut out),
                Err(_) => {
                    walk(
                        &serde_json::from_str(json).expect("records are JSON"),
                        &mut out,
                    );
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn the_time_unit_finder_finds_them() {
        for bad in [
            "uprobe-nop5 +1903.7 ns/event, uprobe-nop +1130.7 ns/event (1.7x)",
            "base  (952.4 ns)",
            "mechanism  ins/ev  prog ns  rounds",
            "  raw_tp: 1058.2 ns/ev",
        ] {
            assert_eq!(time_units(bad), [bad], "{bad}");
        }
        for good in [
            "uprobe-nop5 +1903.7 instructions/event, uprobe-nop +1130.7 instructions/event",
            "\"ns_per_event\": 1028.8,",
            "base  (1028.8 ins)",
        ] {
            assert!(time_units(good).is_empty(), "{good}");
        }
        assert_eq!(
            time_units_in_records(r#"{"unit": "ns", "value": 1}"#),
            ["ns"]
        );
        assert_eq!(
            time_units_in_records("{\"a\": \"ns per event\"}\n{\"b\": 2}\n"),
            ["ns per event"]
        );
        assert!(time_units_in_records(r#"{"unit": "instructions"}"#).is_empty());
        // A timed run's output has them: the finder sees real output.
        assert!(!time_units(&ktap(&document(), None)).is_empty());
        let timed = kcidb::kcidb(&[&document()]);
        assert!(!time_units_in_records(&timed).is_empty());
    }

    /// Real exact results: 6.12's and 5.10's counts (`vmtest --exact`).
    fn exact_results() -> [Document; 2] {
        [
            include_str!("../tests/fixtures/exact/6.12.json"),
            include_str!("../tests/fixtures/exact/5.10.json"),
        ]
        .map(|text| Document::from_json(text).expect("a result"))
    }

    /// Every output of an exact run names instructions: the table, the
    /// selftest and suite lines, KTAP, the gate, the JSON, kernel CI's
    /// records, and `report`'s table and chart.
    #[test]
    fn every_output_of_an_exact_run_counts_instructions() {
        let [doc, older] = exact_results();
        assert!(doc.exact() && older.exact());
        assert!(nop_note(&doc).is_some(), "the 6.12 run has the nop5 ones");
        let findings = crate::gate::compare(
            &older,
            &doc,
            crate::gate::Threshold::Fixed(crate::gate::DEFAULT_THRESHOLD),
        );
        let matrix = crate::side_by_side::Matrix::new(&[
            ("5.10.json".into(), older.clone()),
            ("6.12.json".into(), doc.clone()),
        ])
        .unwrap();
        let details: String = doc
            .mechanisms
            .iter()
            .filter_map(|m| detail_line(&doc, m))
            .collect::<Vec<_>>()
            .join("\n");
        let texts = [
            ("table", table(&doc)),
            ("selftest", selftest(&doc)),
            ("suite lines", details),
            ("ktap", ktap(&doc, Some(&findings))),
            ("gate", gate_report(&findings, "baseline 5.10.json")),
            ("json", doc.to_json()),
            ("report", matrix::table(&matrix)),
            ("chart", matrix::svg(&matrix).unwrap()),
        ];
        for (what, text) in &texts {
            assert!(text.len() > 100, "{what}: {text}");
            let found = time_units(text);
            assert!(
                found.is_empty(),
                "{what} names a time:\n{}",
                found.join("\n")
            );
        }
        for (what, text) in [
            ("kcidb", kcidb::kcidb(&[&older, &doc])),
            ("squad", squad::squad(&[&older, &doc])),
        ] {
            let found = time_units_in_records(&text);
            assert!(
                found.is_empty(),
                "{what} names a time:\n{}",
                found.join("\n")
            );
        }
    }
}
