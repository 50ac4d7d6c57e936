//! Room on the disk, checked before the first step: on a full disk clippy
//! stops half-way with ENOSPC, and every step after it fails the same way
//! (stop 70's run: 891 MiB free, all eight host steps FAILED).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a run from a fresh clone takes: target/ held 7.0 GiB after a full
/// run (the debug and release builds, the arm64 cross build, the VMs'
/// outputs), the kernels' packages in ~/.cache 1.8 GiB, and the packages
/// scripts/setup installs.
pub const NEEDED: u64 = 10 << 30;

/// Bytes an unprivileged user may still write on PATH's file system.
pub fn available(path: &Path) -> io::Result<u64> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path and s a statvfs the call fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s.f_bavail as u64 * s.f_frsize as u64)
}

/// The one line that stops the run, if `avail` bytes are too few.
pub fn shortfall(avail: u64, needed: u64, path: &Path) -> Option<String> {
    (avail < needed).then(|| {
        format!(
            "{} free on the file system of {}, and a run from a fresh clone needs about {}: \
             free some space and run again",
            gib(avail),
            path.display(),
            gib(needed)
        )
    })
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_stops_the_run_with_what_to_do() {
        let line = shortfall(891 << 20, NEEDED, Path::new("/check/work/main")).unwrap();
        assert_eq!(
            line,
            "0.9 GiB free on the file system of /check/work/main, and a run from a fresh \
             clone needs about 10.0 GiB: free some space and run again"
        );
    }

    #[test]
    fn enough_room_says_nothing() {
        assert_eq!(shortfall(NEEDED, NEEDED, Path::new("/")), None);
    }

    #[test]
    fn this_file_system_has_a_size() {
        assert!(available(Path::new(".")).is_ok());
        assert!(available(Path::new("/no/such/dir")).is_err());
    }
}
