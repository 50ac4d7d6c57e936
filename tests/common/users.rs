//! Another user's files, and a run under sudo: what the tests of where
//! root writes need (tests/cli_writes.rs). The suite runs as root; the
//! other user is `nobody`.

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

/// `nobody`'s uid and gid (Debian's nogroup), the user every system has.
pub const NOBODY: u32 = 65534;

/// A new directory as /tmp is: sticky, anyone may write.
pub fn sticky_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

/// A new directory of `nobody`'s, as a user's own.
pub fn nobodys_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    dir
}

/// Plants `link` to `target` as `nobody` would: `ln -s`, run by a child
/// that set its uid and gid to nobody's before it ran.
#[track_caller]
pub fn plant_link(target: &Path, link: &Path) {
    let out = Command::new("ln")
        .arg("-s")
        .arg(target)
        .arg(link)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("ln runs");
    assert!(
        out.status.success(),
        "ln -s as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::symlink_metadata(link).unwrap().uid(), NOBODY);
}

/// `cmd` as `sudo` runs it for `nobody`: root, with SUDO_UID and SUDO_GID.
pub fn as_sudo(cmd: &mut Command) -> &mut Command {
    cmd.env("SUDO_UID", NOBODY.to_string())
        .env("SUDO_GID", NOBODY.to_string())
}

/// The names in `dir`, sorted: to see that nothing was left behind.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Who owns `path` (not following a link): (uid, gid).
pub fn owner(path: &Path) -> (u32, u32) {
    let meta = fs::symlink_metadata(path).unwrap();
    (meta.uid(), meta.gid())
}
