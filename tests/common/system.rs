//! What a test needs of the machine before it starts: root, and a mount
//! namespace of its own.

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};

/// Whether the tests run as root (euid 0), as loading BPF programs and
/// mounting need.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether a test that needs root may go on. If not, it prints
/// `SKIP: <why>`, the test's own reason, and the test returns (a skip
/// passes: the suite needs root, like the kernel's selftests).
pub fn root_or_skip(why: &str) -> bool {
    let root = is_root();
    if !root {
        println!("SKIP: {why}");
    }
    root
}

/// Runs `f` on a thread of its own in a private copy of the test's mount
/// namespace: what it mounts there nobody else sees, and it goes with the
/// thread; the commands it spawns inherit the namespace. The host's
/// mounts are not touched.
///
/// The thread unshares its file-system attributes too (CLONE_FS, shared
/// with the process's other threads otherwise, which unshare(CLONE_NEWNS)
/// refuses), then makes every mount private (MS_REC | MS_PRIVATE), so
/// that nothing mounted on either side propagates to the other. Each
/// caller adds its own specifics inside `f`. The thread takes the
/// caller's name, and a panic in `f` is the caller's.
pub fn in_private_mounts<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let mut thread = std::thread::Builder::new();
    if let Some(name) = std::thread::current().name() {
        thread = thread.name(name.to_owned());
    }
    std::thread::scope(|scope| {
        thread
            .spawn_scoped(scope, || {
                unshare(CloneFlags::CLONE_FS | CloneFlags::CLONE_NEWNS)
                    .expect("unshare(CLONE_FS | CLONE_NEWNS)");
                let none = None::<&str>;
                mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
                    .expect("making the thread's mounts private");
                f()
            })
            .expect("a thread for the private mounts starts")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}
