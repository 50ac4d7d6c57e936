//! What the power experiments (gate_power, compare_power) share: a
//! load on the other CPU, and verdict counts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bpf_overhead::gate::Verdict;
use bpf_overhead::measure::{online_cpus, CpuPin};

/// A loop on a CPU other than the measuring one, while it lives.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    pub fn start(work: fn()) -> Self {
        let cpu = online_cpus()
            .unwrap()
            .into_iter()
            .find(|&c| c != 0)
            .unwrap_or(0);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let _pin = CpuPin::new(Some(cpu)).unwrap();
            while !flag.load(Ordering::Relaxed) {
                work();
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A busy loop on the other CPU: the CPU hog.
pub fn hog() -> Spinner {
    Spinner::start(|| {
        let mut x = 0u64;
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    })
}

/// Verdict counts: [regressed, unsure, ok, improved].
pub fn tally(counts: &mut [usize; 4], v: Verdict) {
    let i = match v {
        Verdict::Regressed | Verdict::Missing => 0,
        Verdict::Inconclusive => 1,
        Verdict::Improved => 3,
        _ => 2,
    };
    counts[i] += 1;
}
