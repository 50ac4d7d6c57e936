//! Counting windows for `cargo xtask vmtest --exact --explain`: each timed
//! run's events sit between two marks (marks.rs) that the TCG plugin
//! sees, and what the plugin needs to name its addresses is written
//! beside them. Off (no marks, nothing written) unless
//! [`WINDOWS_ENV`](crate::env_vars::WINDOWS_ENV) names a folder.
//!
//! The folder gets `kallsyms` (the kernel's and modules' text, once) and
//! `windows.log`: the executable mappings of this process (`map START END
//! OFFSET PATH`), then per window `window N MECHANISM EVENTS` and the
//! code the kernel made for it while attached (`sym ADDRESS NAME
//! [MODULE]`: BPF programs, trampolines, ftrace and kprobe pages), which
//! moves from one attach to the next.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::marks::{CLOSE, NOPL_DISP32, OPEN};
use crate::env_vars::WINDOWS_ENV;
use crate::measure::{Error, Mechanism, Result};

struct Windows {
    log: Mutex<(File, u64)>,
}

/// The kernel's code that is made at run time, by the module name
/// /proc/kallsyms gives it.
const MADE_AT_RUN_TIME: [&str; 3] = ["[bpf]", "[__builtin__ftrace]", "[__builtin__kprobes]"];

static WINDOWS: OnceLock<std::result::Result<Option<Windows>, String>> = OnceLock::new();

fn windows() -> Result<Option<&'static Windows>> {
    let w = WINDOWS.get_or_init(|| match std::env::var_os(WINDOWS_ENV) {
        None => Ok(None),
        Some(dir) => start(Path::new(&dir)).map(Some).map_err(|e| {
            format!(
                "{WINDOWS_ENV}={}: {e}: give a writable folder, or unset it",
                dir.to_string_lossy()
            )
        }),
    });
    w.as_ref().map(Option::as_ref).map_err(Error::failed)
}

fn start(dir: &Path) -> std::io::Result<Windows> {
    let kallsyms = fs::read_to_string("/proc/kallsyms")?;
    let text: String = kallsyms
        .lines()
        .filter(|l| matches!(l.split(' ').nth(1), Some("t" | "T" | "w" | "W")))
        .fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "{l}");
            s
        });
    fs::write(dir.join("kallsyms"), text)?;
    let mut log = File::create(dir.join("windows.log"))?;
    for m in fs::read_to_string("/proc/self/maps")?.lines() {
        let f: Vec<&str> = m.split_whitespace().collect();
        if let [range, perms, offset, _, _, path, ..] = f[..] {
            if perms.contains('x') {
                let (start, end) = range.split_once('-').unwrap_or((range, range));
                writeln!(log, "map {start} {end} {offset} {path}")?;
            }
        }
    }
    Ok(Windows {
        log: Mutex::new((log, 0)),
    })
}

macro_rules! mark {
    ($disp:expr) => {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a nop.
        unsafe {
            std::arch::asm!(
                ".byte {a}, {b}, {c}",
                ".long {d}",
                a = const NOPL_DISP32[0],
                b = const NOPL_DISP32[1],
                c = const NOPL_DISP32[2],
                d = const $disp,
                options(nomem, nostack, preserves_flags)
            )
        }
    };
}

/// Opens a window when windows are on: its number.
pub fn open() -> Result<Option<u64>> {
    let Some(w) = windows()? else { return Ok(None) };
    let n = {
        let mut log = w.log.lock().unwrap_or_else(|e| e.into_inner());
        log.1 += 1;
        log.1 - 1
    };
    mark!(OPEN);
    Ok(Some(n))
}

/// Closes the open window: right after the events, before anything else.
pub fn close(window: Option<u64>) {
    if window.is_some() {
        mark!(CLOSE);
    }
}

/// Writes what names window `n`'s addresses: read while `mechanism` is
/// still attached.
pub fn record(n: u64, mechanism: Mechanism, events: u64) -> Result<()> {
    let Some(w) = windows()? else { return Ok(()) };
    let failed = |e: std::io::Error| Error::failed(format!("{WINDOWS_ENV}: {e}"));
    let kallsyms = fs::read_to_string("/proc/kallsyms").map_err(failed)?;
    let mut text = format!("window {n} {mechanism} {events}\n");
    for l in kallsyms.lines() {
        if MADE_AT_RUN_TIME.iter().any(|m| l.ends_with(m)) {
            let _ = writeln!(text, "sym {l}");
        }
    }
    let mut log = w.log.lock().unwrap_or_else(|e| e.into_inner());
    log.0.write_all(text.as_bytes()).map_err(failed)
}
