//! What a document records of a measurement: a series of values and its
//! statistics, the conditions of the run, the cost of an attach call.

use serde::{Deserialize, Serialize};

/// What is reported for a series of values (rates, ratios, overheads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The values, in the order they were measured (one per repeat).
    pub samples: Vec<f64>,
    /// The middle value; the mean of the two middle ones for an even count.
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one value.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// `None` for no values or any non-finite one (a zero elapsed time, say):
    /// a statistic of those would be a lie.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
            return None;
        }
        Some(Self {
            samples: samples.to_vec(),
            median: median(samples),
            mean: mean(samples),
            stddev: stddev(samples),
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Stddev relative to the mean (coefficient of variation); 0 when the
    /// mean is 0.
    pub fn relative_stddev(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            (self.stddev / self.mean).abs()
        }
    }
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// Sample standard deviation (Bessel's correction); 0 for fewer than two
/// values, which have no measurable spread.
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// The conditions of a run, over its whole length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The measuring CPU.
    pub cpu: usize,
    /// Wall time covered, in s.
    pub secs: f64,
    /// Share of that CPU's time stolen by the hypervisor (/proc/stat).
    pub steal_pct: f64,
    /// Share of that CPU's time busy with anything but this process
    /// (other processes, interrupts): what else ran there.
    pub other_pct: f64,
    /// Involuntary context switches of the measuring thread: another task
    /// took the CPU from it.
    pub involuntary_switches: u64,
    /// The 1-minute load average at the start and at the end.
    pub load_start: f64,
    pub load_end: f64,
    /// The CPU's clock in MHz at the end, where readable (cpufreq, else
    /// /proc/cpuinfo).
    pub mhz: Option<f64>,
}

/// The cost of one attach call.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttachCost {
    /// Functions the link is on.
    pub functions: u64,
    /// Wall time of the attach call, in seconds.
    pub seconds: f64,
    /// How much the kernel's own allocations grew over the attach call, in
    /// KiB: unreclaimable slab, vmalloc and per-CPU memory (what a link's
    /// arrays and ftrace's hash take), give or take what else the kernel
    /// did meanwhile. Null where /proc/meminfo could not tell.
    pub memory_kib: Option<i64>,
}

/// What a probe on a function of the command's own text left at the
/// probed instruction after its runs (`site`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Site {
    /// An int3 at the probed instruction: every hit traps.
    Int3,
    /// The kernel rewrote the instruction into a call: no trap.
    Call,
    /// The instruction as built: nothing of the probe shows here.
    Untouched,
}
