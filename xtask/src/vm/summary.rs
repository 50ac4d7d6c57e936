//! `vmtest.json`: the runner's summary of one kernel's run, written into the
//! output directory after the VM has exited; `cargo xtask ci` reads it (the
//! runner's results as data, not scraped from its output).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Its file name in the output directory.
pub const FILE: &str = "vmtest.json";
/// What the guest writes about each step (default mode): one line per step,
/// `name<TAB>exit<TAB>start<TAB>end`, the times as bash's $EPOCHREALTIME.
pub const STEPS_FILE: &str = "steps.tsv";

/// vmtest.json's contents: the runner's own record of one kernel's run
/// (not a statistical summary, the main crate's `stats::Summary`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct VmtestJson {
    /// KERNEL as given (a series, newest, a release or a path).
    pub kernel: String,
    /// The release booted.
    pub release: String,
    /// The guest's architecture: "x86_64" or "arm64" (older files: x86_64).
    #[serde(default = "x86_64")]
    pub arch: String,
    /// "kvm" or "tcg".
    pub accel: String,
    /// Getting the kernel ready: apt lists, download, unpack and check (close
    /// to 0 when cached).
    pub fetch_s: f64,
    /// Bytes downloaded for it (0 when cached).
    pub downloaded_bytes: u64,
    /// The host build of the guest's test binaries (0 for --cmd, --exec).
    pub build_s: f64,
    /// qemu start to the guest's command; none if it never got there.
    pub boot_s: Option<f64>,
    /// qemu start to qemu exit.
    pub vm_s: f64,
    /// The whole run less `fetch_s`.
    pub total_s: f64,
    /// The runner's exit status.
    pub exit: i32,
    /// Why it failed, when it did (the runner's verdict lines).
    pub why: Vec<String>,
    /// What the guest ran (default mode), in order.
    pub steps: Vec<Step>,
    /// The kernel's config as read before boot: where, its digest and the
    /// options that change costs; null when it could not be read (and in
    /// older files).
    #[serde(default)]
    pub kernel_config: Option<crate::util::kconfig::KernelConfig>,
    /// How many times the guest booted: once more after each crash.
    #[serde(default = "one")]
    pub boots: u32,
    /// The mechanisms that crashed the guest kernel, in order, each with
    /// its oops (empty in older files).
    #[serde(default)]
    pub crashed: Vec<crate::vm::crash::Crash>,
}

fn one() -> u32 {
    1
}

fn x86_64() -> String {
    "x86_64".into()
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Step {
    /// A test binary's name (overhead, cleanup) or bpf-overhead.
    pub name: String,
    pub exit: i32,
    pub secs: f64,
}

impl VmtestJson {
    /// Writes DIR/vmtest.json whole (a temporary file renamed over it).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        crate::util::write_whole(&dir.join(FILE), text.as_bytes())
    }

    pub fn load(dir: &Path) -> Result<VmtestJson> {
        let path = dir.join(FILE);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
    }
}

/// The guest's steps file; lines that do not parse are left out.
pub fn parse_steps(text: &str) -> Vec<Step> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let [name, exit, start, end] = f.as_slice() else {
                return None;
            };
            let secs = end.parse::<f64>().ok()? - start.parse::<f64>().ok()?;
            Some(Step {
                name: (*name).to_owned(),
                exit: exit.parse().ok()?,
                secs: (secs * 10.0).round() / 10.0,
            })
        })
        .collect()
}

/// Seconds, rounded to a tenth.
pub fn tenths(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_round_trip() {
        let steps = parse_steps(
            "overhead\t0\t1700000000.100000\t1700000012.449000\n\
             broken line\n\
             bpf-overhead\t1\t1700000013.0\t1700000020.04\n",
        );
        assert_eq!(
            steps,
            [
                Step {
                    name: "overhead".into(),
                    exit: 0,
                    secs: 12.3
                },
                Step {
                    name: "bpf-overhead".into(),
                    exit: 1,
                    secs: 7.0
                }
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let s = VmtestJson {
            kernel: "6.1".into(),
            release: "6.1.0-57-amd64".into(),
            boot_s: Some(3.1),
            steps,
            ..VmtestJson::default()
        };
        s.save(dir.path()).unwrap();
        assert_eq!(VmtestJson::load(dir.path()).unwrap(), s);
        assert!(VmtestJson::load(&dir.path().join("none")).is_err());
    }
}
