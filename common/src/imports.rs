//! A module's imports as the layer tests read them, of the library
//! (`src/lib.rs`) and of xtask (`xtask/src/layers.rs`): the paths its
//! code names from the crate's root, `crate::`, `$crate::` and `super::`
//! resolved, its tests and comments left out.

/// A file's code: before its tests, each line without its comment, blank
/// lines left out.
pub fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Whether the text before a path's start joins it to a longer name.
fn joined(before: Option<char>) -> bool {
    before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
}

/// The paths at the start of `rest`, a use tree: `a::{b::{self, C}, d}`
/// gives `a::b::self`, `a::b::C` and `a::d`.
pub fn tree(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(tree(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(tree(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        return out;
    }
    let name = ident(rest);
    if name.is_empty() {
        return Vec::new();
    }
    match rest[name.len()..].strip_prefix("::") {
        Some(more) => match tree(more) {
            subs if subs.is_empty() => vec![name],
            subs => subs.into_iter().map(|s| format!("{name}::{s}")).collect(),
        },
        None => vec![name],
    }
}

/// The paths that `text`, the code of `module` (`tasks::vmtest::duet`),
/// names from the crate's root: `crate::` (and a macro's `$crate::`) and
/// `super::` resolved, and a head's own modules by their names (`lint::run`
/// in a file that declares `mod lint;`).
pub fn paths_in(module: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        out.extend(tree(&text[at + 7..]));
    }
    for (at, _) in text.match_indices("super::") {
        if joined(text[..at].chars().next_back()) {
            continue;
        }
        let mut base: Vec<&str> = module.split("::").collect();
        let mut rest = &text[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let base = base.join("::");
        for p in tree(rest) {
            out.push(if base.is_empty() {
                p
            } else {
                format!("{base}::{p}")
            });
        }
    }
    for line in text.lines() {
        let Some(child) = line.trim().trim_start_matches("pub ").strip_prefix("mod ") else {
            continue;
        };
        let child = ident(child);
        for (at, _) in text.match_indices(&format!("{child}::")) {
            if !joined(text[..at].chars().next_back()) {
                out.extend(tree(&text[at..]).iter().map(|p| format!("{module}::{p}")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_paths_and_code() {
        assert_eq!(
            tree("kernels::{arch::Arch, debian::{self, Apt}};"),
            [
                "kernels::arch::Arch",
                "kernels::debian::self",
                "kernels::debian::Apt"
            ]
        );
        assert_eq!(
            paths_in("tasks::vmtest::duet", "fn f(a: &super::Args) {}"),
            ["tasks::vmtest::Args"]
        );
        assert_eq!(
            paths_in("a::b::c", "use super::super::x; let y = my_super::z;"),
            ["a::x"]
        );
        assert_eq!(
            paths_in("ci", "mod lint;\nfn f() { lint::run(); }"),
            ["ci::lint::run"]
        );
        assert_eq!(
            code("/// [`crate::vm`]\nuse crate::util; // crate::x\n#[cfg(test)]\nuse crate::cli;"),
            "use crate::util; "
        );
    }
}
