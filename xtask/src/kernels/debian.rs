//! Debian kernels, through the runner's own apt configuration: a sources list,
//! package lists and apt's caches under `<cache>/apt/`. The host's apt setup
//! (/etc/apt, /var/lib/apt, /var/cache/apt) is neither read nor written; only
//! the archive keyring of the debian-archive-keyring package is used.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{bail, ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::util::say;

/// The suites searched for kernels: bullseye-security has 5.10 and a 6.1
/// backport, bookworm 6.1 and 6.12, bookworm-backports the earlier 6.12
/// builds for bookworm, trixie 6.12, trixie-backports 6.16 and later, sid
/// the newest.
pub const SUITES: &[(&str, &str)] = &[
    ("debian-security", "bullseye-security"),
    ("debian", "bookworm"),
    ("debian", "bookworm-backports"),
    ("debian-security", "bookworm-security"),
    ("debian", "trixie"),
    ("debian-security", "trixie-security"),
    ("debian", "trixie-backports"),
    ("debian", "sid"),
];
const MIRROR: &str = "http://deb.debian.org";
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Package lists older than this are refreshed.
pub const LISTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// ... and older than this when a KERNEL is not in them.
pub const LISTS_RETRY_AGE: Duration = Duration::from_secs(3600);

pub const ACCEPTED: &str = "accepted: a Debian kernel series (5.10, 6.1, 6.12, 6.18, 7.3…), \
    `newest`, a Debian release (6.1.0-57-amd64) or package name, or the path to a bzImage/vmlinux";

/// How Debian packaged one kernel release (the plain amd64 or arm64 flavour).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// `uname -r`, e.g. 6.1.0-57-amd64, 6.12.118+deb13-amd64, 7.3.4+deb13-amd64.
    pub name: String,
    /// The packages holding its bzImage and its modules, in unpack order.
    pub packages: Vec<String>,
    /// False for a 6.19+ kernel whose linux-modules-* package does not exist.
    pub has_modules: bool,
}

impl Release {
    /// major.minor, e.g. "6.12".
    pub fn series(&self) -> String {
        series_of(&self.name)
    }
}

pub fn series_of(release: &str) -> String {
    release.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// A plain kernel release of `arch`: `X.Y.Z…-amd64` or `-arm64`, not a flavour
/// such as -rt, -cloud or arm64's -16k.
pub fn plain_release(rel: &str, arch: Arch) -> bool {
    let Some(base) = rel.strip_suffix(&format!("-{}", arch.debian())) else {
        return false;
    };
    let mut dots = base.split('.');
    let numeric =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    if !(numeric(dots.next()) && numeric(dots.next())) {
        return false;
    }
    let third = base.split('.').nth(2).unwrap_or("");
    if !third.starts_with(|c: char| c.is_ascii_digit()) {
        return false; // linux-image-6.1-amd64 and other metapackages
    }
    // 6.1.0-57, 6.1.0-0.deb11.52, 6.12.118+deb13: the last "-" part is numeric.
    base.rsplit_once('-')
        .is_none_or(|(_, last)| last.starts_with(|c: char| c.is_ascii_digit()))
}

/// The releases of `arch` that the package names describe, oldest first.
pub fn releases<'a>(names: impl IntoIterator<Item = &'a str>, arch: Arch) -> Vec<Release> {
    #[derive(Default)]
    struct Seen {
        unsigned: bool,
        signed: bool,
        binary: bool,
        modules: bool,
    }
    let mut by_rel: BTreeMap<String, Seen> = BTreeMap::new();
    for name in names {
        let (rel, slot): (&str, fn(&mut Seen)) = if let Some(r) = name.strip_prefix("linux-binary-")
        {
            if r.starts_with("unsigned-") {
                continue;
            }
            (r, |s| s.binary = true)
        } else if let Some(r) = name.strip_prefix("linux-modules-") {
            (r, |s| s.modules = true)
        } else if let Some(r) = name.strip_prefix("linux-image-") {
            match r.strip_suffix("-unsigned") {
                Some(r) => (r, |s| s.unsigned = true),
                None => (r, |s| s.signed = true),
            }
        } else {
            continue;
        };
        if plain_release(rel, arch) {
            slot(by_rel.entry(rel.to_owned()).or_default());
        }
    }
    let mut out: Vec<Release> = by_rel
        .into_iter()
        .filter_map(|(name, s)| {
            // From 6.19 linux-image-* is an empty metapackage: the kernel is in
            // linux-binary-*, its modules in linux-modules-*.
            let (packages, has_modules) = if s.binary {
                let mut p = vec![format!("linux-binary-{name}")];
                if s.modules {
                    p.push(format!("linux-modules-{name}"));
                }
                (p, s.modules)
            } else if s.unsigned {
                (vec![format!("linux-image-{name}-unsigned")], true)
            } else if s.signed {
                (vec![format!("linux-image-{name}")], true)
            } else {
                return None;
            };
            Some(Release {
                name,
                packages,
                has_modules,
            })
        })
        .collect();
    out.sort_by(|a, b| version_cmp(&a.name, &b.name));
    out
}

/// A package version as the lists have it, in one suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub package: String,
    /// The package's version, e.g. 6.12.43-1~bpo12+1.
    pub version: String,
    /// The suite, e.g. bookworm-backports.
    pub suite: String,
}

/// `apt-cache madison`'s lines: `package | version | URL suite/component arch Packages`.
pub fn madison(text: &str) -> Vec<Listed> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (package, version, from) = (f.next()?, f.next()?, f.next()?);
            let suite = from.split_whitespace().nth(1)?.split('/').next()?;
            (!package.is_empty() && !version.is_empty()).then(|| Listed {
                package: package.to_owned(),
                version: version.to_owned(),
                suite: suite.to_owned(),
            })
        })
        .collect()
}

/// Compares release strings number by number (6.12.9 < 6.12.118, 6.1.0-0.deb11.52 < 6.1.0-57).
pub fn version_cmp(a: &str, b: &str) -> Ordering {
    fn parts(s: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let d = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let n = rest[..d].parse().unwrap_or(0);
            rest = &rest[d..];
            let t = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            out.push((n, rest[..t].to_owned()));
            rest = &rest[t..];
        }
        out
    }
    parts(a).cmp(&parts(b))
}

/// The series that have at least one bootable release, e.g. "5.10 6.1 6.12".
pub fn known_series(rels: &[Release]) -> String {
    let mut s: Vec<String> = rels
        .iter()
        .filter(|r| r.has_modules)
        .map(Release::series)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    s.sort_by(|a, b| version_cmp(a, b));
    s.join(" ")
}

/// What KERNEL names among `rels`, or why it names nothing bootable.
pub fn choose(kernel: &str, rels: &[Release]) -> Result<Release> {
    let no_modules = |r: &Release| {
        anyhow::Error::new(crate::util::BadInput(format!(
            "Debian ships no linux-modules-{} package for kernel {}: the VM needs its virtio, \
             9p and overlay modules (series with modules: {})",
            r.name,
            r.name,
            known_series(rels)
        )))
    };
    let found = if kernel == "newest" {
        rels.iter().rev().find(|r| r.has_modules)
    } else if kernel.split('.').count() == 2
        && kernel
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let in_series: Vec<&Release> = rels.iter().filter(|r| r.series() == kernel).collect();
        match in_series.iter().rev().find(|r| r.has_modules) {
            Some(r) => Some(*r),
            None if !in_series.is_empty() => {
                return Err(no_modules(in_series[in_series.len() - 1]))
            }
            None => None,
        }
    } else {
        let r = rels
            .iter()
            .find(|r| r.name == kernel || r.packages.iter().any(|p| p == kernel))
            .or_else(|| {
                // Any package of a release names it: linux-image-<rel>, -unsigned.
                let rel = kernel
                    .strip_prefix("linux-image-")
                    .map(|r| r.strip_suffix("-unsigned").unwrap_or(r))?;
                rels.iter().find(|r| r.name == rel)
            });
        if let Some(r) = r.filter(|r| !r.has_modules) {
            return Err(no_modules(r));
        }
        r
    };
    match found {
        Some(r) => Ok(r.clone()),
        None => bail!(crate::util::BadInput(format!(
            "unknown kernel '{kernel}'; {ACCEPTED} (series apt knows: {})",
            match known_series(rels) {
                s if s.is_empty() => "none".to_owned(),
                s => s,
            }
        ))),
    }
}

/// The runner's private apt: configuration, lists and caches under one
/// directory, one per architecture (`apt/` for amd64, `apt-arm64/`): apt
/// then lists only that architecture's packages.
pub struct Apt {
    dir: PathBuf,
    arch: Arch,
}

impl Apt {
    pub fn new(cache: &Path, arch: Arch) -> Apt {
        let dir = match arch {
            Arch::X86_64 => cache.join("apt"),
            other => cache.join(format!("apt-{}", other.debian())),
        };
        Apt { dir, arch }
    }

    fn conf_path(&self) -> PathBuf {
        self.dir.join("etc/apt.conf")
    }

    /// The apt.conf given to every apt command as APT_CONFIG. Dir::Etc points
    /// at the private etc, so the host's apt.conf.d, sources and preferences
    /// are not read.
    pub fn conf(&self) -> String {
        let d = self.dir.display();
        let a = self.arch.debian();
        format!(
            "Dir::Etc \"{d}/etc\";\n\
             Dir::Etc::main \"apt.conf\";\n\
             Dir::Etc::Parts \"apt.conf.d\";\n\
             Dir::Etc::SourceList \"sources.list\";\n\
             Dir::Etc::SourceParts \"sources.list.d\";\n\
             Dir::Etc::Preferences \"preferences\";\n\
             Dir::Etc::PreferencesParts \"preferences.d\";\n\
             Dir::Etc::Trusted \"trusted.gpg\";\n\
             Dir::Etc::TrustedParts \"trusted.gpg.d\";\n\
             Dir::State \"{d}/state\";\n\
             Dir::State::status \"{d}/state/status\";\n\
             Dir::Cache \"{d}/cache\";\n\
             Dir::Cache::srcpkgcache \"\";\n\
             Dir::Log \"{d}/log\";\n\
             APT::Architecture \"{a}\";\n\
             APT::Architectures {{ \"{a}\"; }};\n\
             Acquire::Languages \"none\";\n\
             Acquire::GzipIndexes \"true\";\n\
             APT::Sandbox::User \"root\";\n\
"
        )
    }

    /// One line per suite. Valid-Until is not checked: a mirror that lags a
    /// few weeks still serves signed, usable kernel packages.
    pub fn sources() -> String {
        SUITES
            .iter()
            .map(|(path, suite)| {
                format!(
                    "deb [signed-by={KEYRING} check-valid-until=no] {MIRROR}/{path} {suite} main\n"
                )
            })
            .collect()
    }

    /// Writes the configuration; true if the sources changed (lists are then stale).
    fn setup(&self) -> Result<bool> {
        ensure!(
            Path::new(KEYRING).exists(),
            "no {KEYRING}: apt-get install -y debian-archive-keyring"
        );
        for sub in [
            "etc/apt.conf.d",
            "etc/sources.list.d",
            "etc/preferences.d",
            "etc/trusted.gpg.d",
            "state/lists/partial",
            "cache/archives/partial",
            "log",
        ] {
            crate::util::create_dir_all(self.dir.join(sub))?;
        }
        let status = self.dir.join("state/status");
        if !status.exists() {
            crate::util::write_file(&status, "")?;
        }
        crate::util::write_file(self.conf_path(), self.conf())?;
        let list = self.dir.join("etc/sources.list");
        let sources = Apt::sources();
        let changed = fs::read_to_string(&list).ok().as_deref() != Some(sources.as_str());
        if changed {
            crate::util::write_file(&list, sources)?;
        }
        Ok(changed)
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("APT_CONFIG", self.conf_path())
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        c
    }

    fn lists_age(&self) -> Option<Duration> {
        let stamp = self.dir.join("state/lists/.updated");
        let t = fs::metadata(stamp).and_then(|m| m.modified()).ok()?;
        Some(SystemTime::now().duration_since(t).unwrap_or_default())
    }

    /// Refreshes the package lists when they are missing, older than `max_age`,
    /// or for other sources. A failed refresh with older lists at hand is a
    /// warning, not an error. True if the lists were refreshed.
    pub fn update(&self, max_age: Duration) -> Result<bool> {
        let changed = self.setup()?;
        let age = self.lists_age();
        if !changed && age.is_some_and(|a| a < max_age) {
            return Ok(false);
        }
        say!(
            "apt-get update (the runner's own lists, in {})",
            self.dir.display()
        );
        let out = self
            .command("apt-get")
            .args(["-q", "update"])
            .output()
            .context("running apt-get (apt-get install -y apt)")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first_err = stderr
            .lines()
            .find(|l| l.starts_with("E:") || l.starts_with("W:"))
            .unwrap_or("")
            .to_owned();
        if !out.status.success() || stderr.lines().any(|l| l.starts_with("E:")) {
            if age.is_some() && !changed {
                say!("apt-get update failed ({first_err}): using the lists from before");
                return Ok(false);
            }
            bail!("apt-get update failed: {first_err}");
        }
        crate::util::write_file(self.dir.join("state/lists/.updated"), "")?;
        Ok(true)
    }

    /// The kernel releases the lists offer.
    pub fn releases(&self) -> Result<Vec<Release>> {
        let out = self
            .command("apt-cache")
            .args([
                "search",
                "--names-only",
                "^linux-(image|binary|modules)-[0-9]",
            ])
            .output()
            .context("running apt-cache")?;
        ensure!(
            out.status.success(),
            "apt-cache search failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(releases(
            text.lines().filter_map(|l| l.split(' ').next()),
            self.arch,
        ))
    }

    /// Each of `packages`' versions in the lists, with the suite that has
    /// it: apt-cache madison's lines, parsed by [`madison`].
    pub fn versions(&self, packages: &[String]) -> Result<Vec<Listed>> {
        if packages.is_empty() {
            return Ok(Vec::new());
        }
        let out = self
            .command("apt-cache")
            .arg("madison")
            .args(packages)
            .output()
            .context("running apt-cache")?;
        ensure!(
            out.status.success(),
            "apt-cache madison failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        Ok(madison(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Where downloaded .deb files wait until their kernel is unpacked and checked.
    pub fn debs_dir(&self) -> PathBuf {
        self.dir.join("debs")
    }

    /// The .deb files of `packages` in the debs directory, downloading those not
    /// there yet (a run that failed after its download does not download again).
    /// Returns them and the bytes downloaded now.
    pub fn download(&self, packages: &[String]) -> Result<(Vec<PathBuf>, u64)> {
        let dir = self.debs_dir();
        crate::util::create_dir_all(&dir)?;
        let find = |p: &str| -> Option<PathBuf> {
            fs::read_dir(&dir)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&format!("{p}_")) && n.ends_with(".deb"))
                })
        };
        let missing: Vec<&String> = packages.iter().filter(|p| find(p).is_none()).collect();
        let mut size = 0;
        if !missing.is_empty() {
            // apt-get download verifies each file against the signed lists.
            let out = self
                .command("apt-get")
                .args(["-q", "download"])
                .args(&missing)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .output()
                .context("running apt-get download")?;
            if !out.status.success() {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let line = stderr.lines().find(|l| l.starts_with("E:")).unwrap_or("");
                bail!("apt-get download {} failed: {line}", packages.join(" "));
            }
            for p in &missing {
                let deb = find(p).with_context(|| format!("apt-get download left no {p}_*.deb"))?;
                size += fs::metadata(&deb)?.len();
            }
        }
        let debs = packages
            .iter()
            .map(|p| find(p).with_context(|| format!("no {p}_*.deb in {}", dir.display())))
            .collect::<Result<_>>()?;
        Ok((debs, size))
    }
}

/// Unpacks a .deb (never installs it) with dpkg-deb.
pub fn unpack(deb: &Path, into: &Path) -> Result<()> {
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(into)
        .stdin(Stdio::null())
        .output()
        .context("running dpkg-deb (apt-get install -y dpkg)")?;
    ensure!(
        out.status.success(),
        "dpkg-deb -x {} failed: {}",
        deb.display(),
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .next()
            .unwrap_or("")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Package names as apt lists them (a sample of the real lists).
    const NAMES: &[&str] = &[
        "linux-image-5.10.0-45-amd64-unsigned",
        "linux-image-5.10.0-46-amd64",
        "linux-image-5.10.0-46-amd64-unsigned",
        "linux-image-5.10.0-46-amd64-dbg",
        "linux-image-5.10.0-46-rt-amd64-unsigned",
        "linux-image-6.1-amd64",
        "linux-image-6.1.0-0.deb11.52-amd64-unsigned",
        "linux-image-6.1.0-9-amd64-unsigned",
        "linux-image-6.1.0-57-amd64",
        "linux-image-6.1.0-57-amd64-unsigned",
        "linux-image-6.12.117+deb12-amd64-unsigned",
        "linux-image-6.12.118+deb13-amd64-unsigned",
        "linux-image-6.12.118+deb13-cloud-amd64-unsigned",
        "linux-image-6.12.9+deb13-amd64-unsigned",
        "linux-image-6.16.12+deb13-amd64",
        "linux-image-6.18.15+deb13-amd64",
        "linux-image-6.19.14+deb13-amd64",
        "linux-binary-6.19.14+deb13-amd64",
        "linux-image-7.2.13+deb14-amd64",
        "linux-binary-7.2.13+deb14-amd64",
        "linux-binary-unsigned-7.2.13+deb14-amd64",
        "linux-modules-7.2.13+deb14-amd64",
        "linux-modules-7.2.13+deb14-rt-amd64",
        "linux-image-7.3.4+deb13-amd64",
        "linux-binary-7.3.4+deb13-amd64",
        "linux-binary-7.3.4+deb13-cloud-amd64",
        "linux-modules-7.3.4+deb13-amd64",
        "linux-image-amd64",
    ];

    fn rels() -> Vec<Release> {
        releases(NAMES.iter().copied(), Arch::X86_64)
    }

    fn pick(k: &str) -> Result<Release> {
        choose(k, &rels())
    }

    #[test]
    fn madison_lines() {
        let text = "linux-image-6.1.0-57-amd64-unsigned |  6.1.192-3 | \
            http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n\
            linux-binary-7.3.4+deb13-amd64 | 7.3.4-1~bpo13+1 | \
            http://deb.debian.org/debian trixie-backports/main amd64 Packages\n\
            garbage\n";
        let l = madison(text);
        assert_eq!(l.len(), 2);
        assert_eq!(
            l[0],
            Listed {
                package: "linux-image-6.1.0-57-amd64-unsigned".into(),
                version: "6.1.192-3".into(),
                suite: "bookworm-security".into(),
            }
        );
        assert_eq!(l[1].suite, "trixie-backports");
        assert_eq!(l[1].version, "7.3.4-1~bpo13+1");
    }

    #[test]
    fn releases_and_their_packages() {
        let r = rels();
        let names: Vec<_> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "5.10.0-45-amd64",
                "5.10.0-46-amd64",
                "6.1.0-0.deb11.52-amd64",
                "6.1.0-9-amd64",
                "6.1.0-57-amd64",
                "6.12.9+deb13-amd64",
                "6.12.117+deb12-amd64",
                "6.12.118+deb13-amd64",
                "6.16.12+deb13-amd64",
                "6.18.15+deb13-amd64",
                "6.19.14+deb13-amd64",
                "7.2.13+deb14-amd64",
                "7.3.4+deb13-amd64",
            ]
        );
        assert_eq!(known_series(&r), "5.10 6.1 6.12 6.16 6.18 7.2 7.3");
    }

    #[test]
    fn package_shapes() {
        // Up to 6.12 the unsigned image, from 6.16 the signed one, from 6.19 binary + modules.
        assert_eq!(
            pick("5.10").unwrap().packages,
            ["linux-image-5.10.0-46-amd64-unsigned"]
        );
        assert_eq!(
            pick("6.1").unwrap().packages,
            ["linux-image-6.1.0-57-amd64-unsigned"]
        );
        assert_eq!(pick("6.12").unwrap().name, "6.12.118+deb13-amd64");
        assert_eq!(
            pick("6.16").unwrap().packages,
            ["linux-image-6.16.12+deb13-amd64"]
        );
        assert_eq!(
            pick("6.18").unwrap().packages,
            ["linux-image-6.18.15+deb13-amd64"]
        );
        assert_eq!(
            pick("7.3").unwrap().packages,
            [
                "linux-binary-7.3.4+deb13-amd64",
                "linux-modules-7.3.4+deb13-amd64"
            ]
        );
        assert_eq!(pick("7.2").unwrap().name, "7.2.13+deb14-amd64");
    }

    #[test]
    fn newest_is_the_newest_with_modules() {
        assert_eq!(pick("newest").unwrap().name, "7.3.4+deb13-amd64");
        let without: Vec<&str> = NAMES
            .iter()
            .copied()
            .filter(|n| !n.starts_with("linux-modules-7.3"))
            .collect();
        assert_eq!(
            choose("newest", &releases(without, Arch::X86_64))
                .unwrap()
                .name,
            "7.2.13+deb14-amd64"
        );
    }

    #[test]
    fn exact_releases_and_package_names() {
        assert_eq!(pick("6.1.0-57-amd64").unwrap().name, "6.1.0-57-amd64");
        assert_eq!(
            pick("6.12.117+deb12-amd64").unwrap().name,
            "6.12.117+deb12-amd64"
        );
        assert_eq!(
            pick("linux-image-6.1.0-57-amd64-unsigned").unwrap().name,
            "6.1.0-57-amd64"
        );
        assert_eq!(
            pick("linux-image-6.1.0-57-amd64").unwrap().name,
            "6.1.0-57-amd64"
        );
        assert_eq!(
            pick("linux-binary-7.3.4+deb13-amd64").unwrap().name,
            "7.3.4+deb13-amd64"
        );
    }

    #[test]
    fn bad_kernels_get_one_line_with_the_series() {
        for k in [
            "4.19",
            "banana",
            "6.1.0-99-amd64",
            "6.12.118+deb13-cloud-amd64",
            "6.",
        ] {
            let msg = format!("{:#}", pick(k).unwrap_err());
            assert!(!msg.contains('\n'));
            assert!(
                msg.starts_with(&format!("unknown kernel '{k}'"))
                    && msg.ends_with("(series apt knows: 5.10 6.1 6.12 6.16 6.18 7.2 7.3)"),
                "{msg}"
            );
        }
        for k in ["6.19", "6.19.14+deb13-amd64"] {
            let msg = format!("{:#}", pick(k).unwrap_err());
            assert!(
                msg.starts_with("Debian ships no linux-modules-6.19.14+deb13-amd64"),
                "{msg}"
            );
        }
        let msg = format!("{:#}", choose("6.1", &[]).unwrap_err());
        assert!(msg.ends_with("(series apt knows: none)"), "{msg}");
    }

    #[test]
    fn version_order() {
        assert_eq!(
            version_cmp("6.12.9+deb13", "6.12.118+deb12"),
            Ordering::Less
        );
        assert_eq!(version_cmp("6.1.0-0.deb11.52", "6.1.0-9"), Ordering::Less);
        assert_eq!(version_cmp("7.2.13+deb14", "7.3.4+deb13"), Ordering::Less);
        assert_eq!(
            version_cmp("6.12.115+deb13", "6.12.115+deb13.1"),
            Ordering::Less
        );
        assert_eq!(version_cmp("6.9", "6.12"), Ordering::Less);
    }

    #[test]
    fn private_apt_configuration() {
        let apt = Apt::new(Path::new("/c"), Arch::X86_64);
        let conf = apt.conf();
        for want in [
            "Dir::Etc \"/c/apt/etc\";",
            "Dir::State \"/c/apt/state\";",
            "Dir::State::status \"/c/apt/state/status\";",
            "Dir::Cache \"/c/apt/cache\";",
            "Dir::Etc::Parts \"apt.conf.d\";",
        ] {
            assert!(conf.contains(want), "{want} in {conf}");
        }
        assert!(!conf.contains("/etc/apt") && !conf.contains("/var/"));
        let sources = Apt::sources();
        assert_eq!(sources.lines().count(), SUITES.len());
        assert!(sources.contains(
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg check-valid-until=no] \
             http://deb.debian.org/debian-security bullseye-security main"
        ));
        let arm = Apt::new(Path::new("/c"), Arch::Arm64).conf();
        for want in [
            "Dir::State \"/c/apt-arm64/state\";",
            "APT::Architecture \"arm64\";",
            "APT::Architectures { \"arm64\"; };",
        ] {
            assert!(arm.contains(want), "{want} in {arm}");
        }
        assert!(!arm.contains("amd64"));
    }

    /// arm64 package names as apt lists them (a sample of the real lists).
    const ARM64: &[&str] = &[
        "linux-image-6.12.118+deb13-arm64",
        "linux-image-6.12.118+deb13-arm64-unsigned",
        "linux-image-6.12.118+deb13-arm64-16k-unsigned",
        "linux-image-6.12.118+deb13-cloud-arm64-unsigned",
        "linux-image-6.12.74+deb13+1-arm64",
        "linux-image-6.18.15+deb13-arm64",
        "linux-image-6.18.15+deb13-arm64-16k",
        "linux-binary-7.3.4+deb13-arm64",
        "linux-binary-7.3.4+deb13-arm64-16k",
        "linux-modules-7.3.4+deb13-arm64",
        "linux-modules-7.3.4+deb13-arm64-16k",
        "linux-image-7.3.4+deb13-arm64",
        "linux-image-6.12-arm64",
    ];

    #[test]
    fn arm64_releases_and_their_packages() {
        let r = releases(ARM64.iter().copied(), Arch::Arm64);
        let names: Vec<_> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "6.12.74+deb13+1-arm64",
                "6.12.118+deb13-arm64",
                "6.18.15+deb13-arm64",
                "7.3.4+deb13-arm64"
            ]
        );
        assert_eq!(
            choose("6.12", &r).unwrap().packages,
            ["linux-image-6.12.118+deb13-arm64-unsigned"]
        );
        assert_eq!(
            choose("newest", &r).unwrap().packages,
            [
                "linux-binary-7.3.4+deb13-arm64",
                "linux-modules-7.3.4+deb13-arm64"
            ]
        );
        // The other architecture's names are no releases of this one.
        assert!(releases(ARM64.iter().copied(), Arch::X86_64).is_empty());
        assert!(releases(NAMES.iter().copied(), Arch::Arm64).is_empty());
        assert!(plain_release("6.12.118+deb13-arm64", Arch::Arm64));
        assert!(!plain_release("6.12.118+deb13-arm64-16k", Arch::Arm64));
        assert!(!plain_release("6.12.118+deb13-arm64", Arch::X86_64));
    }
}
