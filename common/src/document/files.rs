//! Result files: reading one back (`--baseline`, `report`, `compare`) and writing one
//! (`--save`).

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use super::Document;
use crate::safe_write::{self, Replace, Writer};

/// What a reader needs of a result file. Either way every figure must
/// make sense ([`Document::validate`]): no reader shows or judges by a
/// negative time, a rate of 0 or a run of 1e300 s. They differ only in
/// whether a run may have stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A run as far as it went (`report` shows what there is): an
    /// interrupted run's completed rounds, skipped and failed mechanisms.
    Any,
    /// A run that was not interrupted, to judge by (`compare`, the gate).
    Complete,
}

/// Why a result file was refused; each reader words it, and this is the
/// plain wording.
#[derive(Debug)]
pub enum ReadError {
    /// Not a file that can be read as a result.
    Unreadable(String),
    /// Not a result of this schema, or its figures make no sense.
    Invalid(String),
    /// An interrupted run, by this signal.
    Interrupted(String),
}

impl ReadError {
    /// One line naming `path`.
    pub fn about(&self, path: &Path) -> String {
        let p = path.display();
        match self {
            ReadError::Unreadable(e) => format!("cannot read {p}: {e}"),
            ReadError::Invalid(e) => format!("{p}: {e}"),
            ReadError::Interrupted(_) => format!("{p}: an interrupted run; rerun it"),
        }
    }
}

impl Document {
    /// Reads a result file, the one way every reader does (`--baseline`,
    /// `report`, `compare`): a regular file of at most [`MAX_FILE_BYTES`],
    /// a document of this schema version whose figures make sense
    /// ([`Document::parse`]); with [`Need::Complete`], from a run that was
    /// not interrupted.
    pub fn read(path: &Path, need: Need) -> Result<Self, ReadError> {
        let text = read_result_file(path).map_err(ReadError::Unreadable)?;
        Self::parse(&text, need)
    }

    /// [`Document::read`] of a file's `text`.
    pub fn parse(text: &str, need: Need) -> Result<Self, ReadError> {
        let doc = Self::from_json(text).map_err(ReadError::Invalid)?;
        doc.validate().map_err(ReadError::Invalid)?;
        if need == Need::Complete {
            if let Some(signal) = &doc.interrupted {
                return Err(ReadError::Interrupted(signal.clone()));
            }
        }
        Ok(doc)
    }

    /// Reads a saved result as a `--baseline`: complete, and the message
    /// names it a baseline.
    pub fn load(path: &Path) -> Result<Self, String> {
        let p = path.display();
        Self::read(path, Need::Complete).map_err(|e| match e {
            ReadError::Unreadable(e) => format!("cannot read baseline {p}: {e}"),
            ReadError::Invalid(e) => format!("baseline {p}: {e}"),
            ReadError::Interrupted(signal) => format!(
                "baseline {p}: the run was interrupted ({signal}) and is incomplete: save a \
                 complete run as the baseline"
            ),
        })
    }

    /// Writes the result for later use (`--save`), atomically: into a new
    /// file in the same directory, synced, then renamed over `path`. A
    /// crash or a full disk leaves the old file whole, never half a
    /// result. Written as [`crate::safe_write`] says: under sudo as the
    /// user, never through another's link.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        self.write(path, Replace::Yes)
    }

    /// Adds the result to the baseline set in `dir` (`--save DIR/`), as a
    /// new file named by its time: never over another run.
    pub fn save_into_set(&self, dir: &Path) -> Result<PathBuf, String> {
        let stem = format!(
            "{}-{}",
            self.timestamp.replace(':', ""),
            self.kernel_release
        );
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-._+".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        for n in 1..1000 {
            let name = if n == 1 {
                format!("{stem}.json")
            } else {
                format!("{stem}-{n}.json")
            };
            let path = dir.join(name);
            match self.write(&path, Replace::No) {
                Ok(()) => return Ok(path),
                Err(_) if fs::symlink_metadata(&path).is_ok() => continue,
                Err(e) => return Err(e),
            }
        }
        Err(format!(
            "cannot save into {}: 999 runs of {stem} there already",
            dir.display()
        ))
    }

    fn write(&self, path: &Path, replace: Replace) -> Result<(), String> {
        Writer::from_env()
            .write(path, self.to_json().as_bytes(), replace)
            .map(drop)
            .map_err(|e| match e {
                safe_write::Error::Exists(_) => e.to_string(),
                e => format!("cannot write result to {}: {e}", path.display()),
            })
    }
}

/// The result files of a baseline set (`--baseline DIR`): its `*.json`
/// files, in name order (their time, as `--save DIR/` names them).
pub fn set_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(dir)
        .map_err(|e| format!("cannot read baseline set {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// The most a result file may weigh: a full run's is ~15 KiB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The text of a result file, refusing what cannot be one without
/// reading it: a directory, a FIFO (whose open would wait for a writer),
/// a device (/dev/zero never ends), anything over [`MAX_FILE_BYTES`].
pub fn read_result_file(path: &Path) -> Result<String, String> {
    let kind = |meta: &fs::Metadata| -> Result<(), String> {
        let t = meta.file_type();
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else if !t.is_file() {
            "not a regular file"
        } else if meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{} bytes, more than a result file's {} MiB",
                meta.len(),
                MAX_FILE_BYTES >> 20
            ));
        } else {
            return Ok(());
        };
        Err(format!("{what}, not a result file"))
    };
    kind(&fs::metadata(path).map_err(|e| e.to_string())?)?;
    // It was a regular file a moment ago; O_NONBLOCK keeps the open from
    // hanging if it was swapped for a FIFO since, and fstat checks again.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    kind(&file.metadata().map_err(|e| e.to_string())?)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "more than a result file's {} MiB",
            MAX_FILE_BYTES >> 20
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    /// Every reader reads here: `report` takes what there is, the gate and
    /// `compare` only a complete run.
    #[test]
    fn an_interrupted_run_is_read_only_where_nothing_is_judged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut doc = document();
        doc.interrupted = Some("SIGINT".into());
        doc.save(&path).unwrap();
        assert!(Document::read(&path, Need::Any).is_ok());
        let err = Document::read(&path, Need::Complete).unwrap_err();
        assert!(
            matches!(err, ReadError::Interrupted(ref s) if s == "SIGINT"),
            "{err:?}"
        );
        assert_eq!(
            err.about(&path),
            format!("{}: an interrupted run; rerun it", path.display())
        );
        let gone = dir.path().join("gone.json");
        let err = Document::read(&gone, Need::Any).unwrap_err();
        assert!(err.about(&gone).starts_with("cannot read "), "{err:?}");
        assert!(Document::load(&gone)
            .unwrap_err()
            .starts_with("cannot read baseline "));
    }
}
