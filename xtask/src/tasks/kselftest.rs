//! `cargo xtask kselftest --out DIR [--arch arm64]`: the suite as a native
//! kselftest collection, `bpf_overhead`, in kselftest's install layout
//! (what `make -C tools/testing/selftests install` writes) and in gen_tar's
//! tarball, for kernel CI's kselftest jobs (docs/kernel-ci.md).
//!
//! The runner files are the kernel's own, copied as its Makefile's install
//! recipe copies them; the collection's tests, settings and config are the
//! in-tree drop-in's (kselftest/bpf_overhead), listed by its Makefile; its
//! programs are the static build ([`crate::build::static_build`]).
//!
//! The kselftest room: this task, its options, and kselftest's own files
//! and rules ([`selftests`]). It imports build and util, never another
//! task.

pub mod selftests;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context, Result};

use crate::build::static_build::{self, Programs};
use crate::kernels::arch::{arch, Arch};
use crate::tasks::kselftest::selftests::{Collection, COLLECTION, DROP_IN};
use crate::util::signal::catch_signals;
use crate::util::values::directory;
use crate::util::{one_line, repo_root, shown};

/// `cargo xtask kselftest`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct KselftestArgs {
    /// Where the layout goes (emptied first if it holds an earlier layout)
    #[arg(long, value_name = "DIR", value_parser = directory)]
    pub out: String,
    /// The programs' architecture: x86_64 (default) or arm64 (cross-built)
    #[arg(long, value_name = "ARCH", default_value = "x86_64", value_parser = arch)]
    pub arch: Arch,
    /// The kernel's runner files from this Debian package (default: the newest
    /// linux-source-X.Y)
    #[arg(long, value_name = "linux-source-X.Y")]
    pub source: Option<String>,
    /// Only the collection's built files (its programs and absent/) into DIR, as
    /// the in-tree Makefile wants them
    #[arg(long = "programs-only")]
    pub programs_only: bool,
}

/// Where the project's declared absences are (the collection's `absent/`).
const ABSENT_DIR: &str = "ci/absent";

pub fn main(a: KselftestArgs) -> i32 {
    catch_signals();
    match run(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kselftest: {}", one_line(&e));
            2
        }
    }
}

fn say(s: &str) {
    eprintln!("kselftest: {s}");
}

fn run(a: &KselftestArgs) -> Result<()> {
    let repo = repo_root();
    let out = std::path::absolute(&a.out).with_context(|| format!("--out {}", a.out))?;
    let drop_in = repo.join(DROP_IN);
    let makefile = drop_in.join("Makefile");
    let collection = Collection::from_makefile(
        &fs::read_to_string(&makefile)
            .with_context(|| format!("reading {}", makefile.display()))?,
    )?;
    if a.programs_only {
        let progs = static_build::build(&repo, a.arch)?;
        install_built(&out, &repo, &collection, &progs)?;
        say(&format!(
            "{} static programs and absent/ in {}",
            progs.0.len(),
            out.display()
        ));
        return Ok(());
    }
    // The kernel's files first: a missing package fails before the build.
    let sel = selftests::fetch_tree(&repo, a.source.as_deref())?;
    let mk = fs::read_to_string(sel.join("Makefile")).context("the selftests Makefile")?;
    let runner = selftests::runner_files(&mk)?;
    let progs = static_build::build(&repo, a.arch)?;

    empty_out(&out)?;
    for (file, dir) in &runner {
        let name = Path::new(file)
            .file_name()
            .context("a runner file's name")?;
        copy(&sel.join(file), &out.join(dir).join(name), 0o744)?;
    }
    let coll = out.join(COLLECTION);
    for t in &collection.tests {
        copy(&drop_in.join(t), &coll.join(t), 0o755)?;
    }
    for f in collection
        .files
        .iter()
        .map(String::as_str)
        .chain(["settings", "config"])
    {
        copy(&drop_in.join(f), &coll.join(f), 0o644)?;
    }
    install_built(&coll, &repo, &collection, &progs)?;
    crate::util::write_file(out.join("kselftest-list.txt"), collection.list())
        .context("writing kselftest-list.txt")?;

    let tarball = out
        .join("kselftest-packages")
        .join(format!("kselftest.tar{}", selftests::tar_format(&mk)));
    gen_tar(&out, &tarball)?;
    say(&format!(
        "{}: kselftest's layout for {} ({} tests; runner files from {}), and {}",
        out.display(),
        a.arch.name(),
        collection.tests.len(),
        sel.display(),
        tarball.display()
    ));
    say(&format!(
        "run it: {}/run_kselftest.sh -c {COLLECTION} (as root)",
        out.display()
    ));
    Ok(())
}

/// DIR made empty: a new or empty directory, or an earlier layout (it has
/// kselftest-list.txt). Anything else is left alone.
fn empty_out(out: &Path) -> Result<()> {
    if out.exists() {
        let mut entries =
            fs::read_dir(out).with_context(|| format!("reading {}", out.display()))?;
        if entries.next().is_some() {
            ensure!(
                out.join("kselftest-list.txt").is_file(),
                "--out {} is neither empty nor an earlier layout (no kselftest-list.txt): give a new or empty directory",
                out.display()
            );
            fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
        }
    }
    crate::util::create_dir_all(out)
}

/// The collection's built files into `dir`: its programs
/// (TEST_GEN_PROGS_EXTENDED) and absent/ (TEST_GEN_FILES, ci/absent).
fn install_built(dir: &Path, repo: &Path, c: &Collection, progs: &Programs) -> Result<()> {
    let mut built: Vec<&str> = progs.0.iter().map(|(n, _)| n.as_str()).collect();
    let mut wanted: Vec<&str> = c.programs.iter().map(String::as_str).collect();
    built.sort_unstable();
    wanted.sort_unstable();
    ensure!(
        built == wanted,
        "{DROP_IN}/Makefile's TEST_GEN_PROGS_EXTENDED is {wanted:?}, but the build makes {built:?}"
    );
    for (name, path) in &progs.0 {
        copy(path, &dir.join(name), 0o755)?;
    }
    ensure!(
        c.gen_files == ["absent"],
        "{DROP_IN}/Makefile's TEST_GEN_FILES is {:?}, not [\"absent\"]",
        c.gen_files
    );
    let absent = dir.join("absent");
    if absent.exists() {
        fs::remove_dir_all(&absent).with_context(|| format!("emptying {}", absent.display()))?;
    }
    copy_tree(&repo.join(ABSENT_DIR), &absent)
}

fn copy(from: &Path, to: &Path, mode: u32) -> Result<()> {
    if let Some(d) = to.parent() {
        crate::util::create_dir_all(d)?;
    }
    // Replace, never write through: an earlier copy may be running.
    let _ = fs::remove_file(to);
    fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", to.display()))
}

/// A directory of files and directories, copied (README.md files left out).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    crate::util::create_dir_all(to)?;
    let mut entries: Vec<PathBuf> = fs::read_dir(from)
        .with_context(|| format!("reading {}", from.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        let name = p.file_name().context("a file name")?;
        if p.is_dir() {
            copy_tree(&p, &to.join(name))?;
        } else if name != "README.md" {
            copy(&p, &to.join(name), 0o644)?;
        }
    }
    Ok(())
}

/// gen_tar's tarball: `tar caf TAR --exclude=kselftest-packages -C DIR .`
/// (the selftests Makefile's recipe; tar picks the compression from the
/// name).
fn gen_tar(dir: &Path, tarball: &Path) -> Result<()> {
    let parent = tarball.parent().context("the tarball's directory")?;
    crate::util::create_dir_all(parent)?;
    let mut cmd = Command::new("tar");
    cmd.arg("caf")
        .arg(tarball)
        .arg("--exclude=kselftest-packages")
        .arg("-C")
        .arg(dir)
        .arg(".")
        .stdin(Stdio::null());
    let st = cmd
        .status()
        .with_context(|| format!("running {}", shown(&cmd)))?;
    if !st.success() {
        bail!("{} failed", shown(&cmd));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unrelated_directory_is_never_emptied() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("precious"), "x").unwrap();
        let e = empty_out(d.path()).unwrap_err().to_string();
        assert!(e.contains("neither empty nor an earlier layout"), "{e}");
        assert!(d.path().join("precious").exists());
        fs::write(d.path().join("kselftest-list.txt"), "").unwrap();
        empty_out(d.path()).unwrap();
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
        empty_out(&d.path().join("new")).unwrap();
        assert!(d.path().join("new").is_dir());
    }

    #[test]
    fn the_absences_are_copied_whole() {
        let d = tempfile::tempdir().unwrap();
        copy_tree(&repo_root().join(ABSENT_DIR), d.path()).unwrap();
        assert!(d.path().join("6.12").is_file());
        assert!(d.path().join("arm64/default").is_file());
        assert!(!d.path().join("README.md").exists());
    }
}
