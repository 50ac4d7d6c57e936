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
        for part in [
            setting.key(ba).digest(),
            setting.key(bb).digest(),
            mechs.join(","),
        ] {
            fnv(&mut h, part.as_bytes());
        }
        let file = kept_dir
            .join("explain")
            .join(format!("{from}--{to}--{h:016x}.json"));
        let changes: Option<Value> = match fs::read_to_string(&file) {
            Ok(t) => serde_json::from_str(&t).ok(),
            Err(_) => {
                let dir = out.join("explain").join(format!("{from}--{to}"));
                let mut cmd = vmtest(a, &from, &dir);
                cmd.args(["--against", &to, "--explain", "--across-configs"])
                    .arg("--bench-arg=-m")
                    .arg(format!("--bench-arg={}", mechs.join(",")));
                say!("explaining {from} -> {to}: {}", mechs.join(", "));
                relay(cmd, "")?;
                check_signal()?;
                let got = fs::read_to_string(dir.join("explain.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok());
                if let Some(v) = &got {
                    write_whole(&file, (v.to_string() + "\n").as_bytes())?;
                }
                got
            }
        };
        for s in found.iter_mut().filter(|s| s.from == from && s.to == to) {
            if !mechs.contains(&s.mechanism) {
                continue;
            }
            let c = changes
                .as_ref()
                .and_then(|v| v.as_array())
                .and_then(|cs| cs.iter().find(|c| c["mechanism"] == s.mechanism.as_str()));
            match (c, &changes) {
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
