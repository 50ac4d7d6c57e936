//! Getting a kernel ready to boot: a Debian kernel by series or release
//! (fetched through the runner's own apt, unpacked and checked once into the
//! cache), or a kernel image given as a path, checked before anything of it
//! is cached.

use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::kernels::arm64;
use crate::kernels::debian::{self, Apt};
use crate::kernels::image::{self, BzImage};
use crate::kernels::modules;
use crate::util::kconfig::{self, Config, KernelConfig};
use crate::util::signal::{check_signal, signalled};
use crate::util::{fnv, lock, say, secs, which, write_whole, FNV_START};

/// A kernel ready to boot.
#[derive(Debug)]
pub struct Kernel {
    pub release: String,
    /// What qemu's -kernel gets: the vmlinux (PVH) or the bzImage.
    pub boot: PathBuf,
    /// Where its initramfs is cached.
    pub dir: PathBuf,
    /// Its modules tree, if any.
    pub modules: Option<PathBuf>,
    /// Bytes downloaded to get it (0: it was cached, or a path).
    pub downloaded: u64,
    /// Its config, if it could be read before boot.
    pub config: Option<FoundConfig>,
}

/// A kernel's config as found before boot: its text and where it was read.
#[derive(Debug, Clone)]
pub struct FoundConfig {
    pub text: String,
    pub source: String,
}

impl FoundConfig {
    pub fn record(&self) -> KernelConfig {
        Config::parse(&self.text).record(&self.source)
    }
}

/// What the runner needs of a kernel, and recommends: the fragment a
/// developer merges into a config of their own.
pub const VMTEST_CONFIG: &str = include_str!("../../../ci/vmtest.config");

/// The config file at `path` (`--config`, a package's, a build tree's).
fn read_config(path: &Path, source: String) -> Result<FoundConfig> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let text = String::from_utf8_lossy(&data).into_owned();
    ensure!(
        !Config::parse(&text).is_empty(),
        "{}: not a kernel config (no CONFIG_ line)",
        path.display()
    );
    Ok(FoundConfig { text, source })
}

/// The config CONFIG_IKCONFIG embeds in `image` (a vmlinux or an
/// uncompressed Image), found as scripts/extract-ikconfig finds it.
fn embedded_config(image: &[u8], name: &str) -> Option<FoundConfig> {
    let gz = kconfig::ikconfig_gz(image)?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .ok()?;
    (!Config::parse(&text).is_empty()).then(|| FoundConfig {
        text,
        source: format!("{name}'s embedded config (CONFIG_IKCONFIG)"),
    })
}

/// The `.config` of the build tree `image` was made in: T/.config for
/// T/arch/x86/boot/bzImage or T/vmlinux. Not one changed after the image
/// was built (it may not be the image's).
fn tree_config(image: &Path) -> Option<FoundConfig> {
    let tree = if image.ends_with("arch/x86/boot/bzImage") {
        image.ancestors().nth(4)?
    } else if image.file_name()? == "vmlinux" {
        image.parent()?
    } else {
        return None;
    };
    let cfg = tree.join(".config");
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let (built, changed) = (modified(image)?, modified(&cfg)?);
    if changed > built {
        say!(
            "{}: changed after {} was built: not taken as its config",
            cfg.display(),
            image.display()
        );
        return None;
    }
    read_config(&cfg, format!("{} (its build tree's)", cfg.display())).ok()
}

/// A Debian kernel's config, from its package.
fn package_config(root: &Path, release: &str) -> Option<FoundConfig> {
    package_config_path(root, release)
        .and_then(|p| read_config(&p, format!("{} (its package's)", p.display())).ok())
}

fn package_config_path(root: &Path, release: &str) -> Option<PathBuf> {
    [
        format!("boot/config-{release}"),
        format!("usr/lib/modules/{release}/config"),
        format!("lib/modules/{release}/config"),
    ]
    .into_iter()
    .map(|p| root.join(p))
    .find(|p| p.is_file())
}

/// Checks an x86_64 kernel's config against the runner's needs
/// (ci/vmtest.config) before it boots: one that lacks a needed option is
/// refused, all of them named; a custom kernel's missing recommended
/// options are said. Without a config, says so: the boot goes on.
pub fn check_needs(k: &Kernel, name: &str, custom: bool) -> Result<()> {
    let Some(found) = &k.config else {
        say!(
            "{name}: its config could not be read (give --config FILE, or build it with \
             CONFIG_IKCONFIG): booting it unchecked"
        );
        return Ok(());
    };
    let config = Config::parse(&found.text);
    let wants = kconfig::fragment(VMTEST_CONFIG);
    let (needed, recommended) = kconfig::missing(&config, &wants, k.modules.is_some());
    ensure!(
        needed.is_empty(),
        "{name} lacks what vmtest needs: {} (config: {}; merge ci/vmtest.config)",
        needed.join(", "),
        found.source
    );
    if custom {
        say!("kernel config: {}", found.source);
        if !recommended.is_empty() {
            say!(
                "{name} lacks recommended options: {} (ci/vmtest.config says why); booting it",
                recommended.join(", ")
            );
        }
    }
    Ok(())
}

/// KERNEL, ready to boot: a path (with its modules from `modules_dir`, if
/// given), or a Debian kernel (fetched unless cached). `force_bz` boots an
/// x86 bzImage as it is.
pub fn kernel(
    kernel: &str,
    modules_dir: Option<&str>,
    config: Option<&str>,
    arch: Arch,
    cache: &Path,
    force_bz: bool,
) -> Result<Kernel> {
    let is_path = is_path(kernel);
    let k = if is_path {
        custom_kernel(kernel, modules_dir, cache, arch, force_bz, config)?
    } else {
        ensure!(
            modules_dir.is_none() && config.is_none(),
            "--modules and --config are for a KERNEL given as a path"
        );
        for other in [Arch::X86_64, Arch::Arm64] {
            ensure!(
                other == arch || !debian::plain_release(kernel, other),
                "{} is an {} release: add --arch {}",
                kernel,
                other.name(),
                other.name()
            );
        }
        debian_kernel(kernel, arch, cache, force_bz)?
    };
    if arch == Arch::X86_64 {
        check_needs(&k, kernel, is_path)?;
    }
    Ok(k)
}

/// Checks a bzImage and, unless `force_bz`, writes its vmlinux to `dir/vmlinux`
/// when that has a PVH entry. Returns the image to boot, and the config
/// embedded in the vmlinux (CONFIG_IKCONFIG), if any.
fn prepare_bzimage(
    bz_path: &Path,
    dir: &Path,
    force_bz: bool,
) -> Result<(PathBuf, Option<FoundConfig>)> {
    let data = fs::read(bz_path).with_context(|| format!("reading {}", bz_path.display()))?;
    let bz = BzImage::parse(&data).with_context(|| format!("{}", bz_path.display()))?;
    let vmlinux = bz
        .vmlinux()
        .with_context(|| format!("{}", bz_path.display()))?;
    let Some(elf) = vmlinux else {
        say!(
            "{}: its {} payload is not decompressed here (not checked, nor its embedded \
             config read); booting the bzImage",
            bz_path.display(),
            bz.compression.name()
        );
        return Ok((bz_path.to_path_buf(), None));
    };
    let info = image::check_elf(&elf)?;
    let name = bz_path.file_name().unwrap_or_default().to_string_lossy();
    let config = embedded_config(&elf, &name);
    if force_bz {
        return Ok((bz_path.to_path_buf(), config));
    }
    if !info.pvh {
        say!(
            "{}: its kernel has no PVH entry note (CONFIG_PVH): booting the bzImage (slower)",
            bz_path.display()
        );
        return Ok((bz_path.to_path_buf(), config));
    }
    // Written only once checked.
    let out = dir.join("vmlinux");
    write_whole(&out, &elf)?;
    say!(
        "checked {}: {} bytes, {} payload, {} byte ELF with a PVH entry",
        bz_path.file_name().unwrap_or_default().to_string_lossy(),
        data.len(),
        bz.compression.name(),
        elf.len()
    );
    Ok((out, config))
}

/// Removes what a killed run (SIGKILL: no cleanup) left unpacking hours ago.
fn remove_stale_unpacks(kernels: &Path) {
    let Ok(entries) = fs::read_dir(kernels) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(6 * 3600));
        if old && e.file_name().to_string_lossy().starts_with(".unpack-") {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// A Debian package's bzImage: boot/vmlinuz-<release>, or from 6.19 (linux-binary-*)
/// usr/lib/modules/<release>/vmlinuz.
fn find_bzimage(root: &Path, release: &str) -> Option<PathBuf> {
    [
        format!("boot/vmlinuz-{release}"),
        format!("usr/lib/modules/{release}/vmlinuz"),
        format!("lib/modules/{release}/vmlinuz"),
    ]
    .into_iter()
    .map(|p| root.join(p))
    .find(|p| p.is_file())
}

fn debian_kernel(kernel: &str, arch: Arch, cache: &Path, force_bz: bool) -> Result<Kernel> {
    for tool in ["apt-get", "apt-cache", "dpkg-deb"] {
        ensure!(
            which(tool).is_some(),
            "{tool} not found: a Debian kernel needs apt and dpkg"
        );
    }
    let kernels = cache.join("kernels");
    // An exact release already cached needs no apt at all (and works offline).
    if debian::plain_release(kernel, arch) && kernels.join(kernel).join("root").is_dir() {
        return cached_kernel(&kernels, kernel, arch, force_bz);
    }
    let apt = Apt::new(cache, arch);
    let apt_lock = lock(&cache.join("apt.lock"))?;
    let updated = apt.update(debian::LISTS_MAX_AGE)?;
    let mut rels = apt.releases()?;
    let mut chosen = debian::choose(kernel, &rels);
    if chosen.is_err() && !updated && apt.update(debian::LISTS_RETRY_AGE)? {
        // Perhaps newer than the lists were: look again.
        rels = apt.releases()?;
        chosen = debian::choose(kernel, &rels);
    }
    let rel = chosen?;
    let kdir = kernels.join(&rel.name);
    let _klock = lock(&kernels.join(format!("{}.lock", rel.name)))?;
    let downloaded = if kdir.exists() {
        drop(apt_lock);
        0
    } else {
        fetch_release(&apt, apt_lock, &rel, &kernels, &kdir, arch)?
    };
    drop(_klock);
    let mut k = cached_kernel(&kernels, &rel.name, arch, force_bz)?;
    k.downloaded = downloaded;
    Ok(k)
}

/// Downloads, unpacks and checks `rel` into `kdir`; the bytes downloaded.
/// apt's lock is held until the download is done.
fn fetch_release(
    apt: &Apt,
    apt_lock: File,
    rel: &debian::Release,
    kernels: &Path,
    kdir: &Path,
    arch: Arch,
) -> Result<u64> {
    remove_stale_unpacks(kernels);
    // Everything happens in a temporary directory, renamed into place once
    // whole and checked: an interrupted run leaves nothing to trust.
    let tmp = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(kernels)
        .with_context(|| format!("creating a directory in {}", kernels.display()))?;
    say!("fetching {}", rel.packages.join(" "));
    let t = Instant::now();
    let (debs, size) = apt.download(&rel.packages)?;
    drop(apt_lock);
    check_signal()?;
    if size > 0 {
        say!("fetched {} MB in {}", size / 1_000_000, secs(t.elapsed()));
    }
    let t = Instant::now();
    let root = tmp.path().join("root");
    let unpacked = (|| -> Result<()> {
        for deb in &debs {
            debian::unpack(deb, &root)?;
        }
        let bz = find_bzimage(&root, &rel.name).with_context(|| {
            format!(
                "{} holds no boot/vmlinuz-{} nor usr/lib/modules/{}/vmlinuz",
                rel.packages[0], rel.name, rel.name
            )
        })?;
        ensure!(
            !modules::trees(&root).is_empty(),
            "{} holds no lib/modules or usr/lib/modules",
            rel.packages.join(" ")
        );
        check_signal()?;
        match arch {
            Arch::X86_64 => drop(prepare_bzimage(&bz, tmp.path(), false)?),
            Arch::Arm64 => drop(arm64::prepare(&bz, tmp.path())?),
        };
        prune(&root, &rel.name)
    })();
    if let Err(e) = unpacked {
        // Kept for the next run after an interruption; after a failure the
        // next run downloads them again.
        if signalled().is_none() {
            for deb in &debs {
                let _ = fs::remove_file(deb);
            }
        }
        return Err(e);
    }
    let tmp = tmp.keep();
    fs::rename(&tmp, kdir).with_context(|| format!("moving into {}", kdir.display()))?;
    for deb in &debs {
        let _ = fs::remove_file(deb);
    }
    say!(
        "unpacked and checked in {} into {}",
        secs(t.elapsed()),
        kdir.display()
    );
    Ok(size)
}

/// Removes from an unpacked package all the VM does not need: of a
/// series' thousands of modules (100-400 MB) only those the guest loads
/// stay, with the image, the config, modules.builtin and Debian's
/// changelog (which names each stable release's commits).
fn prune(root: &Path, release: &str) -> Result<()> {
    let mut keep: Vec<PathBuf> = Vec::new();
    keep.extend(find_bzimage(root, release));
    keep.extend(package_config_path(root, release));
    for (tree, _) in modules::trees(root) {
        keep.extend(modules::Tree::open(&tree)?.files_for(modules::WANTED)?);
        keep.push(tree.join("modules.builtin"));
    }
    if let Ok(docs) = fs::read_dir(root.join("usr/share/doc")) {
        for d in docs.flatten() {
            keep.push(d.path().join("changelog.Debian.gz"));
            keep.push(d.path().join("changelog.gz"));
        }
    }
    fn walk(dir: &Path, keep: &[PathBuf]) -> Result<bool> {
        let mut empty = true;
        for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let e = e?;
            let p = e.path();
            if e.file_type()?.is_dir() {
                if walk(&p, keep)? {
                    fs::remove_dir(&p)?;
                } else {
                    empty = false;
                }
            } else if keep.contains(&p) {
                empty = false;
            } else {
                fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
        Ok(empty)
    }
    walk(root, &keep).map(drop)
}

/// A kernel unpacked and checked into `kernels/<release>` earlier.
fn cached_kernel(kernels: &Path, release: &str, arch: Arch, force_bz: bool) -> Result<Kernel> {
    let kdir = kernels.join(release);
    let root = kdir.join("root");
    let trees = modules::trees(&root);
    let (tree, _) = trees
        .iter()
        .find(|(_, v)| v == release)
        .or(trees.first())
        .with_context(|| format!("cached kernel without modules: remove {}", kdir.display()))?;
    let bz = find_bzimage(&root, release).with_context(|| {
        format!(
            "cached kernel without its bzImage: remove {}",
            kdir.display()
        )
    })?;
    let vmlinux = kdir.join("vmlinux");
    let boot = if arch == Arch::Arm64 {
        arm64::cached_boot(&kdir, &bz)?
    } else if !force_bz && vmlinux.is_file() {
        let data = fs::read(&vmlinux)?;
        image::check_elf(&data).with_context(|| {
            format!(
                "cached {} is damaged: remove {}",
                vmlinux.display(),
                kdir.display()
            )
        })?;
        vmlinux
    } else {
        bz
    };
    Ok(Kernel {
        release: release.to_owned(),
        boot,
        dir: kdir.clone(),
        modules: Some(tree.clone()),
        downloaded: 0,
        config: package_config(&root, release),
    })
}

/// Whether KERNEL names a file (a kernel someone built), not a Debian
/// kernel by series or release.
pub fn is_path(kernel: &str) -> bool {
    kernel.contains('/') || Path::new(kernel).exists()
}

fn custom_kernel(
    path: &str,
    modules_dir: Option<&str>,
    cache: &Path,
    arch: Arch,
    force_bz: bool,
    config: Option<&str>,
) -> Result<Kernel> {
    let p = Path::new(path);
    ensure!(
        p.is_file(),
        "kernel '{path}' does not exist; {}",
        debian::ACCEPTED
    );
    let p = p.canonicalize()?;
    let data = fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
    let mut h = FNV_START;
    fnv(&mut h, &data);
    let dir = cache.join("custom").join(format!("{h:016x}"));
    // Before the image is read: a wrong --config is bad input.
    let given = config
        .map(|c| read_config(Path::new(c), format!("{c} (--config)")))
        .transpose()?;
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let (release, boot, embedded) = if arch == Arch::Arm64 {
        let boot = arm64::prepare(&p, &dir)?;
        let image = if boot == p { data } else { fs::read(&boot)? };
        let embedded = embedded_config(&image, &name);
        (image::banner_release(&image), boot, embedded)
    } else if image::is_elf(&data) {
        let info = image::check_elf(&data).with_context(|| path.to_string())?;
        ensure!(
            info.pvh,
            "{path} is an ELF without a PVH entry note (CONFIG_PVH): boot its bzImage instead"
        );
        let embedded = embedded_config(&data, &name);
        (image::banner_release(&data), p.clone(), embedded)
    } else if image::is_bzimage(&data) {
        let release = BzImage::parse(&data)
            .with_context(|| path.to_string())?
            .release;
        let (boot, embedded) = prepare_bzimage(&p, &dir, force_bz)?;
        (release, boot, embedded)
    } else {
        bail!(
            "{path} is neither a bzImage nor an x86-64 vmlinux ELF; {}",
            debian::ACCEPTED
        );
    };
    let release = release.unwrap_or_else(|| "unknown".into());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let modules = modules_dir
        .map(|m| custom_modules(Path::new(m), &release))
        .transpose()?;
    Ok(Kernel {
        release,
        boot,
        dir,
        modules,
        downloaded: 0,
        // --config, else the image's own, else its build tree's.
        config: given.or(embedded).or_else(|| tree_config(&p)),
    })
}

/// The modules tree under `--modules m` for `release`.
fn custom_modules(m: &Path, release: &str) -> Result<PathBuf> {
    ensure!(m.is_dir(), "--modules {} is not a directory", m.display());
    let trees = modules::trees(m);
    Ok(match trees.len() {
        0 => m.to_path_buf(),
        1 => trees[0].0.clone(),
        _ => trees
            .iter()
            .find(|(_, v)| *v == release)
            .map(|(t, _)| t.clone())
            .with_context(|| {
                format!(
                    "--modules {}: more than one lib/modules/<version>, none is {release}",
                    m.display()
                )
            })?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bzimage_of_either_package_shape() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(find_bzimage(root.path(), "7.3.4+deb13-amd64"), None);
        let new = root
            .path()
            .join("usr/lib/modules/7.3.4+deb13-amd64/vmlinuz");
        fs::create_dir_all(new.parent().unwrap()).unwrap();
        fs::write(&new, "").unwrap();
        assert_eq!(find_bzimage(root.path(), "7.3.4+deb13-amd64"), Some(new));
        let old = root.path().join("boot/vmlinuz-6.1.0-57-amd64");
        fs::create_dir_all(old.parent().unwrap()).unwrap();
        fs::write(&old, "").unwrap();
        assert_eq!(find_bzimage(root.path(), "6.1.0-57-amd64"), Some(old));
    }

    #[test]
    fn custom_images_are_checked_before_anything_is_cached() {
        use crate::kernels::image::{fixtures, Compression};
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let elf = fixtures::elf(true);
        let good = fixtures::bzimage(Compression::Zstd, &elf);
        let mut flipped = good.clone();
        flipped[1024 + 64 + (good.len() - 1024 - 64) / 2] ^= 0x10;
        let cases: [(&str, Vec<u8>, &str); 5] = [
            (
                "cut.bzImage",
                good[..good.len() - 100].to_vec(),
                ": truncated: ",
            ),
            ("flipped.bzImage", flipped, ": damaged: its zstd payload"),
            (
                "cut.vmlinux",
                elf[..elf.len() - 50].to_vec(),
                ": truncated ELF",
            ),
            (
                "nopvh.vmlinux",
                fixtures::elf(false),
                "without a PVH entry note",
            ),
            (
                "text",
                b"hello".to_vec(),
                "is neither a bzImage nor an x86-64 vmlinux",
            ),
        ];
        for (name, data, want) in cases {
            let p = dir.path().join(name);
            fs::write(&p, data).unwrap();
            let err =
                custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, false, None).err();
            let msg = format!("{:#}", err.expect(name));
            assert!(msg.contains(want) && !msg.contains('\n'), "{name}: {msg}");
        }
        assert!(!cache.exists(), "nothing cached for a damaged image");

        let p = dir.path().join("good.bzImage");
        fs::write(&p, &good).unwrap();
        let k =
            custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, false, None).unwrap();
        assert_eq!(k.release, fixtures::RELEASE);
        assert_eq!(k.boot.file_name().unwrap(), "vmlinux");
        assert_eq!(fs::read(&k.boot).unwrap(), elf);
        let k = custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, true, None).unwrap();
        assert_eq!(
            k.boot,
            p.canonicalize().unwrap(),
            "--bzimage boots the bzImage"
        );
    }

    /// A gzip block as CONFIG_IKCONFIG embeds it in a kernel.
    fn ikconfig(text: &str) -> Vec<u8> {
        use std::io::Write as _;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        let mut block = b"IKCFG_ST".to_vec();
        block.extend(e.finish().unwrap());
        block.extend_from_slice(b"IKCFG_ED");
        block
    }

    /// Every option of ci/vmtest.config, as a config a kernel could have.
    fn full_config() -> String {
        kconfig::fragment(VMTEST_CONFIG)
            .iter()
            .map(|w| format!("CONFIG_{}={}\n", w.name, w.value))
            .collect()
    }

    #[test]
    fn the_fragment_says_why_for_every_option() {
        let mut why = "";
        for l in VMTEST_CONFIG.lines() {
            if l.starts_with("CONFIG_") {
                assert!(
                    why.starts_with("# needed: ") || why.starts_with("# recommended: "),
                    "{l}: no '# needed: why' or '# recommended: why' just above it"
                );
            }
            why = l;
        }
        let wants = kconfig::fragment(VMTEST_CONFIG);
        let needed = |n: &str| wants.iter().find(|w| w.name == n).map(|w| w.needed);
        for n in [
            "9P_FS",
            "NET_9P_VIRTIO",
            "VIRTIO_PCI",
            "VIRTIO_CONSOLE",
            "DEVTMPFS",
        ] {
            assert_eq!(needed(n), Some(true), "{n}");
        }
        // init.sh falls back to a read-only root; the vmlinux or the bzImage boots.
        assert_eq!(needed("OVERLAY_FS"), Some(false));
        assert_eq!(needed("PVH"), Some(false));
    }

    #[test]
    fn a_custom_kernels_config_is_found_and_checked() {
        use crate::kernels::image::{fixtures, Compression};
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let full = full_config();
        // The image's own config (CONFIG_IKCONFIG), read from its vmlinux.
        let mut elf = fixtures::elf(true);
        elf.extend(ikconfig(&full.replace("CONFIG_OVERLAY_FS=y\n", "")));
        let p = dir.path().join("bzImage");
        fs::write(&p, fixtures::bzimage(Compression::Gzip, &elf)).unwrap();
        let custom = |p: &Path, config: Option<&str>| {
            custom_kernel(
                p.to_str().unwrap(),
                None,
                &cache,
                Arch::X86_64,
                false,
                config,
            )
        };
        let k = custom(&p, None).unwrap();
        let found = k.config.as_ref().unwrap();
        assert_eq!(found.source, "bzImage's embedded config (CONFIG_IKCONFIG)");
        assert!(
            check_needs(&k, "bzImage", true).is_ok(),
            "OVERLAY_FS is recommended"
        );
        // --config wins; one that lacks needed options is refused, naming them all.
        let lacking = dir.path().join("config");
        let cut = full.replace("CONFIG_9P_FS=y\n", "").replace(
            "CONFIG_VIRTIO_CONSOLE=y\n",
            "# CONFIG_VIRTIO_CONSOLE is not set\n",
        );
        fs::write(&lacking, &cut).unwrap();
        let k = custom(&p, Some(lacking.to_str().unwrap())).unwrap();
        let msg = format!("{:#}", check_needs(&k, "bzImage", true).unwrap_err());
        assert!(
            msg.starts_with("bzImage lacks what vmtest needs: 9P_FS, VIRTIO_CONSOLE (config: "),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        // Not a config at all: bad input, one line.
        let msg = format!("{:#}", custom(&p, Some(p.to_str().unwrap())).unwrap_err());
        assert!(msg.contains("not a kernel config"), "{msg}");
        // No embedded config: the build tree's .config, if not newer than the image.
        let tree = dir.path().join("linux");
        let boot = tree.join("arch/x86/boot");
        fs::create_dir_all(&boot).unwrap();
        fs::write(tree.join(".config"), &full).unwrap();
        let bz = boot.join("bzImage");
        fs::write(
            &bz,
            fixtures::bzimage(Compression::Zstd, &fixtures::elf(true)),
        )
        .unwrap();
        let k = custom(&bz, None).unwrap();
        assert!(k
            .config
            .unwrap()
            .source
            .ends_with("linux/.config (its build tree's)"));
        // Elsewhere, and without one: unknown, and the boot goes on.
        let k = custom(&dir.path().join("bzImage"), None).unwrap();
        assert!(k.config.is_some());
        let plain = dir.path().join("plain.bzImage");
        fs::write(
            &plain,
            fixtures::bzimage(Compression::Zstd, &fixtures::elf(true)),
        )
        .unwrap();
        let k = custom(&plain, None).unwrap();
        assert!(k.config.is_none());
        assert!(check_needs(&k, "plain.bzImage", true).is_ok());
    }

    #[test]
    fn a_packages_config_and_modules() {
        let root = tempfile::tempdir().unwrap();
        assert!(package_config(root.path(), "6.1.0-57-amd64").is_none());
        let boot = root.path().join("boot");
        fs::create_dir_all(&boot).unwrap();
        let debian = full_config().replace("=y", "=m");
        fs::write(boot.join("config-6.1.0-57-amd64"), &debian).unwrap();
        let config = package_config(root.path(), "6.1.0-57-amd64");
        let k = Kernel {
            release: "6.1.0-57-amd64".into(),
            boot: PathBuf::new(),
            dir: PathBuf::new(),
            modules: Some(PathBuf::new()),
            downloaded: 0,
            config,
        };
        // Modules are loaded: =m will do.
        assert!(check_needs(&k, "6.1", false).is_ok());
        let k = Kernel { modules: None, ..k };
        assert!(check_needs(&k, "6.1", false).is_err());
    }

    #[test]
    fn an_unpacked_package_keeps_only_what_the_vm_needs() {
        use crate::kernels::modules::tests::module;
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let rel = "6.12.43+deb12-amd64";
        let put = |p: &str, data: &[u8]| {
            let p = r.join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, data).unwrap();
        };
        let tree = format!("lib/modules/{rel}");
        put(&format!("boot/vmlinuz-{rel}"), b"bz");
        put(&format!("boot/config-{rel}"), b"CONFIG_BPF=y\n");
        put(&format!("boot/System.map-{rel}"), b"map");
        put(
            &format!("{tree}/kernel/fs/9p/9p.ko"),
            &module("9p", "netfs"),
        );
        put(
            &format!("{tree}/kernel/fs/netfs/netfs.ko"),
            &module("netfs", ""),
        );
        put(&format!("{tree}/kernel/sound/snd.ko"), &module("snd", ""));
        put(&format!("{tree}/modules.builtin"), b"");
        put(&format!("{tree}/modules.alias"), b"");
        put("usr/share/doc/linux-image-x/changelog.Debian.gz", b"gz");
        put("usr/share/doc/linux-image-x/copyright", b"c");
        prune(r, rel).unwrap();
        let mut left = Vec::new();
        fn walk(d: &Path, base: &Path, out: &mut Vec<String>) {
            for e in fs::read_dir(d).unwrap().flatten() {
                if e.path().is_dir() {
                    walk(&e.path(), base, out);
                } else {
                    let p = e.path();
                    out.push(p.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
        walk(r, r, &mut left);
        left.sort();
        assert_eq!(
            left,
            [
                format!("boot/config-{rel}"),
                format!("boot/vmlinuz-{rel}"),
                format!("{tree}/kernel/fs/9p/9p.ko"),
                format!("{tree}/kernel/fs/netfs/netfs.ko"),
                format!("{tree}/modules.builtin"),
                "usr/share/doc/linux-image-x/changelog.Debian.gz".to_owned(),
            ]
        );
        assert!(
            !r.join(format!("{tree}/kernel/sound")).exists(),
            "empty dirs go"
        );
    }

    #[test]
    fn custom_arm64_kernels() {
        use crate::kernels::arm64_image::fixtures;
        use crate::kernels::image::Compression;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let img = fixtures::image();
        let z = dir.path().join("vmlinuz.efi");
        fs::write(&z, fixtures::zboot(Compression::Zstd, &img)).unwrap();
        let k = custom_kernel(z.to_str().unwrap(), None, &cache, Arch::Arm64, false, None).unwrap();
        assert_eq!(k.release, fixtures::RELEASE);
        assert_eq!(k.boot.file_name().unwrap(), "Image");
        assert_eq!(fs::read(&k.boot).unwrap(), img);
        let cut = dir.path().join("Image");
        fs::write(&cut, &img[..img.len() - 10]).unwrap();
        let msg = format!(
            "{:#}",
            custom_kernel(
                cut.to_str().unwrap(),
                None,
                &cache,
                Arch::Arm64,
                false,
                None
            )
            .unwrap_err()
        );
        assert!(msg.contains("Image: truncated Image: PE section"), "{msg}");
        // An x86 bzImage is no arm64 kernel.
        let bz = dir.path().join("bzImage");
        let elf = crate::kernels::image::fixtures::elf(true);
        fs::write(
            &bz,
            crate::kernels::image::fixtures::bzimage(Compression::Gzip, &elf),
        )
        .unwrap();
        let msg = format!(
            "{:#}",
            custom_kernel(bz.to_str().unwrap(), None, &cache, Arch::Arm64, false, None)
                .unwrap_err()
        );
        assert!(msg.contains("not an arm64 kernel"), "{msg}");
    }
}
