//! vmtest's progress marker. With [`PROGRESS_ENV`] naming a file (a file
//! in vmtest's output share, which reaches the host before `write(2)`
//! returns), each mechanism's name is appended to it before the mechanism
//! is set up: when the guest kernel crashes, the file's last line names the
//! mechanism that crashed it.
//!
//! The fault vmtest's own test injects: a guest booted with
//! `vmtest.crash_at=NAME` on its kernel command line crashes its kernel
//! (sysrq `c`) when NAME starts. Only a kernel booted so, and only with the
//! marker file set, ever does.

use std::fs::{self, OpenOptions};
use std::io::Write;

use crate::env_vars::PROGRESS_ENV;

/// The kernel command-line word that makes [`starting`] crash the kernel.
pub const CRASH_AT: &str = "vmtest.crash_at=";

/// Marks the mechanism named `mechanism` as starting, when
/// [`PROGRESS_ENV`] names a file; a marker that cannot be written is said
/// on stderr and the run goes on.
pub fn starting(mechanism: &str) {
    let Some(path) = std::env::var_os(PROGRESS_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let line = format!("{mechanism}\n");
    let written = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()));
    if let Err(e) = written {
        eprintln!("{PROGRESS_ENV}={}: {e}", path.to_string_lossy());
    }
    let cmdline = fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if crash_asked(&cmdline, mechanism) {
        eprintln!("{CRASH_AT}{mechanism}: crashing the kernel, as asked");
        let _ = fs::write("/proc/sysrq-trigger", "c");
    }
}

/// Whether `cmdline` asks for a crash when `name` starts.
fn crash_asked(cmdline: &str, name: &str) -> bool {
    cmdline
        .split_whitespace()
        .any(|w| w.strip_prefix(CRASH_AT) == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_mechanism_crashes() {
        let c = "console=ttyS0 vmtest.rundir=/tmp/x vmtest.crash_at=kprobe nokaslr";
        assert!(crash_asked(c, "kprobe"));
        assert!(!crash_asked(c, "kprobe.multi"));
        assert!(!crash_asked("console=ttyS0 crash_at=kprobe", "kprobe"));
        assert!(!crash_asked("", "kprobe"));
    }
}
