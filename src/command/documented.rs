//! Every `bpf-overhead ...` command line in README.md and docs/*.md's
//! code blocks parses with the command's own arguments (clap's
//! `try_parse_from`): the docs cannot show an option the command lacks.
//! Lines with placeholders (`FILE...`, `[--svg OUT]`, `$VAR`) are skipped.

use std::fs;
use std::path::Path;

use bpf_overhead_common::documented::{command_lines, has_placeholder, pages};
use clap::Parser as _;

use super::cli::Cli;

#[test]
fn every_documented_command_line_parses() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for page in pages(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        let text = fs::read_to_string(&page).unwrap();
        for (n, line) in command_lines(&text, "bpf-overhead") {
            if has_placeholder(&line) {
                continue;
            }
            let args = line.split_whitespace();
            if let Err(e) = Cli::try_parse_from(args) {
                if e.use_stderr() {
                    let first = e.render().to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    failures.push(format!("{}:{n}: {line}: {first}", page.display()));
                }
            }
            parsed += 1;
        }
    }
    assert!(parsed > 20, "only {parsed} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
