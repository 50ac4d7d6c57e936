//! The suite's machine-readable results. `cargo test` reports a skip as a
//! pass (`test fentry ... ok`) and stable libtest has no JSON, so with
//! `BPF_OVERHEAD_KTAP=FILE` each mechanism's test appends its KTAP result
//! to FILE: `ok N name`, `ok N name # SKIP reason` or `not ok N name`,
//! after `#` diagnostic lines (its selftest and detail lines, or why it
//! failed), `name` the mechanism's (`uprobe-nop`, as `-m` takes it).
//!
//! The first test to write starts the document: `KTAP version 1` and the
//! plan, one test per catalogue entry. A run that stops early (a crash, a
//! filter, a test that panicked before writing) leaves fewer results than
//! the plan, and every KTAP parser then fails the file: that is the check
//! that it is complete. Start each run with no file (or an empty one).
//!
//! Tests run one at a time (`#[serial]`), but appending takes an exclusive
//! `flock` on the file anyway, numbers the result after the ones already
//! there, and writes the test's lines with one `write(2)` on an `O_APPEND`
//! descriptor: two processes sharing a file cannot interleave or reuse a
//! number.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use bpf_overhead::env_vars::PROGRESS_ENV;
use bpf_overhead::measure::kernel::host::kernel_release;
use bpf_overhead::render::{self, KtapResult};
use bpf_overhead::Mechanism;

use super::Failure;

pub use bpf_overhead::env_vars::KTAP_ENV;

/// Appends `name`'s result to the file [`KTAP_ENV`] names, if it names
/// one. Failing to write fails the test: CI asked for that file.
pub fn record(name: &str, result: KtapResult, diagnostics: &[String]) -> Result<(), Failure> {
    let Some(path) = std::env::var_os(KTAP_ENV).filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let path = Path::new(&path);
    append(
        path,
        Mechanism::all().count(),
        &header(),
        name,
        result,
        diagnostics,
    )
    .map(|_| ())
    .map_err(|e| {
        Failure(format!(
            "{name}: cannot append its KTAP result to {KTAP_ENV}={}: {e}",
            path.display()
        ))
    })
}

fn header() -> String {
    format!(
        "bpf-overhead suite (tests/overhead.rs): kernel {} on {}, one test per mechanism",
        kernel_release(),
        std::env::consts::ARCH
    )
}

/// Under vmtest ([`PROGRESS_ENV`] and [`KTAP_ENV`] set), whether the KTAP
/// file already has `name`'s result: an earlier boot ran it (vmtest writes
/// a `not ok` for the one that crashed its kernel). Otherwise the file is
/// started, so that the `not ok` vmtest may append follows its header.
pub fn resumed(name: &str) -> Result<bool, Failure> {
    let (Some(_), Some(path)) = (
        std::env::var_os(PROGRESS_ENV).filter(|p| !p.is_empty()),
        std::env::var_os(KTAP_ENV).filter(|p| !p.is_empty()),
    ) else {
        return Ok(false);
    };
    let path = Path::new(&path);
    begin(path, Mechanism::all().count(), &header())
        .map(|text| has_result(&text, name))
        .map_err(|e| Failure(format!("{name}: {KTAP_ENV}={}: {e}", path.display())))
}

/// Whether the KTAP `text` has a result named `name`.
pub fn has_result(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let rest = l.strip_prefix("not ok ").or_else(|| l.strip_prefix("ok "));
        rest.and_then(|r| r.split_once(' '))
            .map(|(_, n)| n.split(" # ").next() == Some(name))
            .unwrap_or(false)
    })
}

/// Opens the KTAP document at `path`, writing its version line, plan and
/// `header` when it is empty; returns what it held before.
pub fn begin(path: &Path, plan: usize, header: &str) -> io::Result<String> {
    let mut file = locked(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    if text.is_empty() {
        let start = format!(
            "{}{}\n",
            render::ktap_header(plan),
            render::ktap_diagnostic(header)
        );
        file.write_all(start.as_bytes())?;
    }
    Ok(text)
}

/// `path` opened to append, created if need be, under an exclusive
/// `flock` held until it closes.
fn locked(path: &Path) -> io::Result<std::fs::File> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Appends one test's result to the KTAP document at `path`, which plans
/// `plan` tests; an empty or missing file gets the version line, the plan
/// and `header` first. Returns the test's number.
pub fn append(
    path: &Path,
    plan: usize,
    header: &str,
    name: &str,
    result: KtapResult,
    diagnostics: &[String],
) -> io::Result<usize> {
    let mut file = locked(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let done = text
        .lines()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "))
        .count();
    let n = done + 1;
    let mut lines = String::new();
    if text.is_empty() {
        lines.push_str(&render::ktap_header(plan));
        lines.push_str(&render::ktap_diagnostic(header));
        lines.push('\n');
    }
    for d in diagnostics {
        lines.push_str(&render::ktap_diagnostic(d));
        lines.push('\n');
    }
    lines.push_str(&render::ktap_result(n, name, result));
    lines.push('\n');
    let written = file.write(lines.as_bytes())?;
    if written != lines.len() {
        return Err(io::Error::other(format!(
            "wrote {written} of {} bytes",
            lines.len()
        )));
    }
    Ok(n)
}
