//! The measuring thread: a file table of its own, and no SIGINT or
//! SIGTERM.

use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{SigSet, Signal};

use crate::measure::error::{Error, Result};

/// Runs `f` on a new thread whose file table is its own, as the only
/// thread of a process has.
///
/// When threads share a file table, every write(2) takes the refcounted
/// fd lookup instead of the lightweight one, and a comm write gets ~15%
/// slower: `cargo test`'s worker threads measured 3456K events/s where
/// the kernel's single-threaded test_overhead measured 4079K. A thread of
/// its own also takes whatever it opened with it when it ends, and so does
/// the mount namespace it enters if it has to mount tracefs
/// ([`crate::measure::kernel::tracefs::private_mount_namespace`]). SIGINT and SIGTERM are blocked on
/// it: they reach another thread, never a timed run.
pub fn on_measuring_thread<R: Send>(f: impl FnOnce() -> Result<R> + Send) -> Result<R> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("bpf-overhead".into())
            .spawn_scoped(scope, || {
                block_termination_signals();
                unshare(CloneFlags::CLONE_FILES).map_err(|e| {
                    Error::environment(format!(
                        "unshare(CLONE_FILES) for the measuring thread failed: {e}"
                    ))
                })?;
                f()
            })
            .map_err(|e| Error::environment(format!("cannot start the measuring thread: {e}")))?;
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Keeps SIGINT and SIGTERM off the measuring thread: they go to another
/// thread of the process, where the command's handler asks the run to stop
/// between runs (or, unhandled, the process ends as by default), so no
/// handler ever runs inside a timed run.
fn block_termination_signals() {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    if let Err(e) = set.thread_block() {
        log::debug!("could not block SIGINT/SIGTERM on the measuring thread: {e}");
    }
}
