//! The documentation against the tree: docs/layout.md names every source
//! file and no file that is gone, the README's quick start is the two
//! commands it promises, the second the one `cargo xtask ci` runs, and the
//! tests share the one helper layout.md describes (tests/common/). No root
//! needed.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

mod common;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Where the source files are: every one of them must be in layout.md.
const SOURCE_DIRS: [&str; 7] = [
    "src",
    "common/src",
    "xtask/src",
    "bpf",
    "tests/common",
    "examples",
    "research",
];
const SOURCE_EXTS: [&str; 4] = ["rs", "c", "h", "sh"];

fn is_source(path: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|ext| SOURCE_EXTS.iter().any(|e| ext == *e))
}

fn read(path: &str) -> String {
    fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The source files under `dir` (relative to the root), relative to the
/// root, with `/` between the parts.
fn source_files(dir: &str, into: &mut BTreeSet<String>) {
    for entry in fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
        let entry = entry.unwrap();
        let path = format!("{dir}/{}", entry.file_name().to_string_lossy());
        if entry.file_type().unwrap().is_dir() {
            source_files(&path, into);
        } else if is_source(&path) {
            into.insert(path);
        }
    }
}

/// What is in backticks in `text`.
fn spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// The paths layout.md names: every span, as written (a path from the
/// root: `src/gate.rs`), and in a table row whose first cell names a
/// directory (`src/measure/`), every span of the row below that directory
/// too (`catalogue.rs` there is `src/measure/mechanism/catalogue.rs`).
fn named_in_layout() -> BTreeSet<String> {
    let layout = read("docs/layout.md");
    let mut named: BTreeSet<String> = spans(&layout).map(str::to_owned).collect();
    for row in layout.lines().filter(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        for dir in spans(first).filter(|s| s.ends_with('/')) {
            named.extend(spans(row).map(|s| format!("{dir}{s}")));
        }
    }
    named
}

#[test]
fn layout_names_every_source_file() {
    let mut files = BTreeSet::new();
    for dir in SOURCE_DIRS {
        source_files(dir, &mut files);
    }
    files.insert("build.rs".into());
    let named = named_in_layout();
    let missing: Vec<&String> = files.difference(&named).collect();
    assert!(
        missing.is_empty(),
        "docs/layout.md does not name these source files (by their path in backticks, or by \
         their name in backticks in the table row of their directory):\n{}",
        missing
            .iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A file layout.md's table names exists: a split or a rename updates it.
#[test]
fn layout_names_no_file_that_is_gone() {
    let layout = read("docs/layout.md");
    let mut gone = Vec::new();
    for row in layout.lines().filter(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        let dirs: Vec<&str> = spans(first).filter(|s| s.ends_with('/')).collect();
        for span in spans(row) {
            if !is_source(span) || span.contains([' ', '*']) {
                continue;
            }
            let exists = |path: &str| Path::new(ROOT).join(path).is_file();
            if !exists(span) && !dirs.iter().any(|dir| exists(&format!("{dir}{span}"))) {
                gone.push(span);
            }
        }
    }
    assert!(
        gone.is_empty(),
        "docs/layout.md's table names files that are not there: {gone:?}"
    );
}

/// The README's quick start: two commands, the main job and the tests,
/// and the tests as `cargo xtask ci` runs them (its host-tests step), so
/// that CI runs what the README tells a newcomer to run.
#[test]
fn the_readme_quick_start_is_what_ci_runs() {
    let readme = read("README.md");
    let start = readme
        .split_once("## Quick start")
        .expect("README.md has a quick start")
        .1;
    let block = start
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the quick start has a sh block")
        .0;
    let commands: Vec<&str> = block.lines().collect();
    assert_eq!(
        commands.len(),
        2,
        "the quick start is two commands: {commands:?}"
    );
    assert!(
        commands[0].contains("cargo sudo-run"),
        "the first command runs the main job: {}",
        commands[0]
    );
    let test = commands[1]
        .strip_prefix("scripts/setup && cargo ")
        .expect("the second command sets up and runs cargo");
    // As xtask writes cargo's arguments: ["sudo-test", "--", "--nocapture"].
    let args: Vec<String> = test.split_whitespace().map(|a| format!("{a:?}")).collect();
    let in_xtask = format!("[{}]", args.join(","));
    let mut xtask = BTreeSet::new();
    source_files("xtask/src", &mut xtask);
    let unspaced = |text: &str| text.split_whitespace().collect::<String>();
    assert!(
        xtask.iter().any(|f| unspaced(&read(f)).contains(&in_xtask)),
        "no file in xtask/src runs cargo with {in_xtask}, the README's test command"
    );
}

/// The suite's one test helper: every test file has `mod common;`, none
/// pulls a helper in by `#[path]`, and the binary's path, the root check,
/// the spawn of the binary and the private mount namespace are each
/// written in one file of tests/common/ (issue 51: each was written up to
/// six times).
#[test]
fn the_tests_share_one_helper() {
    let mut rust = BTreeSet::new();
    source_files("tests", &mut rust);
    rust.retain(|f| f.ends_with(".rs"));
    let texts: Vec<(&String, String)> = rust.iter().map(|f| (f, read(f))).collect();
    let test_files = texts
        .iter()
        .filter(|(f, _)| Path::new(f).parent() == Some(Path::new("tests")));
    let without: Vec<&String> = test_files
        .filter(|(_, text)| !text.lines().any(|l| l == "mod common;"))
        .map(|(f, _)| *f)
        .collect();
    assert!(
        without.is_empty(),
        "test files without `mod common;`: {without:?}"
    );
    // Spelt in pieces, so that this file does not hold them.
    let by_path = concat!("#[path = ", "\"common");
    let once = [
        (
            concat!("env!(\"CARGO_BIN_EXE_", "bpf-overhead\")"),
            "tests/common/cli.rs",
        ),
        (concat!("geteuid", "()"), "tests/common/system.rs"),
        (concat!("fn ", "spawn("), "tests/common/cli.rs"),
        (concat!("CLONE_", "NEWNS"), "tests/common/system.rs"),
    ];
    let holding = |needle: &str| -> Vec<&str> {
        texts
            .iter()
            .filter(|(_, text)| text.contains(needle))
            .map(|(f, _)| f.as_str())
            .collect()
    };
    assert_eq!(
        holding(by_path),
        Vec::<&str>::new(),
        "use `mod common;` instead"
    );
    for (needle, file) in once {
        assert_eq!(
            holding(needle),
            [file],
            "{needle} belongs in {file} alone: use it from there"
        );
    }
}

/// One line per folder or file: no cell of layout.md's table runs past
/// 300 characters.
#[test]
fn layout_cells_are_short() {
    let layout = read("docs/layout.md");
    let long: Vec<&str> = layout
        .lines()
        .filter(|l| l.starts_with('|'))
        .flat_map(|row| row.split('|'))
        .filter(|cell| cell.trim().chars().count() > 300)
        .collect();
    assert!(long.is_empty(), "cells over 300 characters: {long:?}");
}

/// The exit statuses are documented once, from their one list: each of
/// `common/src/exit_status.rs`'s rows is a row of docs/gate.md's table, and a
/// line of `bpf-overhead --help`.
#[test]
fn the_exit_statuses_are_the_one_list_everywhere() {
    let gate = read("docs/gate.md");
    let help = common::cli::run_ok(&["--help"]).stdout;
    for (code, what) in bpf_overhead::exit_status::TABLE {
        let row = format!("| {code} | {what} |");
        assert!(gate.contains(&row), "docs/gate.md lacks the row {row}");
        let line = format!("  {code:<4}{what}");
        assert!(help.contains(&line), "--help lacks the line {line:?}");
    }
}

/// The most words a user page may have: a page read in minutes.
const MOST_WORDS: usize = 2000;

/// Pages of docs/ that are not read through: layout.md and
/// architecture.md are for who changes the code, and json-schema.md is
/// a field reference, looked up a field at a time, whose tables
/// tests/cli_schema.rs checks against a real run's output.
const NOT_READ_THROUGH: [&str; 3] = ["architecture.md", "layout.md", "json-schema.md"];

/// The user pages: docs/*.md, less [`NOT_READ_THROUGH`] (docs/notes/
/// holds the research, and is not one of them).
fn user_pages() -> Vec<String> {
    let mut pages: Vec<String> = fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md") && !NOT_READ_THROUGH.contains(&name.as_str()))
        .collect();
    pages.sort();
    pages
}

/// A user page says what to run and what the output means, and the
/// research goes to docs/notes/: no user page has more than
/// [`MOST_WORDS`] words. A word is what `wc -w` counts: a run of
/// characters between whitespace, over the whole file, code blocks and
/// tables included.
#[test]
fn user_pages_read_in_minutes() {
    let pages = user_pages();
    assert!(pages.len() > 10, "only {pages:?}");
    let long: Vec<String> = pages
        .iter()
        .map(|page| {
            (
                page,
                read(&format!("docs/{page}")).split_whitespace().count(),
            )
        })
        .filter(|(_, words)| *words > MOST_WORDS)
        .map(|(page, words)| format!("docs/{page}: {words} words"))
        .collect();
    assert!(
        long.is_empty(),
        "user pages over {MOST_WORDS} words (move the research to docs/notes/): {long:?}"
    );
}

/// The most words of docs/architecture.md: the layers and the rules on
/// them, read through before a change, not every file (layout.md's).
const ARCHITECTURE_WORDS: usize = 1500;

#[test]
fn the_architecture_page_is_read_in_minutes() {
    let words = read("docs/architecture.md").split_whitespace().count();
    assert!(
        words <= ARCHITECTURE_WORDS,
        "docs/architecture.md has {words} words, over {ARCHITECTURE_WORDS}: name the layers \
         and rules there, each file in layout.md"
    );
}

#[test]
fn the_readme_links_the_changed_kernel_page() {
    assert!(
        read("README.md").contains("](docs/changed-kernel.md)"),
        "README.md does not link docs/changed-kernel.md"
    );
}

/// The Markdown pages whose links are checked: README.md, docs/ and
/// docs/notes/, relative to the root.
fn pages_with_links() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    for dir in ["docs", "docs/notes"] {
        let mut names: Vec<String> = fs::read_dir(Path::new(ROOT).join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".md"))
            .map(|name| format!("{dir}/{name}"))
            .collect();
        names.sort();
        pages.extend(names);
    }
    pages
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors GitHub gives `text`'s headings: lower case, what is not a
/// letter, digit, `-`, `_` or space dropped, spaces as `-`, a repeat
/// numbered.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(text) {
        let Some(heading) = line.trim_start_matches('#').strip_prefix(' ') else {
            continue;
        };
        if !line.starts_with('#') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = slug.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// `[text](target)` links of `line`.
fn links(line: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let text = rest[..i].rsplit('[').next().unwrap_or_default();
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push((text, &after[..end]));
        rest = &after[end..];
    }
    out
}

/// Every relative link in README.md, docs/ and docs/notes/ reaches a file
/// that is there, and a heading of it where it names one; a link whose
/// text is a file name (`[gate.md](...)`) links that file. Pages move
/// research to docs/notes/: a moved section must not leave a dead link.
#[test]
fn the_docs_links_reach_what_they_name() {
    let mut bad = Vec::new();
    for page in pages_with_links() {
        let text = read(&page);
        let dir = Path::new(&page).parent().unwrap();
        for line in prose(&text) {
            for (label, target) in links(line) {
                if target.contains(':') || target.contains(' ') {
                    continue;
                }
                let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
                let path = if file.is_empty() {
                    Path::new(&page).to_path_buf()
                } else {
                    dir.join(file)
                };
                let full = Path::new(ROOT).join(&path);
                if !full.exists() {
                    bad.push(format!("{page}: {target}: no such file"));
                    continue;
                }
                if !anchor.is_empty() && path.extension().is_some_and(|e| e == "md") {
                    let there = fs::read_to_string(&full).unwrap();
                    if !anchors(&there).contains(anchor) {
                        bad.push(format!("{page}: {target}: no such heading"));
                    }
                }
                let label = label.trim_matches('`');
                let names_a_file = label.ends_with(".md")
                    && label
                        .chars()
                        .all(|c| c.is_alphanumeric() || "./-_".contains(c));
                if names_a_file && !file.ends_with(label) && !label.ends_with(file) {
                    bad.push(format!("{page}: [{label}]({target}) links another file"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
