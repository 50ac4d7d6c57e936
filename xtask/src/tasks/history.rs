//! `cargo xtask history SERIES`: every Debian build of a series (or a
//! range of series) counted with `vmtest --exact`, each count kept, the
//! steps between consecutive builds of a line found, split by function
//! with `--explain` on the two builds of each step, and placed among the
//! stable releases between them by the later build's Debian changelog.
//!
//! The history room: this task and its parts, the builds ([`builds`]), the
//! kept counts ([`kept`]), the steps ([`steps`]), the changelog
//! ([`changelog`]) and the report ([`report`]). It runs `vmtest` as a
//! child, as `vmtest --against --exact` runs its sides.

pub mod builds;
pub mod changelog;
pub mod kept;
pub mod options;
pub mod report;
pub mod runs;
pub mod split;
pub mod steps;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::kernels::debian::{self, Apt};
use crate::util::document::Document;
use crate::util::{cache_dir, lock, repo_root, say, secs, which, write_whole, BadInput};
use crate::vm;

use builds::Build;
use kept::{Kept, Stables};
pub use options::HistoryArgs;
use options::{Runs, Setting};
use report::{Counted, History, Line, Located};

pub fn main(a: HistoryArgs) -> i32 {
    vm::task_main(|| run(&a))
}

fn run(a: &HistoryArgs) -> Result<i32> {
    let start = Instant::now();
    let range = builds::parse_series(&a.series)?;
    let repo = repo_root();
    let cache = cache_dir()?;
    let kept_dir = a
        .kept
        .clone()
        .unwrap_or_else(|| cache.join("history").join(a.arch.debian()));
    let out = out_dir(a, &repo);
    let selection = a.selection().map_err(BadInput)?;
    let all = list(a, &cache, (&range.0, &range.1))?;
    let setting = Setting {
        qemu: qemu_version(a.arch)?,
        cpu: vm::tcg_cpu(a.arch).into(),
        plan: a.plan(&selection),
        programs: kept::digest_sources(&repo)?,
        selection,
    };
    if a.list {
        return list_out(a, &all, &setting, &kept_dir);
    }
    let Some(todo) = to_count(a, &all, &setting, &kept_dir)? else {
        return Ok(0);
    };
    let dirs = runs::Dirs {
        kept: &kept_dir,
        out: &out,
        cache: &cache,
    };
    let failed = runs::count_all(a, &all, &todo, &setting, &dirs)?;
    if a.only.is_some() {
        return Ok(failed.values().map(|f| f.1).max().unwrap_or(0));
    }
    let now: Vec<&str> = todo
        .iter()
        .map(|b| b.release.as_str())
        .filter(|r| !failed.contains_key(*r))
        .collect();
    let runs = Runs {
        kept: &kept_dir,
        out: &out,
        cache: &cache,
        failed: &failed,
        now: &now,
    };
    let h = history(a, &all, &setting, &runs)?;
    write(&out, &h)?;
    let bad = summary(&h, start, &out);
    // A fetch that failed (a damaged download, no network) or a VM that
    // failed is the environment's; a build the runner refused, bad input.
    let worst = failed.values().map(|f| f.1).max().unwrap_or(0);
    let vm = i32::from(crate::util::exit_status::ENVIRONMENT);
    Ok(if bad > 0 { worst.max(vm) } else { worst })
}

/// `--out`, else target/history/SERIES (`-ARCH` after it but for x86_64).
fn out_dir(a: &HistoryArgs, repo: &Path) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        let name = match a.arch {
            Arch::X86_64 => a.series.clone(),
            other => format!("{}-{}", a.series, other.name()),
        };
        repo.join("target/history").join(name)
    })
}

/// The builds to count now: `--only`'s, none with `--no-count`, else each
/// not refused and not kept. None when `--only`'s build is kept already:
/// nothing to count, nor to report.
fn to_count<'b>(
    a: &HistoryArgs,
    all: &'b [Build],
    setting: &Setting,
    kept_dir: &Path,
) -> Result<Option<Vec<&'b Build>>> {
    Ok(Some(match &a.only {
        Some(only) => {
            let b = all.iter().find(|b| &b.release == only).ok_or_else(|| {
                BadInput(format!(
                    "{only} is not a build of {} (see --list)",
                    a.series
                ))
            })?;
            if let Some(why) = &b.refused {
                bail!(BadInput(format!("{only}: {why}")));
            }
            if kept::load(kept_dir, &setting.key(b)).is_some() {
                say!("{only}: kept from an earlier run: nothing to count");
                return Ok(None);
            }
            vec![b]
        }
        None if a.no_count => Vec::new(),
        None => all
            .iter()
            .filter(|b| b.refused.is_none() && kept::load(kept_dir, &setting.key(b)).is_none())
            .collect(),
    }))
}

/// The report's four files in `out`; history.txt printed too.
fn write(out: &Path, h: &History) -> Result<()> {
    crate::util::create_dir_all(out)?;
    let text = report::text(h);
    write_whole(&out.join("history.txt"), text.as_bytes())?;
    write_whole(&out.join("history.tsv"), report::tsv(h).as_bytes())?;
    write_whole(
        &out.join("history.json"),
        (serde_json::to_string_pretty(h)? + "\n").as_bytes(),
    )?;
    write_whole(&out.join("history.svg"), report::svg(h).as_bytes())?;
    print!("{text}");
    Ok(())
}

/// Says what this run counted and kept; the builds failed or not counted.
fn summary(h: &History, start: Instant, out: &Path) -> usize {
    let builds = || h.lines.iter().flat_map(|l| &l.builds);
    let counted_now = builds().filter(|b| b.counted_now).count();
    let of = |s: &str| builds().filter(|b| b.status == s && !b.counted_now).count();
    let bad = of("failed") + of("not counted");
    say!(
        "{} builds: {counted_now} counted now, {} kept from before, {} refused, {bad} failed \
         or not counted; {} in all; the report in {}",
        builds().count(),
        of("counted"),
        of("refused"),
        secs(start.elapsed()),
        out.display()
    );
    bad
}

/// The builds of `range` the runner's apt lists, narrowed by --since/--until.
fn list(a: &HistoryArgs, cache: &Path, range: (&str, &str)) -> Result<Vec<Build>> {
    for tool in ["apt-get", "apt-cache", "dpkg-deb"] {
        ensure!(
            which(tool).is_some(),
            "{tool} not found: Debian's kernels need apt and dpkg"
        );
    }
    let apt = Apt::new(cache, a.arch);
    let rels = {
        let _l = lock(&cache.join("apt.lock"))?;
        apt.update(debian::LISTS_MAX_AGE)?;
        apt.releases()?
    };
    let packages: Vec<String> = rels
        .iter()
        .filter(|r| {
            let s = r.series();
            debian::version_cmp(&s, range.0).is_ge() && debian::version_cmp(&s, range.1).is_le()
        })
        .map(|r| r.packages[0].clone())
        .collect();
    let listed = apt.versions(&packages)?;
    let all = builds::builds(&rels, &listed, range);
    builds::check_any(&all, &a.series, false, &debian::known_series(&rels))?;
    let narrowed = builds::narrow(all, a.since.as_deref(), a.until.as_deref());
    builds::check_any(
        &narrowed,
        &a.series,
        a.since.is_some() || a.until.is_some(),
        "",
    )?;
    Ok(narrowed)
}

fn list_out(a: &HistoryArgs, all: &[Build], setting: &Setting, kept_dir: &Path) -> Result<i32> {
    if a.matrix {
        let todo: Vec<&str> = all
            .iter()
            .filter(|b| b.refused.is_none())
            .map(|b| b.release.as_str())
            .collect();
        println!("{}", serde_json::json!({ "build": todo }));
        return Ok(0);
    }
    for b in all {
        let state = match &b.refused {
            Some(why) => format!("refused: {why}"),
            None if kept::load(kept_dir, &setting.key(b)).is_some() => "kept".into(),
            None => "to count".into(),
        };
        println!(
            "{:<26} {:<20} {:<6} {:<36} {state}",
            b.release,
            b.version,
            b.line,
            b.suites.join(",")
        );
    }
    Ok(0)
}

/// QEMU's version line: part of every count's key.
fn qemu_version(arch: Arch) -> Result<String> {
    ensure!(
        which(arch.qemu()).is_some(),
        "{} not found: apt-get install -y {}",
        arch.qemu(),
        arch.qemu_package()
    );
    let out = Command::new(arch.qemu())
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", arch.qemu()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned())
}

/// The history of `all`: each build as kept, the steps of each line,
/// explained and placed among the stable releases.
fn history(a: &HistoryArgs, all: &[Build], setting: &Setting, runs: &Runs) -> Result<History> {
    let kept_dir = runs.kept;
    let mut lines: Vec<Line> = Vec::new();
    // Each build's result, read once: for its counts now, its steps below.
    let mut docs: BTreeMap<&str, Document> = BTreeMap::new();
    // Each build's stable list, for the steps that end at it.
    let mut stables: BTreeMap<&str, Stables> = BTreeMap::new();
    for b in all {
        let mut k = kept::load(kept_dir, &setting.key(b));
        if let Some(k) = k.as_mut() {
            keep_stable(kept_dir, k, (b, &builds::before(all, b)), runs.cache);
            if let Some(s) = k.stable.take() {
                stables.insert(&b.release, s);
            }
        }
        let c = counted(b, k.as_ref(), runs);
        if let Some(doc) = k.and_then(|k| k.result) {
            docs.insert(&b.release, doc);
        }
        match lines.iter_mut().find(|l| l.line == b.line) {
            Some(l) => l.builds.push(c),
            None => lines.push(Line {
                line: b.line.clone(),
                compiler: builds::compiler(&b.line).into(),
                builds: vec![c],
                steps: Vec::new(),
            }),
        }
    }
    for l in &mut lines {
        l.steps = line_steps(a, l, (&docs, &stables), all, setting, runs)?;
    }
    Ok(History {
        series: a.series.clone(),
        arch: a.arch.name().into(),
        threshold: a.threshold / 100.0,
        qemu: setting.qemu.clone(),
        cpu: setting.cpu.clone(),
        plan: setting.plan.clone(),
        lines,
    })
}

/// Build `b` as reported: refused, counted or failed as `k` (its kept
/// count) says, else not counted, saying why.
fn counted(b: &Build, k: Option<&Kept>, runs: &Runs) -> Counted {
    let counts = k
        .and_then(|k| k.result.as_ref())
        .map(counts_of)
        .unwrap_or_default();
    let (status, why) = match (&b.refused, k) {
        (Some(r), _) => ("refused", Some(r.clone())),
        (_, Some(k)) if k.result.is_some() => ("counted", k.why.first().cloned()),
        (_, Some(k)) => ("failed", k.why.first().cloned()),
        (_, None) => (
            "not counted",
            Some(
                runs.failed
                    .get(&b.release)
                    .map(|f| f.0.clone())
                    .unwrap_or_else(|| "not counted yet (--no-count)".into()),
            ),
        ),
    };
    Counted {
        build: b.clone(),
        status: status.into(),
        why,
        counts,
        fetch_s: k.and_then(|k| k.fetch_s),
        vm_s: k.and_then(|k| k.vm_s),
        downloaded_bytes: k.and_then(|k| k.downloaded_bytes),
        counted_now: runs.now.contains(&b.release.as_str()),
    }
}

/// Line `l`'s steps: found between its builds' results (`docs`), split
/// by function unless `--no-explain`, and placed among the stable
/// releases of its builds' lists (`stables`).
fn line_steps(
    a: &HistoryArgs,
    l: &Line,
    (docs, stables): (&BTreeMap<&str, Document>, &BTreeMap<&str, Stables>),
    all: &[Build],
    setting: &Setting,
    runs: &Runs,
) -> Result<Vec<Located>> {
    let refs: Vec<(&str, Option<&Document>)> = l
        .builds
        .iter()
        .map(|c| (c.build.release.as_str(), docs.get(c.build.release.as_str())))
        .collect();
    // --threshold is in percent; the rule takes a share.
    let mut found = steps::steps(&refs, a.threshold / 100.0)?;
    if !a.no_explain {
        split::explain(a, &mut found, all, setting, runs)?;
    }
    let chain: Vec<(&str, Option<&Stables>)> = l
        .builds
        .iter()
        .map(|c| {
            (
                c.build.upstream.as_str(),
                stables.get(c.build.release.as_str()),
            )
        })
        .collect();
    Ok(found
        .into_iter()
        .map(|s| split::locate(s, &l.builds, &chain, runs.cache))
        .collect())
}

/// Keeps with `k` its build's stable list (after `after`, the build
/// before it) when it has none that reaches back so far and the package
/// is at hand: a count kept before lists were, or under a narrower
/// history. Read once, then kept; a list that cannot be kept is still used.
fn keep_stable(kept_dir: &Path, k: &mut Kept, (b, after): (&Build, &str), cache: &Path) {
    if k.stable.as_ref().is_some_and(|s| s.reach(after)) {
        return;
    }
    let root = runs::package_root(cache, &b.release);
    if let Some(s) = Stables::read(&root, after, &b.upstream) {
        k.stable = Some(s);
        if let Err(e) = kept::save(kept_dir, k) {
            say!(
                "{}: its stable list not kept: {}",
                b.release,
                crate::util::one_line(&e)
            );
        }
    }
}

/// A result's counts: each mechanism counted (bases aside).
fn counts_of(doc: &Document) -> Vec<(String, f64)> {
    doc.mechanisms
        .iter()
        .filter(|m| !m.is_base() && m.is_ok())
        .filter_map(|m| Some((m.name.clone(), m.overhead_ns.as_ref()?.median)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_count_kept_without_its_list_is_given_one_while_the_package_is_cached() {
        let (cache, kept_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let b = Build {
            release: "6.12.46+deb12-amd64".into(),
            version: "6.12.46-1".into(),
            upstream: "6.12.46".into(),
            line: "deb12".into(),
            suites: vec![],
            packages: vec![],
            refused: None,
        };
        let doc = runs::package_root(cache.path(), &b.release).join("usr/share/doc/linux-image");
        std::fs::create_dir_all(&doc).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(
            b"linux (6.12.46-1) unstable; urgency=medium\n\n  * New upstream stable update:\n    \
              https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.46\n    \
              - kprobes: a fix\n  * New upstream stable update:\n    \
              https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.45\n    \
              - bpf: another\n",
        )
        .unwrap();
        std::fs::write(doc.join("changelog.Debian.gz"), gz.finish().unwrap()).unwrap();
        let key = kept::Key {
            release: b.release.clone(),
            version: b.version.clone(),
            qemu: "q".into(),
            cpu: "max".into(),
            plan: "p".into(),
            programs: "0".into(),
        };
        let mut k = Kept {
            key: key.clone(),
            exit: 0,
            why: vec![],
            fetch_s: None,
            downloaded_bytes: None,
            vm_s: None,
            result: None,
            stable: None,
        };
        keep_stable(kept_dir.path(), &mut k, (&b, "6.12.45"), cache.path());
        let rels = |k: &Kept| -> Vec<String> {
            let s = k.stable.as_ref().unwrap();
            s.releases.iter().map(|r| r.release.clone()).collect()
        };
        assert_eq!(rels(&k), ["6.12.46"]);
        // Kept: the next report needs no package.
        std::fs::remove_dir_all(cache.path().join("kernels")).unwrap();
        let mut again = kept::load(kept_dir.path(), &key).unwrap();
        keep_stable(kept_dir.path(), &mut again, (&b, "6.12.45"), cache.path());
        assert_eq!(rels(&again), ["6.12.46"]);
        assert_eq!(
            again.stable.as_ref().unwrap().releases[0].subjects,
            ["kprobes: a fix"]
        );
    }
}
