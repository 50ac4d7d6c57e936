//! The result of a benchmark run as one versioned document: what `--format
//! json` prints, what `--save` writes and what `--baseline` reads back.
//! docs/json-schema.md documents the schema; bump [`SCHEMA_VERSION`] on any change
//! that an older reader would misread (renamed, removed or re-meant fields).

use std::fs;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Value of the document's `schema` field.
pub const SCHEMA: &str = "bpf-overhead-result";
/// Value of the document's `schema_version` field.
pub const SCHEMA_VERSION: u32 = 2;
/// Older versions this one reads: version 1 had no `context`, no
/// `detectable` and exactly `repeats` runs of everything.
pub const READS_VERSIONS: [u32; 2] = [1, 2];

/// How the runs of different mechanisms were ordered (the `order` field).
pub const ORDER_ROUND_ROBIN: &str = "round-robin";
/// Rounds in which each base runs before and after each of its mechanisms
/// (the `order` of version 2).
pub const ORDER_BRACKETED: &str = "bracketed";

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
    /// The machine's architecture as Rust names it (`x86_64`, `aarch64`):
    /// that of the binary, which runs only on its own. Absent from results
    /// of versions that ran on x86_64 only.
    #[serde(default = "x86_64")]
    pub arch: String,
    /// The CPU every run was pinned to.
    pub cpu: usize,
    /// The emulator in use (`tcg`), or null on real or virtualised hardware.
    pub emulated: Option<String>,
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
    /// How runs were ordered: [`ORDER_BRACKETED`] ([`ORDER_ROUND_ROBIN`]
    /// in version 1).
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
    pub context: Option<crate::measure::context::Context>,
    /// Seconds the run waited before it started for its CPU, which another
    /// measuring run held (a per-CPU lock: two runs on one CPU would both
    /// be wrong). Absent from older results: 0.
    #[serde(default)]
    pub cpu_wait_s: f64,
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
    /// Per round, the machine's speed around the run: ns per step of a
    /// fixed piece of user-space work (src/measure/speed.rs). Null unless
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
            Some(v) if READS_VERSIONS.iter().any(|&r| u64::from(r) == v) => {}
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

    /// Reads a saved result (a `--baseline` file): a regular file of at
    /// most [`MAX_FILE_BYTES`], a document of this schema version whose
    /// figures make sense ([`Document::validate`]), of a complete run.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = read_result_file(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        let doc = Self::from_json(&text)
            .and_then(|doc| doc.validate().map(|()| doc))
            .map_err(|e| format!("baseline {}: {e}", path.display()))?;
        if let Some(signal) = &doc.interrupted {
            return Err(format!(
                "baseline {}: the run was interrupted ({signal}) and is incomplete: \
                 save a complete run as the baseline",
                path.display()
            ));
        }
        Ok(doc)
    }

    /// Checks that the figures make sense, so that a corrupt or doctored
    /// file cannot decide the gate (under the old ratio rule a stddev of
    /// 1e308 made every drop "noise"): mechanism names unique, each one's
    /// base present; every
    /// number finite, rates and ratios positive; each statistic what its
    /// samples give, one sample per repeat; the hit counts those of an
    /// ok run. The error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.iterations == 0 || self.repeats == 0 {
            return Err(format!(
                "iterations {} and repeats {}: both must be at least 1",
                self.iterations, self.repeats
            ));
        }
        for (i, m) in self.mechanisms.iter().enumerate() {
            let at = |field: &str| format!("mechanisms[{i}] ({}): {field}", m.name);
            if self.mechanisms[..i].iter().any(|o| o.name == m.name) {
                return Err(format!(
                    "mechanisms[{i}]: name \"{}\" appears twice",
                    m.name
                ));
            }
            if !m.is_base() && !self.mechanism(&m.base).is_some_and(|b| b.is_base()) {
                return Err(format!(
                    "{} \"{}\" is not a base in the document",
                    at("base"),
                    m.base
                ));
            }
            self.check_figures(m, &at)?;
            if m.is_ok() {
                self.check_complete(m, &at)?;
            }
            self.check_producers(m, &at)?;
        }
        Ok(())
    }

    /// Whether `n` samples are as many as `m`'s rounds give. Version 1:
    /// one run per repeat (fewer when interrupted). Version 2: a mechanism
    /// sure early stops at fewer rounds, and a base runs around each of
    /// its mechanisms.
    fn rounds<'a>(&'a self, m: &'a MechanismResult) -> impl Fn(usize) -> bool + 'a {
        let own = m.k_events_per_sec.as_ref().map_or(0, |k| k.samples.len());
        move |n: usize| {
            if self.schema_version >= 2 {
                n == own && (m.is_base() || n <= self.repeats)
            } else if self.interrupted.is_some() {
                n <= self.repeats
            } else {
                n == self.repeats
            }
        }
    }

    /// [`Document::validate`]'s checks of `m`'s summaries and figures,
    /// `at` naming the field in the error.
    fn check_figures(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        let rounds = self.rounds(m);
        let series = [
            ("k_events_per_sec", &m.k_events_per_sec, Sign::Positive),
            ("overhead_ns", &m.overhead_ns, Sign::Any),
            ("ratio_to_base", &m.ratio_to_base, Sign::Positive),
            ("speed_ns", &m.speed_ns, Sign::Positive),
            ("overhead_steps", &m.overhead_steps, Sign::Any),
        ];
        for (field, summary, sign) in series {
            if let Some(summary) = summary {
                check_summary(summary, sign, &rounds).map_err(|e| format!("{}{e}", at(field)))?;
            }
        }
        let scalars = [
            ("ns_per_event", m.ns_per_event, Sign::Positive),
            ("prog_ns_per_event", m.prog_ns_per_event, Sign::NonNegative),
        ];
        for (field, value, sign) in scalars {
            if let Some(v) = value {
                sign.check(v).map_err(|e| format!("{} {e}", at(field)))?;
            }
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of an ok `m`: the figures the gate
    /// compares are there, and the hits those of every event.
    fn check_complete(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        if m.k_events_per_sec.is_none() {
            return Err(format!(
                "{} is null, but the status is ok",
                at("k_events_per_sec")
            ));
        }
        // What the gate compares (and the ratio shown with it).
        for (field, present) in [
            ("overhead_ns", m.overhead_ns.is_some()),
            ("ratio_to_base", m.ratio_to_base.is_some()),
        ] {
            if !m.is_base() && !present {
                return Err(format!("{} is null, but the status is ok", at(field)));
            }
        }
        let runs = m.k_events_per_sec.as_ref().map_or(0, |k| k.samples.len());
        if let Some(hits) = &m.hits {
            // Every event of every producer, once: the run's events
            // (results from before events_per_run: the iterations).
            let events = if m.events_per_run > 0 {
                m.events_per_run
            } else {
                self.iterations
            };
            if hits.len() != runs || hits.iter().any(|&h| h != events) {
                return Err(format!(
                    "{} is {hits:?}: an ok run counts {events} hits in each of its {runs} runs",
                    at("hits"),
                ));
            }
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of `m`'s scaling and producers.
    fn check_producers(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        let rounds = self.rounds(m);
        if let Some(scaling) = &m.scaling {
            check_summary(scaling, Sign::Positive, &rounds)
                .map_err(|e| format!("{}{e}", at("scaling")))?;
        }
        for (j, p) in m.producers.iter().flatten().enumerate() {
            check_summary(&p.k_events_per_sec, Sign::Positive, &rounds)
                .map_err(|e| format!("{}{e}", at(&format!("producers[{j}].k_events_per_sec"))))?;
            if p.hits.len() != p.k_events_per_sec.samples.len() {
                return Err(format!(
                    "{} has {} values, not one per round",
                    at(&format!("producers[{j}].hits")),
                    p.hits.len()
                ));
            }
        }
        Ok(())
    }

    /// Writes the result for later use (`--save`), atomically: into a new
    /// file in the same directory, synced, then renamed over `path`. A
    /// crash or a full disk leaves the old file whole, never half a
    /// result.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| {
            // tempfile adds "at path <its random name>": not the user's.
            let e = e.to_string();
            let e = e.split(" at path ").next().unwrap_or_default();
            format!("cannot write result to {}: {e}", path.display())
        };
        let mut file = tempfile::Builder::new()
            .prefix(".bpf-overhead-")
            .suffix(".json.tmp")
            .tempfile_in(save_dir(path))
            .map_err(|e| fail(&e))?;
        file.write_all(self.to_json().as_bytes())
            .and_then(|()| file.as_file().sync_all())
            .map_err(|e| fail(&e))?;
        // Created 0600; a result is no secret: what fs::write would give.
        let mode = 0o666 & !umask();
        file.as_file()
            .set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| fail(&e))?;
        file.persist(path).map_err(|e| fail(&e.error))?;
        Ok(())
    }
}

/// The most a result file may weigh: a full run's is ~15 KiB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The text of a result file, refusing what cannot be one without
/// reading it: a directory, a FIFO (whose open would wait for a writer),
/// a device (/dev/zero never ends), anything over [`MAX_FILE_BYTES`].
pub fn read_result_file(path: &Path) -> Result<String, String> {
    let kind = |meta: &fs::Metadata| -> Result<(), String> {
        let t = meta.file_type();
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else if !t.is_file() {
            "not a regular file"
        } else if meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{} bytes, more than a result file's {} MiB",
                meta.len(),
                MAX_FILE_BYTES >> 20
            ));
        } else {
            return Ok(());
        };
        Err(format!("{what}, not a result file"))
    };
    kind(&fs::metadata(path).map_err(|e| e.to_string())?)?;
    // It was a regular file a moment ago; O_NONBLOCK keeps the open from
    // hanging if it was swapped for a FIFO since, and fstat checks again.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    kind(&file.metadata().map_err(|e| e.to_string())?)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "more than a result file's {} MiB",
            MAX_FILE_BYTES >> 20
        ));
    }
    Ok(text)
}

/// The directory a result file at `path` goes into.
pub fn save_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The process's umask, from /proc (umask(2) can only read it by
/// changing it, under the feet of other threads); 022 if unknown.
fn umask() -> u32 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let v = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
            u32::from_str_radix(v.trim(), 8).ok()
        })
        .unwrap_or(0o022)
}

/// A figure for a message: 1e308 as `1e308`, not 309 digits.
fn num(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e7).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// What sign a figure must have.
#[derive(Clone, Copy)]
enum Sign {
    Positive,
    NonNegative,
    /// An overhead can be negative: a mechanism within noise of its base.
    Any,
}

impl Sign {
    fn check(self, v: f64) -> Result<(), String> {
        let ok = v.is_finite()
            && match self {
                Sign::Positive => v > 0.0,
                Sign::NonNegative => v >= 0.0,
                Sign::Any => true,
            };
        if ok {
            Ok(())
        } else {
            let must = match self {
                Sign::Positive => "a positive number",
                Sign::NonNegative => "a number of at least 0",
                Sign::Any => "a finite number",
            };
            Err(format!("is {}, must be {must}", num(v)))
        }
    }
}

/// `.field ...` when `summary` is not what its samples give.
fn check_summary(
    summary: &Summary,
    sign: Sign,
    rounds: impl Fn(usize) -> bool,
) -> Result<(), String> {
    let n = summary.samples.len();
    if n == 0 || !rounds(n) {
        return Err(format!(".samples has {n} values, not one per repeat"));
    }
    for (j, &v) in summary.samples.iter().enumerate() {
        sign.check(v).map_err(|e| format!(".samples[{j}] {e}"))?;
    }
    let expected = Summary::of(&summary.samples).expect("finite, non-empty samples");
    let stats = [
        ("median", summary.median, expected.median),
        ("mean", summary.mean, expected.mean),
        ("stddev", summary.stddev, expected.stddev),
        ("min", summary.min, expected.min),
        ("max", summary.max, expected.max),
    ];
    for (field, got, want) in stats {
        // Relative, for figures from 1e-4 (ratios) to 1e6 (call rates);
        // a little absolute slack for a stddev of 0.
        if !got.is_finite() || (got - want).abs() > 1e-6 * want.abs().max(got.abs()) + 1e-12 {
            return Err(format!(
                ".{field} is {}, but its samples give {}",
                num(got),
                num(want)
            ));
        }
    }
    Ok(())
}

/// Facts about the machine recorded with a result.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub kernel_release: String,
    pub cpu_model: String,
    pub arch: String,
    pub timestamp: String,
    pub emulated: Option<String>,
}

impl Host {
    pub fn current() -> Self {
        Self {
            kernel_release: kernel_release(),
            cpu_model: cpu_model(),
            arch: std::env::consts::ARCH.into(),
            timestamp: rfc3339_utc(SystemTime::now()),
            emulated: emulated(),
        }
    }
}

pub use crate::env_vars::EMULATED_ENV;

/// `Some("tcg")` when running under an emulator (see [`EMULATED_ENV`]).
pub fn emulated() -> Option<String> {
    std::env::var(EMULATED_ENV)
        .ok()
        .filter(|v| !v.is_empty() && v != "0")
}

pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The CPU model from /proc/cpuinfo ([`cpu_model_of`]); "unknown" without one.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| cpu_model_of(&text))
        .unwrap_or_else(|| "unknown".into())
}

/// x86's "model name"; arm64 names no model, only the implementer and
/// part numbers (0x41 0xd0c: Arm's Neoverse N1), which say as much.
fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    field("model name").or_else(|| {
        Some(format!(
            "CPU implementer {} part {}",
            field("CPU implementer")?,
            field("CPU part")?
        ))
    })
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
            overhead_ns: ratio.map(|_| Summary::of(&[100.0, 101.0, 99.0]).unwrap()),
            ratio_to_base: ratio.and_then(Summary::of),
            hits: ratio.map(|_| vec![100_000; 3]),
            prog_ns_per_event: ratio.map(|_| 20.5),
            producers: None,
            scaling: None,
            speed_ns: Summary::of(&[2.0, 2.0, 2.0]),
            overhead_steps: ratio.map(|_| Summary::of(&[50.0, 55.0, 45.0]).unwrap()),
            detectable_ns: ratio.map(|_| 25.0),
            detectable: ratio.map(|_| 0.25),
        };
        Document {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            tool_version: "0.1.0".into(),
            timestamp: "2026-05-01T12:00:00Z".into(),
            kernel_release: "6.18.0".into(),
            cpu_model: "Test CPU".into(),
            arch: "x86_64".into(),
            cpu: 0,
            emulated: None,
            iterations: 100_000,
            repeats: 3,
            budget_secs: 0.0,
            run_secs: None,
            warmup_runs: 1,
            order: ORDER_BRACKETED.into(),
            prog_stats: true,
            batch: 100,
            prog_work: 0,
            producers: 1,
            interrupted: None,
            retaken_runs: 0,
            context: None,
            cpu_wait_s: 0.0,
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
                    speed_ns: None,
                    overhead_steps: None,
                    detectable_ns: None,
                    detectable: None,
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
        value["schema_version"] = 3.into();
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(err.contains("schema version 3"), "{err}");
        // Version 1, from before the bracketed rounds, still reads.
        value["schema_version"] = 1.into();
        Document::from_json(&value.to_string()).unwrap();
    }

    #[test]
    fn the_cpu_model_is_named_on_x86_and_arm64() {
        let x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n";
        assert_eq!(cpu_model_of(x86).as_deref(), Some("AMD EPYC 7B13"));
        let arm64 = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\
                     CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n";
        assert_eq!(
            cpu_model_of(arm64).as_deref(),
            Some("CPU implementer 0x41 part 0xd0c")
        );
        assert_eq!(cpu_model_of("processor\t: 0\n"), None);
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

    #[test]
    fn refuses_missing_fields() {
        let mut value: serde_json::Value = serde_json::from_str(&document().to_json()).unwrap();
        value.as_object_mut().unwrap().remove("iterations");
        let err = Document::from_json(&value.to_string()).unwrap_err();
        assert!(err.contains("iterations"), "{err}");
    }

    /// `doc` with `edit` applied to mechanism `name`, validated.
    fn invalid(name: &str, edit: impl FnOnce(&mut MechanismResult)) -> String {
        let mut doc = document();
        edit(doc.mechanism_mut(name).unwrap());
        doc.validate().unwrap_err()
    }

    #[test]
    fn a_real_document_is_valid() {
        document().validate().unwrap();
        // Round trip through JSON: the statistics survive exactly.
        Document::from_json(&document().to_json())
            .unwrap()
            .validate()
            .unwrap();
    }

    #[test]
    fn nonsense_numbers_are_refused_naming_the_field() {
        // A stddev of 1e308 would make every drop "noise".
        let err = invalid("raw_tp", |m| {
            m.ratio_to_base.as_mut().unwrap().stddev = 1e308
        });
        assert_eq!(
            err,
            "mechanisms[2] (raw_tp): ratio_to_base.stddev is 1e308, but its samples give 0"
        );
        let negative = Summary::of(&[-5.0, -5.0, -5.0]);
        let err = invalid("raw_tp", |m| m.ratio_to_base = negative);
        assert!(
            err.contains("ratio_to_base.samples[0] is -5, must be a positive number"),
            "{err}"
        );
        let zero = Summary::of(&[0.0, 0.0, 0.0]);
        let err = invalid("tp", |m| m.ratio_to_base = zero);
        assert!(err.contains("(tp): ratio_to_base.samples[0] is 0"), "{err}");
        let err = invalid("base", |m| {
            m.k_events_per_sec.as_mut().unwrap().median = 5.0
        });
        assert!(
            err.contains("k_events_per_sec.median is 5, but its samples give 1050"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.prog_ns_per_event = Some(-1.0));
        assert!(err.contains("prog_ns_per_event is -1"), "{err}");
        let err = invalid("raw_tp", |m| m.ns_per_event = Some(f64::INFINITY));
        assert!(err.contains("ns_per_event is inf"), "{err}");
        // An overhead may be negative: within noise of the base.
        let mut doc = document();
        doc.mechanism_mut("raw_tp").unwrap().overhead_ns = Summary::of(&[-1.0, 0.5, -0.2]);
        doc.validate().unwrap();
    }

    #[test]
    fn counts_must_match_the_repeats() {
        let err = invalid("raw_tp", |m| {
            m.ratio_to_base = Summary::of(&[0.9, 0.9]);
        });
        assert!(
            err.contains("ratio_to_base.samples has 2 values, not one per repeat"),
            "{err}"
        );
        // A mechanism has at most one run per round.
        let err = invalid("raw_tp", |m| {
            m.k_events_per_sec = Summary::of(&[900.0; 4]);
        });
        assert!(
            err.contains("k_events_per_sec.samples has 4 values"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.hits = Some(vec![100_000, 99_999, 100_000]));
        assert!(
            err.contains("(raw_tp): hits is [100000, 99999, 100000]"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.hits = Some(vec![100_000; 2]));
        assert!(err.contains("(raw_tp): hits"), "{err}");
        // ...but an interrupted run keeps fewer rounds.
        let mut doc = document();
        doc.repeats = 5;
        doc.interrupted = Some("SIGINT".into());
        doc.validate().unwrap();
    }

    #[test]
    fn names_are_unique_and_bases_present() {
        let mut doc = document();
        let dup = doc.mechanisms[2].clone();
        doc.mechanisms.push(dup);
        assert_eq!(
            doc.validate().unwrap_err(),
            "mechanisms[4]: name \"raw_tp\" appears twice"
        );
        let mut doc = document();
        doc.mechanisms.remove(0);
        let err = doc.validate().unwrap_err();
        assert!(
            err.contains("(kprobe): base \"base\" is not a base in the document"),
            "{err}"
        );
    }

    #[test]
    fn ok_needs_its_figures() {
        let err = invalid("tp", |m| m.ratio_to_base = None);
        assert!(
            err.contains("(tp): ratio_to_base is null, but the status is ok"),
            "{err}"
        );
        let err = invalid("tp", |m| m.overhead_ns = None);
        assert!(
            err.contains("(tp): overhead_ns is null, but the status is ok"),
            "{err}"
        );
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
