//! The environment: privileges, tracefs, kernel feature probes and libbpf's
//! log. Everything here answers "can this machine run a mechanism?" with a
//! precise reason, or changes the machine only behind a guard that undoes it.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Mutex, Once, OnceLock};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

use super::verifier_log::verdict_of;
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
        if Path::new(DEBUGFS_TRACING).join("events").exists() {
            Path::new(DEBUGFS_TRACING)
        } else {
            Path::new(TRACEFS)
        }
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

/// Checks for the kernel BTF that fentry/fexit/fmod_ret attach through.
pub fn btf_support() -> Result<()> {
    const BTF: &str = "/sys/kernel/btf/vmlinux";
    if Path::new(BTF).exists() {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "kernel has no BTF ({BTF} missing; needs CONFIG_DEBUG_INFO_BTF)"
        )))
    }
}

const SECURITYFS: &str = "/sys/kernel/security";

/// Checks that the BPF LSM is active: an LSM program on a kernel built
/// without it, or booted without `bpf` in `lsm=`, loads and attaches but
/// never runs. Reads securityfs's list of the active LSMs, where it is
/// not mounted from a thread of its own that mounts it in a mount
/// namespace of its own and ends: the namespace goes with it, and the
/// calling thread keeps its own (in a new one, /proc/self/exe does not
/// resolve on 5.10, and the usdt attach through it failed). Worked out
/// once per process.
pub fn bpf_lsm_support() -> Result<()> {
    static ACTIVE: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    let active = ACTIVE.get_or_init(active_lsms).as_ref().map_err(|why| {
        Error::environment(format!("cannot tell whether the BPF LSM is active: {why}"))
    })?;
    if is_active(active, "bpf") {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "the BPF LSM is not active (active LSMs: {active}): needs CONFIG_BPF_LSM and \
             booting with lsm={active},bpf"
        )))
    }
}

/// Whether `lsm` is in securityfs's comma-separated list of active LSMs.
fn is_active(list: &str, lsm: &str) -> bool {
    list.trim().split(',').any(|l| l == lsm)
}

fn active_lsms() -> std::result::Result<String, String> {
    let file = Path::new(SECURITYFS).join("lsm");
    if let Ok(list) = fs::read_to_string(&file) {
        return Ok(list.trim().to_string());
    }
    if !Path::new(SECURITYFS).is_dir() {
        return Err(format!("no {SECURITYFS} (CONFIG_SECURITYFS off)"));
    }
    let read = move || {
        private_mount_namespace()?;
        mount(
            Some("securityfs"),
            SECURITYFS,
            Some("securityfs"),
            MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| format!("mounting securityfs on {SECURITYFS} failed: {e}"))?;
        let list = fs::read_to_string(&file);
        if let Err(e) = umount2(SECURITYFS, MntFlags::MNT_DETACH) {
            log::warn!("could not unmount {SECURITYFS}: {e}");
        }
        list.map(|l| l.trim().to_string())
            .map_err(|e| format!("cannot read {}: {e}", file.display()))
    };
    std::thread::spawn(read)
        .join()
        .unwrap_or_else(|_| Err("the thread reading securityfs panicked".into()))
}

/// Answers about the kernel's BTF, each worked out once per process:
/// parsing the BTF takes tens of ms natively and about a second under
/// emulation, and the kernel does not change under a running process.
fn btf_answer(
    question: String,
    answer: impl FnOnce(&libbpf_rs::btf::Btf<'_>) -> Result<(), String>,
) -> Result<(), String> {
    static ANSWERS: Mutex<BTreeMap<String, Result<(), String>>> = Mutex::new(BTreeMap::new());
    let mut answers = ANSWERS.lock().unwrap_or_else(|p| p.into_inner());
    answers
        .entry(question)
        .or_insert_with(|| {
            libbpf_rs::btf::Btf::from_vmlinux()
                .map_err(|e| format!("cannot read the kernel's BTF: {e}"))
                .and_then(|btf| answer(&btf))
        })
        .clone()
}

/// Whether the kernel's BTF has a function `name` (a kfunc, say): a
/// feature probe that needs no load. `Err` says why not.
pub fn btf_has_function(name: &str) -> Result<(), String> {
    btf_answer(format!("function {name}"), |btf| match btf
        .type_by_name::<libbpf_rs::btf::types::Func<'_>>(name)
    {
        Some(_) => Ok(()),
        None => Err(format!("no function {name} in the kernel's BTF")),
    })
}

/// Whether the kernel's `enum bpf_attach_type` has `value` (say
/// `BPF_TRACE_UPROBE_MULTI`): whether this kernel knows an attach type,
/// from its BTF, without loading anything. `Err` says why not.
pub fn btf_has_attach_type(value: &str) -> Result<(), String> {
    btf_answer(format!("attach type {value}"), |btf| {
        let attach_types = btf
            .type_by_name::<libbpf_rs::btf::types::Enum<'_>>("bpf_attach_type")
            .ok_or("no enum bpf_attach_type in the kernel's BTF")?;
        if attach_types
            .iter()
            .any(|m| m.name.is_some_and(|n| n == value))
        {
            Ok(())
        } else {
            Err(format!("its enum bpf_attach_type has no {value}"))
        }
    })
}

/// Where uprobes attach to this executable: `/proc/self/exe`, the magic
/// link to the image that runs. A path such as the one `current_exe()`
/// returns names whatever file is there now: once a rebuild (`cargo
/// build`, a linker, `cp && mv`) has replaced it, uprobes attached by that
/// path go on the new file and never fire in this process. The magic link
/// does not go through a path: libbpf's open(2) of it (to read the ELF
/// symbols and USDT notes) and the kernel's path lookup (perf's uprobe
/// PMU, the uprobe_multi link, a legacy `uprobe_events` line, all written
/// by this process) jump straight to the running inode, even once that
/// is replaced or deleted, and even from a thread with a mount namespace
/// of its own or in a chroot, where readlink(2) of the same link gives a
/// path relative to another root (seen in the chrooted VM guest:
/// "/newroot/..."). Only without /proc is the path used, as first seen.
pub fn exe_path() -> std::io::Result<&'static Path> {
    exe().map(|e| e.attach.as_path())
}

/// The running executable: where to attach, and where it was found first.
struct Exe {
    attach: std::path::PathBuf,
    /// The path the process was started from, as read first.
    path: std::path::PathBuf,
}

const SELF_EXE: &str = "/proc/self/exe";

fn exe() -> std::io::Result<&'static Exe> {
    static EXE: OnceLock<Result<Exe, String>> = OnceLock::new();
    EXE.get_or_init(|| {
        let path = std::env::current_exe().map_err(|e| e.to_string())?;
        // stat(2) follows the magic link to the running inode.
        let attach = if fs::metadata(SELF_EXE).is_ok() {
            SELF_EXE.into()
        } else {
            path.clone()
        };
        Ok(Exe { attach, path })
    })
    .as_ref()
    .map_err(|e| std::io::Error::other(format!("cannot find this executable: {e}")))
}

/// `Some(path)` when the file at this executable's path is no longer the
/// image that runs: replaced (a rebuild) or deleted since the process
/// started. Explains a uprobe that finds nothing to fire on.
pub fn exe_replaced() -> Option<&'static Path> {
    use std::os::unix::fs::MetadataExt as _;
    let exe = exe().ok()?;
    let running = fs::metadata(SELF_EXE).ok()?;
    let same = fs::metadata(&exe.path)
        .is_ok_and(|at| (at.dev(), at.ino()) == (running.dev(), running.ino()));
    (!same).then_some(exe.path.as_path())
}

/// Says that the executable was replaced, when it was, after `what` went
/// wrong with a uprobe on it.
pub fn explain_replaced_exe(what: String) -> String {
    match exe_replaced() {
        Some(path) => format!(
            "{what}: the executable was replaced during the run ({} is another file now)",
            path.display()
        ),
        None => what,
    }
}

/// Turns on the kernel's BPF run-time statistics (`run_time_ns`, `run_cnt`)
/// for as long as the returned fd is open. BPF_ENABLE_STATS is reference
/// counted and goes off by itself when the fd closes, even if we crash,
/// which the `kernel.bpf_stats_enabled` sysctl would not.
pub fn enable_run_time_stats() -> Result<OwnedFd> {
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    if fd == -libc::EPERM {
        return Err(Error::unsupported(
            "BPF_ENABLE_STATS needs CAP_SYS_ADMIN (or --no-prog-stats)",
        ));
    }
    if fd < 0 {
        return Err(Error::unsupported(format!(
            "BPF_ENABLE_STATS failed ({}): kernel older than 5.8?",
            std::io::Error::from_raw_os_error(-fd)
        )));
    }
    // SAFETY: the kernel just gave us this fd; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// libbpf's warnings since the last clear, kept so an error can quote the
/// one that explains it; the full log goes to the `log` crate
/// (RUST_LOG=debug).
static LIBBPF_WARNINGS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const LIBBPF_LOG_KEEP: usize = 64;

fn on_libbpf_message(level: libbpf_rs::PrintLevel, msg: String) {
    let msg = msg.trim_end();
    let msg = msg.strip_prefix("libbpf: ").unwrap_or(msg).to_string();
    // Debug, not warn: what matters reaches the user in the error itself,
    // and a skipped mechanism should print one line, not libbpf's log.
    match level {
        libbpf_rs::PrintLevel::Warn => log::debug!("libbpf: {msg}"),
        _ => log::trace!("libbpf: {msg}"),
    }
    if level != libbpf_rs::PrintLevel::Warn {
        return;
    }
    let mut log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if log.len() == LIBBPF_LOG_KEEP {
        log.pop_front();
    }
    log.push_back(msg);
}

/// Routes libbpf's messages to the `log` crate (and a short buffer) instead of
/// stderr: a mechanism the kernel lacks should print one SKIP line, not a
/// verifier dump.
pub fn capture_libbpf_log() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, on_libbpf_message)));
    });
}

/// Forgets earlier libbpf messages (called before each load).
pub fn clear_libbpf_log() {
    LIBBPF_WARNINGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
}

/// libbpf's own account of the last failure: the verifier's verdict when
/// libbpf dumped a program load log, else its first warning (libbpf warns
/// first where the failure starts, then once per layer it unwinds).
pub fn libbpf_reason() -> Option<String> {
    let log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    reason_of(log.iter().map(String::as_str))
}

/// The verifier's verdict on the last load, when libbpf dumped its log.
pub fn verifier_verdict() -> Option<String> {
    let log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    log.iter().find_map(|w| verdict_of(w, LOG_BEGIN, LOG_END))
}

const LOG_BEGIN: &str = "-- BEGIN PROG LOAD LOG --";
const LOG_END: &str = "-- END PROG LOAD LOG --";

fn reason_of<'a>(warnings: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let verdict = warnings
        .clone()
        .find_map(|w| verdict_of(w, LOG_BEGIN, LOG_END));
    verdict.or_else(|| {
        warnings
            .into_iter()
            .next()
            .map(|l| l.lines().next().unwrap_or_default().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bpf_lsm_is_found_by_its_whole_name() {
        assert!(is_active("lockdown,capability,yama,apparmor,bpf\n", "bpf"));
        assert!(!is_active("lockdown,capability,yama,apparmor", "bpf"));
        assert!(!is_active("capability,bpfx", "bpf"));
    }

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

    #[test]
    fn the_first_warning_is_the_reason() {
        let warnings = [
            "prog 'prog_kprobe': failed to create kprobe '__set_task_comm+0x0' perf event: No such file or directory",
            "prog 'prog_kprobe': failed to auto-attach: -ENOENT",
        ];
        assert_eq!(
            reason_of(warnings.into_iter()).as_deref(),
            Some(warnings[0])
        );
        assert_eq!(reason_of([].into_iter()), None);
    }

    #[test]
    fn the_verifier_verdict_beats_the_first_warning() {
        let warnings = [
            "prog 'prog_fmod_ret': BPF program load failed: -EINVAL",
            "prog 'prog_fmod_ret': -- BEGIN PROG LOAD LOG --\n__set_task_comm() is not modifiable\nprocessed 0 insns (limit 1000000)\n-- END PROG LOAD LOG --",
            "failed to load object 'overhead_bpf'",
        ];
        assert_eq!(
            reason_of(warnings.into_iter()).as_deref(),
            Some("__set_task_comm() is not modifiable")
        );
    }
}
