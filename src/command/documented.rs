//! Every `bpf-overhead ...` command line in README.md and docs/*.md's
//! code blocks parses with the command's own arguments (clap's
//! `try_parse_from`): the docs cannot show an option the command lacks.
//! Lines with placeholders (`FILE...`, `[--svg OUT]`, `$VAR`) are skipped.

use std::fs;
use std::path::Path;

use clap::Parser as _;

use super::cli::Cli;

/// The pages whose code blocks are read.
fn pages() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The command lines of `text`'s fenced code blocks: `bpf-overhead ...`,
/// after a `$ ` prompt or `sudo`, continued over `\` line ends, with
/// comments, pipes and redirections cut off; each with its line number.
/// A line of output (`bpf-overhead report: ...`) is not one.
pub(crate) fn command_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        let mut l = line.trim();
        l = l.strip_prefix("$ ").unwrap_or(l);
        l = l.strip_prefix("sudo ").unwrap_or(l);
        // Output (`bpf-overhead report: ns per event ...`) is not a command.
        let output = l
            .split_whitespace()
            .nth(1)
            .is_some_and(|w| w.ends_with(':'));
        if output || !l.starts_with("bpf-overhead ") && l != "bpf-overhead" {
            continue;
        }
        let mut joined = l.to_string();
        while joined.ends_with('\\') {
            joined.pop();
            match lines.next() {
                Some((_, next)) => joined.push_str(next.trim()),
                None => break,
            }
        }
        out.push((n + 1, cut(&joined)));
    }
    out
}

/// The command alone: up to a comment, a pipe, a redirection or `;`.
fn cut(line: &str) -> String {
    let mut end = line.len();
    for stop in [" #", "|", ">", "<", ";", "&&"] {
        if let Some(i) = line.find(stop) {
            end = end.min(i);
        }
    }
    line[..end].trim().to_string()
}

/// A placeholder the reader fills in: `FILE`, `OUT...`, `[--svg OUT]`,
/// `{a,b}`, `$VAR`, `...`.
fn has_placeholder(line: &str) -> bool {
    line.contains(['[', '{', '$', '`', '"', '\''])
        || line.contains("...")
        || line.split_whitespace().any(|w| {
            let w = w.trim_end_matches(',');
            w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
}

#[test]
fn every_documented_command_line_parses() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        for (n, line) in command_lines(&text) {
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

#[test]
fn command_lines_are_cut_and_joined() {
    let text = "```sh\n$ bpf-overhead -m raw_tp \\\n  --repeat 3 > out # x\n\
                sudo bpf-overhead report a.json | head\nnot bpf-overhead -m x\n```\n\
                bpf-overhead -m outside\n```\nbpf-overhead report: ns per event\n```\n";
    let lines: Vec<String> = command_lines(text).into_iter().map(|l| l.1).collect();
    assert_eq!(
        lines,
        [
            "bpf-overhead -m raw_tp --repeat 3",
            "bpf-overhead report a.json"
        ]
    );
    assert!(has_placeholder("bpf-overhead report FILE..."));
    assert!(has_placeholder("bpf-overhead --baseline FILE"));
    assert!(!has_placeholder("bpf-overhead -m raw_tp,tp --save a.json"));
}
