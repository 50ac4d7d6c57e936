//! The command lines that README.md and docs/*.md show in their fenced code
//! blocks, for the tests that parse each with the real parser (the
//! command's and xtask's): the docs cannot show an option a command lacks.

use std::fs;
use std::path::{Path, PathBuf};

/// README.md and docs/*.md under `root`, in order.
pub fn pages(root: &Path) -> Vec<PathBuf> {
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

/// The lines of `text`'s fenced code blocks that run `program`
/// (`bpf-overhead`, `cargo xtask`), after a `$ ` prompt or `sudo`,
/// continued over `\` line ends, cut at a comment, a pipe, a redirection
/// or `;`; each with its line number. A line of output
/// (`bpf-overhead report: ...`) is not one.
pub fn command_lines(text: &str, program: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let mut l = line.trim();
        l = l.strip_prefix("$ ").unwrap_or(l);
        l = l.strip_prefix("sudo ").unwrap_or(l);
        let Some(rest) = l.strip_prefix(program).filter(|_| fenced) else {
            continue;
        };
        let output = rest
            .split_whitespace()
            .next()
            .is_some_and(|w| w.ends_with(':'));
        if output || !(rest.is_empty() || rest.starts_with(' ')) {
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

/// A placeholder the reader fills in: `FILE`, `KERNEL`, `OUT...`,
/// `[--svg OUT]`, `{a,b}`, `$VAR`, `...`.
pub fn has_placeholder(line: &str) -> bool {
    line.contains(['[', '{', '$', '`', '"', '\''])
        || line.contains("...")
        || line.split_whitespace().any(|w| {
            let w = w.trim_end_matches(',');
            w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_cut_and_joined() {
        let text = "```sh\n$ bpf-overhead -m raw_tp \\\n  --repeat 3 > out # x\n\
                    sudo bpf-overhead report a.json | head\nnot bpf-overhead -m x\n\
                    bpf-overheads -m y\n```\nbpf-overhead -m outside\n```\n\
                    bpf-overhead report: ns per event\n```\n";
        let lines: Vec<String> = command_lines(text, "bpf-overhead")
            .into_iter()
            .map(|l| l.1)
            .collect();
        assert_eq!(
            lines,
            [
                "bpf-overhead -m raw_tp --repeat 3",
                "bpf-overhead report a.json"
            ]
        );
    }

    #[test]
    fn xtask_lines_are_found_by_their_program() {
        let text = "```sh\n$ cargo xtask vmtest 6.12 \\\n  --exact # x\n```\ncargo xtask ci\n";
        assert_eq!(
            command_lines(text, "cargo xtask"),
            [(2, "cargo xtask vmtest 6.12 --exact".to_string())]
        );
    }

    #[test]
    fn placeholders_are_told_from_values() {
        assert!(has_placeholder("bpf-overhead report FILE..."));
        assert!(has_placeholder("bpf-overhead --baseline FILE"));
        assert!(has_placeholder("cargo xtask vmtest KERNEL --exact"));
        assert!(!has_placeholder("bpf-overhead -m raw_tp,tp --save a.json"));
        assert!(!has_placeholder("cargo xtask history 6.12 -m uprobe-nop"));
    }
}
