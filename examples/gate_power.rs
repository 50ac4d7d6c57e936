//! The regression gate's false alarms and power, measured with real runs
//! on this machine (root needed):
//!
//!     sudo -E env "PATH=$PATH" cargo run --release --example gate_power [-- --pairs N]
//!
//! 1. **A/A**: `pairs` pairs of default runs of the same kernel (5 rounds
//!    each), the second run of the last half with a CPU hog spinning on
//!    another CPU. Every REGRESSED is a false alarm.
//! 2. **A/B**: the same mechanism made slower by real kernel work: the
//!    candidate run's program does `--prog-work k` extra rounds, with k
//!    calibrated to add 10% of the mechanism's own cost (its ns over base).
//!    Every pair the gate does not call REGRESSED is a miss. For raw_tp-loop
//!    and tp-loop (kernel loop) and uprobe-nop (call).
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
use bpf_overhead::gate::{self, Verdict, DEFAULT_THRESHOLD};

/// Thresholds the same pairs are judged at, to show the trade-off.
const THRESHOLDS: [f64; 3] = [0.05, 0.075, 0.10];
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

/// The gate's verdicts for `name` at each of THRESHOLDS, and the change.
fn verdicts(baseline: &Document, current: &Document, name: &str) -> ([Verdict; 3], f64) {
    let mut change = f64::NAN;
    let v = THRESHOLDS.map(|t| {
        let report = gate::compare(baseline, current, t);
        let c = report.find(name).expect("compared");
        change = c.change.unwrap_or(f64::NAN);
        c.verdict
    });
    (v, change)
}

/// ns of added cost per round of --prog-work for `name`: the median of
/// three pairs of runs, with enough rounds that they add about the
/// mechanism's own cost again, far above the runs' noise.
fn ns_per_work_round(name: &str) -> f64 {
    let mut cal = 16u32;
    loop {
        let estimates: Vec<f64> = (0..3)
            .map(|_| {
                let plain = overhead(&run(&[name], 0), name);
                let heavy = overhead(&run(&[name], cal), name);
                (heavy - plain) / f64::from(cal)
            })
            .collect();
        let per_round = bpf_overhead::stats::median(&estimates);
        let own = overhead(&run(&[name], 0), name);
        if per_round * f64::from(cal) >= own || cal >= 4096 {
            return per_round.max(0.01);
        }
        cal *= 4;
    }
}

/// A/B at `share` of `name`'s own cost: detections out of `pairs` at
/// each of THRESHOLDS, the work rounds used, and the median measured change.
fn ab(name: &str, share: f64, pairs: usize, per_round: f64) -> ([usize; 3], u32, f64, f64) {
    let own = overhead(&run(&[name], 0), name);
    let k = ((share * own / per_round).round() as u32).max(1);
    let mut detected = [0; 3];
    let mut changes = Vec::new();
    for _ in 0..pairs {
        let a = run(&[name], 0);
        let b = run(&[name], k);
        let (v, change) = verdicts(&a, &b, name);
        for (d, v) in detected.iter_mut().zip(v) {
            *d += usize::from(v == Verdict::Regressed);
        }
        changes.push(change);
    }
    let added = f64::from(k) * per_round;
    (
        detected,
        k,
        100.0 * added / own,
        100.0 * bpf_overhead::stats::median(&changes),
    )
}

fn main() {
    let mut pairs = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--pairs", Some(n)) if n > 0 => pairs = n,
            _ => {
                eprintln!("usage: gate_power [--pairs N]  (N >= 1)");
                std::process::exit(2);
            }
        }
    }
    let host = Host::current();
    println!(
        "gate_power: kernel {}, {}, default threshold {:.1}%, {} pairs, 5 rounds a run\n",
        host.kernel_release,
        host.cpu_model,
        DEFAULT_THRESHOLD * 100.0,
        pairs
    );

    // 1. A/A.
    let aa = ["raw_tp-loop", "tp-loop", "uprobe-nop", "raw_tp"];
    // [threshold][quiet, hog]
    let mut alarms = vec![[[0usize; 2]; 3]; aa.len()];
    let mut worst = vec![0f64; aa.len()];
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
    }
    println!("A/A: false alarms (REGRESSED) in {pairs} pairs of runs of the same kernel\n");
    println!("(quiet / with a CPU hog on another CPU, at each threshold)\n");
    println!("| mechanism | 5% | 7.5% | 10% | largest change seen |");
    println!("|---|---|---|---|---|");
    let half = pairs / 2;
    for (i, name) in aa.iter().enumerate() {
        let cells: Vec<String> = alarms[i]
            .iter()
            .map(|a| format!("{}/{} · {}/{}", a[0], half, a[1], pairs - half))
            .collect();
        println!("| {name} | {} | {:+.1}% |", cells.join(" | "), worst[i]);
    }

    // 2. A/B at 10% of the own cost.
    println!("\nA/B: the mechanism made 10% costlier by --prog-work (real work in its program)\n");
    println!("| mechanism | own cost | --prog-work | added (calibrated) | change the gate saw (median) | detected at 5% | 7.5% | 10% |");
    println!("|---|---|---|---|---|---|---|---|");
    for name in ["raw_tp-loop", "tp-loop", "uprobe-nop"] {
        let per_round = ns_per_work_round(name);
        let own = overhead(&run(&[name], 0), name);
        let (hit, k, added, seen) = ab(name, 0.10, pairs, per_round);
        println!(
            "| {name} | {own:.1} ns | {k} | +{added:.1}% | {seen:+.1}% | {}/{pairs} | {}/{pairs} | {}/{pairs} |",
            hit[0], hit[1], hit[2]
        );
    }

    // 3. The comm trigger's detection limit.
    println!(
        "\nThe comm trigger: raw_tp over a comm write made costlier by a share of its own cost\n"
    );
    println!(
        "| added | --prog-work | change the gate saw (median) | detected at 5% | 7.5% | 10% |"
    );
    println!("|---|---|---|---|---|---|");
    let per_round = ns_per_work_round("raw_tp");
    for share in [0.10, 0.25, 0.50, 1.00] {
        let (hit, k, added, seen) = ab("raw_tp", share, pairs, per_round);
        println!(
            "| +{added:.0}% | {k} | {seen:+.1}% | {}/{pairs} | {}/{pairs} | {}/{pairs} |",
            hit[0], hit[1], hit[2]
        );
    }

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
    println!("| mechanism | K events/s | CV of rate | ns over base | CV of overhead |");
    println!("|---|---|---|---|---|");
    for m in doc.mechanisms.iter().filter(|m| m.is_ok()) {
        let rate = m.k_events_per_sec.as_ref().unwrap();
        let ovh = m.overhead_ns.as_ref();
        println!(
            "| {} | {:.0} | {:.1}% | {} | {} |",
            m.name,
            rate.median,
            100.0 * rate.relative_stddev(),
            ovh.map_or("(base)".into(), |o| format!("{:+.1}", o.median)),
            ovh.map_or("".into(), |o| format!(
                "{:.1}%",
                100.0 * o.relative_stddev()
            )),
        );
    }
}
