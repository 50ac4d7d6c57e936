//! Each step split by function and placed among the stable releases:
//! `vmtest A --against B --exact --explain` on the step's two builds, and
//! the later build's Debian changelog.

use std::fs;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use super::builds::{self, Build};
use super::changelog;
use super::counting::{package_root, relay, vmtest};
use super::kept::{self, Stables};
use super::options::{HistoryArgs, Runs, Setting};
use super::report::{Counted, Located, StableNote};
use super::steps::{self, Moved, Step};
use crate::tasks::vmtest::exact::path::{self, Prices};
use crate::tasks::vmtest::explain::{self as explain_run, Explained};
use crate::util::counts::{Row, Verdict};
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
    let prices = a.calibration.as_deref().map(Prices::read).transpose()?;
    let prices = prices.as_ref();
    for (from, to, mechs) in steps::pairs(found) {
        let build = |r: &str| all.iter().find(|b| b.release == r);
        let (Some(ba), Some(bb)) = (build(&from), build(&to)) else {
            continue;
        };
        let mut h = FNV_START;
        // "sides": a split keeps both builds' kinds of events since they
        // were counted; one kept before then is split again.
        for part in [
            &setting.key(ba).digest(),
            &setting.key(bb).digest(),
            "sides",
        ] {
            fnv(&mut h, part.as_bytes());
        }
        let (covered, changes, sides) =
            split_pair(a, (&from, &to), &mechs, &kept_dir.join("explain"), out, h)?;
        for s in found
            .iter_mut()
            .filter(|s| s.from == from && s.to == to && mechs.contains(&s.mechanism))
        {
            judge_path(s, &sides, prices, a.threshold / 100.0);
        }
        let changes = (!covered.is_empty()).then_some(Value::Array(changes));
        for s in found.iter_mut().filter(|s| s.from == from && s.to == to) {
            if !mechs.contains(&s.mechanism) {
                continue;
            }
            let changes = changes.as_ref().filter(|_| covered.contains(&s.mechanism));
            let c = changes
                .and_then(|v| v.as_array())
                .and_then(|cs| cs.iter().find(|c| c["mechanism"] == s.mechanism.as_str()));
            match (c, changes) {
                (Some(c), _) => {
                    let mut f: Vec<Moved> = c["functions"]
                        .as_array()
                        .map(|fs| {
                            fs.iter()
                                .filter_map(|d| {
                                    Some(Moved {
                                        function: d["function"].as_str()?.to_owned(),
                                        a: d["a"].as_f64()?,
                                        b: d["b"].as_f64()?,
                                        change: d["change"].as_f64()?,
                                    })
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    f.sort_by(|x, y| y.change.abs().total_cmp(&x.change.abs()));
                    f.truncate(8);
                    s.functions = f;
                    if let Some(r) = c["residual"].as_f64().filter(|r| r.abs() >= 0.5) {
                        s.explained = Some(format!("{r:+.1} not in any function"));
                    }
                }
                (None, Some(_)) => {
                    s.explained =
                        Some("not split: the recount of both builds did not see this step".into())
                }
                (None, None) => {}
            }
        }
    }
    Ok(())
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
) -> Result<(Vec<String>, Vec<Value>, Vec<Sides>)> {
    let prefix = format!("{from}--{to}--{h:016x}--");
    let (mut covered, mut changes, mut sides) = kept_splits(dir, &prefix);
    let missing: Vec<String> = mechs
        .iter()
        .filter(|m| !covered.contains(m))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok((covered, changes, sides));
    }
    let run = out.join("explain").join(format!("{from}--{to}"));
    let mut cmd = vmtest(a, from, &run);
    cmd.args(["--against", to, "--explain", "--across-configs"])
        .arg("--bench-arg=-m")
        .arg(format!("--bench-arg={}", missing.join(",")));
    say!("explaining {from} -> {to}: {}", missing.join(", "));
    relay(cmd, "")?;
    check_signal()?;
    let got = fs::read_to_string(run.join("explain.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    if let Some(Value::Array(got)) = got {
        let mut hm = FNV_START;
        fnv(&mut hm, missing.join(",").as_bytes());
        let side = |s: &str| -> Option<Explained> {
            let f = run.join(s).join(explain_run::FILE);
            let mut e: Explained = serde_json::from_str(&fs::read_to_string(f).ok()?).ok()?;
            e.mechanisms.retain(|m| missing.contains(&m.mechanism));
            Some(e)
        };
        let got_sides = side("a").zip(side("b"));
        let kept = serde_json::json!({
            "mechanisms": missing, "changes": got, "sides": got_sides
        });
        write_whole(
            &dir.join(format!("{prefix}{hm:016x}.json")),
            (kept.to_string() + "\n").as_bytes(),
        )?;
        covered.extend(missing);
        changes.extend(got);
        sides.extend(got_sides);
    }
    Ok((covered, changes, sides))
}

/// The splits kept for one pair of builds (files named `prefix*`): the
/// mechanisms each run split, and their changes.
fn kept_splits(dir: &Path, prefix: &str) -> (Vec<String>, Vec<Value>, Vec<Sides>) {
    let (mut covered, mut changes, mut sides) = (Vec::new(), Vec::new(), Vec::new());
    let Ok(entries) = fs::read_dir(dir) else {
        return (covered, changes, sides);
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let Some(v) = fs::read_to_string(e.path())
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        let names = v["mechanisms"].as_array().into_iter().flatten();
        covered.extend(names.filter_map(|m| m.as_str().map(String::from)));
        changes.extend(v["changes"].as_array().into_iter().flatten().cloned());
        sides.extend(serde_json::from_value::<Sides>(v["sides"].clone()).ok());
    }
    (covered, changes, sides)
}

/// Both builds' splits of one `--explain` run: their kinds of events.
type Sides = (Explained, Explained);

/// A step whose kinds of events changed (one int3 fewer, one system call
/// more) is judged as `vmtest --against --exact` judges it: by the host's
/// prices where given (`--calibration`), else not on instructions alone.
fn judge_path(s: &mut Step, sides: &[Sides], prices: Option<&Prices>, threshold: f64) {
    let Some((ea, eb)) = sides
        .iter()
        .find(|(ea, eb)| ea.split(&s.mechanism).is_some() && eb.split(&s.mechanism).is_some())
    else {
        return;
    };
    let verdict = [Verdict::Regressed, Verdict::Improved, Verdict::Unchanged]
        .into_iter()
        .find(|v| v.word() == s.verdict);
    let Some(verdict) = verdict else { return };
    let mut rows = [Row {
        mechanism: s.mechanism.clone(),
        a: s.a,
        b: s.b,
        change: s.change,
        verdict,
    }];
    if let Some(note) = path::rejudge(&mut rows, ea, eb, prices, threshold).pop() {
        s.verdict = rows[0].verdict.word().to_owned();
        s.path = Some(note);
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

    /// A kept split's sides, as `--explain` writes each build's
    /// explain.json: uprobe-nop5 trapping, then on a system call.
    fn nop5_sides() -> Sides {
        let side = |count: f64, kinds: &str| -> Explained {
            serde_json::from_value(serde_json::json!({
                "unit": "instructions", "kernel": "k", "emulator": "q",
                "mechanisms": [{
                    "mechanism": "uprobe-nop5", "base": "base-nop5", "count": count,
                    "functions": [], "sum": count, "residual": 0.0,
                    "kinds": serde_json::from_str::<Value>(kinds).unwrap()
                }]
            }))
            .unwrap()
        };
        (
            side(
                1151.9,
                r#"[{"kind":"int3","per_event":1.0},{"kind":"iret","per_event":1.0}]"#,
            ),
            side(
                1262.9,
                r#"[{"kind":"syscall","per_event":1.0},{"kind":"sysret","per_event":1.0}]"#,
            ),
        )
    }

    fn nop5_step() -> Step {
        Step {
            mechanism: "uprobe-nop5".into(),
            a: Some(1151.9),
            b: Some(1262.9),
            ..step("6.17.13", "6.18.5")
        }
    }

    #[test]
    fn a_step_whose_path_changed_is_priced_not_called_regressed() {
        let cal = tempfile::NamedTempFile::new().unwrap();
        fs::write(
            cal.path(),
            r#"{"schema":"bpf-overhead-calibration","host":{"cpu_model":"AMD EPYC"},
                "weights":{"instructions":0.3,"int3":600.0,"iret":120.0,"syscall":170.0,"sysret":40.0}}"#,
        )
        .unwrap();
        let prices = Prices::read(cal.path()).unwrap();
        let mut s = nop5_step();
        judge_path(&mut s, &[nop5_sides()], Some(&prices), 0.01);
        assert_eq!(s.verdict, Verdict::Improved.word(), "{s:?}");
        let p = s.path.unwrap();
        assert!(p.contains("path changed: −1 int3, +1 syscall"), "{p}");
        assert!(p.contains("est. -477 ns on AMD EPYC"), "{p}");
    }

    #[test]
    fn without_a_calibration_a_changed_path_is_not_judged() {
        let mut s = nop5_step();
        judge_path(&mut s, &[nop5_sides()], None, 0.01);
        assert_eq!(s.verdict, Verdict::PathChanged.word());
        assert!(s.path.unwrap().contains("not judged on instructions alone"));
    }

    #[test]
    fn a_step_on_the_same_path_keeps_its_verdict() {
        let (a, _) = nop5_sides();
        let same = (a, nop5_sides().0);
        let mut s = nop5_step();
        judge_path(&mut s, &[same], None, 0.01);
        assert_eq!((s.verdict.as_str(), s.path), ("REGRESSED", None));
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
