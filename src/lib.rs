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

    use bpf_overhead_common::imports;

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

    /// The module of the core a path from the crate's root names: its
    /// first name after `measure::` and the folders (file names are unique
    /// across the core), or the module a re-exported name comes from.
    fn core_module<'m>(
        path: &str,
        modules: &'m [String],
        reexports: &'m [(String, String)],
    ) -> Option<&'m String> {
        let names: Vec<&str> = path.split("::").collect();
        let names = names.strip_prefix(&["measure"]).unwrap_or(&names);
        let first = *names.iter().find(|n| !FOLDERS.contains(n))?;
        modules
            .iter()
            .find(|m| *m == first)
            .or_else(|| reexports.iter().find(|(n, _)| n == first).map(|(_, m)| m))
    }

    /// The modules of `src/measure/` that `text`, the file of `module`
    /// (`measure::running::run`), uses, as common's import parser reads
    /// it: `super::name`, `crate::measure::name`, nested groups, and a
    /// name that `measure/mod.rs` or `lib.rs` re-exports (`crate::Error`),
    /// counted as a use of the module it comes from, so that a re-export
    /// cannot hide a cycle.
    fn core_imports(
        module: &str,
        text: &str,
        modules: &[String],
        reexports: &[(String, String)],
    ) -> Vec<String> {
        let mut used: Vec<String> = Vec::new();
        for path in imports::paths_in(module, &imports::code(text)) {
            if let Some(m) = core_module(&path, modules, reexports) {
                if !used.contains(m) {
                    used.push(m.clone());
                }
            }
        }
        used
    }

    /// `pub use module::{A, B};` lines of `text` (measure/mod.rs) as
    /// (name, module) pairs.
    fn reexports(text: &str, modules: &[String]) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for item in imports::code(text).split(';') {
            let Some((_, path)) = item.split_once("pub use ") else {
                continue;
            };
            for path in imports::tree(path) {
                let name = path.rsplit("::").next().unwrap_or_default().to_owned();
                if let Some(m) = core_module(&path, modules, &[]) {
                    pairs.push((name, m.clone()));
                }
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
                "measure::support",
                "//! [`x`](super::run)\nuse super::{error::{self, Error}, with_attached};\nfn f(_: crate::Result<()>) {}",
                &modules,
                &reexports,
            ),
            ["error", "run"]
        );
        // A folder is no module: its files are.
        assert_eq!(
            core_imports(
                "measure::environment::support",
                "use crate::measure::running::run;\nuse super::super::kernel::{tracefs, error};",
                &modules,
                &reexports,
            ),
            ["run", "error"]
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
            .map(|(folder, name, text)| {
                let module = match folder.as_str() {
                    "" => format!("measure::{name}"),
                    f => format!("measure::{f}::{name}"),
                };
                let mut used = core_imports(&module, text, &modules, &reexported);
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

    /// No function of the crate, xtask, the tests or research/ runs past 80 lines,
    /// but the catalogue's one exhaustive match (`kind.rs`'s `spec`): a
    /// longer one does more than one thing. A function is counted from its
    /// `fn` line to the `}` at its indentation.
    #[test]
    fn no_function_runs_past_80_lines() {
        let files = rust_files(&[
            "src",
            "common/src",
            "xtask/src",
            "tests",
            "tcg-plugin/src",
            "research",
        ]);
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
                if len > 80 && !(name == "spec" && path.ends_with("kind.rs")) {
                    long.push(format!("{}: {name} ({len})", path.display()));
                }
            }
        }
        assert!(long.is_empty(), "functions past 80 lines: {long:?}");
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
