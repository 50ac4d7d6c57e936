//! Debian's changelog of a kernel package (changelog.Debian.gz in its
//! doc directory): each "New upstream stable update" names its stable
//! release (ChangeLog-6.12.44) and lists that release's commit subjects,
//! so a step between two builds narrows to the stable releases between
//! them, and often to a commit.

use std::cmp::Ordering;
use std::fs;
use std::io::Read as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kernels::debian::version_cmp;

/// One stable release's commits, as a Debian entry lists them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stable {
    /// The Debian version whose entry lists it.
    pub debian: String,
    /// The stable release: 6.12.44.
    pub release: String,
    pub subjects: Vec<String>,
}

/// Every stable release a changelog lists, newest first as written.
pub fn parse(text: &str) -> Vec<Stable> {
    let mut out: Vec<Stable> = Vec::new();
    let mut debian = String::new();
    let mut open = false;
    for l in text.lines() {
        if !l.starts_with(' ') && !l.is_empty() {
            // "linux (6.12.43-1~bpo12+1) bookworm-backports; urgency=medium"
            if let Some(v) = l.split_once('(').and_then(|(_, r)| r.split_once(')')) {
                debian = v.0.to_owned();
            }
            open = false;
            continue;
        }
        if let Some(rel) = l.split("ChangeLog-").nth(1) {
            out.push(Stable {
                debian: debian.clone(),
                release: rel.trim().to_owned(),
                subjects: Vec::new(),
            });
            open = true;
        } else if l.starts_with("  * ") || l.starts_with("  [") {
            open = false;
        } else if open {
            let t = l.trim();
            if let Some(s) = t.strip_prefix("- ") {
                if let Some(last) = out.last_mut() {
                    last.subjects.push(s.to_owned());
                }
            } else if !t.is_empty() && l.starts_with("      ") {
                // A subject's wrapped continuation.
                if let Some(s) = out.last_mut().and_then(|s| s.subjects.last_mut()) {
                    s.push(' ');
                    s.push_str(t);
                }
            }
        }
    }
    out
}

/// The stable releases after upstream release `after` up to `upto`
/// (each an upstream version), oldest first.
pub fn between(all: &[Stable], after: &str, upto: &str) -> Vec<Stable> {
    let mut v: Vec<Stable> = all
        .iter()
        .filter(|s| {
            version_cmp(&s.release, after) == Ordering::Greater
                && version_cmp(&s.release, upto) != Ordering::Greater
        })
        .cloned()
        .collect();
    v.sort_by(|a, b| version_cmp(&a.release, &b.release));
    v.dedup_by(|a, b| a.release == b.release);
    v
}

/// The words of a subject (split at what is not a letter, digit or `_`),
/// lower case.
fn words(subject: &str) -> impl Iterator<Item = String> + '_ {
    subject
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The subsystem words of a mechanism: a subject with a word that starts
/// with one of them may change what the mechanism costs.
pub fn family(mechanism: &str) -> &'static [&'static str] {
    let head = mechanism.split(['.', '-']).next().unwrap_or("");
    match head {
        "kprobe" | "kretprobe" => &[
            "kprobe",
            "kretprobe",
            "fprobe",
            "ftrace",
            "fgraph",
            "rethook",
        ],
        "uprobe" | "uretprobe" | "usdt" => &["uprobe", "uretprobe"],
        "raw_tp" | "tp" | "tp_btf" => &["tracepoint", "bpf_trace"],
        "fentry" | "fexit" | "fmod_ret" | "lsm" => &["trampoline", "ftrace", "static_call"],
        _ => &[],
    }
}

/// The subjects of `stable` that name one of `functions` (first), then
/// those with a word starting with one of `words`.
pub fn relevant<'a>(stable: &'a Stable, functions: &[String], family: &[&str]) -> Vec<&'a str> {
    let names = |s: &str| {
        functions
            .iter()
            .any(|f| f.len() > 4 && words(s).any(|w| w == f.to_lowercase()))
    };
    let word = |s: &str| words(s).any(|w| family.iter().any(|f| w.starts_with(f)));
    let mut out: Vec<&str> = stable
        .subjects
        .iter()
        .map(String::as_str)
        .filter(|s| names(s))
        .collect();
    out.extend(
        stable
            .subjects
            .iter()
            .map(String::as_str)
            .filter(|s| !names(s) && word(s)),
    );
    out
}

/// The changelog in a kernel's unpacked package, if it kept one.
pub fn read(root: &Path) -> Option<Vec<Stable>> {
    for d in fs::read_dir(root.join("usr/share/doc")).ok()?.flatten() {
        for name in ["changelog.Debian.gz", "changelog.gz"] {
            let Ok(data) = fs::read(d.path().join(name)) else {
                continue;
            };
            let mut text = String::new();
            if flate2::read::GzDecoder::new(&data[..])
                .read_to_string(&mut text)
                .is_ok()
            {
                let s = parse(&text);
                if !s.is_empty() {
                    return Some(s);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
linux (6.12.46-1~bpo12+1) bookworm-backports; urgency=medium

  * Rebuild for bookworm-backports.

 -- Someone <a@b>  Mon, 01 Sep 2025 00:00:00 +0000

linux (6.12.46-1) unstable; urgency=medium

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.45
    - bpf: Fix the thing in the trampoline
    - net: something else entirely that wraps onto
      a second line
  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.46
    - uprobes: make the hot path cheaper
    - mm: call migrate_enable less often

  [ Someone Else ]
  * [amd64] Enable some option

 -- Someone <a@b>  Sun, 31 Aug 2025 00:00:00 +0000

linux (6.12.44-1) unstable; urgency=medium

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.44
    - tracing: Fix a leak
";

    #[test]
    fn the_words_of_a_mechanism() {
        let s = Stable {
            debian: "1".into(),
            release: "6.12.77".into(),
            subjects: vec![
                "uprobes: switch to RCU Tasks Trace flavor for better performance".into(),
                "Input: uinput - fix circular locking dependency".into(),
                "bpf: Remove migrate_disable in kprobe_multi_link_prog_run".into(),
            ],
        };
        assert_eq!(
            relevant(&s, &[], family("uretprobe.multi-nop")),
            [s.subjects[0].as_str()]
        );
        // Whole words: "circular" is no "rcu", "uinput" no "uprobe".
        assert_eq!(
            relevant(&s, &["migrate_disable".into()], family("kprobe.multi-loop")),
            [s.subjects[2].as_str()]
        );
        assert!(family("base").is_empty());
    }

    #[test]
    fn stable_releases_and_their_subjects() {
        let s = parse(TEXT);
        let rels: Vec<&str> = s.iter().map(|s| s.release.as_str()).collect();
        assert_eq!(rels, ["6.12.45", "6.12.46", "6.12.44"]);
        assert_eq!(s[0].debian, "6.12.46-1");
        assert_eq!(
            s[0].subjects[1],
            "net: something else entirely that wraps onto a second line"
        );
        assert_eq!(s[1].subjects.len(), 2, "the next bullet closes the list");
        let b = between(&s, "6.12.44", "6.12.46");
        assert_eq!(
            b.iter().map(|s| s.release.as_str()).collect::<Vec<_>>(),
            ["6.12.45", "6.12.46"]
        );
        assert_eq!(
            relevant(&b[0], &[], family("fentry")),
            ["bpf: Fix the thing in the trampoline"]
        );
        assert!(relevant(&b[0], &[], family("kprobe.multi")).is_empty());
        assert_eq!(
            relevant(&b[1], &["migrate_enable".into()], family("uprobe-nop")),
            [
                "mm: call migrate_enable less often",
                "uprobes: make the hot path cheaper"
            ],
            "those naming a function that moved first"
        );
    }
}
