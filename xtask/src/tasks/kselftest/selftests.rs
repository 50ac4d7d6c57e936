//! kselftest's own files and rules, read rather than restated: the kernel's
//! tools/testing/selftests from a Debian linux-source package (fetched by
//! scripts/lib/linux-source.sh through its private apt, never installed),
//! which files its Makefile's `install` copies (run_kselftest.sh and
//! kselftest/'s runner.sh, ktap_helpers.sh, ...), `gen_tar`'s compression,
//! and the collection's lists from its own lib.mk Makefile
//! (kselftest/bpf_overhead/Makefile: TEST_PROGS, TEST_FILES, ...).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{ensure, Context, Result};

use crate::util::shown;

/// The script that fetches and unpacks kselftest's files.
pub const LINUX_SOURCE: &str = "scripts/lib/linux-source.sh";

/// The collection's directory in the repository: the in-tree drop-in.
pub const DROP_IN: &str = "kselftest/bpf_overhead";

/// The collection's name: its directory in a kernel tree and in the
/// install layout, and the `COLLECTION:` of kselftest-list.txt.
pub const COLLECTION: &str = "bpf_overhead";

/// The kernel's tools/testing/selftests, from `source` (a linux-source-X.Y
/// package) or the newest apt knows; cached, so only the first call
/// downloads.
pub fn fetch_tree(repo: &Path, source: Option<&str>) -> Result<PathBuf> {
    let mut cmd = Command::new("bash");
    cmd.arg(repo.join(LINUX_SOURCE))
        .arg("--kselftest")
        .args(source)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .with_context(|| format!("running {}", shown(&cmd)))?;
    ensure!(out.status.success(), "{} failed", shown(&cmd));
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = PathBuf::from(text.lines().last().unwrap_or_default().trim());
    let sel = dir.join("tools/testing/selftests");
    ensure!(
        sel.join("Makefile").is_file(),
        "{LINUX_SOURCE} gave no kernel tree with tools/testing/selftests/Makefile ({})",
        dir.display()
    );
    Ok(sel)
}

/// A Makefile's logical lines: `\`-continued ones joined.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        match l.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(l);
                lines.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// What the selftests Makefile's `install` recipe copies of kselftest's
/// own files: each `install -m MODE FILE $(INSTALL_PATH)/DIR` line, as
/// (FILE, DIR), relative to tools/testing/selftests and to the install
/// directory. The recipe being the kernel's, the layout follows its
/// version (6.12 has no ksft.py, 7.x does).
pub fn runner_files(makefile: &str) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    let mut in_install = false;
    for l in makefile.lines() {
        if l.starts_with("install:") {
            in_install = true;
            continue;
        }
        if !in_install {
            continue;
        }
        if !l.starts_with('\t') && !l.trim().is_empty() && !l.starts_with("ifdef") {
            break;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        if let ["install", "-m", _, file, dest] = words.as_slice() {
            if let Some(dir) = dest.strip_prefix("$(INSTALL_PATH)") {
                files.push(((*file).to_owned(), dir.trim_matches('/').to_owned()));
            }
        }
    }
    ensure!(
        files.iter().any(|(f, _)| f == "run_kselftest.sh")
            && files.iter().any(|(f, _)| f == "kselftest/runner.sh"),
        "the selftests Makefile's install recipe copies no run_kselftest.sh and kselftest/runner.sh"
    );
    Ok(files)
}

/// `gen_tar`'s compression: the Makefile's `FORMAT ?= .gz` (the tarball is
/// kselftest-packages/kselftest.tar$(FORMAT)).
pub fn tar_format(makefile: &str) -> String {
    makefile
        .lines()
        .find_map(|l| l.strip_prefix("FORMAT ?="))
        .map_or(".gz", str::trim)
        .to_owned()
}

/// The words of a `NAME := ...` (or `=`, `+=`) in a Makefile, in order.
pub fn make_var(makefile: &str, name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for l in logical_lines(makefile) {
        let Some(rest) = l.strip_prefix(name) else {
            continue;
        };
        let rest = rest.trim_start();
        let value = ["+=", ":=", "?=", "="]
            .iter()
            .find_map(|op| rest.strip_prefix(op));
        if let Some(v) = value {
            if !rest.starts_with("+=") {
                words.clear();
            }
            words.extend(
                v.split('#')
                    .next()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(String::from),
            );
        }
    }
    words
}

/// The collection's lists, from its lib.mk Makefile.
#[derive(Debug, PartialEq, Eq)]
pub struct Collection {
    /// The tests kselftest runs (TEST_PROGS: scripts).
    pub tests: Vec<String>,
    /// Files the tests read (TEST_FILES).
    pub files: Vec<String>,
    /// The built programs the tests run (TEST_GEN_PROGS_EXTENDED).
    pub programs: Vec<String>,
    /// Built files (TEST_GEN_FILES): the declared absences.
    pub gen_files: Vec<String>,
}

impl Collection {
    pub fn from_makefile(text: &str) -> Result<Collection> {
        let c = Collection {
            tests: make_var(text, "TEST_PROGS"),
            files: make_var(text, "TEST_FILES"),
            programs: make_var(text, "TEST_GEN_PROGS_EXTENDED"),
            gen_files: make_var(text, "TEST_GEN_FILES"),
        };
        ensure!(
            !c.tests.is_empty() && !c.programs.is_empty(),
            "{DROP_IN}/Makefile names no TEST_PROGS or TEST_GEN_PROGS_EXTENDED"
        );
        ensure!(
            make_var(text, "TEST_GEN_PROGS").is_empty(),
            "{DROP_IN}/Makefile: the programs are TEST_GEN_PROGS_EXTENDED (run by the tests, not by kselftest)"
        );
        Ok(c)
    }

    /// kselftest-list.txt, as lib.mk's `emit_tests` writes it: one
    /// `COLLECTION:TEST` a line.
    pub fn list(&self) -> String {
        self.tests
            .iter()
            .map(|t| format!("{COLLECTION}:{t}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::repo_root;

    const SELFTESTS_MAKEFILE: &str = "\
TEST_LIST := $(INSTALL_PATH)/kselftest-list.txt
install: all
ifdef INSTALL_PATH
\t@# Ask all targets to install their files
\tmkdir -p $(INSTALL_PATH)/kselftest
\tinstall -m 744 kselftest/module.sh $(INSTALL_PATH)/kselftest/
\tinstall -m 744 kselftest/runner.sh $(INSTALL_PATH)/kselftest/
\tinstall -m 744 kselftest/prefix.pl $(INSTALL_PATH)/kselftest/
\tinstall -m 744 kselftest/ktap_helpers.sh $(INSTALL_PATH)/kselftest/
\tinstall -m 744 run_kselftest.sh $(INSTALL_PATH)/
\trm -f $(TEST_LIST)
else
\t$(error Error: set INSTALL_PATH to use install)
endif

FORMAT ?= .gz
TAR_PATH = $(abspath ${INSTALL_PATH}/kselftest-packages/kselftest.tar${FORMAT})
install2:
\tinstall -m 744 other.sh $(INSTALL_PATH)/
";

    #[test]
    fn the_install_recipe_names_the_runner_files() {
        let files = runner_files(SELFTESTS_MAKEFILE).unwrap();
        assert_eq!(
            files,
            [
                ("kselftest/module.sh", "kselftest"),
                ("kselftest/runner.sh", "kselftest"),
                ("kselftest/prefix.pl", "kselftest"),
                ("kselftest/ktap_helpers.sh", "kselftest"),
                ("run_kselftest.sh", ""),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert!(runner_files("install:\n\techo\n").is_err());
        assert_eq!(tar_format(SELFTESTS_MAKEFILE), ".gz");
        assert_eq!(tar_format(""), ".gz");
    }

    #[test]
    fn make_variables() {
        let mk = "TEST_PROGS := a.sh \\\n\tb.sh # two\nTEST_FILES = x\nTEST_FILES += y\nTEST_PROGS_EXTENDED := z\n";
        assert_eq!(make_var(mk, "TEST_PROGS"), ["a.sh", "b.sh"]);
        assert_eq!(make_var(mk, "TEST_FILES"), ["x", "y"]);
        assert!(make_var(mk, "TEST_GEN_FILES").is_empty());
    }

    /// The drop-in's Makefile: its tests are scripts, its programs are
    /// run by them, and every file it names is in the repository.
    #[test]
    fn the_drop_in_collection() {
        let dir = repo_root().join(DROP_IN);
        let c = Collection::from_makefile(&std::fs::read_to_string(dir.join("Makefile")).unwrap())
            .unwrap();
        for f in c.tests.iter().chain(&c.files) {
            assert!(dir.join(f).is_file(), "{DROP_IN}/{f}");
        }
        assert_eq!(c.list().lines().count(), c.tests.len());
        assert!(c.list().starts_with("bpf_overhead:"), "{}", c.list());
        assert!(c.programs.contains(&"bpf-overhead".to_owned()));
        for f in ["settings", "config"] {
            assert!(dir.join(f).is_file(), "{DROP_IN}/{f}");
        }
        let settings = std::fs::read_to_string(dir.join("settings")).unwrap();
        assert!(settings.lines().any(|l| l.starts_with("timeout=")));
    }
}
