//! A mutation fuzz of result documents: 1000 mutations of a real result
//! (an exact run, tests/fixtures/exact) and 500 of a timed one (the
//! tests' fixture) — numbers flipped, negated, made huge or not numbers,
//! fields and array entries dropped or duplicated, the text cut or
//! damaged — read as every reader reads ([`Document::parse`]), and what
//! is accepted shown and judged as `report`, `compare` and the gate do.
//! None may panic or hang. Deterministic: the seed is fixed, and a
//! failure names the mutation to replay.

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use bpf_overhead::document::{Document, Need};
use bpf_overhead::gate::{self, duet, Threshold};
use bpf_overhead::render;
use bpf_overhead::side_by_side::{self, Matrix};
use serde_json::Value;

mod common;
use common::cli::*;
use common::rng::Rng;

const SEED: u64 = 63;
const REAL: &str = include_str!("fixtures/exact/6.1.json");

/// Every node's JSON pointer, the root aside.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match v {
        Value::Object(o) => o.iter().map(|(k, c)| (format!("{at}/{k}"), c)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("{at}/{i}"), c))
            .collect(),
        _ => return,
    };
    for (p, c) in children {
        out.push(p.clone());
        pointers(c, &p, out);
    }
}

/// Stand-ins the text then carries as raw tokens serde_json cannot hold
/// in a Value: numbers beyond f64, and JavaScript's NaN.
const RAW: [(&str, &str); 4] = [
    ("\"@@1e400@@\"", "1e400"),
    ("\"@@-1e400@@\"", "-1e400"),
    ("\"@@NaN@@\"", "NaN"),
    ("\"@@big@@\"", "340282366920938463463374607431768211456"),
];

/// One mutation of `doc`, said in `log`; returns the text to read.
fn mutate(doc: &Value, rng: &mut Rng, log: &mut String) -> String {
    let mut doc = doc.clone();
    let mut duplicate_key = None;
    for _ in 0..1 + rng.below(3) {
        duplicate_key = change_a_node(&mut doc, rng, log).or(duplicate_key);
    }
    let mut text = write_json(&doc, "", duplicate_key.as_deref());
    for (stand_in, raw) in RAW {
        text = text.replace(stand_in, raw);
    }
    damage(&mut text, rng, log);
    text
}

/// Changes one node of `doc`; returns the pointer of an object member to
/// write twice, if that was the change.
fn change_a_node(doc: &mut Value, rng: &mut Rng, log: &mut String) -> Option<String> {
    let mut all = Vec::new();
    pointers(doc, "", &mut all);
    let at = rng.pick(&all).clone();
    let (parent, key) = at.rsplit_once('/').unwrap();
    let op = rng.below(8);
    let _ = write!(log, "{op}@{at} ");
    let node = doc.pointer_mut(&at).unwrap();
    match op {
        // A number scaled, negated, or made one of the extremes.
        0 => {
            let factor = *rng.pick(&[-1.0, 0.0, 0.5, 2.0, 1e6, 1e-6, 1.0 + 1e-9]);
            *node = match node.as_f64() {
                Some(v) => Value::from(v * factor),
                None => Value::from(factor),
            };
        }
        1 => {
            *node = rng
                .pick(&[
                    Value::from(1e300),
                    Value::from(-1e300),
                    Value::from(f64::MAX),
                    Value::from(f64::MIN_POSITIVE),
                    Value::from(u64::MAX),
                    Value::from(i64::MIN),
                    Value::from((1u64 << 53) + 1),
                    Value::from(0),
                    Value::from(-0.0),
                    Value::from(-1),
                ])
                .clone()
        }
        2 => *node = Value::from(RAW[rng.below(RAW.len())].0.trim_matches('"')),
        // Another type.
        3 => {
            *node = rng
                .pick(&[
                    Value::Null,
                    Value::from("x"),
                    Value::from(true),
                    serde_json::json!([]),
                    serde_json::json!({}),
                    Value::from("9999-12-31T23:59:59Z"),
                ])
                .clone()
        }
        // Dropped, duplicated, or moved within its array or object.
        4..=6 => {
            let node = node.clone();
            match doc.pointer_mut(parent).unwrap() {
                Value::Object(o) if op == 4 => drop(o.remove(key)),
                Value::Object(_) => return Some(at.clone()),
                Value::Array(a) => {
                    let i: usize = key.parse().unwrap();
                    match op {
                        4 => drop(a.remove(i)),
                        5 => a.insert(i, node),
                        _ => {
                            let j = rng.below(a.len());
                            a.swap(i, j);
                        }
                    }
                }
                _ => unreachable!("a parent is an object or an array"),
            }
        }
        // A string changed: names, units, times.
        _ => {
            if let Some(s) = node.as_str() {
                let mut s = s.to_owned();
                let tail: &&str = rng.pick(&["", "x", "9", "-1", "\u{0}", "ü"]);
                s.push_str(tail);
                *node = Value::from(s);
            }
        }
    }
    None
}

/// Now and then the text itself: cut short, or a byte changed.
fn damage(text: &mut String, rng: &mut Rng, log: &mut String) {
    match rng.below(10) {
        0 => {
            let cut = rng.below(text.len());
            let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap();
            let _ = write!(log, "cut@{cut} ");
            text.truncate(cut);
        }
        1 => {
            let i = rng.below(text.len());
            if text.is_char_boundary(i) && text.is_char_boundary(i + 1) {
                let c = *rng.pick(b"0-.e9\"{}[],: ");
                let _ = write!(log, "byte@{i}={} ", c as char);
                text.replace_range(i..i + 1, &(c as char).to_string());
            }
        }
        _ => {}
    }
}

/// `v` as compact JSON, with the object member at pointer `dup` written
/// twice (a Value cannot hold a duplicate key; a file can).
fn write_json(v: &Value, at: &str, dup: Option<&str>) -> String {
    match v {
        Value::Object(o) => {
            let mut members = Vec::new();
            for (k, c) in o {
                let p = format!("{at}/{k}");
                let member = format!("{}:{}", Value::from(k.as_str()), write_json(c, &p, dup));
                if dup == Some(p.as_str()) {
                    members.push(member.clone());
                }
                members.push(member);
            }
            format!("{{{}}}", members.join(","))
        }
        Value::Array(a) => {
            let items: Vec<String> = a
                .iter()
                .enumerate()
                .map(|(i, c)| write_json(c, &format!("{at}/{i}"), dup))
                .collect();
            format!("[{}]", items.join(","))
        }
        leaf => leaf.to_string(),
    }
}

/// What the readers do with an accepted document `doc`, `orig` being the
/// unmutated one: `report` (table, chart, kernel CI's records), `compare`
/// (pairing, judging, its report) and the gate (one run and a set).
fn use_as_readers_do(doc: &Document, orig: &Document) {
    let label = |d: &Document| d.kernel_release.clone();
    let mut columns = vec![(label(doc), doc.clone()), (label(orig), orig.clone())];
    if let Some(b) = doc.side_b() {
        columns.push(("B".into(), b));
        columns.push(("A".into(), doc.side_a()));
    }
    let _ = side_by_side::config_lines(&columns);
    let _ = side_by_side::same_unit(columns.iter().map(|(f, d)| (f.as_str(), d)));
    if let Ok(matrix) = Matrix::new(&columns) {
        let _ = render::matrix::table(&matrix);
        let _ = render::matrix::svg(&matrix);
    }
    let _ = render::kcidb::kcidb(&[doc, orig]);
    let _ = render::squad::squad(&[doc]);
    for (a, b) in [(doc, orig), (orig, doc)] {
        let (a, b) = (std::slice::from_ref(a), std::slice::from_ref(b));
        if let Ok(paired) = duet::pair_sessions(a, b, "kernel B") {
            let findings = duet::compare(a, b, &paired, Threshold::ByTrigger);
            let _ = render::duet_report(&paired, &findings, "A", "B");
        }
    }
    let names: Vec<&str> = orig
        .mechanisms
        .iter()
        .filter(|m| !m.is_base())
        .map(|m| m.name.as_str())
        .collect();
    let _ = gate::check_overlap(doc, &names);
    for set in [vec![doc.clone()], vec![orig.clone(), doc.clone()]] {
        let findings = gate::set::compare_set(&set, orig, Threshold::ByTrigger);
        let _ = render::gate_report(&findings, "baseline");
    }
}

/// Mutations `ns` of `base` from `seed`: the ones that panicked, each
/// with its number and what was done. Each finished mutation counts in
/// `done`, so that a hang can be named.
fn fuzz(base: &str, seed: u64, ns: impl Iterator<Item = usize>, done: &AtomicUsize) -> Vec<String> {
    let value: Value = serde_json::from_str(base).unwrap();
    let orig = Document::parse(base, Need::Complete).expect("the unmutated document reads");
    let mut failures = Vec::new();
    for n in ns {
        let mut rng = Rng::for_case(seed, n as u64);
        let mut log = String::new();
        let text = mutate(&value, &mut rng, &mut log);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // What report reads, used; what compare and the gate read is
            // the same document or refused.
            for need in [Need::Any, Need::Complete] {
                match Document::parse(&text, need) {
                    Ok(doc) if need == Need::Any => use_as_readers_do(&doc, &orig),
                    Ok(_) => {}
                    // One line, whatever was wrong.
                    Err(e) => {
                        let line = e.about(std::path::Path::new("f.json"));
                        assert!(!line.contains('\n'), "two lines: {line}");
                    }
                }
            }
        }));
        if outcome.is_err() {
            failures.push(format!("mutation {n} (seed {seed}): {log}"));
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    failures
}

/// How many threads share the mutations: all of a debug build's 15 s of
/// CPU (2-vCPU AMD EPYC VM) on one CPU was half of the suite's time.
const WORKERS: usize = 2;

#[test]
fn a_thousand_mutations_make_no_reader_panic_or_hang() {
    let timed = Arc::new(fixture().to_string());
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for w in 0..WORKERS {
        let (tx, counter, timed) = (tx.clone(), done.clone(), timed.clone());
        std::thread::spawn(move || {
            let mut failures = fuzz(REAL, SEED, (w..1000).step_by(WORKERS), &counter);
            failures.extend(fuzz(&timed, SEED + 1, (w..500).step_by(WORKERS), &counter));
            tx.send(failures).unwrap();
        });
    }
    let mut failures = Vec::new();
    for _ in 0..WORKERS {
        failures.extend(
            rx.recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| {
                    panic!(
                        "the fuzz hung after {} mutations",
                        done.load(Ordering::Relaxed)
                    )
                }),
        );
    }
    assert_eq!(done.load(Ordering::Relaxed), 1500);
    assert!(failures.is_empty(), "panicked:\n{}", failures.join("\n"));
}

/// A handful of the mutations through the binaries themselves: exit 0,
/// 1, 2 or 3 as the command decides, never a panic (101) or a hang.
#[test]
fn mutated_documents_through_the_commands() {
    let value: Value = serde_json::from_str(REAL).unwrap();
    let good = TempFile::new("fuzz-good.json");
    std::fs::write(&good.0, REAL).unwrap();
    let file = TempFile::new("fuzz-mutated.json");
    let mut rng = Rng::for_case(SEED + 2, 0);
    for n in 0..8 {
        let mut log = String::new();
        std::fs::write(&file.0, mutate(&value, &mut rng, &mut log)).unwrap();
        for args in [
            &["report", file.path()][..],
            &["compare", good.path(), "--against", file.path()],
        ] {
            let out = output_within(command(args), Duration::from_secs(20));
            assert!(
                [0, 1, 2, 3].contains(&out.code) && !out.stderr.contains("panicked"),
                "mutation {n} ({log}): {args:?} exited {}: {}",
                out.code,
                out.stderr
            );
            if out.code == 2 {
                assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
            }
        }
    }
}

/// Every real result kept in tests/fixtures/exact reads: the checks
/// refuse nonsense, not results.
#[test]
fn the_real_results_read() {
    for entry in std::fs::read_dir("tests/fixtures/exact").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "json") {
            if let Err(e) = Document::read(&path, Need::Complete) {
                panic!("{}", e.about(&path));
            }
        }
    }
}
