//! What can go wrong, sorted by what the caller should do about it.

use std::fmt;

/// A mechanism, trigger or environment problem. Displays as one line that
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The running kernel lacks a feature the mechanism needs. Tests report
    /// it as `SKIP <mechanism>: <reason>` (a failure in strict mode).
    #[error("{reason}")]
    Unsupported {
        /// The mechanism's name, filled in by [`Error::of`] where the check
        /// itself does not know. A name, not the catalogue's entry: errors
        /// sit below the catalogue.
        mechanism: Option<&'static str>,
        /// The kernel's answer, when the verdict came from one.
        errno: Option<i32>,
        reason: String,
    },
    /// The machine is not set up to run the suite (not root, tracefs cannot
    /// be mounted, CPU offline...). Never a skip.
    #[error("{0}")]
    Environment(String),
    /// The mechanism should work here but did not (unexpected attach error,
    /// wrong hit count...). Never a skip.
    #[error("{}{reason}", Prefix(.mechanism))]
    Failed {
        mechanism: Option<&'static str>,
        errno: Option<i32>,
        reason: String,
    },
    /// Another measuring run holds a CPU this one needs, and the caller
    /// said not to wait (`--no-wait`): try again later.
    #[error("{0}")]
    Busy(String),
    /// Asked to stop (a signal) while waiting for the CPU: nothing ran.
    #[error("stopped while waiting for the CPU")]
    Stopped,
}

struct Prefix<'a>(&'a Option<&'static str>);

impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(m) => write!(f, "{m}: "),
            None => Ok(()),
        }
    }
}

impl Error {
    pub fn unsupported(reason: impl fmt::Display) -> Self {
        Self::Unsupported {
            mechanism: None,
            errno: None,
            reason: reason.to_string(),
        }
    }

    pub fn environment(msg: impl fmt::Display) -> Self {
        Self::Environment(msg.to_string())
    }

    pub fn failed(reason: impl fmt::Display) -> Self {
        Self::Failed {
            mechanism: None,
            errno: None,
            reason: reason.to_string(),
        }
    }

    /// Records the kernel's errno behind the verdict.
    pub fn with_errno(mut self, n: Option<i32>) -> Self {
        if let Self::Unsupported { errno, .. } | Self::Failed { errno, .. } = &mut self {
            *errno = n;
        }
        self
    }

    /// Names the mechanism the error is about, unless it already names one.
    pub fn of(mut self, m: impl Into<&'static str>) -> Self {
        if let Self::Unsupported { mechanism, .. } | Self::Failed { mechanism, .. } = &mut self {
            mechanism.get_or_insert(m.into());
        }
        self
    }

    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. })
    }

    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Unsupported { errno, .. } | Self::Failed { errno, .. } => *errno,
            Self::Environment(_) | Self::Busy(_) | Self::Stopped => None,
        }
    }

    /// The mechanism it names, if any.
    pub fn mechanism(&self) -> Option<&'static str> {
        match self {
            Self::Unsupported { mechanism, .. } | Self::Failed { mechanism, .. } => *mechanism,
            Self::Environment(_) | Self::Busy(_) | Self::Stopped => None,
        }
    }

    /// What went wrong, without the mechanism's name in front.
    pub fn reason(&self) -> &str {
        match self {
            Self::Unsupported { reason, .. } | Self::Failed { reason, .. } => reason,
            Self::Environment(msg) | Self::Busy(msg) => msg,
            Self::Stopped => "stopped while waiting for the CPU",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The errno behind a libbpf-rs error.
///
/// libbpf-rs keeps its `io::Error` private (no `source()` reaches it) and
/// exposes only a coarse `kind()`, which folds ENOTSUPP (524) and
/// EOPNOTSUPP into `Other`, while telling those apart is what separates
/// "kernel lacks the feature" from a real failure. Its alternate display
/// always ends with `io::Error`'s "... (os error N)". This is the one place
/// that reads it; from here on the errno travels as a field of [`Error`].
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
        libc::E2BIG => "E2BIG".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        ENOTSUPP => "ENOTSUPP".into(),
        n => format!("errno {n}"),
    }
}

/// The kernel-internal "operation not supported" that leaks to user space
/// from BPF_PROG_LOAD and friends; libc does not define it.
pub const ENOTSUPP: i32 = 524;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_comes_from_the_io_error() {
        let err = libbpf_rs::Error::from(std::io::Error::from_raw_os_error(ENOTSUPP));
        assert_eq!(errno_of(&err), Some(ENOTSUPP));
        let err = libbpf_rs::Error::from(std::io::Error::other("no errno"));
        assert_eq!(errno_of(&err), None);
    }

    #[test]
    fn failures_name_their_mechanism_once() {
        let m = "raw_tp";
        let err = Error::failed("attach failed")
            .with_errno(Some(libc::ENOENT))
            .of(m);
        assert_eq!(err.to_string(), "raw_tp: attach failed");
        assert_eq!(err.errno(), Some(libc::ENOENT));
        assert_eq!(err.of("tp").to_string(), "raw_tp: attach failed");
        // A skip's reason stands alone: the caller prints `SKIP <name>: `.
        let skip = Error::unsupported("no kprobes").of(m);
        assert_eq!(skip.to_string(), "no kprobes");
        assert!(skip.is_unsupported());
    }
}
