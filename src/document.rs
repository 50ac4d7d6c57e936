//! The result of a benchmark run as one versioned document: what `--format
//! json` prints, what `--save` writes and what `--baseline` reads back.
//! docs/json-schema.md documents the schema; bump [`SCHEMA_VERSION`] on any change
//! that an older reader would misread (renamed, removed or re-meant fields).

use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Value of the document's `schema` field.
pub const SCHEMA: &str = "bpf-overhead-result";
/// Value of the document's `schema_version` field.
pub const SCHEMA_VERSION: u32 = 1;

/// How the runs of different mechanisms were ordered (the `order` field).
pub const ORDER_ROUND_ROBIN: &str = "round-robin";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`SCHEMA_VERSION`] when written by this version.
    pub schema_version: u32,
    /// The bpf-overhead version that wrote it.
    pub tool_version: String,
    /// When the run ended, RFC 3339 in UTC (`2026-05-01T12:00:00Z`).
    pub timestamp: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// The CPU's model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// The CPU every run was pinned to.
    pub cpu: usize,
    /// The emulator in use (`tcg`), or null on real or virtualised hardware.
    pub emulated: Option<String>,
    /// Events per run.
    pub iterations: u64,
    /// Timed runs per mechanism.
    pub repeats: usize,
    /// Untimed runs per mechanism before the timed ones.
    pub warmup_runs: usize,
    /// How runs were ordered: [`ORDER_ROUND_ROBIN`].
    pub order: String,
    /// Whether the extra run with BPF run-time stats was asked for.
    pub prog_stats: bool,
    /// Loop iterations per driver run for the kernel-loop trigger
    /// (`--batch`). Absent from results written before it existed: 100.
    #[serde(default = "default_batch")]
    pub batch: u32,
    /// Extra work rounds every program did per hit (`--prog-work`).
    #[serde(default)]
    pub prog_work: u32,
    /// Producers firing at once, each on its own CPU (`--producers`).
    #[serde(default = "one")]
    pub producers: usize,
    /// Every mechanism measured or skipped, bases included, each base before
    /// the mechanisms it is the reference for.
    pub mechanisms: Vec<MechanismResult>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured: the figures are set.
    Ok,
    /// This kernel lacks what the mechanism needs (`reason` says what).
    Skipped,
    /// Should have worked and did not (`reason` says why). The run exits 1.
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MechanismResult {
    /// `base`, `raw_tp`, `uprobe-nop`... as given to `-m`.
    pub name: String,
    /// The base this one is compared to (its own name for a base).
    pub base: String,
    /// First word of the selftest line: `task_rename` or `uprobe_target`.
    pub trigger: String,
    /// Where it attaches.
    pub hook: String,
    /// Events each run fired: `iterations`, scaled by the trigger (a call
    /// base fires 100x, the kernel loop 10x, rounded up to whole batches).
    /// 0 in results written before it existed.
    #[serde(default)]
    pub events_per_run: u64,
    pub status: Status,
    /// Why it was skipped or failed; null when ok.
    pub reason: Option<String>,
    /// Rate of each timed run in thousands of events per second, and its
    /// statistics. Null unless ok.
    pub k_events_per_sec: Option<Summary>,
    /// Median time per event in ns. Null unless ok.
    pub ns_per_event: Option<f64>,
    /// Per repeat, ns/event minus the base's ns/event in the same repeat.
    /// Null for a base or unless ok.
    pub overhead_ns: Option<Summary>,
    /// Per repeat, this rate divided by the base's rate in the same repeat
    /// (1 = free, 0.5 = half the base's rate). What the regression gate
    /// compares. Null for a base or unless ok.
    pub ratio_to_base: Option<Summary>,
    /// Hits the BPF program counted from our thread in each timed run
    /// (always `iterations` when ok). Null for a base.
    pub hits: Option<Vec<u64>>,
    /// The program's own run time per run, `run_time_ns / run_cnt` from
    /// the kernel's BPF stats in one extra run. Null for a base, when not
    /// ok, or when stats were unavailable or not asked for.
    pub prog_ns_per_event: Option<f64>,
    /// With several producers: each one's rate and hits. Null otherwise.
    #[serde(default)]
    pub producers: Option<Vec<ProducerResult>>,
    /// With several producers: per round, the total rate over one
    /// producer's rate in the same round. Null otherwise.
    #[serde(default)]
    pub scaling: Option<Summary>,
}

/// One producer of a multi-producer run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProducerResult {
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Its own rate in each round.
    pub k_events_per_sec: Summary,
    /// The hits its program counted in each round (its events, else the
    /// run failed).
    pub hits: Vec<u64>,
}

fn one() -> usize {
    1
}

fn default_batch() -> u32 {
    100
}

impl MechanismResult {
    pub fn is_base(&self) -> bool {
        self.name == self.base
    }

    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }
}

impl Document {
    pub fn mechanism(&self, name: &str) -> Option<&MechanismResult> {
        self.mechanisms.iter().find(|m| m.name == name)
    }

    pub fn mechanism_mut(&mut self, name: &str) -> Option<&mut MechanismResult> {
        self.mechanisms.iter_mut().find(|m| m.name == name)
    }

    /// Whether every mechanism of the run, bases aside, was skipped (and
    /// there was at least one): nothing it was asked to measure could be
    /// measured on this kernel. `--format ktap` then exits with
    /// kselftest's KSFT_SKIP (4). A run of bases alone skipped nothing.
    pub fn all_skipped(&self) -> bool {
        let mut mechanisms = self.mechanisms.iter().filter(|m| !m.is_base()).peekable();
        mechanisms.peek().is_some()
            && mechanisms.all(|m| m.status == Status::Skipped)
            && self.mechanisms.iter().all(|m| m.status != Status::Failed)
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a Document always serializes");
        text.push('\n');
        text
    }

    /// Parses a document, refusing anything that is not a bpf-overhead
    /// result of this schema version, with a message saying which.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => {
                return Err(format!(
                    "not a bpf-overhead result: its schema is \"{other}\", not \"{SCHEMA}\""
                ))
            }
            None => {
                return Err(format!(
                    "not a bpf-overhead result: no \"schema\": \"{SCHEMA}\" field"
                ))
            }
        }
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "schema version {v}, but this bpf-overhead reads version {SCHEMA_VERSION}: \
                     save a new baseline with this version"
                ))
            }
            None => return Err("no numeric \"schema_version\" field".into()),
        }
        serde_json::from_value(value)
            .map_err(|e| format!("does not match schema version {SCHEMA_VERSION}: {e}"))
    }

    /// Reads a saved result (a `--baseline` file).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        Self::from_json(&text).map_err(|e| format!("baseline {}: {e}", path.display()))
    }

    /// Writes the result for later use (`--save`).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        fs::write(path, self.to_json())
            .map_err(|e| format!("cannot write result to {}: {e}", path.display()))
    }
}

/// Facts about the machine recorded with a result.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub kernel_release: String,
    pub cpu_model: String,
    pub timestamp: String,
    pub emulated: Option<String>,
}

impl Host {
    pub fn current() -> Self {
        Self {
            kernel_release: kernel_release(),
            cpu_model: cpu_model(),
            timestamp: rfc3339_utc(SystemTime::now()),
            emulated: emulated(),
        }
    }
}

/// Environment variable set by scripts/vmtest to the emulator in use
/// (`tcg`): rates measured there are not performance figures.
pub const EMULATED_ENV: &str = "BPF_OVERHEAD_EMULATED";

/// `Some("tcg")` when running under an emulator (see [`EMULATED_ENV`]).
fn emulated() -> Option<String> {
    std::env::var(EMULATED_ENV)
        .ok()
        .filter(|v| !v.is_empty() && v != "0")
}

pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The first "model name" of /proc/cpuinfo (x86); "unknown" without one.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == "model name").then(|| value.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into())
}

/// `2026-05-01T12:00:00Z`, without pulling in a date crate.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's
/// civil_from_days.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// A small document with fixed numbers, for the renderers and the gate.
    pub(crate) fn document() -> Document {
        let ok = |name: &str, base: &str, rate: &[f64], ratio: Option<&[f64]>| MechanismResult {
            name: name.into(),
            base: base.into(),
            trigger: "task_rename".into(),
            hook: "task/task_rename".into(),
            events_per_run: 100_000,
            status: Status::Ok,
            reason: None,
            k_events_per_sec: Summary::of(rate),
            ns_per_event: Some(1e6 / crate::stats::median(rate)),
            overhead_ns: ratio.map(|_| Summary::of(&[100.0, 110.0, 90.0]).unwrap()),
            ratio_to_base: ratio.and_then(Summary::of),
            hits: ratio.map(|_| vec![100_000; 3]),
            prog_ns_per_event: ratio.map(|_| 20.5),
            producers: None,
            scaling: None,
        };
        Document {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            tool_version: "0.1.0".into(),
            timestamp: "2026-05-01T12:00:00Z".into(),
            kernel_release: "6.18.0".into(),
            cpu_model: "Test CPU".into(),
            cpu: 0,
            emulated: None,
            iterations: 100_000,
            repeats: 3,
            warmup_runs: 1,
            order: ORDER_ROUND_ROBIN.into(),
            prog_stats: true,
            batch: 100,
            prog_work: 0,
            producers: 1,
            mechanisms: vec![
                ok("base", "base", &[1000.0, 1100.0, 1050.0], None),
                MechanismResult {
                    name: "kprobe".into(),
                    base: "base".into(),
                    trigger: "task_rename".into(),
                    hook: "__set_task_comm".into(),
                    events_per_run: 100_000,
                    status: Status::Skipped,
                    reason: Some("kernel has no kprobes".into()),
                    k_events_per_sec: None,
                    ns_per_event: None,
                    overhead_ns: None,
                    ratio_to_base: None,
                    hits: None,
                    prog_ns_per_event: None,
                    producers: None,
                    scaling: None,
                },
                ok(
                    "raw_tp",
                    "base",
                    &[900.0, 990.0, 945.0],
                    Some(&[0.90, 0.90, 0.90]),
                ),
                ok(
                    "tp",
                    "base",
                    &[850.0, 935.0, 890.0],
                    Some(&[0.85, 0.85, 0.84]),
                ),
            ],
        }
    }

    #[test]
    fn round_trips_through_json() {
        let doc = document();
        assert_eq!(Document::from_json(&doc.to_json()), Ok(doc));
    }

    #[test]
    fn status_is_lowercase() {
        let json = document().to_json();
        assert!(json.contains("\"status\": \"skipped\""), "{json}");
    }

    #[test]
    fn refuses_other_documents() {
        let err = Document::from_json("{\"a\": 1}").unwrap_err();
        assert!(err.contains("not a bpf-overhead result"), "{err}");
        let err = Document::from_json("[1, 2").unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = Document::from_json("{\"schema\": \"other\"}").unwrap_err();
        assert!(err.contains("\"other\""), "{err}");
    }

    #[test]
    fn refuses_other_schema_versions() {
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value["schema_version"] = 2.into();
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(err.contains("schema version 2"), "{err}");
    }

    #[test]
    fn refuses_missing_fields() {
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value.as_object_mut().unwrap().remove("iterations");
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(err.contains("iterations"), "{err}");
    }

    #[test]
    fn all_skipped_means_every_mechanism_but_the_bases() {
        let mut doc = document();
        assert!(!doc.all_skipped(), "raw_tp and tp were measured");
        for name in ["raw_tp", "tp"] {
            doc.mechanism_mut(name).unwrap().status = Status::Skipped;
        }
        assert!(doc.all_skipped(), "base ran, every mechanism skipped");
        doc.mechanism_mut("base").unwrap().status = Status::Failed;
        assert!(!doc.all_skipped(), "a failure is a failure, not a skip");
        doc.mechanisms.retain(|m| m.is_base());
        doc.mechanism_mut("base").unwrap().status = Status::Ok;
        assert!(!doc.all_skipped(), "a run of bases alone skipped nothing");
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696); // leap day
        assert_eq!(rfc3339_utc(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(rfc3339_utc(t), "2025-12-31T23:59:59Z");
    }
}
