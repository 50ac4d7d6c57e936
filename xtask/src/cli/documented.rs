//! Every `cargo xtask ...` command line in README.md and docs/*.md's code
//! blocks parses with [`args::parse`] (a vmtest line is checked too): the
//! docs cannot show an option a task lacks. Lines with placeholders
//! (`KERNEL`, `[...]`, `$VAR`) are skipped.

use std::fs;
use std::path::Path;

use bpf_overhead_common::documented::{command_lines, has_placeholder, pages};

use super::args;

#[test]
fn every_documented_xtask_line_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (mut parsed, mut failures) = (0, Vec::new());
    for page in pages(&root) {
        let text = fs::read_to_string(&page).unwrap();
        for (n, line) in command_lines(&text, "cargo xtask") {
            if has_placeholder(&line) {
                continue;
            }
            let argv: Vec<String> = line.split_whitespace().skip(2).map(String::from).collect();
            let checked = args::parse(&argv, None).and_then(|parsed| match parsed {
                args::Parsed::Task(args::Task::Vmtest(v)) => v.checked().map(drop),
                _ => Ok(()),
            });
            if let Err(e) = checked {
                failures.push(format!("{}:{n}: {line}: {e:#}", page.display()));
            }
            parsed += 1;
        }
    }
    assert!(parsed > 20, "only {parsed} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
