//! Comparisons made in one place and one time, measured: the in-run A/B
//! (`--against`) and the cross-run gate against saved baselines, with
//! real runs of the command under four conditions, each stated with the
//! machine's own drift measured just before it (root needed):
//!
//!     cargo build --release --bins --examples && sudo target/release/examples/compare_power [--runs N] [--ab-runs N] [--only SECTION]
//!
//! (It runs
//! target/release/bpf-overhead, the command as users run it.)
//!
//! Conditions, `--runs` runs each (default 5; `ab`: `--ab-runs`, 10): `quiet`; `hog`, a busy loop
//! on the other CPU; `disk`, a loop writing 20 MB files and syncing; `apt`,
//! `apt-get install --reinstall` of a few packages in a loop.
//!
//! Sections (`--only`, else all, in this order):
//! - `baseline`: 3 default runs saved as a baseline set (quiet), and the
//!   first of them alone as a one-run baseline.
//! - `aa`: in-run A/A, `--against prog-work=0` of the default mechanisms
//!   (or `-m LIST`),
//!   in every condition; each run's A side also judged against both saved
//!   baselines (the cross-run A/A).
//! - `ab`: in-run A/B, raw_tp-loop, tp-loop, uprobe-nop and raw_tp each
//!   made 10% costlier by `--prog-work` (k steps, found by measuring
//!   candidates), quiet and beside the hog.
//! - `stats`: what BPF run-time stats cost, `--against bpf-stats`, per
//!   mechanism.
//! - `objects`: two builds of a user's object in one run, `--object
//!   syscalls.bpf.o --against object=B` (the suite's objects): B a slower
//!   build (a loop of 64 rounds in each program) and B the same build,
//!   `--ab-runs` runs each, quiet and beside the hog.
//! - `time`: how long runs take, 3 of each, interleaved: a default full
//!   run, one of `--against prog-work=0`, one of an object of ten programs
//!   (`ten.bpf.o`) and one of it `--against object=` itself.
//! - `budget`: the in-run A/A of `aa` at `--budget 45` (a plain run's) and
//!   at `--against`'s default, interleaved, `--runs` of each, quiet and
//!   beside the hog: how conclusive each is, in how many rounds and
//!   seconds. At `--threshold` [`BUDGET_THRESHOLD`], not 5: a stand-in
//!   for a noisier hour, since what decides a verdict is the pairs'
//!   spread against the threshold. Not in the default set of sections.
//!
//! Prints markdown; docs/gate-power.md's comparison part comes from here.
//! Each run's document is kept in target/compare-power/runs/, and
//! `--rejudge` prints the tables again from those documents with this
//! build's rule, running nothing (no drift, no calibration: the run's own
//! output has those).

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bpf_overhead::document::Document;
use bpf_overhead::gate::{self, against, Comparison, Findings as GateReport, Threshold, Verdict};
use bpf_overhead::stats::{median, stddev};

mod common;
use common::{background, tally, Background};

const SECTIONS: [&str; 7] = ["baseline", "aa", "ab", "stats", "objects", "time", "budget"];
const AB: [&str; 4] = ["raw_tp-loop", "tp-loop", "uprobe-nop", "raw_tp"];
const SET_DIR: &str = "target/compare-power/set";
const ONE: &str = "target/compare-power/one.json";
/// Every run's document, kept (`<section>-<condition>-<n>.json`).
const RUNS_DIR: &str = "target/compare-power/runs";
/// `--rejudge`: read each kept document instead of running.
static REJUDGE: AtomicBool = AtomicBool::new(false);

fn rejudging() -> bool {
    REJUDGE.load(Ordering::Relaxed)
}

/// The triggers whose in-run A/A must be conclusive (issue 23): the
/// kernel loop's and the user call's.
const CONCLUSIVE_TRIGGERS: [&str; 2] = ["kernel_loop", "uprobe_target"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Condition {
    Quiet,
    Hog,
    Disk,
    Apt,
}

const CONDITIONS: [Condition; 4] = [
    Condition::Quiet,
    Condition::Hog,
    Condition::Disk,
    Condition::Apt,
];

impl Condition {
    fn label(self) -> &'static str {
        match self {
            Condition::Quiet => "quiet",
            Condition::Hog => "CPU hog",
            Condition::Disk => "20 MB writes + sync",
            Condition::Apt => "apt-get --reinstall",
        }
    }

    fn start(self) -> Load {
        if rejudging() {
            return Load::None;
        }
        match self {
            Condition::Quiet => Load::None,
            Condition::Hog => Load::Thread(common::hog()),
            Condition::Disk => Load::Thread(common::beside(|| {
                let path = std::env::temp_dir().join("compare-power-disk");
                background::disk(&path, || std::fs::File::create(&path));
            })),
            Condition::Apt => {
                // Stopped by a file, between two apt-gets: killing one
                // mid-install leaves dpkg "interrupted" (it did), and the
                // next apt-get on the machine refuses to run.
                let stop = std::env::temp_dir()
                    .join(format!("compare-power-apt-stop-{}", std::process::id()));
                let _ = std::fs::remove_file(&stop);
                let script = format!(
                    "while [ ! -e '{}' ]; do DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y -qq \
                     hostname less bc >/dev/null 2>&1; done",
                    stop.display()
                );
                let child = Command::new("sh")
                    .args(["-c", &script])
                    .spawn()
                    .expect("start the apt-get loop");
                Load::Process(child, stop)
            }
        }
    }
}

enum Load {
    None,
    Thread(#[allow(dead_code)] Background),
    /// A shell loop, and the file that stops it.
    Process(Child, std::path::PathBuf),
}

impl Drop for Load {
    fn drop(&mut self) {
        if let Load::Process(child, stop) = self {
            // The loop ends once its apt-get in progress has finished.
            let _ = std::fs::write(&stop, b"");
            let _ = child.wait();
            let _ = std::fs::remove_file(&stop);
        }
    }
}

/// The machine's drift over `secs`: research/drift's figures, as a string.
fn drift(secs: u32) -> String {
    if rejudging() {
        return "drift: as the run measured it".into();
    }
    let out = Command::new(sibling("drift"))
        .arg(secs.to_string())
        .output()
        .expect("run research/drift (cargo build --release --examples)");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("drift's JSON");
    format!(
        "drift over {secs} s: {}K/s median, CV {}% (50 ms windows), {}% (1 s blocks)",
        v["median_k_per_s"], v["cv_50ms_pct"], v["cv_1s_pct"]
    )
}

fn sibling(name: &str) -> std::path::PathBuf {
    std::env::current_exe().unwrap().with_file_name(name)
}

fn command() -> std::path::PathBuf {
    // target/release/examples/compare_power -> target/release/bpf-overhead
    sibling("..").join("bpf-overhead")
}

/// One run of the command with `args`, its JSON document and exit code.
fn run(args: &[&str]) -> (Document, i32, f64) {
    run_kept(args, None)
}

/// [`run`], keeping the document in [`RUNS_DIR`] as `keep`.json.
fn run_kept(args: &[&str], keep: Option<&str>) -> (Document, i32, f64) {
    if let Some(name) = keep.filter(|_| rejudging()) {
        let path = format!("{RUNS_DIR}/{name}.json");
        let doc = Document::load(std::path::Path::new(&path))
            .unwrap_or_else(|e| panic!("--rejudge: {path}: {e}"));
        return (doc, -1, 0.0);
    }
    assert!(!rejudging(), "--rejudge runs nothing: {args:?}");
    let started = Instant::now();
    let out = Command::new(command())
        .args(args)
        .args(["--format", "json"])
        .stderr(Stdio::inherit())
        .output()
        .expect("run target/release/bpf-overhead");
    let secs = started.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = Document::from_json(&text).unwrap_or_else(|e| panic!("bpf-overhead {args:?}: {e}"));
    if let Some(name) = keep {
        std::fs::create_dir_all(RUNS_DIR).unwrap();
        std::fs::write(format!("{RUNS_DIR}/{name}.json"), text.as_bytes()).unwrap();
    }
    (doc, out.status.code().unwrap_or(-1), secs)
}

fn cell(c: &[usize; 4]) -> String {
    format!("{} / {} / {} / {}", c[0], c[1], c[2], c[3])
}

fn baseline() {
    let _ = std::fs::remove_dir_all(SET_DIR);
    std::fs::create_dir_all(SET_DIR).unwrap();
    println!("\n## Saved baselines\n\n{}\n", drift(20));
    for i in 0..3 {
        let (_, code, secs) = run(&["--save", &format!("{SET_DIR}/")]);
        println!(
            "- baseline run {} saved into {SET_DIR}/ ({secs:.0} s, exit {code})",
            i + 1
        );
    }
    let first = std::fs::read_dir(SET_DIR)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .min()
        .expect("a saved run");
    std::fs::copy(first, ONE).unwrap();
}

fn set() -> Vec<Document> {
    std::fs::read_dir(SET_DIR)
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path()))
                .filter_map(|p| Document::load(&p).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Names of the mechanisms in a report, in order.
fn names(r: &GateReport) -> Vec<String> {
    r.comparisons.iter().map(|c| c.name.clone()).collect()
}

/// Each mechanism's B - A change in every run: as judged, as measured.
type Changes = Vec<(String, [Vec<f64>; 2])>;

fn aa(runs: usize, mechanisms: Option<&str>) {
    let set = set();
    let one = Document::load(std::path::Path::new(ONE)).ok();
    let selection = mechanisms.map_or("default mechanisms".to_string(), |m| format!("`-m {m}`"));
    println!("\n## In-run A/A: `--against prog-work=0`, {selection}, default budget\n");
    println!("Counts are REGRESSED / UNSURE / ok / improved over the runs of each condition.\n");
    let mut rows: Vec<(String, Vec<[usize; 4]>)> = Vec::new();
    let mut cross_one: Vec<(String, Vec<[usize; 4]>)> = Vec::new();
    let mut cross_set: Vec<(String, Vec<[usize; 4]>)> = Vec::new();
    let mut lines = Vec::new();
    // Each mechanism's B - A change in every run, for the spread between
    // runs: as judged (speed-adjusted) and on the pairs as measured.
    let mut changes: Changes = Vec::new();
    for (ci, condition) in CONDITIONS.iter().enumerate() {
        let load = condition.start();
        let d = drift(20);
        let mut secs = Vec::new();
        let mut conclusive = 0;
        for n in 0..runs {
            let mut args = vec!["--against", "prog-work=0"];
            if let Some(m) = mechanisms {
                args.extend(["-m", m]);
            }
            let keep = format!("aa-{condition:?}-{}", n + 1).to_lowercase();
            let (doc, code, s) = run_kept(&args, Some(&keep));
            secs.push(s);
            let report = against::compare(&doc, against::IN_RUN_THRESHOLD);
            add(&mut rows, &report, ci);
            let measured = against::compare_with(
                &doc,
                Threshold::Fixed(against::IN_RUN_THRESHOLD),
                against::Correction::None,
                against::Speed::AsMeasured,
            );
            add_changes(&mut changes, &report, &measured);
            conclusive += usize::from(all_ok_on(&doc, &report, &CONCLUSIVE_TRIGGERS));
            eprintln!(
                "compare_power: A/A {} exit {code} in {s:.0} s",
                condition.label()
            );
            let a = doc.side_a();
            if let Some(one) = &one {
                add(
                    &mut cross_one,
                    &gate::set::compare_set(std::slice::from_ref(one), &a, Threshold::ByTrigger),
                    ci,
                );
            }
            if set.len() > 1 {
                add(
                    &mut cross_set,
                    &gate::set::compare_set(&set, &a, Threshold::ByTrigger),
                    ci,
                );
            }
        }
        drop(load);
        lines.push(format!(
            "- {}: {d}; runs took {:.0}–{:.0} s; every kernel-loop and call-trigger \
             comparison ok in {conclusive} of {runs} runs",
            condition.label(),
            secs.iter().copied().fold(f64::INFINITY, f64::min),
            secs.iter().copied().fold(0.0, f64::max)
        ));
    }
    println!("{}\n", lines.join("\n"));
    table("In-run, B against A", &rows);
    table(
        "Cross-run: each run's A side against the one-run baseline",
        &cross_one,
    );
    table(
        &format!(
            "Cross-run: each run's A side against the {}-run baseline set",
            set.len()
        ),
        &cross_set,
    );
    spread_table(&changes);
}

/// Each mechanism's B - A change of one run, as judged and as measured,
/// added to those of the runs before.
fn add_changes(changes: &mut Changes, report: &GateReport, measured: &GateReport) {
    for (c, m) in report.comparisons.iter().zip(&measured.comparisons) {
        if let (Some(change), Some(as_measured)) = (c.change, m.change) {
            match changes.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, [v, w])) => {
                    v.push(change);
                    w.push(as_measured);
                }
                None => changes.push((c.name.clone(), [vec![change], vec![as_measured]])),
            }
        }
    }
}

/// How far each mechanism's B - A moved between runs.
fn spread_table(changes: &Changes) {
    println!("\n### In-run A/A: how far B - A moved between runs\n");
    println!("Each run's change (its pairs' Hodges-Lehmann estimate over A's own cost), over all the runs: its spread between runs against the `sees` of one run says whether something fixed for a run moves it. As judged (what the machine's speed explains taken out of the pairs, where some pair's runs differ in speed by more than 5%), and on the pairs as measured; `adjusted` counts the runs where the two differ.\n");
    println!("| mechanism | runs | median | SD between runs | min | max | SD as measured | min | max | adjusted |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let low = |v: &[f64]| 100.0 * v.iter().copied().fold(f64::INFINITY, f64::min);
    let high = |v: &[f64]| 100.0 * v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (name, [v, w]) in changes {
        let adjusted = v.iter().zip(w).filter(|(a, b)| a != b).count();
        println!(
            "| {name} | {} | {:+.1}% | {:.1}% | {:+.1}% | {:+.1}% | {:.1}% | {:+.1}% | {:+.1}% | {adjusted} |",
            v.len(),
            100.0 * median(v),
            100.0 * stddev(v),
            low(v),
            high(v),
            100.0 * stddev(w),
            low(w),
            high(w),
        );
    }
}

/// Whether every comparison of a mechanism on one of `triggers` is ok
/// (unchanged) in `report`, and there is at least one.
fn all_ok_on(doc: &Document, report: &GateReport, triggers: &[&str]) -> bool {
    let on: Vec<_> = report
        .comparisons
        .iter()
        .filter(|c| {
            doc.mechanism(&c.name)
                .is_some_and(|m| triggers.contains(&m.trigger.as_str()))
        })
        .collect();
    !on.is_empty() && on.iter().all(|c| c.verdict == Verdict::Unchanged)
}

fn add(rows: &mut Vec<(String, Vec<[usize; 4]>)>, report: &GateReport, ci: usize) {
    for name in names(report) {
        let c = report.find(&name).unwrap();
        // Not measured on one side (not selected, or new): no verdict.
        if matches!(c.verdict, Verdict::NotRun | Verdict::New) {
            continue;
        }
        let row = match rows.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                rows.push((name.clone(), vec![[0; 4]; CONDITIONS.len()]));
                rows.len() - 1
            }
        };
        tally(&mut rows[row].1[ci], c.verdict);
    }
}

fn table(title: &str, rows: &[(String, Vec<[usize; 4]>)]) {
    println!("### {title}\n");
    let heads: Vec<&str> = CONDITIONS.iter().map(|c| c.label()).collect();
    println!("| mechanism | {} |", heads.join(" | "));
    println!("|---|{}", "---|".repeat(heads.len()));
    for (name, counts) in rows {
        let cells: Vec<String> = counts.iter().map(cell).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    println!();
}

/// The change `--against prog-work=K` makes to `name`'s overhead, from
/// one in-run comparison.
fn change_at(name: &str, k: u32) -> f64 {
    let (doc, _, _) = run(&["-m", name, "--against", &format!("prog-work={k}")]);
    let report = against::compare(&doc, against::IN_RUN_THRESHOLD);
    report.find(name).and_then(|c| c.change).unwrap_or(f64::NAN)
}

/// The step count that makes `name` 10% costlier, found by measuring
/// candidates: a step's cost is not linear in the count (an out-of-order
/// core overlaps a short add chain with the trigger's own work), so a
/// count scaled from a long chain's slope can be several times off.
/// Brackets the target and bisects, geometrically, at most 8 runs; returns
/// the count and the change its last run showed.
fn calibrate(name: &str) -> (u32, f64) {
    const TARGET: f64 = 0.10;
    let (mut lo, mut hi) = (0u32, None::<u32>);
    let mut k = 8u32;
    let mut best = (k, f64::NAN);
    for _ in 0..8 {
        let c = change_at(name, k);
        eprintln!(
            "compare_power: calibrating {name}: prog-work={k} changes it {:+.1}%",
            100.0 * c
        );
        if best.1.is_nan() || (c - TARGET).abs() < (best.1 - TARGET).abs() {
            best = (k, c);
        }
        if (0.09..=0.115).contains(&c) {
            break;
        }
        if c < TARGET {
            lo = k;
        } else {
            hi = Some(k);
        }
        let next = match hi {
            None => k.saturating_mul(4),
            Some(h) => ((lo.max(1) as f64 * h as f64).sqrt().round() as u32).max(lo + 1),
        };
        if Some(next) == hi || next > MAX_WORK {
            break;
        }
        k = next;
    }
    best
}

const MAX_WORK: u32 = bpf_overhead::measure::MAX_PROG_WORK;

fn ab(runs: usize) {
    println!("\n## In-run A/B: the mechanism made 10% costlier by `--prog-work`\n");
    println!(
        "Each mechanism's step count was found by measuring candidates (one `--against \
         prog-work=K` run each) until one changed it by 9 to 11.5%; its change in that run is \
         `calibrated`.\n"
    );
    let mut lines = Vec::new();
    println!("| mechanism | condition | own cost | --prog-work | calibrated | change seen (median) | sees (median) | REGRESSED | UNSURE | ok | improved |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for name in AB {
        let (k, calibrated, own) = if rejudging() {
            // From the first kept run: its variant, and A's own cost.
            let keep = format!("ab-{name}-quiet-1");
            let (doc, _, _) = run_kept(&[], Some(&keep));
            let k = match doc.variant {
                Some(bpf_overhead::document::Variant::ProgWork(k)) => k,
                _ => 0,
            };
            let own = doc.mechanism(name).and_then(|m| m.overhead_ns.as_ref());
            (k, f64::NAN, own.map_or(f64::NAN, |s| s.median))
        } else {
            let (doc, _, _) = run(&["-m", name, "--budget", "5"]);
            let own = doc
                .mechanism(name)
                .and_then(|m| m.overhead_ns.as_ref())
                .map_or(f64::NAN, |s| s.median);
            let (k, calibrated) = calibrate(name);
            (k, calibrated, own)
        };
        for condition in [Condition::Quiet, Condition::Hog] {
            let load = condition.start();
            let d = drift(10);
            let mut seen = Seen::default();
            for n in 0..runs {
                let keep = format!("ab-{name}-{condition:?}-{}", n + 1).to_lowercase();
                let (doc, code, s) = run_kept(
                    &["-m", name, "--against", &format!("prog-work={k}")],
                    Some(&keep),
                );
                let report = against::compare(&doc, against::IN_RUN_THRESHOLD);
                let c = report.find(name).expect("compared");
                eprintln!(
                    "compare_power: A/B {name} prog-work={k} {}: {} {:+.1}% in {s:.0} s, exit {code}",
                    condition.label(),
                    c.verdict.label(),
                    100.0 * c.change.unwrap_or(f64::NAN)
                );
                seen.add(c);
            }
            drop(load);
            lines.push(format!("- {name}, {}: {d}", condition.label()));
            println!(
                "| {name} | {} | {own:.1} ns | {k} | {:+.1}% | {} |",
                condition.label(),
                100.0 * calibrated,
                seen.cells(runs)
            );
        }
    }
    println!("\n{}", lines.join("\n"));
}

/// One comparison over several runs: its verdict counts, and the change
/// and `sees` of each run.
#[derive(Default)]
struct Seen {
    counts: [usize; 4],
    changes: Vec<f64>,
    sees: Vec<f64>,
}

impl Seen {
    fn add(&mut self, c: &Comparison) {
        tally(&mut self.counts, c.verdict);
        self.changes.push(c.change.unwrap_or(f64::NAN));
        self.sees.push(c.detectable.unwrap_or(f64::INFINITY));
    }

    /// `change (median) | sees (median) | REGRESSED | UNSURE | ok | improved`
    /// as table cells, each count out of `runs`.
    fn cells(&self, runs: usize) -> String {
        let c = self.counts;
        format!(
            "{:+.1}% | ±{:.1}% | {}/{runs} | {}/{runs} | {}/{runs} | {}/{runs}",
            100.0 * median(&self.changes),
            100.0 * median(&self.sees),
            c[0],
            c[1],
            c[2],
            c[3]
        )
    }
}

fn objects(runs: usize) {
    let dir = env!("TEST_OBJECTS_DIR");
    let a = format!("{dir}/syscalls.bpf.o");
    println!("\n## Two builds of a user's object: `--object syscalls.bpf.o --against object=B`\n");
    println!("| B | condition | program | change seen (median) | sees (median) | REGRESSED | UNSURE | ok | improved |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut lines = Vec::new();
    for (label, b) in [
        ("a slower build (`syscalls_plus64`)", "syscalls_plus64"),
        ("the same build", "syscalls"),
    ] {
        let variant = format!("object={dir}/{b}.bpf.o");
        for condition in [Condition::Quiet, Condition::Hog] {
            let load = condition.start();
            let d = drift(10);
            let mut rows: Vec<(String, Seen)> = Vec::new();
            for n in 0..runs {
                let keep = format!("obj-{b}-{condition:?}-{}", n + 1).to_lowercase();
                let (doc, code, s) =
                    run_kept(&["--object", &a, "--against", &variant], Some(&keep));
                let report = against::compare(&doc, against::IN_RUN_THRESHOLD);
                eprintln!(
                    "compare_power: objects B={b} {}: exit {code} in {s:.0} s",
                    condition.label()
                );
                for c in &report.comparisons {
                    let at = match rows.iter().position(|r| r.0 == c.name) {
                        Some(i) => i,
                        None => {
                            rows.push((c.name.clone(), Seen::default()));
                            rows.len() - 1
                        }
                    };
                    rows[at].1.add(c);
                }
            }
            drop(load);
            lines.push(format!("- B {label}, {}: {d}", condition.label()));
            for (name, seen) in rows {
                println!(
                    "| {label} | {} | {name} | {} |",
                    condition.label(),
                    seen.cells(runs)
                );
            }
        }
    }
    println!("\n{}", lines.join("\n"));
}

fn stats() {
    println!("\n## What BPF run-time stats cost: `--against bpf-stats`, default mechanisms\n");
    println!("{}\n", drift(20));
    let (doc, code, s) = run_kept(&["--against", "bpf-stats"], Some("stats"));
    let report = against::compare(&doc, against::IN_RUN_THRESHOLD);
    println!("One run, {s:.0} s, exit {code}.\n");
    println!("| mechanism | own cost, stats off | with stats on | difference | verdict | sees |");
    println!("|---|---|---|---|---|---|");
    for c in &report.comparisons {
        let Some(m) = doc.mechanism(&c.name) else {
            continue;
        };
        let a = m.overhead_ns.as_ref().map_or(f64::NAN, |s| s.median);
        let b = m
            .side_b
            .as_ref()
            .and_then(|b| b.overhead_ns.as_ref())
            .map_or(f64::NAN, |s| s.median);
        println!(
            "| {} | {a:+.1} ns | {b:+.1} ns | {:+.1} ns ({:+.1}%) | {} | ±{:.1}% |",
            c.name,
            c.diff_ns.unwrap_or(f64::NAN),
            100.0 * c.change.unwrap_or(f64::NAN),
            c.verdict.label(),
            100.0 * c.detectable.unwrap_or(f64::INFINITY)
        );
    }
}

/// The in-run threshold of the `budget` section, in percent: on a quiet
/// hour the pairs of 7 rounds decide 5% for every mechanism (their
/// spread 0.1-2% of its cost), as on a noisy one (2-11%) they did not;
/// against 1%, a quiet hour's spread stands for one 5 times as wide.
const BUDGET_THRESHOLD: &str = "1";

/// The in-run A/A at a plain run's budget and at `--against`'s, runs
/// interleaved: what the longer budget buys the kernel-loop and
/// call-trigger mechanisms (rounds, verdicts) and what it costs (seconds).
fn budget(runs: usize) {
    println!("\n## The budget of an `--against` run\n");
    println!(
        "In-run A/A, `--against prog-work=0 --threshold {BUDGET_THRESHOLD}`, default mechanisms, \
         {runs} runs of each budget a condition, interleaved. Verdicts are those of the \
         kernel-loop and call-trigger \
         mechanisms (REGRESSED / UNSURE / ok / improved, over all their comparisons); rounds \
         are theirs, median and most.\n"
    );
    let budgets = [
        ("45 s (`--budget 45`)", Some("45")),
        ("75 s (default)", None),
    ];
    let threshold = BUDGET_THRESHOLD.parse::<f64>().unwrap() / 100.0;
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for condition in [Condition::Quiet, Condition::Hog] {
        let load = condition.start();
        lines.push(format!("- {}: {}", condition.label(), drift(20)));
        let mut got = vec![([0usize; 4], 0usize, Vec::new(), Vec::new()); budgets.len()];
        for n in 0..runs {
            for (bi, (_, b)) in budgets.iter().enumerate() {
                let mut args = vec!["--against", "prog-work=0", "--threshold", BUDGET_THRESHOLD];
                if let Some(b) = b {
                    args.extend(["--budget", b]);
                }
                let keep = format!("budget-{condition:?}-{}-{}", b.unwrap_or("default"), n + 1)
                    .to_lowercase();
                let (doc, code, s) = run_kept(&args, Some(&keep));
                eprintln!(
                    "compare_power: budget {} {} exit {code} in {s:.0} s",
                    budgets[bi].0,
                    condition.label()
                );
                let report = against::compare(&doc, threshold);
                let (counts, all_ok, rounds, secs) = &mut got[bi];
                for c in &report.comparisons {
                    let Some(m) = doc.mechanism(&c.name) else {
                        continue;
                    };
                    if !CONCLUSIVE_TRIGGERS.contains(&m.trigger.as_str()) {
                        continue;
                    }
                    tally(counts, c.verdict);
                    if let Some(p) = &m.pairs_ns {
                        rounds.push(p.samples.len() as f64);
                    }
                }
                *all_ok += usize::from(all_ok_on(&doc, &report, &CONCLUSIVE_TRIGGERS));
                secs.push(s);
            }
        }
        drop(load);
        for ((what, _), (counts, all_ok, rounds, secs)) in budgets.iter().zip(got) {
            rows.push(format!(
                "| {} | {what} | {} | {all_ok} of {runs} | {:.0} · {:.0} | {:.0}–{:.0} |",
                condition.label(),
                cell(&counts),
                median(&rounds),
                rounds.iter().copied().fold(0.0, f64::max),
                secs.iter().copied().fold(f64::INFINITY, f64::min),
                secs.iter().copied().fold(0.0, f64::max),
            ));
        }
    }
    println!("{}\n", lines.join("\n"));
    println!("| condition | budget | verdicts | runs all ok | rounds | seconds |");
    println!("|---|---|---|---|---|---|");
    println!("{}", rows.join("\n"));
}

/// How long the runs the issue bounds take, 3 of each, interleaved so
/// that the machine's drift spreads over all of them.
fn time() {
    println!("\n## How long a run takes\n");
    println!("{}\n", drift(10));
    let ten = format!("{}/ten.bpf.o", env!("TEST_OBJECTS_DIR"));
    let against = format!("object={ten}");
    let kinds: [(&str, Vec<&str>); 4] = [
        ("default full run", vec![]),
        ("`--against prog-work=0`", vec!["--against", "prog-work=0"]),
        ("`--object ten.bpf.o` (10 programs)", vec!["--object", &ten]),
        (
            "`--object ten.bpf.o --against object=ten.bpf.o`",
            vec!["--object", &ten, "--against", &against],
        ),
    ];
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..3 {
        for (i, (_, args)) in kinds.iter().enumerate() {
            let (_, code, s) = run(args);
            eprintln!("time: {} took {s:.1} s, exit {code}", kinds[i].0);
            secs[i].push(s);
        }
    }
    println!("| run | seconds (3 runs) | median |");
    println!("|---|---|---|");
    for ((what, _), s) in kinds.iter().zip(&secs) {
        let each: Vec<String> = s.iter().map(|s| format!("{s:.1}")).collect();
        println!("| {what} | {} | {:.1} |", each.join(", "), median(s));
    }
}

fn main() {
    let mut runs = 5;
    let mut mechanisms: Option<String> = None;
    let mut ab_runs = 10;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--rejudge" {
            REJUDGE.store(true, Ordering::Relaxed);
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--runs", Some(n)) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                runs = n.parse().unwrap()
            }
            ("--ab-runs", Some(n)) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                ab_runs = n.parse().unwrap()
            }
            ("--only", Some(s)) if SECTIONS.contains(&s.as_str()) => only = Some(s),
            ("-m", Some(list)) => mechanisms = Some(list),
            _ => {
                eprintln!(
                    "usage: compare_power [--runs N] [--ab-runs N] [-m LIST] [--only baseline|aa|ab|stats|objects|time|budget] [--rejudge]  (N >= 1)"
                );
                std::process::exit(2);
            }
        }
    }
    // `cargo build --examples` alone builds no bpf-overhead.
    for needed in [command(), sibling("drift")] {
        if !rejudging() && !needed.exists() {
            eprintln!(
                "compare_power: no {}: build it first (cargo build --release --bins --examples)",
                needed.display()
            );
            std::process::exit(2);
        }
    }
    // `budget` answers one question, asked once: only when named.
    let want = |section: &str| {
        only.as_deref()
            .map_or(section != "budget", |o| o == section)
    };
    let started = Instant::now();
    let uname = nix::sys::utsname::uname().unwrap();
    println!(
        "compare_power: kernel {}, {runs} runs a condition, in-run threshold {:.0}%, cross-run {}",
        uname.release().to_string_lossy(),
        100.0 * against::IN_RUN_THRESHOLD,
        Threshold::ByTrigger.describe()
    );
    if want("baseline") && !rejudging() {
        baseline();
    }
    if want("aa") {
        aa(runs, mechanisms.as_deref());
    }
    if want("ab") {
        ab(ab_runs);
    }
    if want("objects") {
        objects(ab_runs);
    }
    if want("stats") {
        stats();
    }
    if want("time") && !rejudging() {
        time();
    }
    if want("budget") {
        budget(runs);
    }
    println!(
        "\n(compare_power took {:.0} s)",
        started.elapsed().as_secs_f64()
    );
}
