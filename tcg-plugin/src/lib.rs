//! bpf-overhead's TCG plugin: guest instructions counted per guest
//! address, reported per window. The `bpf-overhead` command opens and
//! closes a window around each timed run with a long nop
//! (common/src/marks.rs); `cargo xtask vmtest --exact --explain`
//! loads this plugin into QEMU and names the addresses afterwards.
//!
//! Every instruction gets an inline counter (no call into the plugin per
//! instruction). Per instruction, not per block: a block left early by an
//! exception (a uprobe's int3, a page fault) would count what never ran.
//! Keyed by guest address, not by block: system emulation translates the
//! same code again and again.

use bpf_overhead_common::marks;

mod counters;
pub mod kinds;
#[cfg(not(test))]
mod plugin;

pub use counters::Counters;
