//! One measuring run per CPU at a time, across processes.
//!
//! Two runs pinned to one CPU both keep exact counts, but each one's
//! figures then include the other's work: nothing would say so, and a
//! `--save` of either is a bad baseline. So a measuring run (the command's
//! whole run, a suite test's) holds an exclusive `flock(2)` on
//! `/run/bpf-overhead/cpu<N>.lock` for each CPU it pins a thread to, and a
//! second run waits for it, saying on stderr who holds it and for how long
//! it has waited. The kernel drops the lock with the last fd, however the
//! process ends (SIGKILL included): a lock can never be left stale.
//!
//! Re-entrant within a process: the command takes the lock before its
//! pipeline run, which takes it again; each hold counts, and the file goes
//! when the last one does.
//!
//! The directory: `/run/bpf-overhead`, created by the first run (root's,
//! in practice: /run is root's) sticky and writable by all like /tmp, each
//! file readable by all, so a run with capabilities but another uid can
//! still lock what root created (flock needs only an open fd). Where /run
//! cannot be written and the directory is not there yet, the system's temp
//! directory holds them instead (`/tmp/bpf-overhead`); a run that can use
//! neither measures without the lock and warns once.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{IsTerminal, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use super::pin::{allowed_cpus, choose, list, producer_cpus};
use crate::measure::error::Error;

/// Where the lock files are.
pub const LOCK_DIR: &str = "/run/bpf-overhead";

/// Whether to wait for a CPU another run holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Wait, saying who holds it (the default).
    Yes,
    /// Fail at once, saying who holds it (`--no-wait`).
    No,
}

/// Why [`hold`] gave no lock.
#[derive(Debug)]
pub enum Refused {
    /// With [`Wait::No`]: another run holds a CPU. One line saying who.
    Busy(String),
    /// The CPUs themselves could not be worked out (bad `--cpu`...).
    Error(Error),
    /// Asked to stop while waiting.
    Stopped,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Busy(msg) => f.write_str(msg),
            Refused::Error(e) => e.fmt(f),
            Refused::Stopped => f.write_str("stopped while waiting"),
        }
    }
}

impl From<Refused> for Error {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Busy(msg) => Error::Busy(msg),
            Refused::Error(e) => e,
            Refused::Stopped => Error::Stopped,
        }
    }
}

/// The held locks, by CPU: the file, how many holds of this process, and
/// how long the hold that took it waited.
static HELD: Mutex<BTreeMap<usize, CpuHold>> = Mutex::new(BTreeMap::new());

struct CpuHold {
    _file: File,
    count: usize,
    waited: Duration,
}

/// How long this process waited for its CPUs, in all.
static WAITED: Mutex<Duration> = Mutex::new(Duration::ZERO);

/// The CPUs of this process held while it lives; released on drop.
#[must_use = "the CPUs are released when this is dropped"]
#[derive(Debug)]
pub struct CpuLock {
    /// The measuring thread's CPU, the first of those asked for.
    pub cpu: usize,
    cpus: Vec<usize>,
    /// How long getting them took (zero: free at once, or already ours).
    pub waited: Duration,
}

impl Drop for CpuLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        for cpu in &self.cpus {
            if let Some(CpuHold { count, .. }) = held.get_mut(cpu) {
                *count -= 1;
                if *count == 0 {
                    // Closing the file drops the lock.
                    held.remove(cpu);
                }
            }
        }
    }
}

/// How long the CPUs this process holds now were waited for (the longest,
/// by the hold that took them): what a run that holds them records.
pub fn waited_for_held() -> Duration {
    let held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.values().map(|h| h.waited).max().unwrap_or_default()
}

/// How long this process has waited for its CPUs so far, in all.
pub fn waited() -> Duration {
    *WAITED.lock().unwrap_or_else(|p| p.into_inner())
}

/// The CPUs a run with `cpu` and `producers` pins threads to: the
/// measuring thread's ([`CpuPin`]: `cpu`, else 0 or the first allowed),
/// then one per extra producer.
pub fn cpus_of(cpu: Option<usize>, producers: usize) -> crate::measure::Result<Vec<usize>> {
    producer_cpus(choose(cpu)?, &allowed_cpus()?, producers)
}

/// Holds the CPUs a run with `cpu` and `producers` uses
/// ([`cpus_of`]), waiting for them or not as `wait` says, and giving up
/// waiting once `stop` is set (to a signal's number).
pub fn hold_for(
    cpu: Option<usize>,
    producers: usize,
    wait: Wait,
    stop: Option<&AtomicUsize>,
) -> std::result::Result<CpuLock, Refused> {
    let cpus = cpus_of(cpu, producers).map_err(Refused::Error)?;
    hold_until(&cpus, wait, stop)
}

/// Holds `cpus` for this process until the result is dropped. A CPU that
/// another process holds is waited for (one line on stderr, refreshed,
/// saying who holds it and how long this run has waited), or with
/// [`Wait::No`] refused at once. CPUs are taken in ascending order, so two
/// runs needing several CPUs cannot deadlock.
pub fn hold(cpus: &[usize], wait: Wait) -> std::result::Result<CpuLock, Refused> {
    hold_until(cpus, wait, None)
}

fn hold_until(
    cpus: &[usize],
    wait: Wait,
    stop: Option<&AtomicUsize>,
) -> std::result::Result<CpuLock, Refused> {
    let cpu = cpus.first().copied().unwrap_or_default();
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let start = Instant::now();
    let mut lock = CpuLock {
        cpu,
        cpus: Vec::with_capacity(cpus.len()),
        waited: Duration::ZERO,
    };
    let mut waiting = Waiting {
        wait,
        stop,
        start,
        status: WaitLine::new(),
        unseen_since: None,
    };
    for &cpu in &cpus {
        // On an error `lock` drops what it took so far.
        if waiting.take_cpu(cpu)? {
            lock.cpus.push(cpu);
        }
    }
    waiting.finish(&mut lock, &cpus);
    Ok(lock)
}

/// Taking CPUs that other processes may hold: how to wait for them, since
/// when, and the line on stderr that says so.
struct Waiting<'a> {
    wait: Wait,
    stop: Option<&'a AtomicUsize>,
    start: Instant,
    status: WaitLine,
    /// Since when /proc/locks has named no holder of a taken CPU.
    unseen_since: Option<Instant>,
}

impl Waiting<'_> {
    /// Takes `cpu`, waiting while another process holds it (unless told
    /// not to wait, or to stop): whether it is held now, `false` where no
    /// lock can be had.
    fn take_cpu(&mut self, cpu: usize) -> std::result::Result<bool, Refused> {
        loop {
            match take(cpu) {
                Taken::Yes => return Ok(true),
                Taken::Unlocked => return Ok(false),
                Taken::Busy => {}
            }
            // Between one holder's release and the next one's lock,
            // /proc/locks may name nobody: try again before saying so.
            let who = match holder(cpu) {
                Some(who) => {
                    self.unseen_since = None;
                    who
                }
                None if self.unseen_since.get_or_insert_with(Instant::now).elapsed()
                    < Duration::from_secs(2) =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                None => "a process this one cannot see".into(),
            };
            if self.stop.is_some_and(|s| s.load(Ordering::SeqCst) != 0) {
                if self.status.shown {
                    self.status.done();
                }
                return Err(Refused::Stopped);
            }
            if self.wait == Wait::No {
                return Err(Refused::Busy(format!(
                    "CPU {cpu} is taken by another measuring run ({who}), and --no-wait \
                     says not to wait: its figures and ours would both be wrong"
                )));
            }
            self.status.show(&format!(
                "waiting for CPU {cpu}, in use by another measuring run ({who}): waited {}",
                seconds(self.start.elapsed())
            ));
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sets how long `lock` waited for `cpus`: zero where no line said it
    /// waited; else the line ends saying they are free, and the wait is
    /// added to the process's and kept on each CPU this hold took first.
    fn finish(mut self, lock: &mut CpuLock, cpus: &[usize]) {
        lock.waited = if self.status.shown {
            self.start.elapsed()
        } else {
            Duration::ZERO
        };
        if self.status.shown {
            self.status.show(&format!(
                "CPU {} free after waiting {}",
                list(cpus),
                seconds(lock.waited)
            ));
            self.status.done();
            *WAITED.lock().unwrap_or_else(|p| p.into_inner()) += lock.waited;
            let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
            for cpu in &lock.cpus {
                if let Some(h) = held.get_mut(cpu).filter(|h| h.count == 1) {
                    h.waited = lock.waited;
                }
            }
        }
    }
}

enum Taken {
    /// Ours now (or already: one more hold).
    Yes,
    /// Another process holds it.
    Busy,
    /// No lock file can be had here: measure without.
    Unlocked,
}

fn take(cpu: usize) -> Taken {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(CpuHold { count, .. }) = held.get_mut(&cpu) {
        *count += 1;
        return Taken::Yes;
    }
    let file = match open(cpu) {
        Ok(file) => file,
        Err(why) => {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                log::warn!(
                    "measuring without the per-CPU lock ({why}): another run on the same CPU \
                     would go unnoticed"
                );
            });
            return Taken::Unlocked;
        }
    };
    // SAFETY: flock on an fd we own.
    let ret = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if ret == 0 {
        held.insert(
            cpu,
            CpuHold {
                _file: file,
                count: 1,
                waited: Duration::ZERO,
            },
        );
        Taken::Yes
    } else {
        Taken::Busy
    }
}

/// The lock directories, in order of preference.
fn dirs() -> [PathBuf; 2] {
    [
        PathBuf::from(LOCK_DIR),
        std::env::temp_dir().join("bpf-overhead"),
    ]
}

/// The lock file of `cpu`, opened (created if need be) in the first
/// directory that works.
fn open(cpu: usize) -> Result<File, String> {
    let mut why = Vec::new();
    for dir in dirs() {
        match open_in(&dir, cpu) {
            Ok(file) => return Ok(file),
            Err(e) => why.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(why.join("; "))
}

fn open_in(dir: &Path, cpu: usize) -> std::io::Result<File> {
    if !dir.is_dir() {
        match fs::create_dir(dir) {
            Ok(()) => {
                // Sticky and writable by all, as /tmp: whoever runs next
                // can create the lock of another CPU.
                fs::set_permissions(dir, fs::Permissions::from_mode(0o1777))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let path = dir.join(format!("cpu{cpu}.lock"));
    let open = |write: bool| {
        OpenOptions::new()
            .read(true)
            .write(write)
            .create(write)
            .mode(0o644)
            // A link planted in a directory writable by all must not make
            // root create or lock a file elsewhere.
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
    };
    // Someone else's file: reading is enough to lock it.
    let file = open(true).or_else(|_| open(false))?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Who holds `cpu`'s lock: "pid N: COMMAND LINE", from /proc/locks (the
/// kernel's list of locks, with the pid that took each one); `None` when
/// it names nobody (a holder in another pid namespace, or none just now).
fn holder(cpu: usize) -> Option<String> {
    let inode = dirs().into_iter().find_map(|d| {
        fs::metadata(d.join(format!("cpu{cpu}.lock")))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    });
    let pid = inode.and_then(|(dev, ino)| {
        let locks = fs::read_to_string("/proc/locks").ok()?;
        locks.lines().find_map(|l| {
            // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(1) != Some(&"FLOCK") || f.get(3) != Some(&"WRITE") {
                return None;
            }
            let mut id = f.get(5)?.split(':');
            let (maj, min, i) = (id.next()?, id.next()?, id.next()?);
            let (maj, min) = (
                u64::from_str_radix(maj, 16).ok()?,
                u64::from_str_radix(min, 16).ok()?,
            );
            let same =
                i.parse::<u64>().ok()? == ino && libc::makedev(maj as u32, min as u32) == dev;
            same.then(|| f[4].parse::<u32>().ok()).flatten()
        })
    });
    pid.map(|pid| format!("pid {pid}: {}", command_line(pid)))
}

/// The command line of `pid`, arguments joined by spaces.
pub fn command_line(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|c| {
            c.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "command line unknown".into())
}

/// The waiting line on stderr: refreshed in place on a terminal (each
/// second), a new line every 5 s otherwise, so that a log shows it too.
struct WaitLine {
    tty: bool,
    shown: bool,
    last: Option<Instant>,
    last_text: String,
}

impl WaitLine {
    fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            shown: false,
            last: None,
            last_text: String::new(),
        }
    }

    fn show(&mut self, text: &str) {
        let every = if self.tty { 1 } else { 5 };
        let due = self
            .last
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(every));
        // The holder changed (a third run took it first): say so at once.
        let changed = self.last_text.split(": waited").next() != text.split(": waited").next();
        if !(due || changed || text.starts_with("CPU ")) {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[Kbpf-overhead: {text}")
        } else {
            writeln!(err, "bpf-overhead: {text}")
        };
        let _ = err.flush();
        self.shown = true;
        self.last = Some(Instant::now());
        self.last_text = text.to_string();
    }

    fn done(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}
