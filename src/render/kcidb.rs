//! KCIDB records (KernelCI's database, I/O schema v5.3, the `kcidb-io`
//! package) of one or more results: a checkout per kernel release, a build
//! per release, architecture and kernel build (its build id, else its
//! config's digest), and per mechanism a test with its
//! pass, skip or fail and, under it, one test per figure with status DONE
//! and its `number`. A mechanism the gate found REGRESSED (or MISSING) is
//! FAIL, its change in the comment. Printed for `kcidb-submit`; never sent.

use serde_json::{json, Map, Value};

use super::metrics::{figures, named, Figure, SUITE};
use crate::document::{Document, MechanismResult, Status};
use crate::gate::Findings;

/// The records' origin, the part of every id before its colon. A CI
/// system submits under its own (docs/kernel-ci.md shows how to rename).
pub const ORIGIN: &str = "bpf_overhead";

/// The schema version the records are written to.
pub const VERSION: (u32, u32) = (5, 3);

/// The records of `docs` as one KCIDB document, pretty-printed, with a
/// final newline. Two results of one kernel release share its checkout,
/// of one build (release, architecture and build id) its build.
pub fn kcidb(docs: &[&Document]) -> String {
    let runs: Vec<_> = docs.iter().map(|d| (*d, None)).collect();
    judged(&runs)
}

/// [`kcidb`] of runs each with the gate's findings, if it was judged.
pub fn judged(runs: &[(&Document, Option<&Findings>)]) -> String {
    let mut text = serde_json::to_string_pretty(&records_of(runs)).expect("JSON values serialize");
    text.push('\n');
    text
}

/// The records of `docs`, as a JSON value.
pub fn records(docs: &[&Document]) -> Value {
    let runs: Vec<_> = docs.iter().map(|d| (*d, None)).collect();
    records_of(&runs)
}

/// The records of runs each with the gate's findings, if judged.
fn records_of(runs: &[(&Document, Option<&Findings>)]) -> Value {
    let (mut checkouts, mut builds, mut tests) = (Vec::new(), Vec::new(), Vec::new());
    let add = |list: &mut Vec<Value>, record: Value| {
        if !list.iter().any(|r| r["id"] == record["id"]) {
            list.push(record);
        }
    };
    for (doc, findings) in runs {
        add(&mut checkouts, checkout(doc));
        add(&mut builds, build(doc));
        for record in doc_tests(doc, *findings) {
            add(&mut tests, record);
        }
    }
    json!({
        "version": { "major": VERSION.0, "minor": VERSION.1 },
        "checkouts": checkouts,
        "builds": builds,
        "tests": tests,
    })
}

/// The kernel's architecture as the kernel's own `ARCH` names it (a KCIDB
/// build's `architecture`): `x86_64`, `arm64`.
pub fn kernel_arch(arch: &str) -> String {
    match arch {
        "aarch64" => "arm64".into(),
        other => other
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect(),
    }
}

fn checkout_id(doc: &Document) -> String {
    format!("{ORIGIN}:{}", doc.kernel_release)
}

/// What tells this build apart from others of its release and
/// architecture: the kernel's GNU build id, which the linker derives from
/// the image's contents; where the result has none (an older result, a
/// kernel built without one), the first 12 hex digits of its config's
/// digest, which tells apart only builds configured differently.
fn build_id(doc: &Document) -> String {
    let tell = match (&doc.kernel_build_id, &doc.kernel_config) {
        (Some(id), _) => format!(":{id}"),
        (None, Some(c)) => format!(":config-{}", &c.sha256[..c.sha256.len().min(12)]),
        (None, None) => String::new(),
    };
    format!("{}:{}{tell}", checkout_id(doc), kernel_arch(&doc.arch))
}

fn checkout(doc: &Document) -> Value {
    json!({
        "id": checkout_id(doc),
        "origin": ORIGIN,
        "comment": format!("kernel {}", doc.kernel_release),
        "misc": { "kernel_release": doc.kernel_release },
    })
}

fn build(doc: &Document) -> Value {
    let mut misc = Map::new();
    misc.insert("kernel_release".into(), json!(doc.kernel_release));
    if let Some(id) = &doc.kernel_build_id {
        misc.insert("kernel_build_id".into(), json!(id));
    }
    if let Some(c) = &doc.kernel_config {
        misc.insert(
            "kernel_config".into(),
            json!({ "source": c.source, "sha256": c.sha256, "cost_options": c.cost_options }),
        );
    }
    json!({
        "id": build_id(doc),
        "origin": ORIGIN,
        "checkout_id": checkout_id(doc),
        "architecture": kernel_arch(&doc.arch),
        "comment": format!("kernel {} on {}", doc.kernel_release, doc.arch),
        "misc": misc,
    })
}

/// Where the tests ran: the CPU model and the emulator, if any.
fn environment(doc: &Document) -> Value {
    let mut misc = Map::new();
    misc.insert("cpu_model".into(), json!(doc.cpu_model));
    misc.insert("cpu".into(), json!(doc.cpu));
    misc.insert("arch".into(), json!(doc.arch));
    if let Some(e) = &doc.emulated {
        misc.insert("emulated".into(), json!(e));
    }
    if let Some(e) = &doc.emulator {
        misc.insert("emulator".into(), json!(e));
    }
    let emulated = match (&doc.emulated, &doc.emulator) {
        (_, Some(e)) => format!(", under {e}"),
        (Some(e), None) => format!(", emulated ({e})"),
        (None, None) => String::new(),
    };
    json!({
        "comment": format!("{}, pinned to CPU {}{emulated}", doc.cpu_model, doc.cpu),
        "misc": misc,
    })
}

/// What every test of a run says of the run itself.
fn run_misc(doc: &Document, m: &MechanismResult) -> Map<String, Value> {
    let mut misc = Map::new();
    for (key, value) in [
        ("mechanism", json!(m.name)),
        ("base", json!(m.base)),
        ("trigger", json!(m.trigger)),
        ("hook", json!(m.hook)),
        ("events_per_run", json!(m.events_per_run)),
        ("unit", json!(doc.unit)),
        ("timestamp", json!(doc.timestamp)),
        ("tool_version", json!(doc.tool_version)),
        ("repeats", json!(doc.repeats)),
        ("prog_work", json!(doc.prog_work)),
    ] {
        misc.insert(key.into(), value);
    }
    misc
}

/// A run's tests: per mechanism one with its status, and one per figure.
fn doc_tests(doc: &Document, findings: Option<&Findings>) -> Vec<Value> {
    let build = build_id(doc);
    let environment = environment(doc);
    let id = |path: &str| format!("{build}:{}:{path}", doc.timestamp);
    let mut out = Vec::new();
    for (name, m) in named(doc) {
        let path = format!("{SUITE}.{name}");
        let regression = findings
            .and_then(|f| f.comparisons.iter().find(|c| c.name == m.name))
            .filter(|c| c.verdict.is_regression());
        let (status, comment) = match (regression, m.status) {
            (Some(c), _) => (
                "FAIL",
                format!(
                    "{}: {}: {}",
                    m.name,
                    c.verdict.label(),
                    super::one_line(&c.detail)
                ),
            ),
            (None, Status::Ok) => ("PASS", format!("{}: measured", m.name)),
            (None, Status::Skipped) => ("SKIP", reason(m)),
            (None, Status::Failed) => ("FAIL", reason(m)),
        };
        out.push(json!({
            "id": id(&path),
            "origin": ORIGIN,
            "build_id": build,
            "path": path,
            "status": status,
            "comment": comment,
            "environment": environment,
            "misc": run_misc(doc, m),
        }));
        for figure in figures(doc, m) {
            let path = format!("{path}.{}", figure.metric);
            let mut misc = run_misc(doc, m);
            misc.extend(spread(&figure, m));
            out.push(json!({
                "id": id(&path),
                "origin": ORIGIN,
                "build_id": build,
                "path": path,
                "status": "DONE",
                "number": { "value": figure.value, "unit": figure.unit },
                "comment": figure.what,
                "environment": environment,
                "misc": misc,
            }));
        }
    }
    out
}

fn reason(m: &MechanismResult) -> String {
    let why = m.reason.as_deref().unwrap_or("no reason given");
    format!("{}: {}", m.name, super::one_line(why))
}

/// A figure's spread, for its test's `misc`: the values it is the median
/// of and their statistics; for an overhead, the smallest change of it the
/// run could tell from noise, as a share.
fn spread(figure: &Figure, m: &MechanismResult) -> Map<String, Value> {
    let mut misc = Map::new();
    if let Some(s) = figure.spread {
        for (key, value) in [
            ("samples", json!(s.samples)),
            ("median", json!(s.median)),
            ("mean", json!(s.mean)),
            ("stddev", json!(s.stddev)),
            ("min", json!(s.min)),
            ("max", json!(s.max)),
        ] {
            misc.insert(key.into(), value);
        }
    }
    if figure.metric == "overhead" {
        if let Some(d) = m.detectable.filter(|d| d.is_finite()) {
            misc.insert("detectable".into(), json!(d));
        }
    }
    misc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    fn test<'a>(records: &'a Value, path: &str) -> &'a Value {
        records["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["path"] == path)
            .unwrap_or_else(|| panic!("no test {path} in {records:#}"))
    }

    #[test]
    fn a_run_is_a_checkout_a_build_and_its_tests() {
        let doc = document();
        let r = records(&[&doc]);
        assert_eq!(r["version"], json!({ "major": 5, "minor": 3 }));
        assert_eq!(r["checkouts"][0]["id"], "bpf_overhead:6.18.0");
        assert_eq!(r["builds"][0]["id"], "bpf_overhead:6.18.0:x86_64");
        assert_eq!(r["builds"][0]["checkout_id"], "bpf_overhead:6.18.0");
        assert_eq!(r["builds"][0]["misc"]["kernel_release"], "6.18.0");
        let overhead = test(&r, "bpf_overhead.raw_tp.overhead");
        assert_eq!(overhead["status"], "DONE");
        assert_eq!(overhead["number"], json!({ "value": 100.0, "unit": "ns" }));
        assert_eq!(overhead["misc"]["samples"], json!([100.0, 101.0, 99.0]));
        assert_eq!(overhead["build_id"], "bpf_overhead:6.18.0:x86_64");
        assert_eq!(
            overhead["environment"]["misc"]["cpu_model"], "Test CPU",
            "{overhead:#}"
        );
        assert_eq!(test(&r, "bpf_overhead.raw_tp")["status"], "PASS");
        assert_eq!(
            test(&r, "bpf_overhead.raw_tp.rate")["number"],
            json!({ "value": 945.0, "unit": "K events/s" })
        );
        let kprobe = test(&r, "bpf_overhead.kprobe");
        assert_eq!(kprobe["status"], "SKIP");
        assert_eq!(kprobe["comment"], "kprobe: kernel has no kprobes");
        assert!(kprobe.get("number").is_none());
        // Nothing is null: the schema allows no null property.
        assert!(!r.to_string().contains("null"), "{r:#}");
        // Every id is unique and starts with the origin.
        let ids: Vec<&str> = r["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
        assert!(ids.iter().all(|id| id.starts_with("bpf_overhead:")));
    }

    #[test]
    fn results_of_one_kernel_share_its_checkout_and_build() {
        let a = document();
        let mut b = document();
        b.timestamp = "2026-05-02T12:00:00Z".into();
        let mut c = document();
        c.kernel_release = "6.1.0".into();
        c.arch = "aarch64".into();
        let r = records(&[&a, &b, &c]);
        assert_eq!(r["checkouts"].as_array().unwrap().len(), 2);
        assert_eq!(r["builds"].as_array().unwrap().len(), 2);
        assert_eq!(r["builds"][1]["architecture"], "arm64");
        let overheads = r["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["path"] == "bpf_overhead.raw_tp.overhead")
            .count();
        assert_eq!(overheads, 3);
    }

    /// Two builds of one release (a base kernel and a patched one, `uname
    /// -r` and config alike) are two builds, told apart by their build
    /// ids; one checkout holds both.
    #[test]
    fn two_builds_of_one_release_are_two_builds() {
        let mut base = document();
        base.kernel_build_id = Some("fa36776b59bf96ada9b36526d3ba1705c7a98183".into());
        let mut patched = document();
        patched.kernel_build_id = Some("0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e".into());
        patched.timestamp = "2026-05-02T12:00:00Z".into();
        let r = records(&[&base, &patched]);
        assert_eq!(r["checkouts"].as_array().unwrap().len(), 1);
        let builds: Vec<&str> = r["builds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            builds,
            [
                "bpf_overhead:6.18.0:x86_64:fa36776b59bf96ada9b36526d3ba1705c7a98183",
                "bpf_overhead:6.18.0:x86_64:0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e",
            ]
        );
        assert_eq!(
            r["builds"][1]["misc"]["kernel_build_id"],
            "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e"
        );
        let build_of = |doc: &str| -> Vec<&str> {
            r["tests"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["path"] == "bpf_overhead.raw_tp.overhead")
                .filter(|t| t["id"].as_str().unwrap().contains(doc))
                .map(|t| t["build_id"].as_str().unwrap())
                .collect()
        };
        assert_eq!(build_of("2026-05-01"), [builds[0]]);
        assert_eq!(build_of("2026-05-02"), [builds[1]]);
        // Without a build id, the config's digest tells builds apart.
        let mut old = document();
        old.kernel_config = Some(crate::kconfig::KernelConfig {
            source: "/proc/config.gz".into(),
            sha256: "53196f47ec49aa".into(),
            cost_options: Default::default(),
        });
        assert_eq!(
            records(&[&old])["builds"][0]["id"],
            "bpf_overhead:6.18.0:x86_64:config-53196f47ec49"
        );
    }

    /// A mechanism the gate found REGRESSED is FAIL, the change in its
    /// comment, though it was measured; the others keep PASS.
    #[test]
    fn a_regression_fails_with_its_change() {
        let doc = document();
        let findings = super::super::raw_tp_regressed();
        let r = records_of(&[(&doc, Some(&findings))]);
        let raw_tp = test(&r, "bpf_overhead.raw_tp");
        assert_eq!(
            (&raw_tp["status"], &raw_tp["comment"]),
            (
                &json!("FAIL"),
                &json!("raw_tp: REGRESSED: 80.0 -> 100.0 ns (+25.0%)")
            )
        );
    }

    #[test]
    fn a_failure_fails() {
        let mut doc = document();
        let tp = doc.mechanism_mut("tp").unwrap();
        tp.status = Status::Failed;
        tp.reason = Some("attach\nfailed".into());
        let r = records(&[&doc]);
        assert_eq!(test(&r, "bpf_overhead.tp")["status"], "FAIL");
        assert_eq!(test(&r, "bpf_overhead.tp")["comment"], "tp: attach failed");
    }
}
