//! The core: the catalogue of mechanisms, the triggers that fire them,
//! the measurement of one run and the facts about the host recorded with
//! it. It knows nothing of the layers above it (pipeline, document,
//! renderers, gate, command line); a test in src/lib.rs keeps it that way.

pub mod error;
mod skel;

/// How the core talks to the kernel and reads the machine: tracefs,
/// feature probes, the executable, libbpf's log, the host's facts.
pub mod kernel {
    pub mod exe;
    pub mod features;
    pub mod functions;
    pub mod host;
    pub mod libbpf_log;
    pub mod progress;
    pub mod round_trip;
    pub mod tracefs;
    pub mod tracing_multi;
    pub(super) mod verifier_log;
}

/// The CPU a run measures on, and its lock across processes.
pub mod cpu {
    pub mod cpulock;
    pub mod pin;
}

/// The mechanism model: how each kind attaches, the catalogue, the
/// triggers that fire them and the programs they load.
pub mod mechanism {
    pub mod catalogue;
    mod entry;
    pub mod kind;
    pub(super) mod program;
    pub mod syscall;
    pub mod target;
    pub mod test_run;
    pub mod trigger;
}

/// Users' objects (`--object`): their programs as mechanisms, their
/// sections, their other builds and their ring buffers.
pub mod objects {
    pub mod builds;
    pub(super) mod consumer;
    pub mod object;
    pub mod preflight;
    pub(super) mod section;
}

/// A run's settings, and what B changes of A in an in-run comparison.
pub mod settings {
    pub mod options;
    pub mod variant;
}

/// What the machine lets a run do, checked once up front.
pub mod environment {
    pub mod caps;
    pub mod support;
}

/// Running a measurement: load and attach, fire, time, count.
pub mod running {
    pub mod attach_cost;
    pub mod context;
    pub mod keeper;
    pub mod ksymbols;
    pub(super) mod load;
    pub(super) mod producer;
    pub mod run;
    pub mod speed;
    pub mod thread;
    pub mod window;
}

pub use bpf_overhead_common::bpf_consts::MAX_PROG_WORK;
pub use cpu::pin::{allowed_cpus, note_default_cpu, online_cpus, CpuPin};
pub use environment::support::{Privileged, Ready, Support};
pub use error::{Error, Result};
pub use mechanism::catalogue::{Kind, Mechanism};
pub use mechanism::target::{Site, Target};
pub use mechanism::trigger::{Driver, Trigger, MAX_BATCH};
pub use running::attach_cost::AttachCost;
pub use running::run::{
    fitted, lead_in, timed_run, timed_runs, warm_up_run, with_attached, Attached, ProducerSample,
    Sample,
};
pub use running::thread::on_measuring_thread;
pub use settings::options::{Batch, Counting, Options, ProgWork, DEFAULT_ITERATIONS};
pub use settings::variant::Variant;
