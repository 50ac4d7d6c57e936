//! What a process holds, seen from /proc: its BPF programs and links,
//! and the mounts a thread sees. Each test file includes it with
//! `#[path]`, so what one file does not use is no warning.
#![allow(dead_code)]

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
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return held;
        };
        for task in tasks.flatten() {
            let Ok(fds) = std::fs::read_dir(task.path().join("fdinfo")) else {
                continue;
            };
            for fd in fds.flatten() {
                // An fd closed meanwhile reads as nothing.
                let Ok(info) = std::fs::read_to_string(fd.path()) else {
                    continue;
                };
                for line in info.lines() {
                    let id = |key: &str| line.strip_prefix(key)?.trim().parse::<u32>().ok();
                    if let Some(id) = id("prog_id:") {
                        held.programs.insert(id);
                    } else if let Some(id) = id("link_id:") {
                        held.links.insert(id);
                    }
                }
            }
        }
        held
    }
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
