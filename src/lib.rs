//! bpf-overhead: what it costs to attach a BPF program to a kernel or user
//! function, mechanism by mechanism — the kernel's test_overhead selftest
//! and bench rename/trigger benchmarks, in Rust with libbpf-rs.
//!
//! Layers, each using only those before it:
//!
//! 1. [`mod@measure`], the core: the catalogue of mechanisms, the triggers,
//!    loading and attaching, one timed run, the environment checks;
//! 2. [`pipeline`]: a validated plan, run as a warm-up and bracketed
//!    rounds, turned into a result [`document`] (with [`stats`]);
//! 3. [`render`] (pure functions of a document), [`gate`] (a document
//!    against a baseline document), [`expect`] (strict mode and a kernel's
//!    declared absences) and [`side_by_side`] (several documents side by side);
//! 4. the tests and the `bpf-overhead` command, which both go through the
//!    pipeline.

pub mod expect;
pub mod gate;
pub mod measure;
pub mod paired;
pub mod pipeline;
pub mod price;
pub mod render;
pub mod side_by_side;
pub mod stats;

// Shared with build.rs, xtask and the TCG plugin (common/).
pub use bpf_overhead_common::{document, env_vars, exit_status, kconfig, safe_write};

pub use measure::{Error, Mechanism, Result, Target, Trigger};

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The core's files, as (folder, module, text): `folder` is the
    /// sub-folder of src/measure/ (empty for its own files), without mod.rs.
    fn core_files() -> Vec<(String, String, String)> {
        let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
        let mut files = Vec::new();
        let mut dirs = vec![core.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let module = path.file_stem().unwrap().to_string_lossy().into_owned();
                if module == "mod" {
                    continue;
                }
                let folder = path.parent().unwrap().strip_prefix(&core).unwrap();
                let folder = folder.to_string_lossy().into_owned();
                files.push((folder, module, std::fs::read_to_string(&path).unwrap()));
            }
        }
        files.sort();
        files
    }

    /// The core knows nothing of the layers above it.
    #[test]
    fn the_core_imports_nothing_from_above() {
        let files = core_files();
        for (folder, module, text) in &files {
            for upper in [
                "pipeline",
                "document",
                "render",
                "gate",
                "side_by_side",
                "stats",
                "expect",
            ] {
                assert!(
                    !text.contains(&format!("crate::{upper}")),
                    "src/measure/{folder}/{module}.rs uses crate::{upper}: the core must not \
                     depend on the layers above it"
                );
            }
        }
        assert!(
            files.len() >= 20,
            "only {} files in src/measure",
            files.len()
        );
    }

    /// No folder of the core holds more than 10 files: a folder is one
    /// concern.
    #[test]
    fn no_core_folder_holds_more_than_10_files() {
        let files = core_files();
        for (folder, _, _) in &files {
            let n = files.iter().filter(|(f, _, _)| f == folder).count();
            assert!(n <= 10, "src/measure/{folder} holds {n} files");
        }
    }

    /// No two source files share a name: a name says which file it is.
    #[test]
    fn no_two_source_files_share_a_name() {
        fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, files);
                } else {
                    files.push(path);
                }
            }
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        files.sort();
        for (i, a) in files.iter().enumerate() {
            for b in &files[..i] {
                assert_ne!(
                    a.file_name(),
                    b.file_name(),
                    "{} and {}",
                    a.display(),
                    b.display()
                );
            }
        }
        assert!(files.len() > 20, "{files:?}");
    }

    /// The modules of `src/measure/` that `text` (one of them, its tests
    /// and comments left out) uses: `super::name`, `crate::measure::name`,
    /// nested groups (`super::{load::{self, Loaded}, sys}`), and a name
    /// that `measure/mod.rs` or `lib.rs` re-exports (`super::with_attached`,
    /// `crate::Error`), counted as a use of the module it comes from, so
    /// that a re-export cannot hide a cycle.
    fn core_imports(text: &str, modules: &[String], reexports: &[(String, String)]) -> Vec<String> {
        let text = &without_folders(text);
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or(text)
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = Vec::new();
        let mut add = |name: &str| {
            let module = if modules.iter().any(|m| m == name) {
                Some(name)
            } else {
                reexports
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, m)| m.as_str())
            };
            if let Some(m) = module {
                if !used.iter().any(|u: &String| u == m) {
                    used.push(m.to_string());
                }
            }
        };
        for prefix in ["super::", "crate::measure::", "crate::"] {
            for (at, _) in code.match_indices(prefix) {
                if prefix == "crate::" && code[at..].starts_with("crate::measure::") {
                    continue;
                }
                for name in first_names(&code[at + prefix.len()..]) {
                    add(&name);
                }
            }
        }
        used
    }

    /// The core's folders, each a module of `measure/mod.rs` that only
    /// declares its files.
    const FOLDERS: [&str; 7] = [
        "kernel",
        "cpu",
        "mechanism",
        "objects",
        "settings",
        "environment",
        "running",
    ];

    /// `text` with each folder's name left out of its paths
    /// (`crate::measure::running::run` reads `crate::measure::run`):
    /// file names are unique across the core.
    fn without_folders(text: &str) -> String {
        let mut out = text.to_string();
        for folder in FOLDERS {
            let from = format!("{folder}::");
            let mut kept = String::with_capacity(out.len());
            let mut rest = out.as_str();
            while let Some(at) = rest.find(&from) {
                let before = rest[..at].chars().next_back();
                let joins = before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                kept.push_str(&rest[..at]);
                if joins {
                    kept.push_str(&from);
                }
                rest = &rest[at + from.len()..];
            }
            kept.push_str(rest);
            out = kept;
        }
        out
    }

    /// The first name of each path at the start of `rest`: one path, or
    /// each top-level item of a `{...}` group.
    fn first_names(rest: &str) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let Some(group) = rest.strip_prefix('{') else {
            return vec![ident(rest)];
        };
        let (mut depth, mut items, mut start) = (0, Vec::new(), 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        items
    }

    /// `pub use module::{A, B};` lines of `text` as (name, module) pairs.
    fn reexports(text: &str, modules: &[String]) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for item in without_folders(text).split(';') {
            let item = item.trim();
            let Some(path) = item
                .rsplit("pub use ")
                .next()
                .filter(|_| item.contains("pub use "))
            else {
                continue;
            };
            let path = path.strip_prefix("measure::").unwrap_or(path);
            let Some((module, rest)) = path.split_once("::") else {
                continue;
            };
            if !modules.iter().any(|m| m == module) {
                continue;
            }
            for name in first_names(rest) {
                pairs.push((name, module.to_string()));
            }
        }
        pairs
    }

    #[test]
    fn the_import_finder_sees_through_groups_and_reexports() {
        let modules: Vec<String> = ["run", "support", "error"].map(String::from).to_vec();
        let reexports = reexports(
            "pub use run::{\n    timed_run, with_attached,\n};\npub use error::{Error, Result};",
            &modules,
        );
        assert_eq!(
            core_imports(
                "//! [`x`](super::run)\nuse super::{error::{self, Error}, with_attached};\nfn f(_: crate::Result<()>) {}",
                &modules,
                &reexports,
            ),
            ["error", "run"]
        );
    }

    /// The core's modules use each other in layers: no cycle (a module
    /// that needs one above it takes a name or a closure instead), and
    /// its folders are layers too.
    #[test]
    fn the_core_has_no_import_cycle() {
        let files = core_files();
        let modules: Vec<String> = files.iter().map(|(_, m, _)| m.clone()).collect();
        // crate::Error and the like resolve through the same names: lib.rs
        // re-exports only measure's re-exports.
        let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
        let reexported = reexports(
            &std::fs::read_to_string(core.join("mod.rs")).unwrap(),
            &modules,
        );
        let uses: Vec<Vec<String>> = files
            .iter()
            .map(|(_, name, text)| {
                let mut used = core_imports(text, &modules, &reexported);
                used.retain(|u| u != name);
                used
            })
            .collect();
        // The import finder finds what it should.
        let load = modules.iter().position(|m| m == "load").unwrap();
        assert!(uses[load].contains(&"catalogue".to_string()), "{uses:?}");
        assert!(uses[load].contains(&"libbpf_log".to_string()), "{uses:?}");
        let names: Vec<&str> = modules.iter().map(String::as_str).collect();
        if let Some(cycle) = bpf_overhead_common::import_cycle::find(&names, &uses) {
            panic!(
                "import cycle among src/measure/ modules: {}",
                cycle.join(" -> ")
            );
        }
        // The same, a folder for its files (a file at the top is its own).
        let folder = |i: usize| -> String {
            let (f, m, _) = &files[i];
            if f.is_empty() {
                m.clone()
            } else {
                f.clone()
            }
        };
        let mut folders: Vec<String> = (0..files.len()).map(folder).collect();
        folders.sort();
        folders.dedup();
        let mut folder_uses = vec![Vec::new(); folders.len()];
        for (i, used) in uses.iter().enumerate() {
            let from = folders.iter().position(|f| *f == folder(i)).unwrap();
            for u in used {
                let to = folder(modules.iter().position(|m| m == u).unwrap());
                if to != folders[from] && !folder_uses[from].contains(&to) {
                    folder_uses[from].push(to);
                }
            }
        }
        let names: Vec<&str> = folders.iter().map(String::as_str).collect();
        if let Some(cycle) = bpf_overhead_common::import_cycle::find(&names, &folder_uses) {
            panic!(
                "import cycle among src/measure/ folders: {}",
                cycle.join(" -> ")
            );
        }
    }

    #[test]
    fn folders_are_left_out_of_paths() {
        assert_eq!(
            without_folders(
                "use crate::measure::running::run;\nuse super::{kernel::tracefs, cpu::pin};"
            ),
            "use crate::measure::run;\nuse super::{tracefs, pin};"
        );
        assert_eq!(without_folders("my_kernel::x"), "my_kernel::x");
    }

    /// The Rust files under `dirs` (from the package root).
    fn rust_files(dirs: &[&str]) -> Vec<std::path::PathBuf> {
        fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, files);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in dirs {
            walk(&root.join(dir), &mut files);
        }
        files
    }

    /// No function of the crate, xtask or the tests runs past 100 lines,
    /// but the catalogue's one exhaustive match (`kind.rs`'s `spec`): a
    /// longer one does more than one thing. A function is counted from its
    /// `fn` line to the `}` at its indentation.
    #[test]
    fn no_function_runs_past_100_lines() {
        let files = rust_files(&["src", "xtask/src", "tests", "tcg-plugin/src"]);
        let mut long = Vec::new();
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let mut code = line.trim_start();
                let indent = &line[..line.len() - code.len()];
                // `pub(crate) const unsafe extern "C" fn` and the like.
                while let Some(rest) = ["pub ", "const ", "async ", "unsafe ", "extern \"C\" "]
                    .iter()
                    .find_map(|q| code.strip_prefix(q))
                    .or_else(|| code.strip_prefix("pub(")?.split_once(") ").map(|(_, r)| r))
                {
                    code = rest;
                }
                let Some(name) = code.strip_prefix("fn ") else {
                    continue;
                };
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let end = lines[i + 1..]
                    .iter()
                    .position(|l| *l == format!("{indent}}}"));
                let len = end.map_or(0, |e| e + 2);
                if len > 100 && !(name == "spec" && path.ends_with("kind.rs")) {
                    long.push(format!("{}: {name} ({len})", path.display()));
                }
            }
        }
        assert!(long.is_empty(), "functions past 100 lines: {long:?}");
    }

    /// No source file of the crate or of xtask is longer than 600 lines
    /// before its tests: a longer one holds more than one concern.
    #[test]
    fn no_source_file_is_longer_than_600_lines_before_its_tests() {
        let files = rust_files(&["src", "xtask/src"]);
        assert!(files.len() > 40, "{files:?}");
        let long: Vec<String> = files
            .iter()
            .filter_map(|path| {
                let text = std::fs::read_to_string(path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
                let lines = code.lines().count();
                (lines > 600).then(|| format!("{} ({lines})", path.display()))
            })
            .collect();
        assert!(long.is_empty(), "longer than 600 lines: {long:?}");
    }
}
