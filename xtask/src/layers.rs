//! The layers of `main.rs`, checked the way the library's are: each
//! module's imports, read by the library's own parser (common's
//! `imports`), resolved to the modules they name, and the rules on them.

use std::collections::BTreeMap;
use std::path::Path;

use bpf_overhead_common::imports::{code, paths_in};

/// Each module of xtask/src by its path (`tasks::vmtest::duet`; main.rs and
/// this file aside) and the modules its code uses; `main` for an item of
/// main.rs.
fn imports() -> BTreeMap<String, Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = BTreeMap::new();
    for (path, module) in modules(&src) {
        if module == "main" || module == "layers" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        texts.insert(module, code(&text));
    }
    let names: Vec<String> = texts.keys().cloned().collect();
    texts
        .iter()
        .map(|(m, text)| {
            let mut used: Vec<String> = Vec::new();
            for path in paths_in(m, text) {
                let to = owner(&path, &names);
                if to != *m && !used.contains(&to) {
                    used.push(to);
                }
            }
            used.sort();
            (m.clone(), used)
        })
        .collect()
}

/// The .rs files under `dir`, each with its module's path: `util.rs` is
/// `util`, `kernels/mod.rs` `kernels`, `tasks/vmtest/duet.rs`
/// `tasks::vmtest::duet`.
fn modules(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(std::path::PathBuf, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                walk(&p, &format!("{prefix}{name}::"), out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let module = if name == "mod" {
                    prefix.trim_end_matches("::").to_owned()
                } else {
                    format!("{prefix}{name}")
                };
                out.push((p, module));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out
}

/// The module a path from the root names: its longest prefix that is one;
/// `main` when none is (an item of main.rs).
fn owner(path: &str, modules: &[String]) -> String {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|p| modules.contains(p))
        .unwrap_or_else(|| "main".to_owned())
}

/// The room of a module: its first name (`tasks::vmtest::duet` is in
/// `tasks`); a task's room is its first two (`tasks::vmtest`).
fn room(module: &str) -> &str {
    module.split("::").next().unwrap()
}

fn task_room(module: &str) -> Option<String> {
    let mut parts = module.split("::");
    (parts.next() == Some("tasks")).then(|| parts.next().map(|t| format!("tasks::{t}")))?
}

#[test]
fn the_import_finder_finds_what_it_should() {
    let names = [
        "util".to_owned(),
        "kernels".to_owned(),
        "kernels::debian".to_owned(),
    ];
    assert_eq!(owner("kernels::debian::self", &names), "kernels::debian");
    assert_eq!(owner("Parsed", &names), "main");
    let uses = imports();
    assert!(
        uses["tasks::vmtest"].contains(&"kernels::kernel".to_owned()),
        "{uses:?}"
    );
    assert!(
        uses["kernels::debian"].contains(&"util".to_owned()),
        "say! {uses:?}"
    );
    assert!(
        uses["tasks::vmtest::duet"].contains(&"tasks::vmtest".to_owned()),
        "its options {uses:?}"
    );
    assert!(
        uses["cli::args"].contains(&"tasks::ci::options".to_owned()),
        "{uses:?}"
    );
}

/// util is under every other room: it imports nothing of the crate
/// outside itself.
#[test]
fn util_imports_nothing_of_the_crate() {
    for (m, used) in imports() {
        if room(&m) == "util" {
            let out: Vec<&String> = used.iter().filter(|u| room(u) != "util").collect();
            assert!(out.is_empty(), "{m} imports {out:?}");
        }
    }
}

/// Nothing runs back up: no module imports an item of main.rs, and none
/// but main.rs imports the command line.
#[test]
fn no_module_imports_main_or_the_command_line() {
    for (m, used) in imports() {
        assert!(!used.contains(&"main".to_owned()), "{m} imports main.rs");
        if room(&m) != "cli" {
            let cli: Vec<&String> = used.iter().filter(|u| room(u) == "cli").collect();
            assert!(cli.is_empty(), "{m} imports the command line: {cli:?}");
        }
    }
}

/// No part imports a task: only main and the command line do, so that
/// what two tasks share lives in a part.
#[test]
fn no_part_imports_a_task() {
    for (m, used) in imports() {
        if !["tasks", "cli"].contains(&room(&m)) {
            let tasks: Vec<&String> = used.iter().filter(|u| room(u) == "tasks").collect();
            assert!(tasks.is_empty(), "{m} imports a task: {tasks:?}");
        }
    }
}

/// No task imports another (vmtest's room holds its own modes); the
/// tasks' room holds one room per task main knows.
#[test]
fn no_task_imports_another() {
    let uses = imports();
    for (m, used) in &uses {
        let Some(own) = task_room(m) else { continue };
        for u in used.iter().filter(|u| room(u) == "tasks") {
            assert_eq!(task_room(u).as_ref(), Some(&own), "{m} imports {u}");
        }
    }
    let mut rooms: Vec<String> = uses.keys().filter_map(|m| task_room(m)).collect();
    rooms.dedup();
    let mut tasks: Vec<String> = crate::cli::args::tasks()
        .iter()
        .map(|t| format!("tasks::{t}"))
        .collect();
    tasks.sort();
    assert_eq!(rooms, tasks);
}

/// The modules use each other in layers, without a cycle, and so do the
/// rooms.
#[test]
fn no_import_cycle() {
    let uses = imports();
    let modules: Vec<&str> = uses.keys().map(String::as_str).collect();
    let used: Vec<Vec<String>> = uses.values().cloned().collect();
    if let Some(cycle) = bpf_overhead_common::import_cycle::find(&modules, &used) {
        panic!("import cycle among xtask's modules: {}", cycle.join(" -> "));
    }
    let mut rooms: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (m, used) in &uses {
        let to = rooms.entry(room(m).to_owned()).or_default();
        for u in used.iter().map(|u| room(u).to_owned()) {
            if u != room(m) && !to.contains(&u) {
                to.push(u);
            }
        }
    }
    let names: Vec<&str> = rooms.keys().map(String::as_str).collect();
    let used: Vec<Vec<String>> = rooms.values().cloned().collect();
    if let Some(cycle) = bpf_overhead_common::import_cycle::find(&names, &used) {
        panic!("import cycle among xtask's rooms: {}", cycle.join(" -> "));
    }
}

/// A room a newcomer can take in: no folder of xtask/src holds more than
/// 10 files.
#[test]
fn no_folder_holds_more_than_10_files() {
    fn walk(dir: &Path, crowded: &mut Vec<String>, seen: &mut usize) {
        let mut files = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, crowded, seen);
            } else {
                files += 1;
            }
        }
        *seen += 1;
        if files > 10 {
            crowded.push(format!("{} ({files})", dir.display()));
        }
    }
    let (mut crowded, mut seen) = (Vec::new(), 0);
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut crowded,
        &mut seen,
    );
    assert!(seen > 5, "{seen} folders");
    assert!(crowded.is_empty(), "more than 10 files: {crowded:?}");
}
