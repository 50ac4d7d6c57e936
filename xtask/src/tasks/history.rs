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
pub mod report;
pub mod steps;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::kernels::arch::{arch, Arch};
use crate::kernels::debian::{self, Apt};
use crate::util::signal::check_signal;
use crate::util::values::{percent, positive, positive_usize};
use crate::util::{cache_dir, fnv, lock, repo_root, say, secs, which, write_whole, FNV_START};
use crate::vm;

use builds::Build;
use kept::{Kept, Key};
use report::{Counted, History, Line, Located, StableNote};
use steps::{Moved, Step};

/// The links on every function: their attach and detach are half an
/// exact run's instructions, and their counts spread beyond any
/// threshold from boot to boot (docs/exact.md), so no step of theirs
/// could be judged.
const EVERY_FUNCTION: &[&str] = &["kprobe.multi-all-loop", "kretprobe.multi-all-loop"];

/// The command's rounds per build: a tick (every 4M instructions) lands in
/// a run of 200 events at most one time in 5 (the return uprobes' 0.8M), so
/// in all of 5 rounds one time in 3000, adding under 1% to their counts.
const ROUNDS: u32 = 5;

/// `cargo xtask history`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct HistoryArgs {
    /// A Debian series (6.12, 6.1) or a range of series (6.16..7.3)
    #[arg(value_name = "SERIES")]
    pub series: String,
    /// The builds' architecture: x86_64 or arm64
    #[arg(long, value_name = "ARCH", default_value = "x86_64", value_parser = arch)]
    pub arch: Arch,
    /// Only builds of this upstream release (6.12.74) or build (6.12.74+deb12-amd64) and later
    #[arg(long, value_name = "RELEASE")]
    pub since: Option<String>,
    /// Only builds up to this upstream release or build
    #[arg(long, value_name = "RELEASE")]
    pub until: Option<String>,
    /// A step: a count that changed by more than PERCENT from one build to the next
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, value_parser = percent)]
    pub threshold: f64,
    /// Print the builds, each with its version, suites and whether it is kept, and exit
    #[arg(long)]
    pub list: bool,
    /// With --list: the builds to count as a GitHub Actions matrix, {"build":[...]}
    #[arg(long, requires = "list")]
    pub matrix: bool,
    /// Count only this build (a release, e.g. one job of a fan-out) and keep it
    #[arg(long, value_name = "RELEASE", conflicts_with = "list")]
    pub only: Option<String>,
    /// Count nothing: report from the kept counts (e.g. a fan-out's merge)
    #[arg(long = "no-count", conflicts_with = "only")]
    pub no_count: bool,
    /// No --explain runs on the builds either side of a step
    #[arg(long = "no-explain")]
    pub no_explain: bool,
    /// Count the links on every function too (kprobe.multi-all-loop,
    /// kretprobe.multi-all-loop): twice the time, and no step of theirs is judged
    #[arg(long = "every-function")]
    pub every_function: bool,
    /// The command's rounds per build; each count is the fewest of them
    #[arg(long, value_name = "N", default_value_t = ROUNDS, value_parser = positive)]
    pub rounds: u32,
    /// Builds counted at once (each VM keeps one host CPU busy)
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1, value_parser = positive_usize)]
    pub jobs: usize,
    /// Where the counts are kept [default: <cache>/history/<arch>]
    #[arg(long, value_name = "DIR")]
    pub kept: Option<PathBuf>,
    /// Where the report and each build's run go [default: target/history/SERIES]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn main(a: HistoryArgs) -> i32 {
    vm::task_main(|| run(&a))
}

/// What every count of this history depends on besides the build.
struct Setting {
    qemu: String,
    cpu: String,
    plan: String,
    programs: String,
}

impl Setting {
    fn key(&self, b: &Build) -> Key {
        Key {
            release: b.release.clone(),
            version: b.version.clone(),
            qemu: self.qemu.clone(),
            cpu: self.cpu.clone(),
            plan: self.plan.clone(),
            programs: self.programs.clone(),
        }
    }
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
    let out = a.out.clone().unwrap_or_else(|| {
        let name = match a.arch {
            Arch::X86_64 => a.series.clone(),
            other => format!("{}-{}", a.series, other.name()),
        };
        repo.join("target/history").join(name)
    });
    let all = list(a, &cache, (&range.0, &range.1))?;
    let setting = Setting {
        qemu: qemu_version(a.arch)?,
        cpu: vm::tcg_cpu(a.arch).into(),
        plan: format!(
            "{} rounds of 200 events{}",
            a.rounds,
            if a.every_function {
                ""
            } else {
                ", the links on every function left out"
            }
        ),
        programs: kept::digest_dir(&repo.join("bpf"))?,
    };
    if a.list {
        return list_out(a, &all, &setting, &kept_dir);
    }
    let todo: Vec<&Build> = match &a.only {
        Some(only) => {
            let b = all
                .iter()
                .find(|b| &b.release == only)
                .with_context(|| format!("{only} is not a build of {} (see --list)", a.series))?;
            if let Some(why) = &b.refused {
                bail!("{only}: {why}");
            }
            if kept::load(&kept_dir, &setting.key(b)).is_some() {
                say!("{only}: kept from an earlier run: nothing to count");
                return Ok(0);
            }
            vec![b]
        }
        None if a.no_count => Vec::new(),
        None => all
            .iter()
            .filter(|b| b.refused.is_none() && kept::load(&kept_dir, &setting.key(b)).is_none())
            .collect(),
    };
    let failed = count_all(a, &todo, &setting, &kept_dir, &out)?;
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
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let text = report::text(&h);
    write_whole(&out.join("history.txt"), text.as_bytes())?;
    write_whole(&out.join("history.tsv"), report::tsv(&h).as_bytes())?;
    write_whole(
        &out.join("history.json"),
        (serde_json::to_string_pretty(&h)? + "\n").as_bytes(),
    )?;
    write_whole(&out.join("history.svg"), report::svg(&h).as_bytes())?;
    print!("{text}");
    let counted_now = h
        .lines
        .iter()
        .flat_map(|l| &l.builds)
        .filter(|b| b.counted_now)
        .count();
    let of = |s: &str| {
        h.lines
            .iter()
            .flat_map(|l| &l.builds)
            .filter(|b| b.status == s && !b.counted_now)
            .count()
    };
    let bad = of("failed") + of("not counted");
    say!(
        "{} builds: {counted_now} counted now, {} kept from before, {} refused, {bad} failed \
         or not counted; {} in all; the report in {}",
        all.len(),
        of("counted"),
        of("refused"),
        secs(start.elapsed()),
        out.display()
    );
    // A fetch that failed (a damaged download, no network) is bad input or
    // a bad environment: 2, as everywhere; a VM that failed: 1.
    let worst = failed.values().map(|f| f.1).max().unwrap_or(0);
    Ok(worst.max(i32::from(bad > 0)))
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

/// Counts `todo`, `a.jobs` at once, keeping each count; the builds whose
/// fetch or VM failed, with why and the exit it makes (2: the fetch, 1: the VM).
fn count_all(
    a: &HistoryArgs,
    todo: &[&Build],
    setting: &Setting,
    kept_dir: &Path,
    out: &Path,
) -> Result<BTreeMap<String, (String, i32)>> {
    let failed = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
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
                match count(a, b, setting, kept_dir, out) {
                    Ok(k) if k.result.is_some() => {}
                    Ok(k) => {
                        let why = k.why.first().cloned().unwrap_or_else(|| "no result".into());
                        failed.lock().unwrap().insert(b.release.clone(), (why, 1));
                    }
                    Err(e) => {
                        failed
                            .lock()
                            .unwrap()
                            .insert(b.release.clone(), (crate::util::one_line(&e), 2));
                    }
                }
            });
        }
    });
    check_signal()?;
    if !todo.is_empty() {
        say!(
            "counted {} build(s) in {} ({} each)",
            todo.len(),
            secs(t.elapsed()),
            secs(t.elapsed() / todo.len() as u32)
        );
    }
    Ok(failed.into_inner().unwrap())
}

/// Runs `vmtest BUILD --exact` and keeps what it counted (or why its VM
/// failed). A fetch that failed keeps nothing: the next run tries again.
fn count(
    a: &HistoryArgs,
    b: &Build,
    setting: &Setting,
    kept_dir: &Path,
    out: &Path,
) -> Result<Kept> {
    let dir = out.join("builds").join(&b.release);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = vmtest(a, &b.release, &dir);
    if !a.every_function {
        cmd.arg("--bench-arg=--skip")
            .arg(format!("--bench-arg={}", EVERY_FUNCTION.join(",")));
    }
    let t = Instant::now();
    let last = relay(cmd, if a.jobs > 1 { &b.release } else { "" })?;
    let wall = t.elapsed();
    let summary: Value = match fs::read_to_string(dir.join("vmtest.json")) {
        Ok(s) => serde_json::from_str(&s).context("reading its vmtest.json")?,
        Err(_) => bail!(
            "{}",
            last.unwrap_or_else(|| "vmtest wrote no summary".into())
        ),
    };
    let result: Option<Value> = fs::read_to_string(dir.join("result.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    let f = |k: &str| summary[k].as_f64();
    let kept = Kept {
        key: setting.key(b),
        exit: summary["exit"].as_i64().unwrap_or(1) as i32,
        why: summary["why"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        fetch_s: f("fetch_s"),
        downloaded_bytes: summary["downloaded_bytes"].as_u64(),
        vm_s: f("vm_s"),
        result,
    };
    kept::save(kept_dir, &kept)?;
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

/// `xtask vmtest KERNEL --exact` into `dir`, as history runs it.
fn vmtest(a: &HistoryArgs, kernel: &str, dir: &Path) -> Command {
    let xtask = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
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
fn relay(mut cmd: Command, prefix: &str) -> Result<Option<String>> {
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

/// Where this run keeps and writes, and what it counted.
struct Runs<'a> {
    kept: &'a Path,
    out: &'a Path,
    cache: &'a Path,
    /// Builds whose fetch or VM failed now, with why and its exit.
    failed: &'a BTreeMap<String, (String, i32)>,
    /// Builds counted now.
    now: &'a [&'a str],
}

/// The history of `all`: each build as kept, the steps of each line,
/// explained and placed among the stable releases.
fn history(a: &HistoryArgs, all: &[Build], setting: &Setting, runs: &Runs) -> Result<History> {
    let (kept_dir, failed) = (runs.kept, runs.failed);
    let mut lines: Vec<Line> = Vec::new();
    for b in all {
        let k = kept::load(kept_dir, &setting.key(b));
        let counts = k
            .as_ref()
            .and_then(|k| k.result.as_ref())
            .map(counts_of)
            .unwrap_or_default();
        let (status, why) = match (&b.refused, &k) {
            (Some(r), _) => ("refused", Some(r.clone())),
            (_, Some(k)) if k.result.is_some() => ("counted", k.why.first().cloned()),
            (_, Some(k)) => ("failed", k.why.first().cloned()),
            (_, None) => (
                "not counted",
                Some(
                    failed
                        .get(&b.release)
                        .map(|f| f.0.clone())
                        .unwrap_or_else(|| "not counted yet (--no-count)".into()),
                ),
            ),
        };
        let c = Counted {
            build: b.clone(),
            status: status.into(),
            why,
            counts,
            fetch_s: k.as_ref().and_then(|k| k.fetch_s),
            vm_s: k.as_ref().and_then(|k| k.vm_s),
            downloaded_bytes: k.as_ref().and_then(|k| k.downloaded_bytes),
            counted_now: runs.now.contains(&b.release.as_str()),
        };
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
        let docs: Vec<(String, Option<Value>)> = l
            .builds
            .iter()
            .map(|c| {
                let doc = kept::load(kept_dir, &setting.key(&c.build)).and_then(|k| k.result);
                (c.build.release.clone(), doc)
            })
            .collect();
        let refs: Vec<(&str, Option<&Value>)> =
            docs.iter().map(|(r, d)| (r.as_str(), d.as_ref())).collect();
        let mut found = steps::steps(&refs, a.threshold)?;
        if !a.no_explain {
            explain(a, &mut found, all, setting, runs)?;
        }
        l.steps = found
            .into_iter()
            .map(|s| locate(s, &l.builds, runs.cache))
            .collect();
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

/// A result's counts: each mechanism counted (bases aside).
fn counts_of(doc: &Value) -> Vec<(String, f64)> {
    doc["mechanisms"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter(|m| m["name"] != m["base"] && m["status"] == "ok")
                .filter_map(|m| {
                    Some((
                        m["name"].as_str()?.to_owned(),
                        m["overhead_ns"]["median"].as_f64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Splits each pair of builds' steps by function: `vmtest A --against B
/// --exact --explain` with only the mechanisms that stepped, kept as
/// counts are. A step the recount does not see is said so.
fn explain(
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
fn locate(step: Step, line: &[Counted], cache: &Path) -> Located {
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
                    subjects: changelog::relevant(s, &functions)
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
