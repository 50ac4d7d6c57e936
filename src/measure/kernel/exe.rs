//! The running executable, where uprobes attach, and what to say when it
//! was replaced under a run.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use crate::measure::error::Result;

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

pub(super) const SELF_EXE: &str = "/proc/self/exe";

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
