//! The `bpf-overhead` command's JSON document against the schema
//! documented in docs/json-schema.md (and a check that the checker
//! checks).

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;
use serial_test::serial;

mod common;
use common::cli::*;

/// The field tables of docs/json-schema.md: section -> field -> type.
fn documented_schema() -> BTreeMap<String, BTreeMap<String, String>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json-schema.md");
    let text = fs::read_to_string(path).expect("docs/json-schema.md");
    let mut sections = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = if heading.contains("Top level") {
                "top"
            } else if heading == "`context`" {
                "context"
            } else if heading == "`kernel_config`" {
                "kernel_config"
            } else if heading.contains("objects[]") {
                "file"
            } else if heading.contains("producers[]") {
                "producer"
            } else if heading.contains("].attach") {
                "attach"
            } else if heading.contains("mechanisms[]") {
                "mechanism"
            } else if heading.contains("Statistics") {
                "statistics"
            } else {
                ""
            }
            .to_string();
        } else if let Some(row) = line.strip_prefix("| `") {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let field = cells[0].trim_end_matches('`').to_string();
            sections
                .entry(section.clone())
                .or_insert_with(BTreeMap::new)
                .insert(field, cells[1].to_string());
        }
    }
    sections
}

fn check_type(
    value: &Value,
    ty: &str,
    what: &str,
    schema: &BTreeMap<String, BTreeMap<String, String>>,
) {
    if let Some(ty) = ty.strip_suffix(" or null") {
        if value.is_null() {
            return;
        }
        return check_type(value, ty, what, schema);
    }
    match ty {
        "string" => assert!(value.is_string(), "{what}: not a string: {value}"),
        "integer" => assert!(value.is_u64(), "{what}: not an integer: {value}"),
        "number" => assert!(value.is_number(), "{what}: not a number: {value}"),
        "boolean" => assert!(value.is_boolean(), "{what}: not a boolean: {value}"),
        "object of string" => {
            let o = value
                .as_object()
                .unwrap_or_else(|| panic!("{what}: not an object: {value}"));
            assert!(
                o.values().all(Value::is_string),
                "{what}: a value not a string"
            );
        }
        "statistics" => check_object(value, &schema["statistics"], what, schema),
        "context" => check_object(value, &schema["context"], what, schema),
        "kernel config" => check_object(value, &schema["kernel_config"], what, schema),
        "file" => check_object(value, &schema["file"], what, schema),
        "attach" => check_object(value, &schema["attach"], what, schema),
        _ => {
            let item = ty
                .strip_prefix("array of ")
                .unwrap_or_else(|| panic!("{what}: undocumented type {ty:?}"));
            let items = value
                .as_array()
                .unwrap_or_else(|| panic!("{what}: not an array"));
            for (i, v) in items.iter().enumerate() {
                let what = format!("{what}[{i}]");
                if item == "object" {
                    check_object(v, &schema["mechanism"], &what, schema);
                } else if item == "file" {
                    check_object(v, &schema["file"], &what, schema);
                } else if item == "producer" {
                    check_object(v, &schema["producer"], &what, schema);
                } else {
                    check_type(v, item, &what, schema);
                }
            }
        }
    }
}

/// Every documented field present with its type, and nothing undocumented.
fn check_object(
    value: &Value,
    fields: &BTreeMap<String, String>,
    what: &str,
    schema: &BTreeMap<String, BTreeMap<String, String>>,
) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object"));
    let present: Vec<&String> = object.keys().collect();
    let documented: Vec<&String> = fields.keys().collect();
    let mut present_sorted = present.clone();
    present_sorted.sort();
    assert_eq!(
        present_sorted, documented,
        "{what}: fields differ from docs/json-schema.md"
    );
    for (field, ty) in fields {
        check_type(&object[field], ty, &format!("{what}.{field}"), schema);
    }
}

fn check_schema(doc: &Value) {
    let schema = documented_schema();
    assert_eq!(
        schema.keys().collect::<Vec<_>>(),
        [
            "attach",
            "context",
            "file",
            "kernel_config",
            "mechanism",
            "producer",
            "statistics",
            "top"
        ],
        "docs/json-schema.md sections"
    );
    check_object(doc, &schema["top"], "document", &schema);
}

#[test]
fn the_schema_checker_checks() {
    // The checker itself, on a fixed document: passes, and catches an
    // undocumented field and a wrong type.
    check_schema(&fixture());
    let mut extra = fixture();
    extra["surprise"] = 1.into();
    assert!(std::panic::catch_unwind(|| check_schema(&extra)).is_err());
    let mut wrong = fixture();
    wrong["mechanisms"][2]["hits"] = "100000".into();
    assert!(std::panic::catch_unwind(|| check_schema(&wrong)).is_err());
    // The files of an --object run, and one of them wrong.
    let mut objects = fixture();
    let file = serde_json::json!({
        "path": "agent.bpf.o", "size": 4096,
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    });
    objects["objects"] = serde_json::json!([file.clone()]);
    objects["packet"] = file;
    check_schema(&objects);
    objects["packet"]["size"] = "4096".into();
    assert!(std::panic::catch_unwind(|| check_schema(&objects)).is_err());
    // --explain's windows, and one wrong.
    let mut windows = fixture();
    windows["mechanisms"][2]["windows"] = serde_json::json!([1, 3]);
    windows["mechanisms"][2]["base_windows"] = serde_json::json!([0, 2, 4]);
    check_schema(&windows);
    windows["mechanisms"][2]["windows"] = serde_json::json!(["1"]);
    assert!(std::panic::catch_unwind(|| check_schema(&windows)).is_err());
    // A kernel's config, and one wrong.
    let mut config = fixture();
    config["kernel_config"] = serde_json::json!({
        "source": "/proc/config.gz",
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "cost_options": ["CONFIG_LOCKDEP=y", "CONFIG_PREEMPT_VOLUNTARY=y"]
    });
    check_schema(&config);
    config["kernel_config"]["cost_options"] = "CONFIG_LOCKDEP=y".into();
    assert!(std::panic::catch_unwind(|| check_schema(&config)).is_err());
    // An attach cost, as a link on every kernel function has, and one wrong.
    let mut attach = fixture();
    attach["mechanisms"][2]["attach"] =
        serde_json::json!({"functions": 42352, "seconds": 6.58, "memory_kib": -12});
    check_schema(&attach);
    attach["mechanisms"][2]["attach"]["functions"] = 4.5.into();
    assert!(std::panic::catch_unwind(|| check_schema(&attach)).is_err());
}

#[test]
#[serial]
fn json_output_matches_the_documented_schema() {
    let stats_before = fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").ok();
    let out = run_ok(&raw_tp_run("2", &["--format", "json"]));
    // The run-time stats are on only while the run holds their fd.
    assert_eq!(
        fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").ok(),
        stats_before,
        "kernel.bpf_stats_enabled changed"
    );
    let doc: Value = serde_json::from_str(&out.stdout).expect("stdout is one JSON document");
    check_schema(&doc);

    assert_eq!(doc["schema"], "bpf-overhead-result");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["iterations"], 2000);
    assert_eq!(doc["repeats"], 2);
    let mechanisms = doc["mechanisms"].as_array().unwrap();
    let names: Vec<&str> = mechanisms
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["base", "raw_tp"], "raw_tp and its base");
    for m in mechanisms {
        assert_eq!(m["status"], "ok", "{m}");
        let rate = &m["k_events_per_sec"];
        // A base runs before and after its mechanism in each round.
        let runs = if m["name"] == "base" { 4 } else { 2 };
        assert_eq!(rate["samples"].as_array().unwrap().len(), runs, "{m}");
        let (min, median, max) = (
            rate["min"].as_f64().unwrap(),
            rate["median"].as_f64().unwrap(),
            rate["max"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= median && median <= max, "{rate}");
    }
    let raw_tp = &mechanisms[1];
    assert_eq!(raw_tp["base"], "base");
    // The lead-in's tenth of each run's 2000 events, counted exactly.
    assert_eq!(raw_tp["hits"], serde_json::json!([200, 200]));
    assert_eq!(raw_tp["counted_events"], raw_tp["hits"]);
    assert_eq!(
        raw_tp["ratio_to_base"]["samples"].as_array().unwrap().len(),
        2
    );
    assert!(raw_tp["ratio_to_base"]["median"].as_f64().unwrap() > 0.0);
    assert!(
        mechanisms[0]["ratio_to_base"].is_null(),
        "a base has no ratio"
    );
}
