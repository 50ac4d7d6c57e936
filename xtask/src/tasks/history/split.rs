//! Each step split by function and placed among the stable releases:
//! `vmtest A --against B --exact --explain` on the step's two builds, and
//! the later build's Debian changelog.

use std::fs;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use super::builds::{self, Build};
use super::changelog;
use super::counting::{relay, vmtest};
use super::options::{HistoryArgs, Runs, Setting};
use super::report::{Counted, Located, StableNote};
use super::steps::{self, Moved, Step};
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
    for (from, to, mechs) in steps::pairs(found) {
        let build = |r: &str| all.iter().find(|b| b.release == r);
        let (Some(ba), Some(bb)) = (build(&from), build(&to)) else {
            continue;
        };
        let mut h = FNV_START;
        for part in [setting.key(ba).digest(), setting.key(bb).digest()] {
            fnv(&mut h, part.as_bytes());
        }
        let dir = kept_dir.join("explain");
        let prefix = format!("{from}--{to}--{h:016x}--");
        let (mut covered, mut changes) = kept_splits(&dir, &prefix);
        let missing: Vec<String> = mechs
            .iter()
            .filter(|m| !covered.contains(m))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let run = out.join("explain").join(format!("{from}--{to}"));
            let mut cmd = vmtest(a, &from, &run);
            cmd.args(["--against", &to, "--explain", "--across-configs"])
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
                let kept = serde_json::json!({"mechanisms": missing, "changes": got});
                write_whole(
                    &dir.join(format!("{prefix}{hm:016x}.json")),
                    (kept.to_string() + "\n").as_bytes(),
                )?;
                covered.extend(missing);
                changes.extend(got);
            }
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

/// The splits kept for one pair of builds (files named `prefix*`): the
/// mechanisms each run split, and their changes.
fn kept_splits(dir: &Path, prefix: &str) -> (Vec<String>, Vec<Value>) {
    let (mut covered, mut changes) = (Vec::new(), Vec::new());
    let Ok(entries) = fs::read_dir(dir) else {
        return (covered, changes);
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
    }
    (covered, changes)
}

/// A step with the stable releases it lies in, from the later build's
/// changelog where the cache kept one.
pub(super) fn locate(step: Step, line: &[Counted], cache: &Path) -> Located {
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
    let stable = changelog::read(&cache.join("kernels").join(&step.to).join("root"))
        .map(|all| {
            changelog::between(&all, &ua, &ub)
                .iter()
                .map(|s| StableNote {
                    release: s.release.clone(),
                    subjects: changelog::relevant(
                        s,
                        &functions,
                        changelog::family(&step.mechanism),
                    )
                    .into_iter()
                    .map(String::from)
                    .collect(),
                    of: s.subjects.len(),
                })
                .collect()
        })
        .unwrap_or_default();
    Located {
        step,
        range,
        releases,
        stable,
    }
}
