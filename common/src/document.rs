//! The result document's types, and their JSON: what the command writes
//! and every reader reads (the command's gate and renderers, xtask).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod files;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod records;
mod settings;
mod validate;

pub use files::{read_result_file, set_files, Need, ReadError, MAX_FILE_BYTES};
pub use records::{mean, median, stddev, AttachCost, Context, Site, Summary};
pub use settings::{Counting, Emulation, Order, Unit, Variant};

/// Value of the document's `schema` field.
pub const SCHEMA: &str = "bpf-overhead-result";
/// Value of the document's `schema_version` field.
pub const SCHEMA_VERSION: u32 = 2;
/// Older versions this one reads: version 1 had no `context`, no
/// `detectable` and exactly `repeats` runs of everything.
pub const READS_VERSIONS: [u32; 2] = [1, 2];

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
    /// The running kernel's GNU build id in hex (`/sys/kernel/notes`):
    /// two builds of one release differ in it. Null where the kernel has
    /// none, and in older results.
    #[serde(default)]
    pub kernel_build_id: Option<String>,
    /// The CPU's model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// The machine's architecture as Rust names it (`x86_64`, `aarch64`):
    /// that of the binary, which runs only on its own. Absent from results
    /// of versions that ran on x86_64 only.
    #[serde(default = "x86_64")]
    pub arch: String,
    /// /sys/devices/system/cpu/vulnerabilities, each file's line: how the
    /// kernel mitigates this CPU. Absent from older results: empty.
    #[serde(default)]
    pub mitigations: BTreeMap<String, String>,
    /// The CPU every run was pinned to.
    pub cpu: usize,
    /// The emulator in use (`tcg`, `tcg-icount`), or null on real or
    /// virtualised hardware.
    pub emulated: Option<Emulation>,
    /// What every time in the document counts: ns, or instructions under
    /// an emulator whose clock advances 1 ns a guest instruction. Absent
    /// from older results: ns.
    #[serde(default)]
    pub unit: Unit,
    /// The emulator's own version line (`QEMU emulator version 7.2.22
    /// ...`), given by whoever started it; null when not said.
    #[serde(default)]
    pub emulator: Option<String>,
    /// Events per run.
    pub iterations: u64,
    /// Timed rounds: the most any mechanism had (version 1: exactly this
    /// many runs of each).
    pub repeats: usize,
    /// The time budget for rounds beyond the least number, in s (0: none).
    #[serde(default)]
    pub budget_secs: f64,
    /// The length each mechanism's timed runs were sized to, in s, from
    /// its warm-up run; null: `iterations` events each (`--iterations`,
    /// the suite, emulation, and version 1).
    #[serde(default)]
    pub run_secs: Option<f64>,
    /// Untimed runs per mechanism before the timed ones.
    pub warmup_runs: usize,
    /// How runs were ordered: bracketed (round-robin in version 1).
    pub order: Order,
    /// Whether the extra run with BPF run-time stats was asked for.
    pub prog_stats: bool,
    /// Loop iterations per driver run for the kernel-loop trigger
    /// (`--batch`). Absent from results written before it existed: 100.
    #[serde(default = "default_batch")]
    pub batch: u32,
    /// Extra work rounds every program did per hit (`--prog-work`).
    #[serde(default)]
    pub prog_work: u32,
    /// Which events the comm and call triggers' programs counted, and how
    /// (`--counting`): `lead-in` (the untimed lead-in only: see each
    /// mechanism's `counted_events`), `every`, `every-atomic`,
    /// `every-check` or `none`. Results written before the lead-in count
    /// say `plain`, `atomic` or `filter` (every event); absent from those
    /// written before it existed, whose programs added atomically:
    /// `atomic`.
    #[serde(default = "atomic")]
    pub counting: Counting,
    /// Whether every program also took the kernel stack on each hit
    /// (`--stacktrace`). Absent from older results: false.
    #[serde(default)]
    pub stacktrace: bool,
    /// Producers firing at once, each on its own CPU (`--producers`).
    #[serde(default = "one")]
    pub producers: usize,
    /// The signal that stopped the run early (`"SIGINT"`), or null. An
    /// interrupted result holds only the rounds every mechanism completed,
    /// and is refused as a baseline.
    #[serde(default)]
    pub interrupted: Option<String>,
    /// Timed runs measured again, at once, because the measuring thread
    /// lost the CPU for over 1% of them (version 1: because the speed
    /// reference said the machine had slowed down). Absent: 0.
    #[serde(default)]
    pub retaken_runs: u64,
    /// What else the machine did on the measuring CPU during the run.
    /// Null where /proc could not tell, and in version 1.
    #[serde(default)]
    pub context: Option<Context>,
    /// Seconds the run waited before it started for its CPU, which another
    /// measuring run held (a per-CPU lock: two runs on one CPU would both
    /// be wrong). Absent from older results: 0.
    #[serde(default)]
    pub cpu_wait_s: f64,
    /// What B changed of A (JSON `against`): the variant of an in-run
    /// comparison (`--against prog-work=16`, `bpf-stats`), or B's kernel
    /// of a duet; null without B. Each mechanism's B side is then its
    /// `side_b`, and the B − A pairs its `pairs_ns`.
    #[serde(default, rename = "against")]
    pub variant: Option<Variant>,
    /// The object files the run measured (`--object`, and B's with
    /// `--against object=`). Absent in older results: none.
    #[serde(default)]
    pub objects: Vec<InputFile>,
    /// The `--packet` file the test runs ran on; null on the built-in
    /// packet, or when no program ran on one.
    #[serde(default)]
    pub packet: Option<InputFile>,
    /// The kernel's config: where it was read, its digest and the options
    /// that change costs; null where none could be read, and in older
    /// results.
    #[serde(default)]
    pub kernel_config: Option<crate::kconfig::KernelConfig>,
    /// Every mechanism measured or skipped, bases included, each base before
    /// the mechanisms it is the reference for.
    pub mechanisms: Vec<MechanismResult>,
}

/// A file the run read its programs or packet from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// As given on the command line.
    pub path: String,
    /// In bytes, as read (once, at the start).
    pub size: u64,
    /// SHA-256 of what was read, in hex, as `sha256sum` prints it.
    pub sha256: String,
}

impl InputFile {
    /// `path` and what was read from it.
    pub fn of(path: &std::path::Path, bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(bytes);
        Self {
            path: path.display().to_string(),
            size: bytes.len() as u64,
            sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// `agent.bpf.o (4096 bytes, sha256 0123456789ab)`: its name and the
    /// start of its hash, for a heading or a warning.
    pub fn short(&self) -> String {
        let name = std::path::Path::new(&self.path)
            .file_name()
            .map_or(self.path.clone(), |n| n.to_string_lossy().into_owned());
        let hash = self.sha256.get(..12).unwrap_or(&self.sha256);
        format!("{name} ({} bytes, sha256 {hash})", self.size)
    }
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
    /// Hits the BPF program counted from the producers in each run, of
    /// the events `counted_events` says (always those events when ok).
    /// Null for a base, and where nothing was counted (`counting`
    /// every-check or none).
    pub hits: Option<Vec<u64>>,
    /// The events `hits` are of, in each run, where they are not the timed
    /// events (`events_per_run`): the untimed lead-in's, which alone
    /// counted (`counting` lead-in, the comm and call triggers' default).
    /// Null: `hits` counted every timed event (and in older results).
    #[serde(default)]
    pub counted_events: Option<Vec<u64>>,
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
    /// Per round, the machine's speed around the run: ns per step of a
    /// fixed piece of user-space work (src/measure/running/speed.rs). Null unless
    /// ok, and in results written before it existed.
    #[serde(default)]
    pub speed_ns: Option<Summary>,
    /// Per round, `overhead_ns` divided by the speed reference of the
    /// mechanism's and its base's runs (their mean): the overhead in
    /// reference steps, the same at any machine speed. What the gate
    /// compares. Null where `overhead_ns` is, and in older results.
    #[serde(default)]
    pub overhead_steps: Option<Summary>,
    /// The smallest change of `overhead_ns`'s median that this run could
    /// tell from noise against a baseline as noisy as itself (a one-sided
    /// rank test at p = 0.05, 4 times in 5), in ns per event. Null for a
    /// base, with one round, and in version 1.
    #[serde(default)]
    pub detectable_ns: Option<f64>,
    /// `detectable_ns` as a share of the mechanism's own cost: its median
    /// overhead, or 5% of its base's time if that is more.
    #[serde(default)]
    pub detectable: Option<f64>,
    /// With `--against` (JSON `against`): the same mechanism as B, in the
    /// same rounds, its runs bracketed by the same base runs as A's (a base
    /// has none). Null otherwise.
    #[serde(default, rename = "against")]
    pub side_b: Option<Box<MechanismResult>>,
    /// With `--against`: per round, B's overhead minus A's in ns, the
    /// pairs B is judged against A on. Null otherwise.
    #[serde(default)]
    pub pairs_ns: Option<Summary>,
    /// Where attaching is a cost of its own (a link on every kernel
    /// function): the functions, and the median attach time and memory of
    /// the timed runs. Null otherwise, and in older results.
    #[serde(default)]
    pub attach: Option<AttachCost>,
    /// Under `cargo xtask vmtest --exact --explain`: the counting windows
    /// its timed runs ran in, and its base's runs around them, by number
    /// (src/measure/running/window.rs). Null otherwise.
    #[serde(default)]
    pub windows: Option<Vec<u64>>,
    #[serde(default)]
    pub base_windows: Option<Vec<u64>>,
    /// A probe on a function of this executable: what it left at the
    /// probed instruction after its runs, read back while attached
    /// (`int3`: it traps; `call`: the kernel rewrote it, optimized).
    /// Null otherwise, and in older results.
    #[serde(default)]
    pub site: Option<Site>,
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

fn atomic() -> Counting {
    Counting::EveryAtomic
}

/// `arch` of documents written before it was recorded: those versions
/// built for x86_64 only.
fn x86_64() -> String {
    "x86_64".into()
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
    /// Whether its figures count instructions: an exact run.
    pub fn exact(&self) -> bool {
        self.unit == Unit::Instructions
    }

    /// What one of its figures per event counts, for a line of text:
    /// `ns/event`, or `instructions/event` in an exact run.
    pub fn per_event(&self) -> &'static str {
        self.unit.per_event()
    }

    /// The unit of its times, for a figure in text: `ns`, or
    /// `instructions` in an exact run.
    pub fn unit_word(&self) -> &'static str {
        self.unit.word()
    }

    pub fn mechanism(&self, name: &str) -> Option<&MechanismResult> {
        self.mechanisms.iter().find(|m| m.name == name)
    }

    /// An `--against` run's B side alone, as a run with the variant's
    /// options would have written it (bases as they were: a variant never
    /// changes a base); `None` for a run without `--against`.
    pub fn side_b(&self) -> Option<Document> {
        let variant = self.variant.clone()?;
        let mut b = self.side_a();
        for (m, orig) in b.mechanisms.iter_mut().zip(&self.mechanisms) {
            if let Some(side) = &orig.side_b {
                *m = (**side).clone();
            }
        }
        match variant {
            Variant::ProgWork(n) => b.prog_work = n,
            Variant::Counting(mode) => b.counting = mode,
            Variant::Stacktrace => b.stacktrace = true,
            Variant::BpfStats | Variant::Object(_) | Variant::Kernel(_) => {}
        }
        Some(b)
    }

    /// An `--against` run's A side alone, as a run without `--against`
    /// would have written it; any other document as it is.
    pub fn side_a(&self) -> Document {
        let mut a = self.clone();
        a.variant = None;
        for m in &mut a.mechanisms {
            m.side_b = None;
            m.pairs_ns = None;
        }
        a
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
            Some(v) if READS_VERSIONS.iter().any(|&r| u64::from(r) == v) => {}
            Some(v) => {
                return Err(format!(
                    "schema version {v}, but this bpf-overhead reads version {SCHEMA_VERSION}: \
                     save a new baseline with this version"
                ))
            }
            None => return Err("no numeric \"schema_version\" field".into()),
        }
        serde_json::from_value(value).map_err(|e| {
            format!(
                "does not match schema version {SCHEMA_VERSION}: {}",
                where_wrong(text).unwrap_or_else(|| e.to_string())
            )
        })
    }
}

/// Where a document that parsed as JSON does not match the types: serde
/// names a missing field but not the place of a wrong one, so the
/// mechanism at fault, else the line and column of the text.
fn where_wrong(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let mechanisms = value.get("mechanisms").and_then(|m| m.as_array());
    for (i, m) in mechanisms.into_iter().flatten().enumerate() {
        if let Err(e) = serde_json::from_value::<MechanismResult>(m.clone()) {
            let name = m.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            return Some(format!("mechanisms[{i}] ({name}): {e}"));
        }
    }
    serde_json::from_str::<Document>(text)
        .err()
        .map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixtures::document;

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
        value["schema_version"] = 3.into();
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(err.contains("schema version 3"), "{err}");
        // Version 1, from before the bracketed rounds, still reads.
        value["schema_version"] = 1.into();
        Document::from_json(&value.to_string()).unwrap();
    }

    /// Results from before `arch` was recorded came from x86_64-only
    /// versions, and read as such.
    #[test]
    fn a_document_without_arch_is_x86_64() {
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value["arch"] = "aarch64".into();
        assert_eq!(
            Document::from_json(&value.to_string()).unwrap().arch,
            "aarch64"
        );
        value.as_object_mut().unwrap().remove("arch");
        assert_eq!(
            Document::from_json(&value.to_string()).unwrap().arch,
            "x86_64"
        );
    }

    /// A value of the wrong type is found where it is.
    #[test]
    fn a_wrong_type_names_its_place() {
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value["mechanisms"][2]["hits"][1] = "x".into();
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(
            err.contains("mechanisms[2] (raw_tp): invalid type: string \"x\""),
            "{err}"
        );
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value["iterations"] = "x".into();
        let err = Document::from_json(&serde_json::to_string_pretty(&value).unwrap()).unwrap_err();
        assert!(err.contains("expected u64 at line "), "{err}");
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
    fn an_input_file_is_its_size_and_sha256() {
        let f = InputFile::of(std::path::Path::new("/x/agent.bpf.o"), b"abc");
        assert_eq!(f.size, 3);
        // sha256("abc"), FIPS 180-2's example.
        assert_eq!(
            f.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(f.short(), "agent.bpf.o (3 bytes, sha256 ba7816bf8f01)");
    }
}
