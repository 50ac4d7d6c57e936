//! tracefs for legacy probes, in a private mount namespace when it is not
//! mounted, and the probes' support checks: each answer a precise reason,
//! each change to the machine behind a guard that undoes it.

use std::cell::Cell;
use std::fs;
use std::path::Path;
use std::sync::Mutex;

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

use super::exe::{exe_path, SELF_EXE};
use crate::measure::error::{Error, Result};

/// kprobe or uprobe: the two kinds of probe the perf PMU and tracefs make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeType {
    Kprobe,
    Uprobe,
}

impl ProbeType {
    /// As sysfs and tracefs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            ProbeType::Kprobe => "kprobe",
            ProbeType::Uprobe => "uprobe",
        }
    }
}

pub const TRACEFS: &str = "/sys/kernel/tracing";
/// libbpf prefers this path when it exists (debugfs automounts tracefs there).
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// Keeps tracefs reachable for as long as it lives. If tracefs was not
/// mounted, mounts it at /sys/kernel/tracing in a mount namespace private
/// to the calling thread ([`private_mount_namespace`]) and unmounts it on
/// drop. Nobody else ever sees that mount: other processes (a second run
/// at the same time included) neither lose their tracefs to our unmount
/// nor find ours, and it goes with the thread however the process ends,
/// SIGKILL included.
pub struct Tracefs {
    mounted_here: bool,
}

impl Tracefs {
    pub fn ensure() -> Result<Self> {
        if tracefs_visible() {
            return Ok(Self {
                mounted_here: false,
            });
        }
        let how = format!("mount it with `mount -t tracefs nodev {TRACEFS}`");
        private_mount_namespace().map_err(|e| {
            Error::environment(format!(
                "tracefs is not mounted and bpf-overhead cannot mount it for itself ({e}): {how}"
            ))
        })?;
        mount(
            Some("tracefs"),
            TRACEFS,
            Some("tracefs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            None::<&str>,
        )
        .map_err(|e| {
            Error::environment(format!(
                "tracefs is not mounted and mounting it at {TRACEFS} failed ({e}): {how}"
            ))
        })?;
        log::info!("tracefs was not mounted: mounted it at {TRACEFS} for this run, privately");
        Ok(Self { mounted_here: true })
    }

    /// Where the tracing files are (the path libbpf will use too).
    pub fn dir(&self) -> &'static Path {
        tracing_dir()
    }
}

/// Where the tracing files are, once tracefs is reachable ([`Tracefs`]).
pub fn tracing_dir() -> &'static Path {
    if Path::new(DEBUGFS_TRACING).join("events").exists() {
        Path::new(DEBUGFS_TRACING)
    } else {
        Path::new(TRACEFS)
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            // Lazy: a tracefs file still open must not make us fail. The
            // mount is in this thread's namespace only, which goes when
            // the thread does anyway; unmounting keeps a thread that goes
            // on (a test's) as it was.
            if let Err(e) = umount2(TRACEFS, MntFlags::MNT_DETACH) {
                log::warn!("could not unmount {TRACEFS}: {e}");
            }
        }
    }
}

/// Whether tracefs is reachable from the calling thread, where libbpf
/// looks for it.
pub fn tracefs_visible() -> bool {
    Path::new(DEBUGFS_TRACING).join("events").exists() || is_tracefs_mounted()
}

fn is_tracefs_mounted() -> bool {
    // thread-self, not self: /proc/self is the main thread, whose mount
    // namespace is not this thread's once it has one of its own.
    fs::read_to_string("/proc/thread-self/mounts")
        .map(|m| {
            m.lines().any(|l| {
                let mut f = l.split_whitespace();
                let (_dev, dir, kind) = (f.next(), f.next(), f.next());
                dir == Some(TRACEFS) && kind == Some("tracefs")
            })
        })
        .unwrap_or(false)
}

thread_local! {
    static PRIVATE_MOUNTS: Cell<bool> = const { Cell::new(false) };
}

/// Moves the calling thread (only it) into a mount namespace of its own,
/// a copy of the one it was in, with every mount made private first, so
/// that nothing mounted in it propagates back to the host's namespace
/// (where / is usually a shared mount). The namespace lives as long as the
/// thread: when the thread ends, however the process ends, the kernel
/// unmounts whatever was mounted in it. Idempotent per thread.
///
/// Needs CAP_SYS_ADMIN. Paths and open files resolve as before: the new
/// namespace starts as a copy of the old. /proc/self/exe may not (see
/// [`exe_path`]), so it is read first.
pub fn private_mount_namespace() -> std::result::Result<(), String> {
    if PRIVATE_MOUNTS.get() {
        return Ok(());
    }
    let _ = exe_path();
    // CLONE_NEWNS needs a file-system context (cwd, root) of the thread's
    // own: CLONE_FS, which affects this thread only.
    unshare(CloneFlags::CLONE_FS | CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("unshare(CLONE_NEWNS) failed: {e}"))?;
    // From here on this thread is in the new namespace: until its mounts
    // are private, anything mounted would show on the host too.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("making the thread's mounts private failed: {e}"))?;
    PRIVATE_MOUNTS.set(true);
    Ok(())
}

/// Checks that the kernel can create `kind` probes ("kprobe" or "uprobe"):
/// through the perf PMU that libbpf uses first, or through the legacy
/// `<kind>_events` tracefs file it falls back to. With neither, the kernel
/// was built without CONFIG_KPROBES / CONFIG_UPROBES.
///
/// Returns the tracefs guard when the legacy interface is the way in: it
/// must stay mounted while the probe is attached. `hooks` are the kernel
/// functions this tool puts kprobes on, for [`remove_stale_legacy_probes`].
pub fn probe_support(probe: ProbeType, hooks: &[&str]) -> Result<Option<Tracefs>> {
    let kind = probe.name();
    let pmu = format!("/sys/bus/event_source/devices/{kind}");
    if Path::new(&pmu).exists() {
        return Ok(None);
    }
    let tracefs = Tracefs::ensure()?;
    let events = tracefs.dir().join(format!("{kind}_events"));
    if events.exists() {
        remove_stale_legacy_probes(&events, probe, hooks);
        return Ok(Some(tracefs));
    }
    let config = kind.to_uppercase();
    Err(Error::unsupported(format!(
        "kernel has no {kind}s (CONFIG_{config}S off): no {kind} PMU ({pmu}) and no {kind}_events in tracefs"
    )))
}

/// Removes, once per process and kind, the legacy probes that earlier runs
/// left in `<kind>_events` when they were killed (SIGKILL, a crash: libbpf
/// removes its legacy probes on detach, which such a run never reaches).
///
/// libbpf names each legacy probe `libbpf_<pid>_<n>_<target>_0x<offset>`:
/// unique per process (pid, then a counter), so a second run at the same
/// time never collides with ours, and a dead process's entries can be told
/// from a live one's. Only entries on what this tool attaches to are
/// touched: kprobes on `hooks` (the catalogue's, which the caller passes:
/// this module sits below the catalogue), uprobes on `/proc/self/exe`
/// ([`exe_path`]); and only those of a pid that no longer runs. Returns
/// the entries removed.
pub fn remove_stale_legacy_probes(events: &Path, probe: ProbeType, hooks: &[&str]) -> Vec<String> {
    let kind = probe.name();
    static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|p| p.into_inner());
    if done.iter().any(|k| k == kind) {
        return Vec::new();
    }
    done.push(kind.to_string());
    let Ok(text) = fs::read_to_string(events) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for (event, target) in stale_entries(&text) {
        let ours = match probe {
            ProbeType::Kprobe => hooks.iter().any(|h| target.split('+').next() == Some(*h)),
            ProbeType::Uprobe => target.starts_with(&format!("{SELF_EXE}:")),
        };
        if !ours {
            continue;
        }
        let line = format!("-:{event}\n");
        let result = fs::OpenOptions::new()
            .append(true)
            .open(events)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        match result {
            Ok(()) => {
                log::info!(
                    "removed {event} from {}: left by a run that was killed",
                    events.display()
                );
                removed.push(event.to_string());
            }
            Err(e) => log::debug!("could not remove {event} from {}: {e}", events.display()),
        }
    }
    removed
}

/// The `group/event` and target of each libbpf legacy probe in a
/// `*_events` listing whose process is gone.
fn stale_entries(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter_map(|line| {
            // "p:uprobes/libbpf_1234_0__exe_0x1a2b /proc/self/exe:0x1a2b"
            let (probe, target) = line.split_once(' ')?;
            let event = probe.split_once(':')?.1;
            let name = event.split_once('/')?.1;
            let pid: u32 = name
                .strip_prefix("libbpf_")?
                .split('_')
                .next()?
                .parse()
                .ok()?;
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            gone.then_some((event, target.trim()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_legacy_probes_are_those_of_dead_processes() {
        let me = std::process::id();
        // Pid 0x3fffffff is above any pid_max: never a live process.
        let text = format!(
            "p:uprobes/libbpf_{me}_0__exe_0x1a2b /proc/self/exe:0x0000000000001a2b\n\
             p:uprobes/libbpf_1073741823_3__exe_0x1a2b /proc/self/exe:0x0000000000001a2b\n\
             r:kretprobes/libbpf_1073741823_0___set_task_comm_0x0 __set_task_comm\n\
             p:uprobes/someone_else /bin/true:0x10\n"
        );
        assert_eq!(
            stale_entries(&text),
            vec![
                (
                    "uprobes/libbpf_1073741823_3__exe_0x1a2b",
                    "/proc/self/exe:0x0000000000001a2b"
                ),
                (
                    "kretprobes/libbpf_1073741823_0___set_task_comm_0x0",
                    "__set_task_comm"
                ),
            ]
        );
    }
}
