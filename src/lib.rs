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

pub mod document;
pub mod env_vars;
pub mod expect;
pub mod gate;
#[cfg(test)]
mod import_cycle;
pub mod measure;
pub mod paired;
pub mod pipeline;
pub mod render;
pub mod side_by_side;
pub mod stats;

pub use measure::{Error, Mechanism, Result, Target, Trigger};

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The core knows nothing of the layers above it.
    #[test]
    fn the_core_imports_nothing_from_above() {
        let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
        let mut checked = 0;
        for entry in std::fs::read_dir(&core).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for upper in [
                "pipeline",
                "document",
                "render",
                "gate",
                "side_by_side",
                "stats",
                "expect",
            ] {
                for pattern in [format!("crate::{upper}"), format!("super::super::{upper}")] {
                    assert!(
                        !text.contains(&pattern),
                        "{} uses {pattern}: the core must not depend on the layers above it",
                        path.display()
                    );
                }
            }
            checked += 1;
        }
        assert!(checked >= 6, "only {checked} files in {}", core.display());
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
    /// left out) uses: `super::name` and `crate::measure::name`.
    fn core_imports(text: &str, modules: &[String]) -> Vec<String> {
        let code = text.split("#[cfg(test)]").next().unwrap_or(text);
        let mut used = Vec::new();
        for prefix in ["super::", "crate::measure::"] {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                let names = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or(""),
                    None => rest,
                };
                for path in names.split(',') {
                    let name: String = path
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if modules.contains(&name) && !used.contains(&name) {
                        used.push(name);
                    }
                }
            }
        }
        used
    }

    /// The core's modules use each other in layers: no cycle (a module
    /// that needs one above it takes a name or a closure instead).
    #[test]
    fn the_core_has_no_import_cycle() {
        let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
        let mut files: Vec<(String, String)> = std::fs::read_dir(&core)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_stem().is_some_and(|s| s != "mod"))
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        files.sort();
        let modules: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
        let uses: Vec<Vec<String>> = files
            .iter()
            .map(|(name, text)| {
                let mut used = core_imports(text, &modules);
                used.retain(|u| u != name);
                used
            })
            .collect();
        // The import finder finds what it should.
        let load = modules.iter().position(|m| m == "load").unwrap();
        assert!(uses[load].contains(&"catalogue".to_string()), "{uses:?}");
        let names: Vec<&str> = modules.iter().map(String::as_str).collect();
        if let Some(cycle) = crate::import_cycle::find(&names, &uses) {
            panic!(
                "import cycle among src/measure/ modules: {}",
                cycle.join(" -> ")
            );
        }
    }
}
