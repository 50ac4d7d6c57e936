//! SIGINT and SIGTERM: caught once, and asked between a run's steps, so
//! that any task ends cleanly (qemu killed, temporary files removed).

use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::{bail, Result};

/// Signal number of a SIGINT/SIGTERM received, 0 if none.
pub static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// SIGINT and SIGTERM end the run cleanly: qemu killed, temporary files removed.
pub fn catch_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// An error once a SIGINT or SIGTERM came, for a run to stop between steps.
pub fn check_signal() -> Result<()> {
    match signalled() {
        Some(sig) => bail!("interrupted (signal {sig})"),
        None => Ok(()),
    }
}
