//! What the `bpf-overhead` command, its build script, `cargo xtask` and the
//! TCG plugin share, in one small crate without libbpf: the result document
//! and its verdicts, a host's calibration and its mitigations, the charts'
//! palette, loads beside a measurement, the exit statuses, the environment
//! variables, the marks of a counting window, the constants the BPF program
//! shares, kernel configs, the exact rule, the safe write, and for tests the
//! import parser and cycle finder of the layer tests and the documented
//! command lines. Each reader uses these types; none re-reads their JSON by
//! hand.

pub mod background;
pub mod bpf_consts;
pub mod calibration;
pub mod document;
#[cfg(any(test, feature = "fixtures"))]
pub mod documented;
pub mod env_vars;
pub mod exact_rule;
pub mod exit_status;
pub mod import_cycle;
pub mod imports;
pub mod kconfig;
pub mod kinds;
pub mod marks;
pub mod mitigations;
pub mod palette;
pub mod safe_write;
pub mod verdict;
