//! The core: the catalogue of mechanisms, the triggers that fire them and
//! the measurement of one run. It knows nothing of the layers above it
//! (pipeline, document, renderers, gate, command line); a test in
//! src/lib.rs keeps it that way.

pub mod bpf_consts;
pub mod caps;
pub mod catalogue;
pub mod context;
pub mod cpulock;
pub mod error;
pub mod keeper;
mod load;
mod producer;
pub mod run;
pub mod speed;
pub mod support;
pub mod sys;
pub mod trigger;

pub use bpf_consts::MAX_PROG_WORK;
pub use catalogue::{Kind, Mechanism};
pub use error::{Error, Result};
pub use run::{
    measure, on_measuring_thread, online_cpus, with_run, Batch, CpuPin, Options, ProducerSample,
    ProgWork, Run, Sample, DEFAULT_ITERATIONS,
};
pub use support::{Privileged, Ready, Support};
pub use trigger::{Driver, Target, Trigger, MAX_BATCH};
