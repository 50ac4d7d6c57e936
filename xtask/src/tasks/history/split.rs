//! Each step split by function and placed among the stable releases:
//! `vmtest A --against B --exact --explain` on the step's two builds, and
//! the later build's Debian changelog.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::builds::{self, Build};
use super::changelog;
use super::kept::{self, Stables};
use super::options::{HistoryArgs, Runs, Setting};
use super::report::{Counted, Located, StableNote};
use super::runs::{package_root, relay, vmtest};
use super::steps::{self, Moved, Step};
use crate::util::exact_counts::Row;
use crate::util::signal::check_signal;
use crate::util::{fnv, say, write_whole, FNV_START};
/// Splits each pair of builds' steps by function: `vmtest A --against B
/// --exact --explain` with only the mechanisms that stepped, kept as
/// counts are. A step the recount does not see is said so.
pub(super) fn explain(
    a: &HistoryArgs,
    found: &mut [Step],
    all: &[Build],
    setting: &Setting,
    runs: &Runs,
) -> Result<()> {
    let (kept_dir, out) = (runs.kept, runs.out);
    // A path judged by price depends on the host's prices: the split is
    // kept under them too.
    let prices = match &a.calibration {
        Some(f) => {
            fs::read(f).with_context(|| format!("--calibration: reading {}", f.display()))?
        }
        None => Vec::new(),
    };
    for (from, to, mechs) in steps::pairs(found) {
        let build = |r: &str| all.iter().find(|b| b.release == r);
        let (Some(ba), Some(bb)) = (build(&from), build(&to)) else {
            continue;
        };
        let mut h = FNV_START;
        // "paths": a split keeps how each path changed since they were
        // judged; one kept before then is split again.
        for part in [
            setting.key(ba).digest().as_bytes(),
            setting.key(bb).digest().as_bytes(),
            b"paths",
            &prices,
        ] {
            fnv(&mut h, part);
        }
        let (covered, changes, paths) =
            split_pair(a, (&from, &to), &mechs, &kept_dir.join("explain"), out, h)?;
        for s in found
            .iter_mut()
            .filter(|s| s.from == from && s.to == to && mechs.contains(&s.mechanism))
        {
            judge_path(s, &paths);
        }
        for s in found
            .iter_mut()
            .filter(|s| s.from == from && s.to == to)
            .filter(|s| mechs.contains(&s.mechanism) && covered.contains(&s.mechanism))
        {
            split_step(s, &changes);
        }
    }
    Ok(())
}

/// A step's split from its pair's changes: the functions that moved most,
/// and what none accounts for; or that the recount did not see it.
fn split_step(s: &mut Step, changes: &[Change]) {
    let Some(c) = changes.iter().find(|c| c.mechanism == s.mechanism) else {
        s.explained = Some("not split: the recount of both builds did not see this step".into());
        return;
    };
    let mut f = c.functions.clone();
    f.sort_by(|x, y| y.change.abs().total_cmp(&x.change.abs()));
    f.truncate(8);
    s.functions = f;
    if c.residual.abs() >= 0.5 {
        s.explained = Some(format!("{:+.1} not in any function", c.residual));
    }
}

/// What history reads of one mechanism's change in vmtest's explain.json
/// (a task does not import another's types; the rest is left unread).
#[derive(Clone, Serialize, Deserialize)]
struct Change {
    mechanism: String,
    functions: Vec<Moved>,
    /// B − A less what the functions' changes add up to.
    residual: f64,
}

/// One run's splits as kept: the mechanisms it split, their changes, and
/// those whose path changed as vmtest judged them.
#[derive(Serialize, Deserialize)]
struct KeptSplit {
    mechanisms: Vec<String>,
    changes: Vec<Change>,
    #[serde(default)]
    paths: Vec<Row>,
}

/// One pair of builds' splits of `mechs`: the kept ones, and a run of
/// `vmtest --against --explain` for the others, kept under `dir` (key `h`).
fn split_pair(
    a: &HistoryArgs,
    (from, to): (&str, &str),
    mechs: &[String],
    dir: &Path,
    out: &Path,
    h: u64,
) -> Result<(Vec<String>, Vec<Change>, Vec<Row>)> {
    let prefix = format!("{from}--{to}--{h:016x}--");
    let (mut covered, mut changes, mut paths) = kept_splits(dir, &prefix);
    let missing: Vec<String> = mechs
        .iter()
        .filter(|m| !covered.contains(m))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok((covered, changes, paths));
    }
    let run = out.join("explain").join(format!("{from}--{to}"));
    let mut cmd = vmtest(a, from, &run);
    cmd.args(["--against", to, "--explain", "--across-configs"])
        .arg("--bench-arg=-m")
        .arg(format!("--bench-arg={}", missing.join(",")));
    if let Some(f) = &a.calibration {
        cmd.arg("--calibration").arg(f);
    }
    say!("explaining {from} -> {to}: {}", missing.join(", "));
    relay(cmd, "")?;
    check_signal()?;
    let got = fs::read_to_string(run.join("explain.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<Change>>(&t).ok());
    if let Some(got) = got {
        let mut hm = FNV_START;
        fnv(&mut hm, missing.join(",").as_bytes());
        // The rows whose path changed, as vmtest judged them.
        let got_paths: Vec<Row> = fs::read_to_string(run.join("compare.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Vec<Row>>(&t).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.path.is_some() && missing.contains(&r.mechanism))
            .collect();
        let kept = KeptSplit {
            mechanisms: missing,
            changes: got,
            paths: got_paths,
        };
        write_whole(
            &dir.join(format!("{prefix}{hm:016x}.json")),
            (serde_json::to_string(&kept)? + "\n").as_bytes(),
        )?;
        covered.extend(kept.mechanisms);
        changes.extend(kept.changes);
        paths.extend(kept.paths);
    }
    Ok((covered, changes, paths))
}

/// The splits kept for one pair of builds (files named `prefix*`): the
/// mechanisms each run split, and their changes.
fn kept_splits(dir: &Path, prefix: &str) -> (Vec<String>, Vec<Change>, Vec<Row>) {
    let (mut covered, mut changes, mut paths) = (Vec::new(), Vec::new(), Vec::new());
    let Ok(entries) = fs::read_dir(dir) else {
        return (covered, changes, paths);
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let Some(k) = fs::read_to_string(e.path())
            .ok()
            .and_then(|t| serde_json::from_str::<KeptSplit>(&t).ok())
        else {
            continue;
        };
        covered.extend(k.mechanisms);
        changes.extend(k.changes);
        paths.extend(k.paths);
    }
    (covered, changes, paths)
}

/// A step whose kinds of events changed (one int3 fewer, one system call
/// more) takes the verdict `vmtest --against --exact` gave it: by the
/// host's prices where `--calibration` gave them, else not judged on
/// instructions alone (docs/exact.md).
fn judge_path(s: &mut Step, paths: &[Row]) {
    if let Some(r) = paths.iter().find(|r| r.mechanism == s.mechanism) {
        s.verdict = r.verdict.exact_word().to_owned();
        s.path = r.path.clone();
    }
}

/// A step with the stable releases it lies in: from the lists kept with
/// the line's counts (`chain`: each build's upstream release and its
/// list, in line order), else from the later build's changelog where the
/// cache still has its package. When neither, one line says so.
pub(super) fn locate(
    step: Step,
    line: &[Counted],
    chain: &[(&str, Option<&Stables>)],
    cache: &Path,
) -> Located {
    let up = |r: &str| {
        line.iter()
            .find(|c| c.build.release == r)
            .map(|c| c.build.upstream.clone())
            .unwrap_or_default()
    };
    let (ua, ub) = (up(&step.from), up(&step.to));
    let (range, releases) = match builds::span(&ua, &ub) {
        Some((r, n)) => (Some(r), Some(n)),
        None => (None, None),
    };
    let functions: Vec<String> = step.functions.iter().map(|m| m.function.clone()).collect();
    let found = line
        .iter()
        .position(|c| c.build.release == step.to)
        .and_then(|i| kept::between(chain, i, &ua))
        .or_else(|| {
            changelog::read(&package_root(cache, &step.to))
                .map(|all| changelog::between(&all, &ua, &ub))
        });
    let unread = (found.is_none() && ua != ub).then(|| {
        format!(
            "stable commits not read: no stable list kept back to {ua}, and {}'s package is \
             no longer cached",
            step.to
        )
    });
    let stable = found
        .unwrap_or_default()
        .iter()
        .map(|s| StableNote {
            release: s.release.clone(),
            subjects: changelog::relevant(s, &functions, changelog::family(&step.mechanism))
                .into_iter()
                .map(String::from)
                .collect(),
            of: s.subjects.len(),
        })
        .collect();
    Located {
        step,
        range,
        releases,
        stable,
        unread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::history::changelog::Stable;

    fn counted(release: &str, upstream: &str) -> Counted {
        Counted {
            build: Build {
                release: format!("{release}+deb12-amd64"),
                version: format!("{upstream}-1"),
                upstream: upstream.into(),
                line: "deb12".into(),
                suites: vec!["bookworm".into()],
                packages: vec![],
                refused: None,
            },
            status: "counted".into(),
            why: None,
            counts: vec![],
            fetch_s: None,
            vm_s: None,
            downloaded_bytes: None,
            counted_now: false,
        }
    }

    fn stable(release: &str, subjects: &[&str]) -> Stable {
        Stable {
            debian: format!("{release}-1"),
            release: release.into(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn step(from: &str, to: &str) -> Step {
        Step {
            mechanism: "kprobe.multi-loop".into(),
            from: format!("{from}+deb12-amd64"),
            to: format!("{to}+deb12-amd64"),
            a: Some(400.0),
            b: Some(440.0),
            change: Some(0.1),
            verdict: "REGRESSED".into(),
            functions: vec![],
            explained: None,
            path: None,
        }
    }

    #[test]
    fn a_step_whose_path_changed_takes_the_verdict_of_its_price() {
        // compare.json's row, as `vmtest --against --explain --calibration` writes it.
        let rows: Vec<Row> = serde_json::from_str(
            r#"[{"mechanism":"kprobe.multi-loop","a":400.0,"b":440.0,"change":0.1,
                 "verdict":"improved","path":"kprobe.multi-loop: path changed: −1 int3; +40 ins, est. -300 ns on AMD EPYC (-40.0%): improved"}]"#,
        )
        .unwrap();
        let mut s = step("6.17.13", "6.18.5");
        judge_path(&mut s, &rows);
        assert_eq!(s.verdict, "improved");
        assert!(s.path.unwrap().contains("path changed: −1 int3"));
        let mut other = step("6.17.13", "6.18.5");
        other.mechanism = "raw_tp".into();
        judge_path(&mut other, &rows);
        assert_eq!((other.verdict.as_str(), other.path), ("REGRESSED", None));
    }

    fn named(l: &Located) -> Vec<(&str, Vec<&str>)> {
        l.stable
            .iter()
            .map(|n| {
                let s = n.subjects.iter().map(String::as_str).collect();
                (n.release.as_str(), s)
            })
            .collect()
    }

    #[test]
    fn a_kept_stable_list_gives_the_step_its_commits_with_no_package() {
        // No package in this cache: the lists kept with the counts are all.
        let cache = tempfile::tempdir().unwrap();
        let line = [
            counted("6.12.43", "6.12.43"),
            counted("6.12.46", "6.12.46"),
            counted("6.12.48", "6.12.48"),
        ];
        let l46 = Stables {
            after: "6.12.43".into(),
            releases: vec![
                stable("6.12.44", &["net: unrelated"]),
                stable("6.12.45", &["fprobe: make the entry cheaper", "mm: other"]),
                stable("6.12.46", &[]),
            ],
        };
        let l48 = Stables {
            after: "6.12.46".into(),
            releases: vec![
                stable("6.12.47", &["kprobes: fix a leak"]),
                stable("6.12.48", &["fs: unrelated"]),
            ],
        };
        let chain = [
            ("6.12.43", None),
            ("6.12.46", Some(&l46)),
            ("6.12.48", Some(&l48)),
        ];
        let l = locate(step("6.12.46", "6.12.48"), &line, &chain, cache.path());
        assert_eq!(
            named(&l),
            [
                ("6.12.47", vec!["kprobes: fix a leak"]),
                ("6.12.48", vec![])
            ]
        );
        assert_eq!(l.stable[1].of, 1);
        assert!(l.unread.is_none());
        // A step over a build that failed (not counted): the later list,
        // then the list of the build it starts after.
        let l = locate(step("6.12.43", "6.12.48"), &line, &chain, cache.path());
        let rels: Vec<&str> = l.stable.iter().map(|n| n.release.as_str()).collect();
        assert_eq!(
            rels,
            ["6.12.44", "6.12.45", "6.12.46", "6.12.47", "6.12.48"]
        );
        assert_eq!(l.stable[1].subjects, ["fprobe: make the entry cheaper"]);
        assert!(l.unread.is_none());
    }

    #[test]
    fn no_list_and_no_package_is_said_for_the_step() {
        let cache = tempfile::tempdir().unwrap();
        let line = [counted("6.12.46", "6.12.46"), counted("6.12.48", "6.12.48")];
        // A kept file from before lists were kept.
        let chain = [("6.12.46", None), ("6.12.48", None)];
        let l = locate(step("6.12.46", "6.12.48"), &line, &chain, cache.path());
        assert!(l.stable.is_empty());
        let u = l.unread.unwrap();
        assert!(
            u.contains("6.12.46") && u.contains("6.12.48+deb12-amd64"),
            "{u}"
        );
        assert!(!u.contains('\n'));
        // A list that does not reach back far enough, nor a list to go on with.
        let short = Stables {
            after: "6.12.47".into(),
            releases: vec![stable("6.12.48", &["kprobes: x"])],
        };
        let chain = [("6.12.46", None), ("6.12.48", Some(&short))];
        let l = locate(step("6.12.46", "6.12.48"), &line, &chain, cache.path());
        assert!(l.unread.is_some() && l.stable.is_empty());
        // Two builds of one upstream release: nothing to read, nothing said.
        let line = [
            counted("6.12.48a", "6.12.48"),
            counted("6.12.48", "6.12.48"),
        ];
        let l = locate(step("6.12.48a", "6.12.48"), &line, &chain, cache.path());
        assert!(l.unread.is_none() && l.stable.is_empty());
    }
}
