//! Where `--save` and `report --svg` write, checked before the run: a
//! result or a baseline is never lost or clobbered, a bad target is bad
//! input, not a run thrown away, and root writes only where the user may
//! ([`safe_write`]).

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use bpf_overhead::safe_write::{self, Kind, Writer};

use crate::Failure;

/// Checks `--save`'s target before the run, so that a bad one is bad input
/// (exit 2) rather than a run thrown away: a directory where a file can
/// be created (tried with a temporary file, removed at once), no file there
/// or a regular one, and not the baseline itself (the same file by any
/// path or link) unless `overwrite` says so. Links are followed as
/// [`safe_write`] allows (under sudo the user's or root's; otherwise not
/// another user's in a sticky directory such as /tmp), and a link not
/// followed is refused. Returns the path to write: the file a link
/// points to (there or not), so the link stays a link.
pub fn save_target(
    path: &Path,
    baseline: Option<&Path>,
    overwrite: bool,
) -> Result<SaveTarget, Failure> {
    let fail = |why: String| Failure::Input(format!("cannot save to {}: {why}", path.display()));
    let probe = Writer::from_env().probe(path).map_err(|e| match e {
        safe_write::Error::Refused(why) => fail(why),
        e => fail(e.to_string()),
    })?;
    match probe.kind {
        // A baseline set: the run is added to it as a new file.
        Kind::Dir => return Ok(SaveTarget::Set(probe.path)),
        Kind::Other => {
            return Err(fail(
                "it is not a regular file; name a file to write".into(),
            ))
        }
        Kind::Missing | Kind::File => {}
    }
    let same = baseline
        .and_then(|b| fs::metadata(b).ok())
        .is_some_and(|b| Some((b.dev(), b.ino())) == probe.id);
    if same && !overwrite {
        return Err(Failure::Input(format!(
            "--save {} is the --baseline file: the run would replace the baseline it is \
             judged against; save elsewhere, or add --overwrite-baseline",
            path.display()
        )));
    }
    Ok(SaveTarget::File(probe.path))
}

/// Where `--save` writes: a file, or a new file in a baseline set.
#[derive(Clone, Debug)]
pub enum SaveTarget {
    File(PathBuf),
    Set(PathBuf),
}
