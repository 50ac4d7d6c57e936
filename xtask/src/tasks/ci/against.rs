//! CI's kernel against kernel: the exact comparison of two of its kernels,
//! one lane of the VM queue ([`crate::tasks::ci::queue`]).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::util::{run_relayed, say};

/// Kernel against kernel, answered: B's exact counts against A's.
pub const AGAINST: (&str, &str) = ("6.1", "6.12");

/// `vmtest A --exact --against B` on [`AGAINST`] into DIR/against: each
/// kernel booted in turn under QEMU's instruction clock, the command's
/// instructions per event compared by the exact rule. Its verdicts are
/// exact (the time-based duet's under TCG never were: UNSURE every time);
/// which way they go is the kernels' business, so it passes on exit 0 or
/// 1 with a compared row for each mechanism. Debian's two series differ
/// in cost-changing options, named in its output: --across-configs. With
/// --explain, so that CI proves the TCG plugin builds and loads and each
/// split adds up to its count (docs/explain.md).
/// Whether it passed.
pub fn run(out: &Path, stdout: &Mutex<()>) -> Result<bool> {
    let exe = crate::util::own_exe();
    let dir = out.join("against");
    crate::util::create_dir_all(&dir)?;
    let log = Mutex::new(crate::util::create_file(dir.join("vmtest.log"))?);
    let mut cmd = Command::new(exe);
    cmd.args(["vmtest", AGAINST.0, "--exact", "--against", AGAINST.1])
        .args(["--accel", "tcg", "--across-configs", "--explain"])
        .args(["--bench-arg=-m", "--bench-arg=raw_tp,kprobe"])
        .arg("--out")
        .arg(&dir);
    let rc = run_relayed(&mut cmd, "[against] ", &log, stdout)
        .context("starting vmtest --exact --against")?;
    let compared = fs::read_to_string(dir.join("compare.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.as_array().map(|rows| rows.len()))
        .unwrap_or(0);
    // --explain: each side's split adds up to its counts (the plugin built,
    // loaded and counted), per mechanism a KTAP test.
    let explained = ["a", "b"].iter().all(|side| {
        fs::read_to_string(dir.join(side).join("explain.ktap"))
            .is_ok_and(|k| k.contains("\nok ") && !k.contains("not ok"))
    });
    let ok = matches!(rc, 0 | 1) && compared >= 2 && explained;
    say!(
        "against: {} against {}, exact: exit {rc}, {compared} mechanisms compared, \
         explained: {}",
        AGAINST.1,
        AGAINST.0,
        if explained {
            "each split adds up"
        } else {
            "NO (see explain.ktap)"
        }
    );
    Ok(ok)
}
