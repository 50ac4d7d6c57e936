//! The measurement's steadiness and the regression gate's false alarms
//! and power, measured with real runs on this machine (root needed):
//!
//!     sudo -E env "PATH=$PATH" cargo run --release --example gate_power [-- --pairs N] [--only SECTION]
//!
//! Sections (`--only`, else all, in this order):
//!
//! - `noise`: the machine's own noise, next to the tool's. A continuous
//!   loop of 100000 comm writes a round on the measuring CPU, 20 rounds,
//!   then the same with a 100 ms sleep before each round (what an idle
//!   vCPU does to the next run), then the rounds of the tool's own `base`
//!   in a default run: the CV (stddev / mean) of each. The tool's rounds
//!   should be as steady as the continuous loop.
//! - `aa`: A/A, `pairs` pairs of default runs of the same kernel, the
//!   second run of the last half with a CPU hog spinning on the other CPU;
//!   then every ordered pair of those runs as baseline and candidate. Each
//!   REGRESSED is a false alarm; UNSURE is the gate saying it could not
//!   see. Also the A/A spread of the median overhead between runs, in ns
//!   and in speed-reference steps (what the speed reference buys, if
//!   anything).
//! - `ab`: A/B, the candidate's program does `--prog-work k` extra steps,
//!   k chosen to add 10% of the mechanism's own cost. Every ok (unchanged)
//!   is a miss; UNSURE is allowed.
//! - `cv`: the CV of the overhead over the rounds of one default run.
//! - `length`: how long a timed run should be. Runs of 10 to 200 ms, 7
//!   rounds each, interleaved, 3 times: what each mechanism could see,
//!   and that times the square root of the wall time the run took (what it
//!   sees per unit of time: rounds shrink it as 1/sqrt(n); lower is
//!   better).
//!
//! Prints markdown tables; docs/gate-power.md comes from here. It uses the
//! same pipeline and gate as the command, with the default plan.

use std::time::{Duration, Instant};

use bpf_overhead::document::Document;
use bpf_overhead::gate::{self, Threshold, Verdict};
use bpf_overhead::measure::kernel::host::{emulated, Host};
use bpf_overhead::measure::{CpuPin, Options, ProgWork};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::stats::{mean, median, stddev};

mod common;
use bpf_overhead::Mechanism;
use common::tally;

const SECTIONS: [&str; 5] = ["noise", "aa", "ab", "cv", "length"];
const AA: [&str; 4] = ["raw_tp-loop", "tp-loop", "uprobe-nop", "raw_tp"];
const AB: [&str; 3] = ["raw_tp-loop", "tp-loop", "uprobe-nop"];

fn plan(names: &[&str], prog_work: u32) -> Plan {
    let selection: Vec<Mechanism> = names.iter().map(|n| n.parse().unwrap()).collect();
    Plan {
        stats_run: false,
        options: Options {
            prog_work: ProgWork::new(prog_work).expect("a valid --prog-work"),
            ..Options::default()
        },
        ..Plan::new(&selection, emulated())
    }
}

fn run(names: &[&str], prog_work: u32) -> Document {
    let t = Instant::now();
    let plan = plan(names, prog_work);
    let doc = pipeline::check_privileges(&plan)
        .and_then(|privileged| pipeline::execute(&plan, &privileged, Host::current, |_| {}))
        .unwrap_or_else(|e| {
            eprintln!("gate_power: {e}");
            std::process::exit(1)
        });
    if let Some(m) = doc.mechanisms.iter().find(|m| !m.is_ok()) {
        eprintln!("gate_power: {}: {:?}", m.name, m.reason);
        std::process::exit(1)
    }
    eprintln!(
        "gate_power: run of {} (--prog-work {prog_work}): {} rounds in {:.1} s",
        names.join(","),
        doc.repeats,
        t.elapsed().as_secs_f64()
    );
    doc
}

fn overhead(doc: &Document, name: &str) -> f64 {
    doc.mechanism(name)
        .and_then(|m| m.overhead_ns.as_ref())
        .unwrap_or_else(|| panic!("{name} was not measured: is it supported here?"))
        .median
}

fn steps(doc: &Document, name: &str) -> f64 {
    doc.mechanism(name)
        .and_then(|m| m.overhead_steps.as_ref())
        .map_or(f64::NAN, |s| s.median)
}

fn cv(values: &[f64]) -> f64 {
    100.0 * stddev(values) / mean(values).abs()
}

fn verdict(a: &Document, b: &Document, name: &str) -> (Verdict, f64, f64) {
    let report = gate::compare(a, b, Threshold::ByTrigger);
    let c = report.find(name).expect("compared");
    (
        c.verdict,
        c.change.unwrap_or(f64::NAN),
        c.detectable.unwrap_or(f64::INFINITY),
    )
}

/// Rates of `rounds` rounds of 100000 comm writes on CPU 0, with `pause`
/// before each: the machine's own noise, measured as test_overhead does.
fn comm_loop(rounds: usize, pause: Duration) -> Vec<f64> {
    use std::io::Write;
    let _pin = CpuPin::new(Some(0)).unwrap();
    let mut comm = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/thread-self/comm")
        .unwrap();
    (0..rounds)
        .map(|_| {
            std::thread::sleep(pause);
            let t = Instant::now();
            for _ in 0..100_000 {
                comm.write_all(b"test").unwrap();
            }
            100_000.0 / t.elapsed().as_secs_f64() / 1e3
        })
        .collect()
}

fn noise() {
    // A thread of its own, as the tool's measuring thread, so that the
    // name written is a thread's and the file table is not shared.
    let (steady, paused) = std::thread::spawn(|| {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES).unwrap();
        (
            comm_loop(20, Duration::ZERO),
            comm_loop(20, Duration::from_millis(100)),
        )
    })
    .join()
    .unwrap();
    let doc = run(&AA, 0);
    let base = doc.mechanism("base").unwrap();
    let tool = &base.k_events_per_sec.as_ref().unwrap().samples;
    println!("\nThe machine's noise: 100000 comm writes a round on CPU 0\n");
    println!("| what | rounds | median K/s | min–max K/s | CV |");
    println!("|---|---|---|---|---|");
    for (what, v) in [
        ("continuous loop", &steady),
        ("100 ms sleep before each round", &paused),
        ("the tool's base runs (default run)", tool),
    ] {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        println!(
            "| {what} | {} | {:.0} | {lo:.0}–{hi:.0} | {:.1}% |",
            v.len(),
            median(v),
            cv(v)
        );
    }
    if let Some(c) = &doc.context {
        println!(
            "\nDuring the default run: {:.1}% of CPU {} stolen, {:.1}% other work, {} involuntary switches.",
            c.steal_pct, c.cpu, c.other_pct, c.involuntary_switches
        );
    }
}

fn aa(pairs: usize) {
    let mut quiet = vec![[0usize; 4]; AA.len()];
    let mut hogged = vec![[0usize; 4]; AA.len()];
    let mut runs = Vec::new();
    for pair in 0..pairs {
        let hog = pair >= pairs / 2;
        let a = run(&AA, 0);
        let b = {
            let _hog = hog.then(common::hog);
            run(&AA, 0)
        };
        for (i, name) in AA.iter().enumerate() {
            let (v, change, sees) = verdict(&a, &b, name);
            eprintln!(
                "gate_power: A/A {name}{}: {} {:+.1}%, sees ±{:.1}%",
                if hog { " (hog)" } else { "" },
                v.label(),
                100.0 * change,
                100.0 * sees
            );
            tally(if hog { &mut hogged[i] } else { &mut quiet[i] }, v);
        }
        runs.push(a);
        runs.push(b);
    }
    let half = pairs / 2;
    println!("\nA/A: {pairs} pairs of default runs of the same kernel ({half} quiet, {} with a CPU hog on the other CPU)\n", pairs - half);
    println!("| mechanism | REGRESSED (false alarm) | UNSURE | ok | improved |");
    println!("|---|---|---|---|---|");
    for (i, name) in AA.iter().enumerate() {
        let (q, h) = (quiet[i], hogged[i]);
        let cell = |k: usize| format!("{} · {}", q[k], h[k]);
        println!(
            "| {name} | {} | {} | {} | {} |",
            cell(0),
            cell(1),
            cell(2),
            cell(3)
        );
    }
    let n = runs.len();
    println!(
        "\nA/A over every ordered pair of those {n} runs ({} comparisons a mechanism), and the spread of the median overhead between runs\n",
        n * (n - 1)
    );
    println!("| mechanism | REGRESSED | UNSURE | ok | improved | largest change | CV between runs, ns | CV between runs, speed steps |");
    println!("|---|---|---|---|---|---|---|---|");
    for name in AA {
        let mut counts = [0usize; 4];
        let mut worst = 0f64;
        for (i, a) in runs.iter().enumerate() {
            for (j, b) in runs.iter().enumerate() {
                if i != j {
                    let (v, change, _) = verdict(a, b, name);
                    tally(&mut counts, v);
                    worst = worst.max(change.abs() * 100.0);
                }
            }
        }
        let ns: Vec<f64> = runs.iter().map(|d| overhead(d, name)).collect();
        let st: Vec<f64> = runs.iter().map(|d| steps(d, name)).collect();
        println!(
            "| {name} | {} | {} | {} | {} | ±{worst:.1}% | {:.1}% | {:.1}% |",
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            cv(&ns),
            cv(&st)
        );
    }
}

/// ns that one --prog-work step adds: the slope from +400 steps on
/// raw_tp-loop over 3 interleaved pairs.
fn ns_per_step() -> f64 {
    let (name, big) = ("raw_tp-loop", 400);
    let slopes: Vec<f64> = (0..3)
        .map(|_| {
            let plain = overhead(&run(&[name], 0), name);
            let heavy = overhead(&run(&[name], big), name);
            (heavy - plain) / f64::from(big)
        })
        .collect();
    median(&slopes)
}

fn ab(pairs: usize) {
    let step = ns_per_step();
    println!("\nA/B: the mechanism made 10% costlier by --prog-work (real work in its program)\n");
    println!("One --prog-work step: {step:.2} ns (raw_tp-loop, +400 steps, 3 pairs).\n");
    println!("| mechanism | own cost | --prog-work | change the gate saw (median) | REGRESSED | UNSURE | ok (missed) |");
    println!("|---|---|---|---|---|---|---|");
    for name in AB {
        let own = median(
            &(0..3)
                .map(|_| overhead(&run(&[name], 0), name))
                .collect::<Vec<_>>(),
        );
        let k = ((0.10 * own / step).round() as u32).clamp(1, 10_000);
        let mut counts = [0usize; 4];
        let mut changes = Vec::new();
        for _ in 0..pairs {
            let a = run(&[name], 0);
            let b = run(&[name], k);
            let (v, change, sees) = verdict(&a, &b, name);
            eprintln!(
                "gate_power: A/B {name} --prog-work {k}: {} {:+.1}%, sees ±{:.1}%",
                v.label(),
                100.0 * change,
                100.0 * sees
            );
            tally(&mut counts, v);
            changes.push(change);
        }
        println!(
            "| {name} | {own:.1} ns | {k} | {:+.1}% | {}/{pairs} | {}/{pairs} | {}/{pairs} |",
            100.0 * median(&changes),
            counts[0],
            counts[1],
            counts[2] + counts[3]
        );
    }
}

fn spread() {
    let names = [
        "raw_tp",
        "tp",
        "tp_btf",
        "uprobe-nop",
        "uretprobe-nop",
        "raw_tp-loop",
        "tp-loop",
        "tp_btf-loop",
    ];
    let doc = run(&names, 0);
    println!("\nSpread over the rounds of one default run (CV: sample stddev / mean)\n");
    println!(
        "| mechanism | rounds | K events/s | CV of rate | ns over base | CV of overhead | sees |"
    );
    println!("|---|---|---|---|---|---|---|");
    for m in doc.mechanisms.iter().filter(|m| m.is_ok() && !m.is_base()) {
        let rate = m.k_events_per_sec.as_ref().unwrap();
        let o = m.overhead_ns.as_ref().unwrap();
        println!(
            "| {} | {} | {:.0} | {:.1}% | {:+.1} | {:.1}% | ±{:.1}% |",
            m.name,
            rate.samples.len(),
            rate.median,
            100.0 * rate.relative_stddev(),
            o.median,
            100.0 * o.relative_stddev(),
            100.0 * m.detectable.unwrap_or(f64::NAN)
        );
    }
}

fn length() {
    const LENGTHS_MS: [u64; 5] = [10, 20, 50, 100, 200];
    let mut seen = vec![vec![Vec::new(); AB.len()]; LENGTHS_MS.len()];
    let mut cost = vec![vec![Vec::new(); AB.len()]; LENGTHS_MS.len()];
    for _ in 0..3 {
        for (l, ms) in LENGTHS_MS.iter().enumerate() {
            let selection: Vec<Mechanism> = AB.iter().map(|n| n.parse().unwrap()).collect();
            let plan = Plan {
                stats_run: false,
                budget: Duration::ZERO,
                run_time: Some(Duration::from_millis(*ms)),
                ..Plan::new(&selection, emulated())
            };
            let t = Instant::now();
            let privileged = pipeline::check_privileges(&plan).unwrap();
            let doc = pipeline::execute(&plan, &privileged, Host::current, |_| {}).unwrap();
            let secs = t.elapsed().as_secs_f64();
            for (i, name) in AB.iter().enumerate() {
                let d = doc
                    .mechanism(name)
                    .and_then(|m| m.detectable)
                    .unwrap_or(f64::NAN);
                seen[l][i].push(100.0 * d);
                cost[l][i].push(100.0 * d * secs.sqrt());
            }
            eprintln!("gate_power: runs of {ms} ms: {secs:.1} s");
        }
    }
    println!("\nHow long a timed run should be: 7 rounds a run, 3 runs at each length, interleaved (medians)\n");
    println!(
        "| run length | {} |",
        AB.map(|n| format!("{n}: sees · sees × √s")).join(" | ")
    );
    println!("|---|{}", "---|".repeat(AB.len()));
    for (l, ms) in LENGTHS_MS.iter().enumerate() {
        let cells: Vec<String> = (0..AB.len())
            .map(|i| format!("±{:.1}% · {:.1}", median(&seen[l][i]), median(&cost[l][i])))
            .collect();
        println!("| {ms} ms | {} |", cells.join(" | "));
    }
}

fn main() {
    let mut pairs = 10;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--pairs", Some(n)) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                pairs = n.parse().unwrap()
            }
            ("--only", Some(s)) if SECTIONS.contains(&s.as_str()) => only = Some(s),
            _ => {
                eprintln!("usage: gate_power [--pairs N] [--only noise|aa|ab|cv|length]  (N >= 1)");
                std::process::exit(2);
            }
        }
    }
    let want = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let host = Host::current();
    println!(
        "gate_power: kernel {}, {}, threshold {}, {pairs} pairs, default plan (at least {} rounds, budget {} s)",
        host.kernel_release,
        host.cpu_model,
        Threshold::ByTrigger.describe(),
        pipeline::DEFAULT_REPEATS,
        pipeline::DEFAULT_BUDGET.as_secs()
    );
    let started = Instant::now();
    if want("noise") {
        noise();
    }
    if want("aa") {
        aa(pairs);
    }
    if want("ab") {
        ab(pairs);
    }
    if want("cv") {
        spread();
    }
    if only.as_deref() == Some("length") {
        length();
    }
    println!(
        "\n(gate_power took {:.0} s)",
        started.elapsed().as_secs_f64()
    );
}
