//! bpf-overhead: what it costs to attach a BPF program to a kernel or user
//! function, mechanism by mechanism — the kernel's test_overhead selftest
//! and bench rename/trigger benchmarks, in Rust with libbpf-rs.
//!
//! - [`mechanism`]: the attach mechanisms, their kernel needs, load and attach;
//! - [`trigger`]: what fires them (comm writes, uprobe target calls);
//! - [`mod@measure`]: pinning, timing and counting one run;
//! - [`report`]: the output lines;
//! - [`sys`]: privileges, tracefs and feature probes;
//! - [`bench`](mod@bench), [`stats`], [`result`], [`output`], [`gate`]: the
//!   `bpf-overhead` command's matrix runner, statistics, JSON document,
//!   renderers and regression gate.

pub mod bench;
pub mod error;
pub mod gate;
pub mod measure;
pub mod mechanism;
pub mod output;
pub mod report;
pub mod result;
pub mod stats;
pub mod sys;
pub mod trigger;

mod skel {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/overhead.skel.rs"));
}

pub use error::{Error, Result};
pub use measure::{measure, with_run, Options, Sample};
pub use mechanism::Mechanism;
pub use trigger::{Target, Trigger};
