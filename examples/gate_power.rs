//! The regression gate's false alarms and power, measured with real runs
//! on this machine (root needed):
//!
//!     sudo -E env "PATH=$PATH" cargo run --release --example gate_power [-- --pairs N]
//!
//! 1. **A/A**: `pairs` pairs of default runs of the same kernel (7 rounds
//!    each), the second run of the last half with a CPU hog spinning on
//!    another CPU. Every REGRESSED is a false alarm. Then every ordered
//!    pair of those 2 x `pairs` runs, as baseline and candidate: many more
//!    comparisons from the same runs. Both at equal machine speed (the
//!    gate's rule) and in ns as measured (the gate without the speed
//!    reference), to show what the reference buys.
//! 2. **A/B**: the same mechanism made slower by real kernel work: the
//!    candidate run's program does `--prog-work k` extra steps, with k
//!    chosen to add about 10% of the mechanism's own cost (its ns over
//!    base) from the ns a step costs (measured on raw_tp-loop, the same
//!    work in every program). What k really adds is measured apart, over
//!    interleaved runs.
//!    Every pair the gate does not call REGRESSED is a miss. For
//!    raw_tp-loop and tp-loop (kernel loop) and uprobe-nop (call).
//! 3. **The comm trigger**: the same for raw_tp over a comm write, at 10%,
//!    25%, 50% and 100% of its own cost: the smallest change it catches.
//! 4. The spread of each mechanism over 7 rounds of one run (CV).
//!
//! Prints markdown tables; the README's come from here. It uses the same
//! pipeline and gate as the command.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bpf_overhead::document::{Document, Host};
use bpf_overhead::gate::{self, Threshold, Verdict};

/// What `--only` can pick: A/A, A/B, the comm trigger, the spread.
const SECTIONS: [&str; 4] = ["aa", "ab", "comm", "cv"];

/// Thresholds the same pairs are judged at, to show the trade-off.
const THRESHOLDS: [f64; 5] = [0.05, 0.06, 0.075, 0.10, 0.15];
use bpf_overhead::measure::{online_cpus, ProgWork};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::Mechanism;

fn plan(names: &[&str], prog_work: u32) -> Plan {
    let selection: Vec<Mechanism> = names.iter().map(|n| n.parse().unwrap()).collect();
    Plan {
        stats_run: false,
        prog_work: ProgWork::new(prog_work).expect("a valid --prog-work"),
        ..Plan::new(&selection)
    }
}

fn run(names: &[&str], prog_work: u32) -> Document {
    // A run whose mechanism failed (a disturbed exact count, say) is
    // retried, twice at most, and its reason shown.
    for attempt in 1..=3 {
        let doc =
            pipeline::execute(&plan(names, prog_work), Host::current, |_| {}).unwrap_or_else(|e| {
                eprintln!("gate_power: {e}");
                std::process::exit(1)
            });
        match doc.mechanisms.iter().find(|m| !m.is_ok()) {
            None => return doc,
            Some(m) if attempt < 3 => eprintln!("gate_power: retrying: {}: {:?}", m.name, m.reason),
            Some(m) => {
                eprintln!("gate_power: {}: {:?}", m.name, m.reason);
                std::process::exit(1)
            }
        }
    }
    unreachable!()
}

fn overhead(doc: &Document, name: &str) -> f64 {
    doc.mechanism(name)
        .and_then(|m| m.overhead_ns.as_ref())
        .unwrap_or_else(|| panic!("{name} was not measured: is it supported here?"))
        .median
}

/// A busy loop on a CPU other than the measuring one, while it lives.
struct Hog {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start() -> Self {
        let cpu = online_cpus()
            .unwrap()
            .into_iter()
            .find(|&c| c != 0)
            .unwrap_or(0);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut set = nix::sched::CpuSet::new();
            set.set(cpu).unwrap();
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
            let mut x = 0u64;
            while !flag.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `doc` as an older bpf-overhead wrote it: no speed reference, so the
/// gate compares ns as measured.
fn without_speed(doc: &Document) -> Document {
    let mut doc = doc.clone();
    for m in &mut doc.mechanisms {
        m.speed_ns = None;
        m.overhead_steps = None;
    }
    doc
}

/// Table headings for THRESHOLDS: `5% | 6% | ...`, the first prefixed.
fn columns(first: &str) -> String {
    THRESHOLDS
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{}{}%", if i == 0 { first } else { "" }, t * 100.0))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Counts per threshold, `n` or `n/of`.
fn cells(counts: &[usize], of: Option<usize>) -> String {
    counts
        .iter()
        .map(|c| of.map_or(c.to_string(), |of| format!("{c}/{of}")))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The gate's verdicts for `name` at each of THRESHOLDS, and the change.
fn verdicts(baseline: &Document, current: &Document, name: &str) -> ([Verdict; 5], f64) {
    let mut change = f64::NAN;
    let v = THRESHOLDS.map(|t| {
        let report = gate::compare(baseline, current, Threshold::Fixed(t));
        let c = report.find(name).expect("compared");
        change = c.change.unwrap_or(f64::NAN);
        c.verdict
    });
    (v, change)
}

/// The overhead in speed-reference steps (what the gate compares).
fn steps(doc: &Document, name: &str) -> f64 {
    doc.mechanism(name)
        .and_then(|m| m.overhead_steps.as_ref())
        .unwrap_or_else(|| panic!("{name} was not measured: is it supported here?"))
        .median
}

/// What `--prog-work k` adds to `name`, as a share of its own cost: the
/// median of `n` interleaved pairs of runs.
fn added_share(name: &str, k: u32, n: usize) -> f64 {
    let shares: Vec<f64> = (0..n)
        .map(|_| {
            let plain = steps(&run(&[name], 0), name);
            let heavy = steps(&run(&[name], k), name);
            heavy / plain - 1.0
        })
        .collect();
    bpf_overhead::stats::median(&shares)
}

/// ns that one --prog-work step adds, the same in every program: the
/// slope from a heavy setting (+400 steps, several times raw_tp-loop's own
/// cost) over 3 interleaved pairs, on the steadiest mechanism.
fn ns_per_step() -> f64 {
    let (name, big) = ("raw_tp-loop", 400);
    let slopes: Vec<f64> = (0..3)
        .map(|_| {
            let plain = overhead(&run(&[name], 0), name);
            let heavy = overhead(&run(&[name], big), name);
            (heavy - plain) / f64::from(big)
        })
        .collect();
    bpf_overhead::stats::median(&slopes)
}

/// `name`'s own cost in ns: the median of 3 runs.
fn own_cost(name: &str) -> f64 {
    let runs: Vec<f64> = (0..3).map(|_| overhead(&run(&[name], 0), name)).collect();
    bpf_overhead::stats::median(&runs)
}

/// A/B at `share` of `name`'s own cost (`own` ns; `step` ns a work step):
/// detections out of `pairs` at each of THRESHOLDS, the work steps used,
/// what they add (measured apart, over 5 more pairs) and the median change
/// the gate saw.
fn ab(
    name: &str,
    own: f64,
    step: f64,
    share: f64,
    pairs: usize,
    correct: bool,
) -> ([usize; 5], u32, f64, f64) {
    // The first step also pays for the branch and the store around the
    // loop: check what k adds, and correct k by the difference once (not
    // on the comm trigger, whose noise would decide the correction).
    let mut k = ((share * own / step).round() as u32).clamp(1, 10_000);
    if correct {
        let got = added_share(name, k, 3);
        k = ((f64::from(k) + (share - got) * own / step).round() as u32).clamp(1, 10_000);
    }
    let mut detected = [0; 5];
    let mut changes = Vec::new();
    for _ in 0..pairs {
        let a = run(&[name], 0);
        let b = run(&[name], k);
        let (v, change) = verdicts(&a, &b, name);
        for (d, v) in detected.iter_mut().zip(v) {
            *d += usize::from(v == Verdict::Regressed);
        }
        let p = gate::compare(&a, &b, Threshold::ByTrigger)
            .find(name)
            .and_then(|c| c.p_value);
        eprintln!(
            "gate_power: A/B {name} --prog-work {k}: {:+.1}%, p={p:.3?}, retaken {}+{}",
            100.0 * change,
            a.retaken_runs,
            b.retaken_runs
        );
        changes.push(change);
    }
    (
        detected,
        k,
        100.0 * added_share(name, k, 5),
        100.0 * bpf_overhead::stats::median(&changes),
    )
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
                eprintln!("usage: gate_power [--pairs N] [--only aa|ab|comm|cv]  (N >= 1)");
                std::process::exit(2);
            }
        }
    }
    let want = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let host = Host::current();
    println!(
        "gate_power: kernel {}, {}, default threshold {}, {} pairs, {} rounds a run\n",
        host.kernel_release,
        host.cpu_model,
        Threshold::ByTrigger.describe(),
        pairs,
        pipeline::DEFAULT_REPEATS
    );

    if want("aa") {
        // 1. A/A.
        let aa = ["raw_tp-loop", "tp-loop", "uprobe-nop", "raw_tp"];
        // [threshold][quiet, hog]
        let mut alarms = vec![[[0usize; 2]; 5]; aa.len()];
        let mut worst = vec![0f64; aa.len()];
        let mut all_runs = Vec::new();
        for pair in 0..pairs {
            let hog = pair >= pairs / 2;
            let a = run(&aa, 0);
            let b = {
                let _hog = hog.then(Hog::start);
                run(&aa, 0)
            };
            for (i, name) in aa.iter().enumerate() {
                let (v, change) = verdicts(&a, &b, name);
                for (t, v) in v.iter().enumerate() {
                    alarms[i][t][usize::from(hog)] += usize::from(v.is_regression());
                }
                worst[i] = worst[i].max(change * 100.0);
            }
            all_runs.push(a);
            all_runs.push(b);
        }
        let retaken: u64 = all_runs.iter().map(|d| d.retaken_runs).sum();
        println!("A/A: false alarms (REGRESSED) in {pairs} pairs of runs of the same kernel\n");
        println!("(quiet / with a CPU hog on another CPU, at each threshold)\n");
        println!("| mechanism | {} | largest change seen |", columns(""));
        println!("|---|{}---|", "---|".repeat(THRESHOLDS.len()));
        let half = pairs / 2;
        for (i, name) in aa.iter().enumerate() {
            let cells: Vec<String> = alarms[i]
                .iter()
                .map(|a| format!("{}/{} · {}/{}", a[0], half, a[1], pairs - half))
                .collect();
            println!("| {name} | {} | {:+.1}% |", cells.join(" | "), worst[i]);
        }
        println!(
        "\nTimed runs measured again because the machine slowed down: {retaken}, in {} default runs.",
        all_runs.len()
    );

        let n = all_runs.len();
        println!(
        "\nA/A over every ordered pair of those {n} runs ({} comparisons a mechanism): false alarms\n",
        n * (n - 1)
    );
        println!(
            "| mechanism | compared | {} | largest change seen |",
            columns("")
        );
        println!("|---|---|{}---|", "---|".repeat(THRESHOLDS.len()));
        let raw: Vec<Document> = all_runs.iter().map(without_speed).collect();
        for name in aa {
            for (how, runs) in [("at equal speed", &all_runs), ("ns as measured", &raw)] {
                let mut fa = [0usize; 5];
                let mut worst = f64::MIN;
                for (i, a) in runs.iter().enumerate() {
                    for (j, b) in runs.iter().enumerate() {
                        if i == j {
                            continue;
                        }
                        let (v, change) = verdicts(a, b, name);
                        for (f, v) in fa.iter_mut().zip(v) {
                            *f += usize::from(v.is_regression());
                        }
                        worst = worst.max(change * 100.0);
                    }
                }
                println!("| {name} | {how} | {} | {worst:+.1}% |", cells(&fa, None));
            }
        }
    }
    let step = if want("ab") || want("comm") {
        ns_per_step()
    } else {
        0.0
    };
    if want("ab") {
        // 2. A/B at 10% of the own cost.
        println!(
            "\nA/B: the mechanism made 10% costlier by --prog-work (real work in its program)\n"
        );
        println!("One --prog-work step: {step:.2} ns (raw_tp-loop, +400 steps, 3 pairs).\n");
        println!(
        "| mechanism | own cost | --prog-work | added (measured apart) | change the gate saw (median) | {} |",
        columns("detected at ")
    );
        println!("|---|---|---|---|---|{}", "---|".repeat(THRESHOLDS.len()));
        for name in ["raw_tp-loop", "tp-loop", "uprobe-nop"] {
            let own = own_cost(name);
            let (hit, k, added, seen) = ab(name, own, step, 0.10, pairs, true);
            println!(
                "| {name} | {own:.1} ns | {k} | +{added:.1}% | {seen:+.1}% | {} |",
                cells(&hit, Some(pairs))
            );
        }
    }
    if want("comm") {
        // 3. The comm trigger's detection limit.
        let own = own_cost("raw_tp");
        println!(
        "\nThe comm trigger: raw_tp over a comm write made costlier by a share of its own cost ({own:.1} ns)\n"
    );
        println!(
        "| added (k steps) | --prog-work k | measured apart | change the gate saw (median) | {} |",
        columns("detected at ")
    );
        println!("|---|---|---|---|{}", "---|".repeat(THRESHOLDS.len()));
        for share in [0.10, 0.25, 0.50, 1.00] {
            let (hit, k, added, seen) = ab("raw_tp", own, step, share, pairs, false);
            println!(
                "| +{:.0}% | {k} | {added:+.0}% | {seen:+.1}% | {} |",
                100.0 * f64::from(k) * step / own,
                cells(&hit, Some(pairs))
            );
        }
    }
    if want("cv") {
        // 4. CV over 7 rounds.
        let names: Vec<&str> = ["raw_tp", "tp", "tp_btf", "uprobe-nop", "uretprobe-nop"]
            .into_iter()
            .chain(["raw_tp-loop", "tp-loop", "tp_btf-loop"])
            .collect();
        let doc = pipeline::execute(
            &Plan {
                repeats: NonZeroUsize::new(7).unwrap(),
                ..plan(&names, 0)
            },
            Host::current,
            |_| {},
        )
        .unwrap();
        println!("\nSpread over 7 rounds of one run (CV: sample stddev / mean)\n");
        println!("| mechanism | K events/s | CV of rate | ns over base | CV of overhead | CV at equal speed |");
        println!("|---|---|---|---|---|---|");
        for m in doc.mechanisms.iter().filter(|m| m.is_ok()) {
            let rate = m.k_events_per_sec.as_ref().unwrap();
            let ovh = m.overhead_ns.as_ref();
            let cv = |s: Option<&bpf_overhead::stats::Summary>| {
                s.map_or("".into(), |o| {
                    format!("{:.1}%", 100.0 * o.relative_stddev())
                })
            };
            println!(
                "| {} | {:.0} | {:.1}% | {} | {} | {} |",
                m.name,
                rate.median,
                100.0 * rate.relative_stddev(),
                ovh.map_or("(base)".into(), |o| format!("{:+.1}", o.median)),
                cv(ovh),
                cv(m.overhead_steps.as_ref()),
            );
        }
    }
}
