//! Damaged objects never abort: valid BPF objects (the suite's own,
//! tests/objects/) with bytes changed, cut short, zeroed over a range or
//! overwritten from another object, each run through `--object`. Each
//! must end with a status the command documents (0, 1, 2 or 4), never a
//! signal or a hang; with one line when it refuses the object, and never
//! a panic; and it must leave no BPF program, link or mount behind.
//!
//! Seeded: mutant i of seed S is the same on every machine, so a failure
//! names what reruns it. `scripts/mutate-objects` runs thousands and keeps
//! the failing objects (docs/objects.md). Needs root, like the suite.

mod common;
use common::procs;
use common::rng::Rng;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bpf_overhead::env_vars::mutants::{COUNT_ENV, KEEP_ENV, SEED_ENV};
use common::cli::{command, output_within_or_kill};
use common::objects::{object, NEEDS_ROOT};
use common::system::root_or_skip;
use serial_test::serial;

/// Objects of every kind the command takes: tracepoints, socket filters,
/// pinned maps, kprobe/fentry/LSM hooks, an agent's object without BTF
/// names, and one whose second program the verifier refuses.
const SOURCES: &[&str] = &[
    "sys_prog",
    "skb",
    "pinned",
    "kernel_hooks",
    "agent_bare",
    "one_bad",
    "syscalls",
];

/// How many mutants the README's test command tries: the first 50 of
/// [`DEFAULT_SEED`] hold two (45 and 48) of the seven in its first 200
/// that abort the command with libbpf-rs's print callback put back
/// (docs/notes/objects-background.md), so the sample still catches the
/// abort it was made for, in a quarter of the time.
const SAMPLE_MUTANTS: u64 = 50;
/// How many CI's slow step tries (`--ignored`); the script's long runs set
/// [`COUNT_ENV`]. 200 took 8.8 s on 2 vCPUs beside a build.
const FULL_MUTANTS: u64 = 200;
const DEFAULT_SEED: u64 = 20261206;
/// The fewest events that still measure: a mutant that loads is measured
/// as any object is, and this test is about the loading.
const ITERATIONS: &str = "10";
/// Far beyond a refused object's milliseconds and a measured one's second.
const HANG: Duration = Duration::from_secs(30);

/// Mutant `i` of `seed`: which object, what was done to it, its bytes.
fn mutant(objects: &[(&str, Vec<u8>)], seed: u64, i: u64) -> (String, Vec<u8>) {
    let mut rng = Rng::for_case(seed, i);
    let (name, original) = &objects[rng.below(objects.len())];
    let mut bytes = original.clone();
    let len = bytes.len();
    let what = match rng.below(4) {
        0 => {
            let n = 1 + rng.below(8);
            for _ in 0..n {
                let at = rng.below(len);
                bytes[at] = rng.next() as u8;
            }
            format!("{n} bytes changed")
        }
        1 => {
            let at = rng.below(len);
            bytes.truncate(at);
            format!("cut at {at}")
        }
        2 => {
            let at = rng.below(len);
            let n = (1 + rng.below(256)).min(len - at);
            bytes[at..at + n].fill(0);
            format!("{n} bytes zeroed at {at}")
        }
        _ => {
            let (other, from) = &objects[rng.below(objects.len())];
            let (src, dst) = (rng.below(from.len()), rng.below(len));
            let n = (1 + rng.below(512)).min(from.len() - src).min(len - dst);
            bytes[dst..dst + n].copy_from_slice(&from[src..src + n]);
            format!("{n} bytes of {other} copied to {dst}")
        }
    };
    (format!("{name}: {what}"), bytes)
}

/// What the kernel holds that a run could leave behind: BPF programs and
/// links by id, and this mount namespace's mounts.
#[derive(PartialEq, Eq, Debug)]
struct KernelState {
    programs: BTreeSet<u32>,
    links: BTreeSet<u32>,
    mounts: Vec<String>,
}

impl KernelState {
    fn now() -> KernelState {
        KernelState {
            programs: libbpf_rs::query::ProgInfoIter::default()
                .map(|p| p.id)
                .collect(),
            links: libbpf_rs::query::LinkInfoIter::default()
                .map(|l| l.id)
                .collect(),
            mounts: procs::mounts(),
        }
    }

    /// What is held now that was not at `before` and that no live process
    /// holds (the other worker's run, say): what a run left in the kernel,
    /// once the kernel has freed what it closed (after an RCU grace period).
    fn left_since(before: &KernelState) -> Option<String> {
        let mut left = None;
        for _ in 0..50 {
            let now = KernelState::now();
            let live = procs::BpfFds::of_every_process();
            let programs: Vec<_> = now
                .programs
                .difference(&before.programs)
                .filter(|id| !live.programs.contains(id))
                .collect();
            let links: Vec<_> = now
                .links
                .difference(&before.links)
                .filter(|id| !live.links.contains(id))
                .collect();
            if programs.is_empty() && links.is_empty() && now.mounts == before.mounts {
                return None;
            }
            left = Some(format!(
                "left behind: programs {programs:?}, links {links:?}, mounts {}",
                if now.mounts == before.mounts {
                    "as before"
                } else {
                    "changed"
                }
            ));
            std::thread::sleep(Duration::from_millis(20));
        }
        left
    }
}

/// The CPUs the workers measure on, one each: the first two this test may
/// run on (one on a single-CPU machine).
fn worker_cpus() -> Vec<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .take(2)
        .collect()
}

/// Runs one mutant; what is wrong with how the command took it, if
/// anything.
fn judge(path: &Path, cpu: usize, before: &KernelState) -> Result<i32, String> {
    let path = path.to_str().unwrap();
    let cpu = cpu.to_string();
    let cmd = command(&[
        "--cpu",
        &cpu,
        "--object",
        path,
        "--repeat",
        "1",
        "--iterations",
        ITERATIONS,
        "--no-prog-stats",
    ]);
    let out = output_within_or_kill(cmd, HANG).map_err(|e| e.to_string())?;
    let code = out
        .code
        .ok_or_else(|| format!("killed by a signal: {}", out.stderr))?;
    if ![0, 1, 2, 4].contains(&code) {
        return Err(format!("exit {code}: {}", out.stderr));
    }
    if out.stderr.contains("panicked") || out.stderr.contains("backtrace") {
        return Err(format!("a panic: {}", out.stderr));
    }
    // Notes (a pinned map, say) may come first; the error is one line, the last.
    let errors = out.stderr.lines().filter(|l| l.contains("error")).count();
    let last = out.stderr.lines().last().unwrap_or_default();
    if code == 2 && (errors != 1 || !last.starts_with("bpf-overhead: error: ")) {
        return Err(format!(
            "exit 2, but not with one error line: {}",
            out.stderr
        ));
    }
    if let Some(left) = KernelState::left_since(before) {
        return Err(left);
    }
    Ok(code)
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

#[test]
#[serial]
fn damaged_objects_never_abort_hang_or_leave_anything() {
    run_mutants(SAMPLE_MUTANTS);
}

#[test]
#[serial]
#[ignore = "CI's slow step: 200 mutants, some 9 s"]
fn damaged_objects_at_full_size() {
    run_mutants(FULL_MUTANTS);
}

/// Runs `count` mutants (or [`COUNT_ENV`]'s), two at a time, and fails
/// naming each that the command took wrongly.
fn run_mutants(count: u64) {
    if !root_or_skip(NEEDS_ROOT) {
        return;
    }
    let count = env_u64(COUNT_ENV, count);
    let seed = env_u64(SEED_ENV, DEFAULT_SEED);
    let keep = std::env::var_os(KEEP_ENV).map(std::path::PathBuf::from);
    let objects: Vec<(&str, Vec<u8>)> = SOURCES
        .iter()
        .map(|n| {
            (
                *n,
                std::fs::read(object(n)).expect("the suite's objects are built"),
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let before = KernelState::now();
    let started = Instant::now();
    let codes = Mutex::new(std::collections::BTreeMap::<i32, u64>::new());
    let failures = Mutex::new(Vec::new());
    // Two at a time, each on a CPU of its own: most of a run that measures
    // is the kernel's RCU wait as it detaches, not CPU time.
    let cpus = worker_cpus();
    let workers = cpus.len();
    std::thread::scope(|s| {
        for (w, &cpu) in cpus.iter().enumerate() {
            let (objects, dir, before) = (&objects, dir.path(), &before);
            let (codes, failures, keep) = (&codes, &failures, &keep);
            s.spawn(move || {
                for i in (w as u64..count).step_by(workers) {
                    let (what, bytes) = mutant(objects, seed, i);
                    let path = dir.join(format!("mutant-{i}.bpf.o"));
                    std::fs::write(&path, &bytes).unwrap();
                    match judge(&path, cpu, before) {
                        Ok(code) => *codes.lock().unwrap().entry(code).or_default() += 1,
                        Err(why) => {
                            let line = why.lines().next().unwrap_or_default().to_string();
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("seed {seed} mutant {i} ({what}): {line}"));
                            if let Some(keep) = keep {
                                std::fs::create_dir_all(keep).unwrap();
                                let name = format!("seed-{seed}-mutant-{i}.bpf.o");
                                std::fs::copy(&path, keep.join(name)).unwrap();
                            }
                        }
                    }
                    std::fs::remove_file(&path).unwrap();
                }
            });
        }
    });
    let (codes, failures) = (codes.into_inner().unwrap(), failures.into_inner().unwrap());
    println!(
        "mutated objects: {count} (seed {seed}) in {:.1} s: exit codes {codes:?}, {} failed",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The mutants are the same for the same seed and index, whatever ran
/// before: a failure's seed and index rerun it.
#[test]
fn mutants_are_reproducible() {
    let objects = vec![("a", vec![1u8; 100]), ("b", (0..=255u8).collect())];
    let first: Vec<_> = (0..20).map(|i| mutant(&objects, 7, i)).collect();
    let again: Vec<_> = (0..20).rev().map(|i| mutant(&objects, 7, i)).collect();
    assert!(first.iter().eq(again.iter().rev()));
    assert_ne!(mutant(&objects, 7, 0), mutant(&objects, 8, 0));
}
