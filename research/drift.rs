//! The machine's own drift: comm writes, continuous, on one CPU, for a
//! while, cut into 50 ms windows and 1 s blocks (root not needed):
//!
//!     cargo run --release --example drift -- [SECONDS] [CPU]
//!
//! Prints one line of JSON: the CV (stddev / mean) of the windows' rates,
//! of the blocks', and of each window against its neighbour (the ratio of
//! adjacent windows), which is what pairing close in time leaves. Every
//! figure of the comparison experiments (scripts/compare-power) is stated
//! next to this one, measured over the same span just before it.

use std::io::Write;
use std::time::{Duration, Instant};

use bpf_overhead::measure::CpuPin;
use bpf_overhead::stats::{mean, median, stddev};

const WINDOW: Duration = Duration::from_millis(50);

fn cv(v: &[f64]) -> f64 {
    100.0 * stddev(v) / mean(v).abs()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().map_or(45.0, |s| {
        s.parse().unwrap_or_else(|_| {
            eprintln!("drift: SECONDS must be a number, got {s:?}");
            std::process::exit(2)
        })
    });
    let cpu: usize = args.next().map_or(0, |s| {
        s.parse().unwrap_or_else(|_| {
            eprintln!("drift: CPU must be a CPU number, got {s:?}");
            std::process::exit(2)
        })
    });
    // Its own thread, with a file table of its own, as the tool's
    // measuring thread: the name written is this thread's.
    let windows = std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES).expect("unshare(CLONE_FILES)");
        let _pin = CpuPin::new(Some(cpu)).unwrap_or_else(|e| {
            eprintln!("drift: cannot pin to CPU {cpu}: {e}");
            std::process::exit(2)
        });
        let mut comm = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/thread-self/comm")
            .expect("open /proc/thread-self/comm");
        let begin = Instant::now();
        let end = begin + Duration::from_secs_f64(secs);
        // (second it started in, writes, its length in s)
        let mut windows = Vec::new();
        while Instant::now() < end {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < WINDOW {
                for _ in 0..64 {
                    comm.write_all(b"drift").expect("write comm");
                }
                n += 64;
            }
            let second = start.duration_since(begin).as_secs();
            windows.push((second, n as f64, start.elapsed().as_secs_f64()));
        }
        windows
    })
    .join()
    .expect("the writing thread");
    // 1 s blocks of wall time, whatever the windows took (a preempted
    // window lasts longer than 50 ms).
    let mut blocks: Vec<(f64, f64)> = Vec::new();
    for &(second, n, len) in &windows {
        let i = second as usize;
        if blocks.len() <= i {
            blocks.resize(i + 1, (0.0, 0.0));
        }
        blocks[i].0 += n;
        blocks[i].1 += len;
    }
    let blocks: Vec<f64> = blocks
        .iter()
        .filter(|(_, len)| *len > 0.0)
        .map(|(n, len)| n / len / 1e3)
        .collect();
    let windows: Vec<f64> = windows.iter().map(|(_, n, len)| n / len / 1e3).collect();
    let neighbours: Vec<f64> = windows.windows(2).map(|w| w[1] / w[0]).collect();
    let lo = windows.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = windows.iter().copied().fold(0.0, f64::max);
    println!(
        "{{\"secs\": {secs}, \"cpu\": {cpu}, \"windows\": {}, \"median_k_per_s\": {:.0}, \"min_k_per_s\": {lo:.0}, \"max_k_per_s\": {hi:.0}, \"cv_50ms_pct\": {:.1}, \"cv_1s_pct\": {:.1}, \"cv_neighbour_pct\": {:.1}}}",
        windows.len(),
        median(&windows),
        cv(&windows),
        cv(&blocks),
        cv(&neighbours)
    );
}
