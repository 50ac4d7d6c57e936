//! What can go wrong, sorted by what the caller should do about it.

use std::fmt;

/// A mechanism, trigger or environment problem, phrased as one line that says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The running kernel lacks a feature the mechanism needs. Tests report
    /// it as `SKIP <mechanism>: <reason>` (a failure in strict mode).
    #[error("{0}")]
    Unsupported(String),
    /// The machine is not set up to run the suite (not root, tracefs cannot
    /// be mounted, CPU offline...). Never a skip.
    #[error("{0}")]
    Environment(String),
    /// The mechanism should work here but did not (unexpected attach error,
    /// wrong hit count...). Never a skip.
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub fn unsupported(msg: impl fmt::Display) -> Self {
        Self::Unsupported(msg.to_string())
    }

    pub fn environment(msg: impl fmt::Display) -> Self {
        Self::Environment(msg.to_string())
    }

    pub fn failed(msg: impl fmt::Display) -> Self {
        Self::Failed(msg.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The errno behind a libbpf-rs error.
///
/// libbpf-rs keeps the `io::Error` private and exposes only a coarse
/// `kind()`, which folds ENOTSUPP (524) and EOPNOTSUPP into `Other`, while
/// telling those apart is what separates "kernel lacks the feature" from a
/// real failure. The alternate display always ends the chain with
/// `io::Error`'s "... (os error N)".
pub fn errno_of(err: &libbpf_rs::Error) -> Option<i32> {
    let text = format!("{err:#}");
    let start = text.rfind("(os error ")? + "(os error ".len();
    let end = start + text[start..].find(')')?;
    text[start..end].parse().ok()
}

/// `strerror`-like name for the errnos the suite reasons about.
pub fn errno_name(errno: i32) -> String {
    match errno {
        libc::EPERM => "EPERM".into(),
        libc::ENOENT => "ENOENT".into(),
        libc::ESRCH => "ESRCH".into(),
        libc::EACCES => "EACCES".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        ENOTSUPP => "ENOTSUPP".into(),
        n => format!("errno {n}"),
    }
}

/// The kernel-internal "operation not supported" that leaks to user space
/// from BPF_PROG_LOAD and friends; libc does not define it.
pub const ENOTSUPP: i32 = 524;
