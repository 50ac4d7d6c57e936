//! The system calls under [`super`]: names inside a directory opened
//! without following links (`openat` and its kin), a new file beside a
//! target and its rename over it, and a thread's credentials.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Error, Replace, Result, User, O_DIR};

/// A new file beside the target, removed unless renamed over it.
pub struct Temp<'a> {
    dir: &'a OwnedFd,
    name: OsString,
    pub file: File,
}

impl<'a> Temp<'a> {
    pub fn create(dir: &'a OwnedFd, target: &OsStr, dir_path: &Path) -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut last = None;
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default();
            // A dot first: xtask's outputs pass over such names.
            let mut name = OsString::from(".");
            name.push(target);
            name.push(format!(".{}-{n}-{nanos:08x}.tmp", std::process::id()));
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            match openat(dir, &name, flags, 0o666) {
                Ok(fd) => {
                    return Ok(Self {
                        dir,
                        name,
                        file: File::from(fd),
                    })
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => last = Some(e),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        let e = last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST));
        Err(Error::Failed(format!(
            "cannot create a file in {}: {e}",
            dir_path.display()
        )))
    }

    /// Renames the file over `target`; with [`Replace::No`], only where no
    /// file is (a link to it, then its name removed, where the file
    /// system cannot rename without replacing).
    pub fn rename_to(mut self, target: &OsStr, replace: Replace, shown: &Path) -> Result<()> {
        let (from, to) = (cstr(&self.name), cstr(target));
        let flags = match replace {
            Replace::Yes => 0,
            Replace::No => libc::RENAME_NOREPLACE,
        };
        let fd = self.dir.as_raw_fd();
        // SAFETY: valid fds and NUL-terminated names.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                fd,
                from.as_ptr(),
                fd,
                to.as_ptr(),
                flags,
            )
        };
        let renamed = if r == 0 {
            Ok(true)
        } else if replace == Replace::No && errno() == libc::EINVAL {
            // SAFETY: as above. The temporary name is removed on drop.
            match unsafe { libc::linkat(fd, from.as_ptr(), fd, to.as_ptr(), 0) } {
                0 => Ok(false),
                _ => Err(io::Error::last_os_error()),
            }
        } else {
            Err(io::Error::last_os_error())
        };
        match renamed {
            Ok(true) => {
                self.name.clear();
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                Err(Error::Exists(shown.to_owned()))
            }
            Err(e) => Err(Error::Failed(format!(
                "cannot write {}: {e}",
                shown.display()
            ))),
        }
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            let name = cstr(&self.name);
            // SAFETY: a valid fd and a NUL-terminated name.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0) };
        }
    }
}

pub fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub fn cstr(s: &OsStr) -> CString {
    // Names from paths and links hold no NUL.
    CString::new(s.as_bytes()).unwrap_or_default()
}

pub fn open_path(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated path; the fd is ours if valid.
    let fd = unsafe { libc::open(path.as_ptr(), O_DIR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn openat(
    dir: &OwnedFd,
    name: &OsStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let name = cstr(name);
    // SAFETY: a valid fd and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn mkdirat(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = cstr(name);
    // SAFETY: a valid fd and a NUL-terminated name.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn fstatat(dir: &OwnedFd, name: &OsStr) -> io::Result<libc::stat> {
    let name = cstr(name);
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd, a NUL-terminated name, a stat to fill.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

pub fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and a stat to fill.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

pub fn readlinkat(dir: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    let name = cstr(name);
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: a valid fd, a NUL-terminated name, a buffer of its length.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(PathBuf::from(OsString::from_vec(buf)));
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// Takes on `user`'s groups and file-system ids, on this thread only.
pub fn become_user(user: &User) -> io::Result<()> {
    // SAFETY: a valid array of its length.
    let r = unsafe { libc::syscall(libc::SYS_setgroups, user.groups.len(), user.groups.as_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: setfsgid and setfsuid take an id and return the old one;
    // they report no error, so the ids are read back (-1 changes none).
    unsafe {
        libc::syscall(libc::SYS_setfsgid, user.gid);
        libc::syscall(libc::SYS_setfsuid, user.uid);
        let (gid, uid) = (
            libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32,
            libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32,
        );
        if (uid, gid) != (user.uid, user.gid) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
    }
    Ok(())
}

/// The login name of `uid`, if the system knows it.
pub fn user_name(uid: u32) -> Option<String> {
    // SAFETY: zeroed passwd is a valid out-parameter.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut found = std::ptr::null_mut();
    // SAFETY: every pointer is valid for its length.
    let r = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if r != 0 || found.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r filled pw_name with a NUL-terminated name in buf.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// The groups of user `name` whose primary group is `gid`.
pub fn group_list(name: &str, gid: u32) -> Option<Vec<libc::gid_t>> {
    let name = CString::new(name).ok()?;
    let mut groups = vec![0 as libc::gid_t; 64];
    loop {
        let mut n = groups.len() as libc::c_int;
        // SAFETY: a NUL-terminated name and an array of n groups.
        let r = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if r >= 0 {
            groups.truncate(n.max(0) as usize);
            return Some(groups);
        }
        if groups.len() >= 65536 {
            return None;
        }
        groups.resize((n.max(0) as usize).max(groups.len() * 2), 0);
    }
}
