//! Counting windows for `cargo xtask vmtest --exact --explain`: each timed
//! run's events sit between two marks (common/src/marks.rs) that the TCG plugin
//! sees, and what the plugin needs to name its addresses is written
//! beside them. Off (no marks, nothing written) unless
//! [`WINDOWS_ENV`](crate::env_vars::WINDOWS_ENV) names a folder.
//!
//! The folder gets `kallsyms` (the kernel's and modules' text, once) and
//! `windows.log`: the executable mappings of this process (`map START END
//! OFFSET PATH`), then per window `window N MECHANISM EVENTS` and the
//! code the kernel made for it while attached, which moves from one
//! attach to the next: all of it live (`code ADDRESS LENGTH NAME`) as
//! perf's ksymbol records tell it (ksymbols.rs). Where perf cannot tell
//! (no perf events), its programs from the kernel's program info (`prog
//! ADDRESS LENGTH NAME`) and, for a mechanism whose attach makes more
//! (trampolines, ftrace and kprobe pages), /proc/kallsyms' run-time lines
//! (`sym ADDRESS TYPE NAME [MODULE]`, about a second under TCG, so read
//! in every window only of a mechanism whose first window showed such
//! code).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::ksymbols::Ksymbols;
// The marks are x86-64 nops: elsewhere no window is marked.
use crate::env_vars::WINDOWS_ENV;
use crate::measure::online_cpus;
use crate::measure::{Error, Mechanism, Result};
use crate::safe_write;
#[cfg(target_arch = "x86_64")]
use bpf_overhead_common::marks::{CLOSE, NOPL_DISP32, OPEN};

struct Windows {
    log: Mutex<Log>,
}

struct Log {
    file: File,
    /// The next window's number.
    next: u64,
    /// Names of run-time code there before anything was attached.
    before: HashSet<String>,
    /// Per mechanism: whether its attach makes code beyond its programs.
    makes_more: HashMap<String, bool>,
    /// The run-time code, from perf, if it can tell.
    ksymbols: Option<Ksymbols>,
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
    // Before kallsyms is read: nothing made between the two is missed.
    let cpus = online_cpus().unwrap_or_default();
    let ksymbols = Ksymbols::open(&cpus)
        .map_err(|e| log::debug!("no ksymbol records from perf ({e}): kallsyms instead"))
        .ok()
        .filter(|_| !cpus.is_empty());
    let kallsyms = fs::read_to_string("/proc/kallsyms")?;
    let text: String = kallsyms
        .lines()
        .filter(|l| matches!(l.split(' ').nth(1), Some("t" | "T" | "w" | "W")))
        .fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "{l}");
            s
        });
    // Root's writes, where the variable says: as the sudo user, and not
    // through another's link.
    safe_write::write(&dir.join("kallsyms"), text).map_err(std::io::Error::other)?;
    let before = made_at_run_time(&kallsyms)
        .map(|l| name_of(l).to_owned())
        .collect();
    let mut log = safe_write::create(&dir.join("windows.log")).map_err(std::io::Error::other)?;
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
        log: Mutex::new(Log {
            file: log,
            next: 0,
            before,
            makes_more: HashMap::new(),
            ksymbols,
        }),
    })
}

/// The lines of run-time code in /proc/kallsyms' text.
fn made_at_run_time(kallsyms: &str) -> impl Iterator<Item = &str> {
    kallsyms
        .lines()
        .filter(|l| MADE_AT_RUN_TIME.iter().any(|m| l.ends_with(m)))
}

fn name_of(line: &str) -> &str {
    line.split_whitespace().nth(2).unwrap_or("")
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
        log.next += 1;
        log.next - 1
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
/// still attached. `programs` gives its JITed code (start, length,
/// name), asked for only where perf cannot tell.
pub fn record(
    n: u64,
    mechanism: Mechanism,
    events: u64,
    programs: impl FnOnce() -> Vec<(u64, u32, String)>,
) -> Result<()> {
    let Some(w) = windows()? else { return Ok(()) };
    let failed = |e: std::io::Error| Error::failed(format!("{WINDOWS_ENV}: {e}"));
    let mut log = w.log.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = format!("window {n} {mechanism} {events}\n");
    if let Some(k) = log.ksymbols.as_mut().filter(|k| k.lost == 0) {
        for (a, (len, name)) in k.live() {
            let _ = writeln!(text, "code {a:x} {len} {name}");
        }
        if k.lost == 0 {
            return log.file.write_all(text.as_bytes()).map_err(failed);
        }
    }
    for (a, len, name) in programs() {
        let _ = writeln!(text, "prog {a:x} {len} {name}");
    }
    let name = mechanism.to_string();
    if log.makes_more.get(&name) != Some(&false) {
        let kallsyms = fs::read_to_string("/proc/kallsyms").map_err(failed)?;
        let mut more = false;
        for l in made_at_run_time(&kallsyms) {
            let _ = writeln!(text, "sym {l}");
            more |= !name_of(l).starts_with("bpf_prog_") && !log.before.contains(name_of(l));
        }
        log.makes_more.entry(name).or_insert(more);
    }
    log.file.write_all(text.as_bytes()).map_err(failed)
}
