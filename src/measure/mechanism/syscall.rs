//! The syscall triggers of a user's object (`--object`): one event is one
//! system call (or two) made by the measuring thread, which fires the
//! syscall tracepoints, the `__<arch>_sys_*` functions and the hooks they
//! pass (the comm write: `task/task_rename`; openat: `lsm/file_open`).
//! `--list-triggers` lists them; a section names the one it needs, or
//! `--trigger NAME` does.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::measure::error::{Error, Result};

/// What one event of a syscall trigger is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syscall {
    /// getpid(2), the cheapest syscall there is.
    Getpid,
    /// getppid(2).
    Getppid,
    /// openat(2) of /dev/null, then close(2) of what it opened.
    OpenClose,
    /// read(2) of 8 bytes from /dev/zero.
    ReadZero,
    /// write(2) of a short name to /proc/self/comm: the built-ins' comm
    /// trigger, with a base of its own.
    Comm,
}

const DEV_NULL: &CStr = c"/dev/null";
const DEV_ZERO: &CStr = c"/dev/zero";

impl Syscall {
    pub const ALL: [Syscall; 5] = [
        Syscall::Getpid,
        Syscall::Getppid,
        Syscall::OpenClose,
        Syscall::ReadZero,
        Syscall::Comm,
    ];

    /// Its name, for `--trigger` and `base-NAME`.
    pub const fn name(self) -> &'static str {
        match self {
            Syscall::Getpid => "getpid",
            Syscall::Getppid => "getppid",
            Syscall::OpenClose => "openat",
            Syscall::ReadZero => "read",
            Syscall::Comm => "comm",
        }
    }

    /// The first word of its selftest lines.
    pub const fn label(self) -> &'static str {
        match self {
            Syscall::Getpid => "syscall_getpid",
            Syscall::Getppid => "syscall_getppid",
            Syscall::OpenClose => "syscall_openat",
            Syscall::ReadZero => "syscall_read",
            Syscall::Comm => "syscall_comm",
        }
    }

    /// What one event does, for `--list-triggers` and error messages.
    pub const fn describe(self) -> &'static str {
        match self {
            Syscall::Getpid => "getpid(2)",
            Syscall::Getppid => "getppid(2)",
            Syscall::OpenClose => "openat(2) of /dev/null and close(2)",
            Syscall::ReadZero => "read(2) of 8 bytes from /dev/zero",
            Syscall::Comm => "write(2) to /proc/self/comm (task/task_rename)",
        }
    }

    /// The syscalls one event makes, as the kernel names them
    /// (`syscalls/sys_enter_NAME`, `__x64_sys_NAME`).
    pub const fn syscalls(self) -> &'static [&'static str] {
        match self {
            Syscall::Getpid => &["getpid"],
            Syscall::Getppid => &["getppid"],
            Syscall::OpenClose => &["openat", "close"],
            Syscall::ReadZero => &["read"],
            Syscall::Comm => &["write"],
        }
    }

    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The trigger that makes the syscall `name` once an event.
    pub fn making(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.syscalls().contains(&name))
    }

    /// `--trigger`'s parser: the error names them all.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        Self::by_name(s.trim()).ok_or_else(|| {
            format!(
                "unknown trigger {s:?}: expected one of {} (see --list-triggers)",
                Self::names()
            )
        })
    }

    /// "getpid, getppid, ...".
    pub fn names() -> String {
        Self::ALL.map(Syscall::name).join(", ")
    }
}

/// A syscall trigger (other than the comm write) ready to fire on the
/// calling thread.
pub struct Firing {
    what: Syscall,
    /// /dev/zero, for [`Syscall::ReadZero`].
    zero: Option<OwnedFd>,
}

impl Firing {
    pub fn open(what: Syscall) -> Result<Self> {
        let zero = match what {
            Syscall::ReadZero => Some(open(DEV_ZERO)?),
            Syscall::Getpid | Syscall::Getppid | Syscall::OpenClose | Syscall::Comm => None,
        };
        Ok(Self { what, zero })
    }

    /// `n` events back to back: raw syscalls, as a C loop makes them (no
    /// libc wrapper's caching or cancellation points).
    pub fn fire(&mut self, n: u64) -> Result<()> {
        match self.what {
            Syscall::Getpid => (0..n).for_each(|_| {
                // SAFETY: getpid takes no arguments.
                unsafe { libc::syscall(libc::SYS_getpid) };
            }),
            Syscall::Getppid => (0..n).for_each(|_| {
                // SAFETY: getppid takes no arguments.
                unsafe { libc::syscall(libc::SYS_getppid) };
            }),
            Syscall::OpenClose => {
                for _ in 0..n {
                    // Closed at once by the OwnedFd.
                    drop(open(DEV_NULL)?);
                }
            }
            Syscall::ReadZero => {
                let fd = self.zero.as_ref().map_or(-1, |f| f.as_raw_fd());
                let mut buf = [0u8; 8];
                for _ in 0..n {
                    // SAFETY: buf is valid for its length; fd is open.
                    let got =
                        unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
                    if got != buf.len() as libc::c_long {
                        let err = std::io::Error::last_os_error();
                        return Err(Error::failed(format!("read of /dev/zero failed: {err}")));
                    }
                }
            }
            Syscall::Comm => {
                return Err(Error::failed(
                    "the comm trigger fires through the comm writer",
                ))
            }
        }
        Ok(())
    }
}

fn open(path: &CStr) -> Result<OwnedFd> {
    // SAFETY: path is NUL-terminated; the fd returned is ours.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::environment(format!(
            "cannot open {}: {err}",
            path.to_string_lossy()
        )));
    }
    // SAFETY: fd is a new open file descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_list_them_all() {
        for s in Syscall::ALL {
            assert_eq!(Syscall::parse(s.name()), Ok(s));
        }
        let err = Syscall::parse("fork").unwrap_err();
        assert!(err.contains("getpid, getppid, openat, read, comm"), "{err}");
    }

    #[test]
    fn each_syscall_has_its_trigger() {
        assert_eq!(Syscall::making("close"), Some(Syscall::OpenClose));
        assert_eq!(Syscall::making("write"), Some(Syscall::Comm));
        assert_eq!(Syscall::making("fork"), None);
    }

    /// Unprivileged: the triggers themselves work anywhere.
    #[test]
    fn every_trigger_fires() {
        for s in Syscall::ALL.into_iter().filter(|&s| s != Syscall::Comm) {
            Firing::open(s).unwrap().fire(10).unwrap();
        }
    }
}
