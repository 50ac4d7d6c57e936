//! The output directory: shared into the guest read-write, so that what the
//! guest writes (the suite's KTAP, the command's result) outlives the VM.
//!
//! The guest writes into a fresh staging directory inside DIR; once qemu has
//! exited, its files are renamed into DIR, each one whole (a rename within one
//! file system), replacing the earlier run's of the same name and saying so.
//! A lock on DIR keeps two runs from mixing their files.

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tempfile::TempDir;

use crate::util::{is_root, safe_write};

/// Prefix of the staging directories in DIR.
pub const STAGING: &str = ".vmtest-run.";
/// The lock file in DIR.
const LOCK: &str = ".vmtest.lock";

/// DIR, from `--out` or `<target dir>/vmtest/<release>`: the target dir is
/// `$CARGO_TARGET_DIR` (relative to the current directory, as cargo takes
/// it) or the repository's `target/`.
pub fn dir(out: Option<&str>, target_env: Option<&str>, repo: &Path, release: &str) -> PathBuf {
    match out {
        Some(o) => PathBuf::from(o),
        None => {
            let target = match target_env.filter(|t| !t.is_empty()) {
                Some(t) => PathBuf::from(t),
                None => repo.join("target"),
            };
            // A release is a file name (Debian's are; a custom image's banner
            // could hold a slash).
            target.join("vmtest").join(release.replace('/', "_"))
        }
    }
}

/// DIR, locked for this run, with a fresh staging directory in it.
pub struct Out {
    pub dir: PathBuf,
    pub staging: TempDir,
    _lock: File,
}

impl Out {
    pub fn open(dir: &Path) -> Result<Out> {
        // As safe_write says: under sudo the user's, never through another's
        // link. Its links so followed, DIR is canonical.
        let dir = safe_write::create_dir_all(dir)
            .with_context(|| format!("--out {}: cannot create it", dir.display()))?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("--out {}", dir.display()))?;
        let lock_path = dir.join(LOCK);
        let lock = safe_write::create(&lock_path)
            .with_context(|| format!("--out {}: cannot write in it", dir.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => bail!(
                "another vmtest run is writing to {}: wait for it, or give another --out",
                dir.display()
            ),
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", lock_path.display()))
            }
        }
        // With the lock held, any staging directory is a killed run's.
        for e in fs::read_dir(&dir)?.flatten() {
            if e.file_name().to_string_lossy().starts_with(STAGING) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
        let staging = tempfile::Builder::new()
            .prefix(STAGING)
            .tempdir_in(&dir)
            .with_context(|| format!("creating a directory in {}", dir.display()))?;
        Ok(Out {
            dir,
            staging,
            _lock: lock,
        })
    }

    /// Moves the staged files into DIR (see [`collect`]).
    pub fn collect(&self, owner: Option<(u32, u32)>) -> Result<Collected> {
        collect(self.staging.path(), &self.dir, owner)
    }

    /// Ends the run: the staged files moved into DIR, the staging directory
    /// removed unless something is left in it, the lock released. Returns
    /// the `vmtest:` lines that say what happened.
    pub fn finish(self, owner: Option<(u32, u32)>) -> Result<Vec<String>> {
        let c = self.collect(owner)?;
        let lines = describe(&c, &self.dir, self.staging.path());
        if !c.left.is_empty() {
            let _ = self.staging.keep();
        }
        Ok(lines)
    }
}

/// What [`collect`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Files now in DIR, by name.
    pub saved: Vec<String>,
    /// Those of them that replaced an earlier file.
    pub replaced: Vec<String>,
    /// Entries left in the staging directory: not regular files.
    pub left: Vec<String>,
}

/// Renames each regular file of `staging` into `dir` (same file system: each
/// arrives whole), in name order, skipping hidden names (an interrupted
/// `--save`'s temporary file). With `owner`, a file of another owner is given
/// that one (a root runner: DIR's owner).
pub fn collect(staging: &Path, dir: &Path, owner: Option<(u32, u32)>) -> Result<Collected> {
    let mut names: Vec<(String, fs::FileType)> = Vec::new();
    for e in fs::read_dir(staging).with_context(|| format!("reading {}", staging.display()))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push((name, e.file_type()?));
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut c = Collected::default();
    for (name, kind) in names {
        if !kind.is_file() {
            c.left.push(name);
            continue;
        }
        let from = staging.join(&name);
        let to = dir.join(&name);
        if let Some((uid, gid)) = owner {
            let meta = fs::symlink_metadata(&from)?;
            if std::os::unix::fs::MetadataExt::uid(&meta) != uid {
                std::os::unix::fs::lchown(&from, Some(uid), Some(gid))
                    .with_context(|| format!("chown {}", from.display()))?;
            }
        }
        let existed = to.exists();
        if existed && !fs::symlink_metadata(&to)?.is_file() {
            bail!(
                "{} exists and is not a regular file: not replaced by the guest's {name}",
                to.display()
            );
        }
        fs::rename(&from, &to)
            .with_context(|| format!("moving the guest's {name} to {}", to.display()))?;
        if existed {
            c.replaced.push(name.clone());
        }
        c.saved.push(name);
    }
    Ok(c)
}

/// `vmtest:` lines saying what [`collect`] did.
pub fn describe(c: &Collected, dir: &Path, staging: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    if c.saved.is_empty() {
        lines.push(format!("the guest saved nothing in {}", dir.display()));
    } else {
        let mut l = format!("saved {} in {}", c.saved.join(", "), dir.display());
        if !c.replaced.is_empty() {
            l += &format!(" (replacing an earlier run's {})", c.replaced.join(", "));
        }
        lines.push(l);
    }
    if !c.left.is_empty() {
        lines.push(format!(
            "left in {}: {} (not regular files)",
            staging.display(),
            c.left.join(", ")
        ));
    }
    lines
}

/// As root, the guest's files (root's) take DIR's owner.
pub fn owner(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        return None;
    }
    let m = fs::metadata(dir).ok()?;
    Some((m.uid(), m.gid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dir_is_per_kernel_under_the_target_dir() {
        let repo = Path::new("/r");
        assert_eq!(
            dir(None, None, repo, "6.1.0-57-amd64"),
            Path::new("/r/target/vmtest/6.1.0-57-amd64")
        );
        assert_eq!(
            dir(None, Some("/t"), repo, "7.3.4+deb13-amd64"),
            Path::new("/t/vmtest/7.3.4+deb13-amd64")
        );
        assert_eq!(
            dir(None, Some(""), repo, "a/b"),
            Path::new("/r/target/vmtest/a_b")
        );
        assert_eq!(
            dir(Some("ci/6.1"), Some("/t"), repo, "x"),
            Path::new("ci/6.1")
        );
    }

    #[test]
    fn files_are_moved_in_whole_and_replacements_said() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out/6.1");
        let o = Out::open(&out).unwrap();
        assert!(o.staging.path().starts_with(out.canonicalize().unwrap()));
        let again = Out::open(&out).err().expect("locked");
        assert!(format!("{again:#}").contains("another vmtest run is writing to"));
        let s = o.staging.path();
        fs::write(s.join("suite.ktap"), "KTAP version 1\n").unwrap();
        fs::write(s.join("result.json"), "{}").unwrap();
        fs::write(s.join(".bpf-overhead-x.json.tmp"), "half").unwrap();
        fs::create_dir(s.join("sub")).unwrap();
        fs::write(out.join("result.json"), "old").unwrap();
        let c = o.collect(None).unwrap();
        assert_eq!(c.saved, ["result.json", "suite.ktap"]);
        assert_eq!(c.replaced, ["result.json"]);
        assert_eq!(c.left, ["sub"]);
        assert_eq!(fs::read_to_string(out.join("result.json")).unwrap(), "{}");
        assert!(!out.join(".bpf-overhead-x.json.tmp").exists());
        let lines = describe(&c, &out, s);
        assert_eq!(
            lines[0],
            format!(
                "saved result.json, suite.ktap in {} (replacing an earlier run's result.json)",
                out.display()
            )
        );
        assert!(lines[1].ends_with(": sub (not regular files)"));
        let staging = s.to_path_buf();
        drop(o);
        assert!(!staging.exists(), "the staging directory goes with the run");

        // A killed run's staging directory is removed by the next run.
        let stale = out.join(".vmtest-run.dead");
        fs::create_dir(&stale).unwrap();
        let o = Out::open(&out).unwrap();
        assert!(!stale.exists());
        assert_eq!(
            describe(&o.collect(None).unwrap(), &out, o.staging.path()),
            [format!("the guest saved nothing in {}", out.display())]
        );
    }

    #[test]
    fn a_directory_in_the_way_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let o = Out::open(d.path()).unwrap();
        fs::write(o.staging.path().join("result.json"), "{}").unwrap();
        fs::create_dir(d.path().join("result.json")).unwrap();
        let e = format!("{:#}", o.collect(None).unwrap_err());
        assert!(e.contains("exists and is not a regular file"), "{e}");
    }

    /// `--out` through a link `nobody` planted in a sticky directory, as
    /// /tmp is: refused, and nothing made where it points.
    #[test]
    fn an_out_through_a_planted_link_is_refused() {
        if !is_root() {
            println!("SKIP: a link of nobody's needs root");
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        let sticky = tempfile::tempdir().unwrap();
        fs::set_permissions(sticky.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let target = tempfile::tempdir().unwrap();
        let link = sticky.path().join("out");
        std::os::unix::fs::symlink(target.path(), &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        for out in [link.clone(), link.join("6.1")] {
            let e = format!("{:#}", Out::open(&out).err().expect("refused"));
            assert!(e.contains("symbolic link of uid 65534"), "{e}");
        }
        assert_eq!(fs::read_dir(target.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_out_that_is_a_file_is_one_line() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        fs::write(&f, "").unwrap();
        let e = format!("{:#}", Out::open(&f).err().unwrap());
        assert!(e.starts_with("--out ") && !e.contains('\n'), "{e}");
    }
}
