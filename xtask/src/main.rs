//! The project's tooling, run as `cargo xtask TASK` (an alias in .cargo/config.toml).
//!
//! Tasks:
//! - `vmtest KERNEL [-- TEST-ARGS]`: run the test suite in a VM booted on another
//!   kernel (a Debian kernel by series or release, or one you built).
//! - `ci`: what .ci/run runs: lint, host tests, every CI kernel in a VM, the report.
//! - `kselftest --out DIR`: the suite as a kselftest collection, its install
//!   layout and tarball, the programs static (docs/kernel-ci.md).
//! - `flakes`: the README's test command N times alone, beside a CPU hog and
//!   beside disk writes, and how often each test failed (docs/suite.md).
//!
//! Three layers, each importing only from those under it (the tests below
//! check it):
//! 1. [`util`], the helpers every module shares: it imports no other module;
//! 2. the parts: the command line ([`args`]), kernels and their images, the
//!    initramfs, the guest's build and job, qemu, the output directory, the
//!    summary, the table of a CI run; they import each other without a cycle;
//! 3. one module per task, [`vmtest`] (and [`duet`], vmtest with `--against`,
//!    and [`exact`], with `--against --exact`),
//!    [`ci`] and [`kselftest`]: no part imports a task and no task another,
//!    so what two tasks share is a part.

// The tasks.
mod ci;
mod duet;
mod exact;
mod flakes;
mod kselftest;
mod vmtest;

// The parts.
mod arch;
mod args;
mod arm64;
mod arm64_image;
mod collect;
mod cpio;
mod debian;
// The names it shares with the suite, from the main crate's one list
// (xtask does not depend on the main crate: that would build its BPF).
#[path = "../../src/env_vars.rs"]
mod env_vars;
mod guest_build;
mod help;
mod image;
// Kernel configs: parsed, digested, compared; shared with the main crate.
#[path = "../../src/kconfig.rs"]
mod kconfig;
// The layer tests' cycle finder, shared with the main crate's.
#[cfg(test)]
#[path = "../../src/import_cycle.rs"]
mod import_cycle;
mod initramfs;
mod job;
mod kernel;
mod lint;
mod modules;
mod out;
mod selftests;
mod static_build;
mod summary;
mod vm;

mod util;

use std::process::ExitCode;

use args::Parsed;

/// The tasks, each its module's name.
const TASKS: &[&str] = &["vmtest", "ci", "kselftest", "flakes"];
/// The modules of the tasks: each task's, and `duet`, vmtest's with
/// `--against`.
#[cfg(test)]
const TASK_MODULES: &[&str] = &["vmtest", "duet", "exact", "ci", "kselftest", "flakes"];

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let env_accel = std::env::var("VMTEST_ACCEL").ok();
    let code = match args::parse(&argv, env_accel.as_deref()) {
        Ok(Parsed::Help(h)) => {
            print!("{h}");
            0
        }
        Ok(Parsed::Vmtest(a)) if a.against.is_some() && a.exact => exact::main(*a),
        Ok(Parsed::Vmtest(a)) if a.against.is_some() => duet::main(*a),
        Ok(Parsed::Vmtest(a)) => vmtest::main(*a),
        Ok(Parsed::Ci(c)) => ci::main(c),
        Ok(Parsed::Kselftest(k)) => kselftest::main(k),
        Ok(Parsed::Flakes(f)) => flakes::main(f),
        Err(e) => {
            let task = argv
                .first()
                .map(String::as_str)
                .filter(|t| TASKS.contains(t))
                .unwrap_or("xtask");
            eprintln!("{task}: {e:#}");
            2
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::TASK_MODULES;

    /// Each module of xtask/src (main.rs aside) and the modules its code
    /// uses (`crate::name`, `use crate::{a, b::c}`, an exported macro by its
    /// module), its tests and comments left out.
    fn imports() -> BTreeMap<String, Vec<String>> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut code = BTreeMap::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.extension().is_some_and(|x| x == "rs") && name != "main" {
                let text = std::fs::read_to_string(&p).unwrap();
                let text = text.split("#[cfg(test)]").next().unwrap_or("");
                let lines: Vec<&str> = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect();
                code.insert(name, lines.join("\n"));
            }
        }
        // `crate::say` is util's macro.
        let mut owner: BTreeMap<String, String> = BTreeMap::new();
        for (m, text) in &code {
            owner.insert(m.clone(), m.clone());
            for (at, _) in text.match_indices("macro_rules! ") {
                owner.insert(ident(&text[at + 13..]), m.clone());
            }
        }
        code.iter()
            .map(|(m, text)| {
                let mut used: Vec<String> = Vec::new();
                for (at, _) in text.match_indices("crate::") {
                    for name in top_names(&text[at + 7..]) {
                        if let Some(o) = owner.get(&name).filter(|o| *o != m) {
                            if !used.contains(o) {
                                used.push(o.clone());
                            }
                        }
                    }
                }
                used.sort();
                (m.clone(), used)
            })
            .collect()
    }

    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }

    /// The first names of the paths at the start of `rest`, which follows a
    /// `crate::`: `a::b` gives a, `{a::{b, c}, d}` gives a and d.
    fn top_names(rest: &str) -> Vec<String> {
        let Some(group) = rest.strip_prefix('{') else {
            return vec![ident(rest)];
        };
        let (mut names, mut depth, mut start) = (Vec::new(), 0, true);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => start = true,
                c if start && !c.is_whitespace() => {
                    names.push(ident(&group[i..]));
                    start = false;
                }
                _ => {}
            }
        }
        names
    }

    #[test]
    fn the_import_finder_finds_what_it_should() {
        assert_eq!(top_names("vm::{self, Vm};"), ["vm"]);
        assert_eq!(
            top_names("{image::{self, BzImage}, util::{fnv, which},\n say};"),
            ["image", "util", "say"]
        );
        let uses = imports();
        assert!(uses["vmtest"].contains(&"kernel".to_owned()), "{uses:?}");
        assert!(uses["debian"].contains(&"util".to_owned()), "say! {uses:?}");
        assert!(
            !uses["args"].contains(&"guest_build".to_owned()),
            "a doc link"
        );
    }

    /// util is under every other module: it imports none.
    #[test]
    fn util_imports_no_module() {
        assert_eq!(imports()["util"], Vec::<String>::new());
    }

    /// A task's module is used by main alone: no part imports a task and no
    /// task another, so that what two tasks share lives in a part.
    #[test]
    fn no_module_imports_a_task() {
        let uses = imports();
        for task in TASK_MODULES {
            assert!(uses.contains_key(*task), "no module {task}");
            for (m, used) in &uses {
                assert!(!used.contains(&task.to_string()), "{m} imports {task}");
            }
        }
    }

    /// The modules use each other in layers, without a cycle.
    #[test]
    fn no_import_cycle() {
        let uses = imports();
        let modules: Vec<&str> = uses.keys().map(String::as_str).collect();
        let used: Vec<Vec<String>> = uses.values().cloned().collect();
        if let Some(cycle) = crate::import_cycle::find(&modules, &used) {
            panic!("import cycle among xtask's modules: {}", cycle.join(" -> "));
        }
    }
}
