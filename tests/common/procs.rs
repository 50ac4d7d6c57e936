//! What a process holds, seen from /proc: its BPF programs and links,
//! and the mounts a thread sees.

use std::collections::BTreeSet;

/// The BPF objects a process holds through its fds, read from the fdinfo
/// of every one of its threads (the measuring thread has a file table of
/// its own). A program or link of a process can only stay loaded through
/// such an fd: nothing is pinned.
#[derive(Debug, Default)]
pub struct BpfFds {
    /// The `prog_id:` of every program fd and every link fd: each program
    /// held, directly or through its link.
    pub programs: BTreeSet<u32>,
    /// The `link_id:` of every link fd.
    pub links: BTreeSet<u32>,
}

impl BpfFds {
    /// Those of `pid`; none once it has gone.
    pub fn of(pid: u32) -> Self {
        let mut held = Self::default();
        for task in tasks(pid) {
            held.add_task(&task);
        }
        held
    }

    /// Those of `pid`'s threads with a file table of their own, as the
    /// measuring thread has: what the run holds, and not what the main
    /// thread and the threads sharing its table do (the check before the
    /// run attaches a tracepoint's program there, briefly). Told apart by
    /// kcmp(2), not by what each table held when read: a link made between
    /// two reads would pass for the measuring thread's.
    pub fn measuring(pid: u32) -> Self {
        let mut held = Self::default();
        for task in tasks(pid) {
            let tid = task.file_name().and_then(|t| t.to_str()?.parse().ok());
            if tid.is_some_and(|tid| !shares_files(pid, tid)) {
                held.add_task(&task);
            }
        }
        held
    }

    /// Adds what one thread's fds hold.
    fn add_task(&mut self, task: &std::path::Path) {
        let Ok(fds) = std::fs::read_dir(task.join("fdinfo")) else {
            return;
        };
        for fd in fds.flatten() {
            // An fd closed meanwhile reads as nothing.
            let Ok(info) = std::fs::read_to_string(fd.path()) else {
                continue;
            };
            for line in info.lines() {
                let id = |key: &str| line.strip_prefix(key)?.trim().parse::<u32>().ok();
                if let Some(id) = id("prog_id:") {
                    self.programs.insert(id);
                } else if let Some(id) = id("link_id:") {
                    self.links.insert(id);
                }
            }
        }
    }

    /// Those of every process on the machine: what a live process still
    /// holds, as against what a process left in the kernel.
    pub fn of_every_process() -> Self {
        let mut all = Self::default();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            if let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) {
                let held = Self::of(pid);
                all.programs.extend(held.programs);
                all.links.extend(held.links);
            }
        }
        all
    }
}

/// Whether two tasks share one file table (a task shares its own). A task
/// gone meanwhile shares nothing.
fn shares_files(a: u32, b: u32) -> bool {
    const KCMP_FILES: libc::c_long = 2;
    // SAFETY: kcmp compares two tasks' resources; no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            a as libc::pid_t,
            b as libc::pid_t,
            KCMP_FILES,
            0,
            0,
        )
    };
    r == 0
}

/// `pid`'s threads' directories in /proc; none once it has gone.
fn tasks(pid: u32) -> impl Iterator<Item = std::path::PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|t| t.path())
}

/// Whether `pid` holds a BPF program, so it is measuring.
pub fn holds_a_program(pid: u32) -> bool {
    !BpfFds::of(pid).programs.is_empty()
}

/// The mounts the calling thread sees, each as "device mount-point type".
#[track_caller]
pub fn mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/thread-self/mounts")
        .expect("/proc/thread-self/mounts reads")
        .lines()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect()
}

/// What a measuring run may change in this process and must put back:
/// the BPF programs it holds, its open files, and the calling thread's
/// name and CPU affinity.
#[derive(Debug, PartialEq)]
pub struct Footprint {
    programs: BTreeSet<u32>,
    files: usize,
    name: std::ffi::CString,
    /// The process's name (its main thread's), which the comm trigger
    /// writes.
    process_name: String,
    affinity: Vec<bool>,
}

impl Footprint {
    #[track_caller]
    pub fn now() -> Self {
        use nix::sched::{sched_getaffinity, CpuSet};
        let set = sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        Self {
            programs: BpfFds::of(std::process::id()).programs,
            files: std::fs::read_dir("/proc/self/fd").unwrap().count(),
            name: nix::sys::prctl::get_name().unwrap(),
            process_name: std::fs::read_to_string("/proc/self/comm").unwrap(),
            affinity: (0..CpuSet::count())
                .map(|c| set.is_set(c).unwrap())
                .collect(),
        }
    }

    /// What differs from `self` now, if anything. The kernel frees a
    /// detached program after an RCU grace period (raw_tp's takes a few
    /// ms), so the programs get a bounded time to go.
    pub fn changed(&self) -> Option<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut now = Self::now();
        while now.programs != self.programs && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            now = Self::now();
        }
        let mut changes = Vec::new();
        if now.programs != self.programs {
            changes.push(format!(
                "BPF programs held: {:?}, before {:?}",
                now.programs, self.programs
            ));
        }
        if now.files != self.files {
            changes.push(format!("open files: {}, before {}", now.files, self.files));
        }
        if now.name != self.name {
            changes.push(format!(
                "thread name not restored: {:?}, before {:?}",
                now.name, self.name
            ));
        }
        if now.process_name != self.process_name {
            changes.push(format!(
                "process name not restored: {:?}, before {:?}",
                now.process_name, self.process_name
            ));
        }
        if now.affinity != self.affinity {
            changes.push("CPU affinity not restored".into());
        }
        (!changes.is_empty()).then(|| changes.join("; "))
    }
}
