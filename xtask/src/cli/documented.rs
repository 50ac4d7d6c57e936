//! Every `cargo xtask ...` command line in README.md and docs/*.md's code
//! blocks parses with [`args::parse`]: the docs cannot show an option a
//! task lacks. Lines with placeholders (`KERNEL`, `[...]`, `$VAR`) are
//! skipped.

use std::fs;
use std::path::Path;

use super::args;

/// The command lines of `text`'s fenced code blocks: what follows
/// `cargo xtask` (after a `$ ` prompt), continued over `\` line ends, up
/// to a comment, a pipe, a redirection or `;`; each with its line number.
fn command_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let l = line.trim();
        let l = l.strip_prefix("$ ").unwrap_or(l);
        let Some(rest) = l.strip_prefix("cargo xtask ").filter(|_| fenced) else {
            continue;
        };
        let mut joined = rest.to_string();
        while joined.ends_with('\\') {
            joined.pop();
            match lines.next() {
                Some((_, next)) => joined.push_str(next.trim()),
                None => break,
            }
        }
        let mut end = joined.len();
        for stop in [" #", "|", ">", "<", ";", "&&"] {
            if let Some(i) = joined.find(stop) {
                end = end.min(i);
            }
        }
        out.push((n + 1, joined[..end].trim().to_string()));
    }
    out
}

/// A placeholder the reader fills in: `KERNEL`, `DIR`, `[--jobs N]`,
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
fn every_documented_xtask_line_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let (mut parsed, mut failures) = (0, Vec::new());
    for page in pages {
        let text = fs::read_to_string(&page).unwrap();
        for (n, line) in command_lines(&text) {
            if has_placeholder(&line) {
                continue;
            }
            let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
            if let Err(e) = args::parse(&argv, None) {
                failures.push(format!("{}:{n}: cargo xtask {line}: {e:#}", page.display()));
            }
            parsed += 1;
        }
    }
    assert!(parsed > 20, "only {parsed} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn xtask_lines_are_cut_and_joined() {
    let text = "```sh\n$ cargo xtask vmtest 6.12 \\\n  --exact # x\n```\ncargo xtask ci\n";
    assert_eq!(
        command_lines(text),
        [(2, "vmtest 6.12 --exact".to_string())]
    );
    assert!(has_placeholder("vmtest KERNEL --exact"));
    assert!(!has_placeholder("history 6.12 -m uprobe-nop"));
}
