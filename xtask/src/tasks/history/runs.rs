//! Counting builds: each one's `vmtest --exact` run as a child, `--jobs`
//! at once, its output relayed, what it counted kept.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::builds::{self, Build};
use super::kept::{self, Kept, Stables};
use super::options::{HistoryArgs, Setting};
use crate::util::document::Document;
use crate::util::signal::check_signal;
use crate::util::{say, secs};
use crate::vm::job::skip_every_function;
use crate::vm::summary::{self, VmtestJson};

/// Where a counting keeps and writes: the kept counts, the runs, and
/// the cache the packages are unpacked in.
pub(super) struct Dirs<'a> {
    pub kept: &'a Path,
    pub out: &'a Path,
    pub cache: &'a Path,
}

/// Counts `todo` (builds of `all`), `a.jobs` at once, keeping each count;
/// the builds whose fetch or VM failed, with why and the exit it makes
/// (2: the fetch, 1: the VM).
pub(super) fn count_all(
    a: &HistoryArgs,
    all: &[Build],
    todo: &[&Build],
    setting: &Setting,
    dirs: &Dirs,
) -> Result<BTreeMap<String, (String, i32)>> {
    let failed = Mutex::new(BTreeMap::new());
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..a.jobs.min(todo.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(b) = todo.get(i) else { break };
                if check_signal().is_err() {
                    break;
                }
                say!("counting {} ({} of {})", b.release, i + 1, todo.len());
                let counted = count(a, (b, &builds::before(all, b)), setting, dirs);
                let d = done.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some(left) = time_left(t.elapsed(), d, todo.len()) {
                    say!(
                        "{d} of {} build(s) done in {}; about {left} left",
                        todo.len(),
                        secs(t.elapsed())
                    );
                }
                match counted {
                    Ok(k) if k.result.is_some() => {}
                    Ok(k) => {
                        let why = k.why.first().cloned().unwrap_or_else(|| "no result".into());
                        let vm = i32::from(crate::util::exit_status::ENVIRONMENT);
                        failed.lock().unwrap().insert(b.release.clone(), (why, vm));
                    }
                    Err(e) => {
                        failed.lock().unwrap().insert(
                            b.release.clone(),
                            (crate::util::one_line(&e), crate::util::error_status(&e)),
                        );
                    }
                }
            });
        }
    });
    check_signal()?;
    let failed = failed.into_inner().unwrap();
    if !todo.is_empty() {
        say!(
            "{} build(s) in {} ({} each): {} counted, {} failed",
            todo.len(),
            secs(t.elapsed()),
            secs(t.elapsed() / todo.len() as u32),
            todo.len() - failed.len(),
            failed.len()
        );
    }
    Ok(failed)
}

/// The time the builds not yet done will take at the pace of those done
/// (the jobs at once included), rounded to the minute past ten minutes;
/// none when all are done or none is.
fn time_left(elapsed: Duration, done: usize, total: usize) -> Option<String> {
    if done == 0 || done >= total {
        return None;
    }
    let left = elapsed.as_secs_f64() * (total - done) as f64 / done as f64;
    Some(if left >= 600.0 {
        format!("{:.0} min", left / 60.0)
    } else {
        format!("{left:.0}s")
    })
}

/// Runs `vmtest BUILD --exact` and keeps what it counted (or why its VM
/// failed), with the stable releases its changelog lists after `after`
/// (the build before it). A fetch that failed keeps nothing: the next run
/// tries again.
fn count(
    a: &HistoryArgs,
    (b, after): (&Build, &str),
    setting: &Setting,
    dirs: &Dirs,
) -> Result<Kept> {
    let dir = dirs.out.join("builds").join(&b.release);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    crate::util::create_dir_all(&dir)?;
    let mut cmd = vmtest(a, &b.release, &dir);
    if !setting.selection.is_empty() {
        cmd.arg("--bench-arg=-m")
            .arg(format!("--bench-arg={}", setting.selection.join(",")));
    }
    if !a.every_function {
        cmd.args(skip_every_function());
    }
    let t = Instant::now();
    let last = relay(cmd, if a.jobs > 1 { &b.release } else { "" })?;
    let wall = t.elapsed();
    if !dir.join(summary::FILE).is_file() {
        bail!(
            "{}",
            last.unwrap_or_else(|| "vmtest wrote no summary".into())
        );
    }
    let s = VmtestJson::load(&dir)?;
    let result = fs::read_to_string(dir.join("result.json"))
        .ok()
        .and_then(|s| Document::from_json(&s).ok());
    let kept = Kept {
        key: setting.key(b),
        exit: s.exit,
        why: s.why,
        fetch_s: Some(s.fetch_s),
        downloaded_bytes: Some(s.downloaded_bytes),
        vm_s: Some(s.vm_s),
        result,
        stable: Stables::read(&package_root(dirs.cache, &b.release), after, &b.upstream),
    };
    kept::save(dirs.kept, &kept)?;
    say!(
        "{}: exit {} in {} (fetch {:.1}s, VM {:.1}s)",
        b.release,
        kept.exit,
        secs(wall),
        kept.fetch_s.unwrap_or(0.0),
        kept.vm_s.unwrap_or(0.0)
    );
    Ok(kept)
}

/// Where the cache keeps a build's unpacked package.
pub(super) fn package_root(cache: &Path, release: &str) -> PathBuf {
    cache.join("kernels").join(release).join("root")
}

/// `xtask vmtest KERNEL --exact` into `dir`, as history runs it.
pub(super) fn vmtest(a: &HistoryArgs, kernel: &str, dir: &Path) -> Command {
    let xtask = crate::util::own_exe();
    let mut cmd = Command::new(xtask);
    cmd.args(["vmtest", kernel, "--exact", "--accel", "tcg", "--arch"])
        .arg(a.arch.name())
        .args(["--rounds", &a.rounds.to_string()])
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd`, its output copied to ours, each line after `[prefix]` when
/// several builds are counted at once; its last line on stderr.
pub(super) fn relay(mut cmd: Command, prefix: &str) -> Result<Option<String>> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting vmtest")?;
    let tag = |l: &str| match prefix {
        "" => l.to_owned(),
        p => format!("[{p}] {l}"),
    };
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let last = std::thread::scope(|s| {
        if let Some(out) = out {
            s.spawn(move || {
                for l in BufReader::new(out).lines().map_while(Result::ok) {
                    println!("{}", tag(&l));
                }
            });
        }
        let mut last = None;
        if let Some(err) = err {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{}", tag(&l));
                if !l.trim().is_empty() {
                    last = Some(l);
                }
            }
        }
        last
    });
    child.wait().context("waiting for vmtest")?;
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::time_left;
    use std::time::Duration;

    #[test]
    fn time_left_is_the_pace_of_the_builds_done() {
        let min = |m: u64| Duration::from_secs(60 * m);
        assert_eq!(time_left(min(10), 2, 6).as_deref(), Some("20 min"));
        assert_eq!(
            time_left(Duration::from_secs(90), 3, 5).as_deref(),
            Some("60s")
        );
        assert_eq!(time_left(min(10), 0, 6), None);
        assert_eq!(time_left(min(10), 6, 6), None);
    }
}
