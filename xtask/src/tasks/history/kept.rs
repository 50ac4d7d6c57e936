//! Kept counts: each build's result, kept under a key of everything an
//! exact count depends on (the package's exact version, QEMU's version,
//! the guest CPU model, the command's plan and the BPF programs it
//! loads), so that a rerun counts only what is new. One file a build and
//! key; a fan-out's jobs each write theirs, and a merge reads them all.
//! Each keeps too the stable releases its package's changelog lists
//! since the build before it, so that its steps keep their commits once
//! the kernel cache is cleaned.

use std::cmp::Ordering;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::changelog::{self, Stable};
use crate::kernels::debian::version_cmp;
use crate::util::document::Document;
use crate::util::{fnv, write_whole, FNV_START};

/// What a count depends on besides the kernel's build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Key {
    pub release: String,
    /// The package's exact version.
    pub version: String,
    /// QEMU's `--version` line.
    pub qemu: String,
    /// `-cpu` of the guest.
    pub cpu: String,
    /// The command's plan: rounds, events, what is left out.
    pub plan: String,
    /// A digest of the BPF programs (bpf/) and of the Rust that decides
    /// what the guest runs per event ([`COUNTED_SOURCES`]): a change to
    /// them counts again.
    pub programs: String,
}

impl Key {
    pub fn digest(&self) -> String {
        let mut h = FNV_START;
        for part in [
            &self.release,
            &self.version,
            &self.qemu,
            &self.cpu,
            &self.plan,
            &self.programs,
        ] {
            fnv(&mut h, part.as_bytes());
            fnv(&mut h, b"\0");
        }
        format!("{h:016x}")
    }

    /// The file it is kept in under `dir`.
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(&self.release)
            .join(format!("{}--{}.json", self.version, self.digest()))
    }
}

/// One build's count, or why its VM failed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Kept {
    pub key: Key,
    /// The vmtest's exit: 0 when every mechanism was counted or declared absent.
    pub exit: i32,
    /// Why it failed, if it did (the vmtest's own lines).
    pub why: Vec<String>,
    /// Seconds: fetching (download and unpack, 0 when cached), the VM.
    pub fetch_s: Option<f64>,
    pub downloaded_bytes: Option<u64>,
    pub vm_s: Option<f64>,
    /// The command's result document (instructions per event), if it wrote one.
    pub result: Option<Document>,
    /// The stable releases its changelog lists since the build before it
    /// (None: not read, an older kept file or a package with no changelog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<Stables>,
}

/// The stable releases a build's Debian changelog lists after the
/// upstream release of the build before it on its line, up to its own:
/// what the steps that end at it name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stables {
    /// The upstream release they start after (not included): the build
    /// before's, or the build's own when it is its line's first.
    pub after: String,
    /// Oldest first.
    pub releases: Vec<Stable>,
}

impl Stables {
    /// Those of the changelog in the unpacked package at `root` after
    /// upstream `after` up to `upto`; None when it has no changelog.
    pub fn read(root: &Path, after: &str, upto: &str) -> Option<Stables> {
        changelog::read(root).map(|all| Stables {
            after: after.to_owned(),
            releases: changelog::between(&all, after, upto),
        })
    }

    /// Whether they reach back to `after`.
    pub fn reach(&self, after: &str) -> bool {
        version_cmp(&self.after, after) != Ordering::Greater
    }
}

/// The stable releases after upstream `after` up to the build at `to` of
/// a line (each build as its upstream release and its kept list), oldest
/// first: `to`'s list, then, while that does not reach back to `after`,
/// the list of the build it starts after, and so on. None when a list on
/// the way was not kept.
pub fn between(line: &[(&str, Option<&Stables>)], to: usize, after: &str) -> Option<Vec<Stable>> {
    let mut got: Vec<Stable> = Vec::new();
    let mut i = to;
    loop {
        let s = line.get(i)?.1?;
        got.extend(s.releases.iter().cloned());
        if s.reach(after) {
            break;
        }
        i = line[..i].iter().rposition(|(up, _)| *up == s.after)?;
    }
    Some(changelog::between(&got, after, line[to].0))
}

pub fn load(dir: &Path, key: &Key) -> Option<Kept> {
    let text = fs::read_to_string(key.path(dir)).ok()?;
    serde_json::from_str::<Kept>(&text)
        .ok()
        .filter(|k| k.key == *key)
}

pub fn save(dir: &Path, kept: &Kept) -> Result<()> {
    let path = kept.key.path(dir);
    write_whole(&path, (serde_json::to_string(kept)? + "\n").as_bytes())
        .with_context(|| format!("keeping the count in {}", path.display()))
}

/// Beside bpf/, the sources whose change changes what a guest runs per
/// event: the triggers (the comm name and where it is written, the call
/// targets), the run (the lead-in and the programs' switch) and the
/// constants shared with the programs.
pub const COUNTED_SOURCES: [&str; 4] = [
    "src/measure/mechanism/trigger.rs",
    "src/measure/mechanism/target.rs",
    "src/measure/running/run.rs",
    "common/src/bpf_consts.rs",
];

/// The digest a kept count is keyed by: the BPF programs' sources under
/// `repo`'s bpf/, then each of [`COUNTED_SOURCES`].
pub fn digest_sources(repo: &Path) -> Result<String> {
    let mut h = FNV_START;
    fnv(&mut h, digest_dir(&repo.join("bpf"))?.as_bytes());
    for f in COUNTED_SOURCES {
        fnv(&mut h, f.as_bytes());
        let path = repo.join(f);
        fnv(
            &mut h,
            &fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
        );
    }
    Ok(format!("{h:016x}"))
}

/// A digest of the files of `dir` (the BPF programs' sources), by name.
pub fn digest_dir(dir: &Path) -> Result<String> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut h = FNV_START;
    for f in files {
        fnv(&mut h, f.file_name().unwrap_or_default().as_encoded_bytes());
        fnv(&mut h, &fs::read(&f)?);
    }
    Ok(format!("{h:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key {
            release: "6.12.43+deb12-amd64".into(),
            version: "6.12.43-1~bpo12+1".into(),
            qemu: "QEMU emulator version 7.2.22".into(),
            cpu: "max".into(),
            plan: "rounds 5".into(),
            programs: "0123".into(),
        }
    }

    #[test]
    fn kept_by_every_part_of_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let k = Kept {
            key: key(),
            exit: 0,
            why: vec![],
            fetch_s: Some(12.0),
            downloaded_bytes: Some(1),
            vm_s: Some(60.0),
            result: Some(crate::util::document::fixtures::counted(&[(
                "raw_tp", 121.0,
            )])),
            stable: None,
        };
        save(dir.path(), &k).unwrap();
        assert_eq!(load(dir.path(), &key()).unwrap().vm_s, Some(60.0));
        for change in [
            |k: &mut Key| k.version = "6.12.43-2".into(),
            |k: &mut Key| k.qemu = "QEMU emulator version 10.0.2".into(),
            |k: &mut Key| k.cpu = "host".into(),
            |k: &mut Key| k.plan = "rounds 7".into(),
            |k: &mut Key| k.programs = "4567".into(),
        ] {
            let mut other = key();
            change(&mut other);
            assert!(load(dir.path(), &other).is_none(), "{other:?}");
        }
        // A kept file from before stable lists were kept still loads.
        let mut old: serde_json::Value = serde_json::to_value(&k).unwrap();
        assert!(old.get("stable").is_none());
        old.as_object_mut().unwrap().remove("stable");
        fs::write(key().path(dir.path()), old.to_string()).unwrap();
        assert_eq!(load(dir.path(), &key()).unwrap().stable, None);
        // One with its list keeps it.
        let list = Stables {
            after: "6.12.42".into(),
            releases: vec![Stable {
                debian: "6.12.43-1".into(),
                release: "6.12.43".into(),
                subjects: vec!["bpf: a fix".into()],
            }],
        };
        save(
            dir.path(),
            &Kept {
                stable: Some(list.clone()),
                ..k.clone()
            },
        )
        .unwrap();
        assert_eq!(load(dir.path(), &key()).unwrap().stable, Some(list));
        // A damaged file is no count.
        fs::write(key().path(dir.path()), "{").unwrap();
        assert!(load(dir.path(), &key()).is_none());
    }

    #[test]
    fn the_programs_digest_follows_their_sources() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.bpf.c"), "int x;").unwrap();
        let d1 = digest_dir(dir.path()).unwrap();
        fs::write(dir.path().join("a.bpf.c"), "int y;").unwrap();
        assert_ne!(d1, digest_dir(dir.path()).unwrap());
    }

    #[test]
    fn the_key_follows_the_rust_that_fires_the_programs_too() {
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir_all(repo.path().join("bpf")).unwrap();
        fs::write(repo.path().join("bpf/a.bpf.c"), "int x;").unwrap();
        for f in COUNTED_SOURCES {
            let path = repo.path().join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "// one").unwrap();
        }
        let d1 = digest_sources(repo.path()).unwrap();
        fs::write(repo.path().join(COUNTED_SOURCES[0]), "// two").unwrap();
        assert_ne!(d1, digest_sources(repo.path()).unwrap());
        // Every one of them is in this repository.
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(digest_sources(&here).is_ok());
    }
}
