//! Where `--save` writes, checked before the run: a result or a baseline
//! is never lost or clobbered, and a bad target is bad input, not a run
//! thrown away.

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use bpf_overhead::document;

use crate::Failure;

/// Checks `--save`'s target before the run, so that a bad one is bad input
/// (exit 2) rather than a run thrown away: a directory where a file can
/// be created (tried with a temporary file, removed at once), no file there
/// or a regular one, and not the baseline itself (the same file by any
/// path or link) unless `overwrite` says so. Returns the path to write:
/// the file a symlink points to (there or not), so the link stays a link.
pub fn save_target(
    path: &Path,
    baseline: Option<&Path>,
    overwrite: bool,
) -> Result<SaveTarget, Failure> {
    let fail = |why: String| Failure::Input(format!("cannot save to {}: {why}", path.display()));
    // Follow links by hand: the last one may name a file not there yet.
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = fs::read_link(&target).map_err(|e| fail(e.to_string()))?;
                target = document::save_dir(&target).join(to);
            }
            _ => break,
        }
    }
    let dir = document::save_dir(&target);
    if !dir.is_dir() {
        return Err(fail(format!("no directory {}", dir.display())));
    }
    if let Ok(meta) = fs::metadata(&target) {
        if meta.is_dir() {
            // A baseline set: the run is added to it as a new file.
            return writable(&target, &fail).map(|()| SaveTarget::Set(target));
        }
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            };
            return Err(fail(format!("it is {what}; name a file to write")));
        }
        let same = baseline
            .and_then(|b| fs::metadata(b).ok())
            .is_some_and(|b| (b.dev(), b.ino()) == (meta.dev(), meta.ino()));
        if same && !overwrite {
            return Err(Failure::Input(format!(
                "--save {} is the --baseline file: the run would replace the baseline it is \
                 judged against; save elsewhere, or add --overwrite-baseline",
                path.display()
            )));
        }
    }
    writable(dir, &fail)?;
    Ok(SaveTarget::File(target))
}

/// Where `--save` writes: a file, or a new file in a baseline set.
#[derive(Clone, Debug)]
pub enum SaveTarget {
    File(PathBuf),
    Set(PathBuf),
}

/// Checks that a file can be created in `dir` (with a temporary file,
/// removed at once).
fn writable(dir: &Path, fail: &dyn Fn(String) -> Failure) -> Result<(), Failure> {
    tempfile::Builder::new()
        .prefix(".bpf-overhead-")
        .tempfile_in(dir)
        .map_err(|e| {
            // tempfile adds "at path <the random name>": not the user's.
            let e = e.to_string();
            let e = e.split(" at path ").next().unwrap_or_default();
            fail(format!("cannot create a file in {}: {e}", dir.display()))
        })?;
    Ok(())
}
