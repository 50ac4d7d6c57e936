//! `cargo xtask vmtest`: boot a kernel under qemu and run the suite in it.

use std::env;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::arch::Arch;
use crate::args::{Accel, Args, Job};
use crate::arm64;
use crate::cpio::Cpio;
use crate::debian::{self, Apt};
use crate::env_vars::{ABSENT_ENV, CACHE_ENV, EMULATED_ENV, ENV_PREFIX, KTAP_ENV, STRICT_ENV};
use crate::image::{self, BzImage};
use crate::modules::{self, Tree};
use crate::out::{self, Out};
use crate::say;
use crate::summary::{self, Summary};
use crate::vm::{self, Rules, Timeouts, Vm};

const INIT: &str = include_str!("init.sh");
/// Bumped when the initramfs layout changes, so cached ones are rebuilt.
const INITRAMFS_FORMAT: &str = "vmtest-initramfs-2";

pub fn main(a: Args) -> i32 {
    vm::catch_signals();
    match run(&a) {
        Ok(rc) => rc,
        Err(e) => {
            if let Some(sig) = vm::signalled() {
                say!("interrupted (signal {sig})");
                return 128 + sig;
            }
            // One line, whatever the error chain holds.
            let msg = format!("{e:#}").replace('\n', " ");
            say!("{msg}");
            2
        }
    }
}

fn check_signal() -> Result<()> {
    match vm::signalled() {
        Some(sig) => bail!("interrupted (signal {sig})"),
        None => Ok(()),
    }
}

/// The repository root: xtask's parent directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository")
        .to_path_buf()
}

pub fn cache_dir() -> Result<PathBuf> {
    if let Some(c) = env::var_os(CACHE_ENV).filter(|c| !c.is_empty()) {
        return Ok(PathBuf::from(c));
    }
    let home =
        env::var_os("HOME").with_context(|| format!("neither {CACHE_ENV} nor HOME is set"))?;
    Ok(PathBuf::from(home).join(".cache/bpf-overhead"))
}

/// Exclusive lock on `path` (created), released when the file is dropped.
fn lock(path: &Path) -> Result<File> {
    if let Some(d) = path.parent() {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    f.lock()
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(f)
}

/// FNV-1a: a stable content hash for cache keys.
/// Writes `data` to `path` whole or not at all (a temporary file beside it,
/// renamed over it), creating its directory: concurrent runs share the cache.
pub fn write_whole(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path.parent().context("a file to write has a directory")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    tmp.write_all(data)
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming it to {}", path.display()))?;
    Ok(())
}

fn fnv(h: &mut u64, data: &[u8]) {
    for &b in data {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn which(prog: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// A kernel ready to boot.
#[derive(Debug)]
struct Kernel {
    release: String,
    /// What qemu's -kernel gets: the vmlinux (PVH) or the bzImage.
    boot: PathBuf,
    /// Where its initramfs is cached.
    dir: PathBuf,
    /// Its modules tree, if any.
    modules: Option<PathBuf>,
    /// Bytes downloaded to get it (0: it was cached, or a path).
    downloaded: u64,
}

/// Checks a bzImage and, unless `force_bz`, writes its vmlinux to `dir/vmlinux`
/// when that has a PVH entry. Returns the image to boot.
fn prepare_bzimage(bz_path: &Path, dir: &Path, force_bz: bool) -> Result<PathBuf> {
    let data = fs::read(bz_path).with_context(|| format!("reading {}", bz_path.display()))?;
    let bz = BzImage::parse(&data).with_context(|| format!("{}", bz_path.display()))?;
    let vmlinux = bz
        .vmlinux()
        .with_context(|| format!("{}", bz_path.display()))?;
    let Some(elf) = vmlinux else {
        say!(
            "{}: cannot decompress its {} payload here (only its size is checked); booting the bzImage",
            bz_path.display(),
            bz.compression.name()
        );
        return Ok(bz_path.to_path_buf());
    };
    let info = image::check_elf(&elf)?;
    if force_bz {
        return Ok(bz_path.to_path_buf());
    }
    if !info.pvh {
        say!(
            "{}: its kernel has no PVH entry note (CONFIG_PVH): booting the bzImage (slower)",
            bz_path.display()
        );
        return Ok(bz_path.to_path_buf());
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
    Ok(out)
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
        say!(
            "fetched {} MB in {}",
            size / 1_000_000,
            vm::secs(t.elapsed())
        );
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
            Arch::X86_64 => prepare_bzimage(&bz, tmp.path(), false)?,
            Arch::Arm64 => arm64::prepare(&bz, tmp.path())?,
        };
        Ok(())
    })();
    if let Err(e) = unpacked {
        // Kept for the next run after an interruption; after a failure the
        // next run downloads them again.
        if vm::signalled().is_none() {
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
        vm::secs(t.elapsed()),
        kdir.display()
    );
    Ok(size)
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
    })
}

fn custom_kernel(
    path: &str,
    modules_dir: Option<&str>,
    cache: &Path,
    arch: Arch,
    force_bz: bool,
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
    let (release, boot) = if arch == Arch::Arm64 {
        let boot = arm64::prepare(&p, &dir)?;
        let image = if boot == p { data } else { fs::read(&boot)? };
        (image::banner_release(&image), boot)
    } else if image::is_elf(&data) {
        let info = image::check_elf(&data).with_context(|| path.to_string())?;
        ensure!(
            info.pvh,
            "{path} is an ELF without a PVH entry note (CONFIG_PVH): boot its bzImage instead"
        );
        (image::banner_release(&data), p.clone())
    } else if image::is_bzimage(&data) {
        let release = BzImage::parse(&data)
            .with_context(|| path.to_string())?
            .release;
        (release, prepare_bzimage(&p, &dir, force_bz)?)
    } else {
        bail!(
            "{path} is neither a bzImage nor an x86-64 vmlinux ELF; {}",
            debian::ACCEPTED
        );
    };
    let release = release.unwrap_or_else(|| "unknown".into());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let modules = match modules_dir {
        None => None,
        Some(m) => {
            let m = Path::new(m);
            ensure!(m.is_dir(), "--modules {} is not a directory", m.display());
            let trees = modules::trees(m);
            Some(match trees.len() {
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
    };
    Ok(Kernel {
        release,
        boot,
        dir,
        modules,
        downloaded: 0,
    })
}

/// A statically linked busybox of the guest's architecture (a dynamic one
/// cannot run in the initramfs): the host's for x86_64, Debian's arm64 one
/// for arm64.
fn busybox(arch: Arch, cache: &Path) -> Result<PathBuf> {
    if arch == Arch::Arm64 {
        return arm64::busybox(cache);
    }
    let bb = which("busybox").context("busybox not found: apt-get install -y busybox-static")?;
    let data = fs::read(&bb)?;
    ensure!(
        arm64::is_static(&data, Arch::X86_64),
        "{} is not a statically linked x86-64 busybox: apt-get install -y busybox-static",
        bb.display()
    );
    Ok(bb)
}

/// The initramfs for `k`: busybox, the init, the modules it loads; cached in
/// the kernel's directory under a hash of its contents.
fn initramfs(k: &Kernel, bb_path: &Path) -> Result<PathBuf> {
    let bb = fs::read(bb_path)?;
    let mods = match &k.modules {
        Some(dir) => Tree::open(dir)?.resolve(modules::WANTED)?,
        None => Vec::new(),
    };
    let mut h = FNV_START;
    for part in [INITRAMFS_FORMAT.as_bytes(), &bb, INIT.as_bytes()] {
        fnv(&mut h, part);
    }
    for (name, data) in &mods {
        fnv(&mut h, name.as_bytes());
        fnv(&mut h, data);
    }
    let name = format!("initramfs-{h:016x}.cpio");
    let out = k.dir.join(&name);
    if out.is_file() {
        return Ok(out);
    }
    let image = initramfs_image(&bb, &mods);
    let tmp = k.dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, image)?;
    fs::rename(&tmp, &out)?;
    // Keep one initramfs per kernel.
    for e in fs::read_dir(&k.dir)?.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("initramfs-") && n.ends_with(".cpio") && n != name {
            let _ = fs::remove_file(e.path());
        }
    }
    Ok(out)
}

/// The initramfs: busybox, the init, and the modules in load order
/// (`modules/order` names them, each prefixed with its position).
fn initramfs_image(busybox: &[u8], mods: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut c = Cpio::new();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "mnt",
        "mnt/lower",
        "mnt/rw",
        "newroot",
        "modules",
    ] {
        c.dir(d);
    }
    c.chardev("dev/console", 5, 1); // stdio for init before devtmpfs is mounted
    c.file("bin/busybox", busybox, 0o755);
    c.symlink("bin/sh", "busybox");
    c.file("init", INIT.as_bytes(), 0o755);
    let mut order = String::new();
    for (i, (m, data)) in mods.iter().enumerate() {
        let file = format!("{i:02}-{m}.ko");
        c.file(&format!("modules/{file}"), data, 0o644);
        order.push_str(&file);
        order.push('\n');
    }
    c.file("modules/order", order.as_bytes(), 0o644);
    c.finish()
}

/// As root, the guest's files (root's) take DIR's owner.
fn owner(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let m = fs::metadata(dir).ok()?;
    Some((m.uid(), m.gid()))
}

fn choose_accel(forced: Option<Accel>, arch: Arch) -> Result<Accel> {
    if !arch.is_host() {
        ensure!(
            forced != Some(Accel::Kvm),
            "--accel kvm: an {} guest on this {} host runs under TCG only",
            arch.name(),
            std::env::consts::ARCH
        );
        say!("accel=tcg (an {} guest on this host)", arch.name());
        return Ok(Accel::Tcg);
    }
    if let Some(a) = forced {
        say!(
            "accel={} (forced)",
            if a == Accel::Kvm { "kvm" } else { "tcg" }
        );
        return Ok(a);
    }
    let kvm = Path::new("/dev/kvm");
    // SAFETY: access(2) on a NUL-terminated path.
    let writable = kvm.exists() && unsafe { libc::access(c"/dev/kvm".as_ptr(), libc::W_OK) } == 0;
    let virt = fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if writable && virt {
        say!("accel=kvm (/dev/kvm and vmx/svm present)");
        Ok(Accel::Kvm)
    } else {
        if kvm.exists() {
            say!(
                "accel=tcg (no vmx/svm in /proc/cpuinfo: /dev/kvm is not hardware virtualization)"
            );
        } else {
            say!("accel=tcg (no /dev/kvm)");
        }
        Ok(Accel::Tcg)
    }
}

/// Quotes a word for sh.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Test executables from `cargo test --no-run --message-format=json` output,
/// in a stable order (by name, not by build completion).
pub fn test_executables(json: &str) -> Vec<String> {
    let mut exes: Vec<String> = Vec::new();
    for line in json.lines().filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" || v["profile"]["test"] != true {
            continue;
        }
        if let Some(exe) = v["executable"].as_str() {
            if !exes.iter().any(|e| e == exe) {
                exes.push(exe.to_owned());
            }
        }
    }
    let key = |p: &String| {
        let base = Path::new(p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        (
            base.rsplit_once('-')
                .map_or(base.clone(), |(n, _)| n.to_owned()),
            p.clone(),
        )
    };
    exes.sort_by_key(key);
    exes
}

/// The `bpf-overhead` command built with the tests (`cargo test` builds the
/// binaries its integration tests run), from the same JSON.
pub fn command_executable(json: &str) -> Option<String> {
    json.lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| {
            v["reason"] == "compiler-artifact"
                && v["profile"]["test"] == false
                && v["target"]["name"] == "bpf-overhead"
                && v["target"]["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .find_map(|v| v["executable"].as_str().map(str::to_owned))
}

/// A test executable's name without cargo's hash: target/release/deps/overhead-1a2b
/// is overhead.
fn test_name(exe: &str) -> String {
    let base = Path::new(exe)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match base.rsplit_once('-') {
        Some((n, h)) if h.bytes().all(|b| b.is_ascii_hexdigit()) => n.to_owned(),
        _ => base,
    }
}

/// The test binaries that a guest runs by default: what the kernel decides
/// (every mechanism attaches or skips as declared and counts exactly;
/// nothing is left behind). The others test the command line, signals and
/// pure logic, which no kernel changes, and run on the host.
pub const GUEST_TESTS: &[&str] = &["overhead", "cleanup"];

/// `cargo test --no-run`'s arguments: a release build of [`GUEST_TESTS`]
/// (under TCG a debug build spends twice as long in user space), or with
/// `all`, every test binary as `cargo test` builds them; then the user's.
pub fn test_build_args(all: bool, user: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    if !all {
        args.push("--release".to_owned());
        if !user
            .iter()
            .any(|a| a == "--test" || a.starts_with("--test="))
        {
            for t in GUEST_TESTS {
                args.extend(["--test".to_owned(), (*t).to_owned()]);
            }
        }
    }
    args.extend(user.iter().cloned());
    args
}

/// The cross build of an arm64 guest's binaries (Debian's Rust, the cross
/// gcc, target/arm64; `scripts/setup --arm64` installs them): `cargo test
/// --no-run --release --target aarch64-unknown-linux-gnu` with the arguments
/// it is given.
pub const CROSS_BUILD_ARM64: &str = "scripts/cross-build-arm64";

/// The build of the guest's test binaries for `arch`: `cargo test --no-run`
/// with [`test_build_args`], or for another architecture than the host's
/// its cross build (always a release build), JSON on stdout with `json`.
pub fn build_command(repo: &Path, arch: Arch, all: bool, user: &[String], json: bool) -> Command {
    let args = test_build_args(all, user);
    let json = json.then_some("--message-format=json-render-diagnostics");
    let mut c = if arch.is_host() {
        let mut c = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        c.args(["test", "--no-run"]).args(json).args(args);
        c
    } else {
        let mut c = Command::new(repo.join(CROSS_BUILD_ARM64));
        c.args(json)
            .args(args.into_iter().filter(|a| a != "--release"));
        c
    };
    c.current_dir(repo).stdin(Stdio::null());
    c
}

/// A command as one line, the program without its directory.
pub fn shown(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    std::iter::once(prog)
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The test executables and the command.
fn build_tests(
    repo: &Path,
    arch: Arch,
    all: bool,
    user: &[String],
) -> Result<(Vec<String>, Option<String>)> {
    let mut cmd = build_command(repo, arch, all, user, true);
    say!("building tests: {}", shown(&cmd));
    let t = Instant::now();
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", shown(&cmd)))?;
    check_signal()?;
    ensure!(out.status.success(), "{} failed", shown(&cmd));
    let json = String::from_utf8_lossy(&out.stdout);
    let exes = test_executables(&json);
    ensure!(!exes.is_empty(), "cargo built no test executables");
    say!(
        "built {} test executable(s) in {}",
        exes.len(),
        vm::secs(t.elapsed())
    );
    Ok((exes, command_executable(&json)))
}

/// After the tests, the command saves its result into the output directory.
pub struct Bench {
    pub exe: String,
    pub args: Vec<String>,
}

impl Bench {
    /// Under TCG the smallest plan that still writes a whole result: its
    /// figures are no performance figures, the result says it is emulated,
    /// and the suite has already proven every count. What it costs is
    /// loading and attaching each program once (no warm-up under
    /// emulation); 10000 events x 3 rounds took 36-71 s a kernel here.
    /// `extra` (--bench-arg) comes last, e.g. a --baseline to gate on.
    pub fn new(exe: String, accel: Accel, extra: &[String]) -> Bench {
        let mut args: Vec<String> = Vec::new();
        if accel == Accel::Tcg {
            args.extend(
                ["--iterations", "1000", "--repeat", "1", "--no-prog-stats"].map(String::from),
            );
        }
        args.push("--save".into());
        args.push(format!("{}/result.json", vm::GUEST_OUT));
        args.extend(extra.iter().cloned());
        Bench { exe, args }
    }
}

/// The guest environment, in order of precedence (later wins).
fn guest_env(
    a: &Args,
    accel: Accel,
    absent: Option<&Path>,
    host: &[(String, String)],
) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = host
        .iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && k != CACHE_ENV)
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    env.push(("VMTEST_OUT".into(), Some(vm::GUEST_OUT.into())));
    // The suite's KTAP outlives the VM (a host path would be read-only there).
    if let Job::Tests(_) = a.job {
        env.push((
            KTAP_ENV.into(),
            Some(format!("{}/suite.ktap", vm::GUEST_OUT)),
        ));
    }
    env.push((STRICT_ENV.into(), Some("1".into())));
    env.push(("RUST_BACKTRACE".into(), Some("0".into())));
    // Rates under TCG are not performance figures: the suite labels them.
    env.push((
        EMULATED_ENV.into(),
        (accel == Accel::Tcg).then(|| "tcg".into()),
    ));
    if let Some(f) = absent {
        env.push((ABSENT_ENV.into(), Some(f.display().to_string())));
    }
    for (k, v) in &a.env {
        env.push((k.clone(), Some(v.clone())));
    }
    env
}

fn job_script(
    repo: &Path,
    env: &[(String, Option<String>)],
    job: &Job,
    exes: &[String],
    bench: Option<&Bench>,
) -> String {
    let mut s = String::from("# generated by cargo xtask vmtest\n");
    // VMTEST_TOOLS: the init's busybox applets, when the host root's own
    // programs are of another architecture.
    s += "export PATH=${VMTEST_TOOLS:+$VMTEST_TOOLS:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n";
    s += "export HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8\n";
    s += &format!(
        "export CARGO_MANIFEST_DIR={}\n",
        sh_quote(&repo.display().to_string())
    );
    for (k, v) in env {
        match v {
            Some(v) => s += &format!("export {k}={}\n", sh_quote(v)),
            None => s += &format!("unset {k}\n"),
        }
    }
    s += &format!("cd {} || exit 125\n", sh_quote(&repo.display().to_string()));
    match job {
        Job::Cmd(c) => {
            s += c;
            s.push('\n');
        }
        Job::Exec(argv) => {
            s += &argv
                .iter()
                .map(|a| sh_quote(a))
                .collect::<Vec<_>>()
                .join(" ");
            s.push('\n');
        }
        Job::Tests(targs) => s += &tests_script(repo, targs, exes, bench),
    }
    s
}

/// Default mode: each test executable, then the command; exit status = the
/// first failing one's.
fn tests_script(repo: &Path, targs: &[String], exes: &[String], bench: Option<&Bench>) -> String {
    let mut s = String::new();
    s += "rc=0\n";
    let shown = |e: &String| {
        Path::new(e)
            .strip_prefix(repo)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| e.clone())
    };
    // Each step's exit status and times, for vmtest.json.
    let step = |name: &str| {
        format!(
            "printf '%s\\t%s\\t%s\\t%s\\n' {} $r $t $EPOCHREALTIME >>{}/{}\n",
            sh_quote(name),
            vm::GUEST_OUT,
            summary::STEPS_FILE
        )
    };
    for e in exes {
        let line = format!("vmtest: running {} {}", shown(e), targs.join(" "));
        s += &format!("echo {}\n", sh_quote(line.trim_end()));
        s += "t=$EPOCHREALTIME\n";
        s += &sh_quote(e);
        for t in targs {
            s += " ";
            s += &sh_quote(t);
        }
        s += "\nr=$?; [ $rc -ne 0 ] || rc=$r\n";
        s += &step(&test_name(e));
    }
    if let Some(b) = bench {
        let words: Vec<String> = std::iter::once(&b.exe)
            .chain(&b.args)
            .map(|w| sh_quote(w))
            .collect();
        let line = format!("vmtest: running {} {}", shown(&b.exe), b.args.join(" "));
        s += &format!("echo {}\n", sh_quote(&line));
        // stderr piped: no progress bar on the serial console; its
        // output (and a gate's verdict) kept in command.log.
        // POSIX sh (no PIPESTATUS, no SECONDS): an arm64 guest runs this
        // with busybox's sh.
        s += &format!(
            "t=$EPOCHREALTIME\n{{ {} 2>&1; echo $? >/tmp/vmtest-command.rc; }} | tee {}/command.log\n",
            words.join(" "),
            vm::GUEST_OUT
        );
        s += "r=$(cat /tmp/vmtest-command.rc); [ $rc -ne 0 ] || rc=$r\n";
        s += &step("bpf-overhead");
        s += "echo \"vmtest: bpf-overhead exit $r in $(( ${EPOCHREALTIME%.*} - ${t%.*} ))s\"\n";
    }
    s += "exit $rc\n";
    s
}

fn run(a: &Args) -> Result<i32> {
    let start = Instant::now();
    let repo = repo_root();
    ensure!(
        which(a.arch.qemu()).is_some(),
        "{} not found: apt-get install -y {}",
        a.arch.qemu(),
        a.arch.qemu_package()
    );
    let cache = cache_dir()?;
    let bb = busybox(a.arch, &cache)?;
    let k = kernel(a, &cache)?;
    let fetch = start.elapsed();
    check_signal()?;
    let initrd = initramfs(&k, &bb)?;
    let accel = choose_accel(a.accel, a.arch)?;
    let (rundir, rundir_path) = job_dir()?;
    let out = open_out(a, &repo, &k.release)?;

    let t = Instant::now();
    let script = prepare_job(a, &repo, &k, accel)?;
    let build = t.elapsed();
    fs::write(rundir_path.join("job.sh"), script)?;
    let vm = Vm {
        arch: a.arch,
        accel,
        smp: a.smp,
        memory: &a.memory,
        kernel: &k.boot,
        initrd: &initrd,
        cmdline: vm::cmdline(a.arch, !a.arch.is_host(), &rundir_path, true, &a.append),
        rundir: &rundir_path,
        out: Some(out.staging.path()),
    };
    let (o, status) = boot(a, &k, &vm)?;
    drop(rundir);
    let (rc, why) = judge(a, &o, status.as_deref());
    let (rc, dir) = finish_out(out, rc);

    let boot = o.up.map(|u| u - o.started);
    let s = Summary {
        kernel: a.kernel.clone(),
        release: k.release.clone(),
        arch: a.arch.name().into(),
        accel: accel_name(accel).into(),
        fetch_s: summary::tenths(fetch),
        downloaded_bytes: k.downloaded,
        build_s: summary::tenths(build),
        boot_s: boot.map(summary::tenths),
        vm_s: summary::tenths(o.finished - o.started),
        total_s: summary::tenths(start.elapsed().saturating_sub(fetch)),
        exit: rc,
        why,
        steps: fs::read_to_string(dir.join(summary::STEPS_FILE))
            .map(|t| summary::parse_steps(&t))
            .unwrap_or_default(),
    };
    let rc = save_summary(&s, &dir, rc);
    println!(
        "vmtest: kernel {} boot {} total {} exit {rc}",
        k.release,
        boot.map_or("-".into(), vm::secs),
        vm::secs(o.finished - o.started)
    );
    Ok(rc)
}

/// The output directory for `release` (`--out`, else under the target
/// directory), locked, with what an earlier run left there removed: it
/// must not pass for this one's.
fn open_out(a: &Args, repo: &Path, release: &str) -> Result<Out> {
    let out = Out::open(&out::dir(
        a.out.as_deref(),
        env::var("CARGO_TARGET_DIR").ok().as_deref(),
        repo,
        release,
    ))?;
    for stale in [summary::FILE, summary::STEPS_FILE] {
        let _ = fs::remove_file(out.dir.join(stale));
    }
    Ok(out)
}

/// Saves the summary into `dir`. A run that passed but whose summary
/// could not be saved exits 2; any other keeps its `rc`.
fn save_summary(s: &Summary, dir: &Path, rc: i32) -> i32 {
    match s.save(dir) {
        Ok(()) => rc,
        Err(e) => {
            say!("{}", format!("{e:#}").replace('\n', " "));
            if rc == 0 {
                2
            } else {
                rc
            }
        }
    }
}

/// The job directory: visible in the guest under the same path (the host
/// root is its root), and short enough for the kernel command line.
fn job_dir() -> Result<(tempfile::TempDir, PathBuf)> {
    let base = env::temp_dir();
    let base = if base.to_string_lossy().contains(char::is_whitespace) {
        PathBuf::from("/tmp")
    } else {
        base
    };
    let dir = tempfile::Builder::new()
        .prefix("vmtest.")
        .tempdir_in(&base)?;
    let path = dir.path().canonicalize()?;
    Ok((dir, path))
}

/// Boots the VM and waits for it; its outcome and the guest's exit status.
fn boot(a: &Args, k: &Kernel, vm: &Vm) -> Result<(vm::Outcome, Option<String>)> {
    say!(
        "booting {} ({}) accel={} timeout={}s",
        k.release,
        k.boot.file_name().unwrap_or_default().to_string_lossy(),
        accel_name(vm.accel),
        a.timeout
    );
    let timeouts = Timeouts {
        total: Duration::from_secs(a.timeout),
        alive: Duration::from_secs(a.alive_timeout),
        boot: Duration::from_secs(a.boot_timeout),
    };
    let o = vm::run(vm, a.verbose, &timeouts)?;
    if let Some(log) = &a.log {
        vm::write_log(Path::new(log), &o.log)?;
    }
    let status = fs::read_to_string(vm.status_path()).ok();
    Ok((o, status))
}

fn accel_name(a: Accel) -> &'static str {
    match a {
        Accel::Kvm => "kvm",
        Accel::Tcg => "tcg",
    }
}

/// KERNEL, ready to boot: a path, or a Debian kernel (fetched unless cached).
fn kernel(a: &Args, cache: &Path) -> Result<Kernel> {
    let is_path = a.kernel.contains('/') || Path::new(&a.kernel).exists();
    if is_path {
        custom_kernel(&a.kernel, a.modules.as_deref(), cache, a.arch, a.bzimage)
    } else {
        ensure!(
            a.modules.is_none(),
            "--modules is for a KERNEL given as a path"
        );
        for other in [Arch::X86_64, Arch::Arm64] {
            ensure!(
                other == a.arch || !debian::plain_release(&a.kernel, other),
                "{} is an {} release: add --arch {}",
                a.kernel,
                other.name(),
                other.name()
            );
        }
        debian_kernel(&a.kernel, a.arch, cache, a.bzimage)
    }
}

/// The guest's job script; in default mode it builds the test binaries first.
fn prepare_job(a: &Args, repo: &Path, k: &Kernel, accel: Accel) -> Result<String> {
    let (exes, command) = match &a.job {
        Job::Tests(_) => build_tests(repo, a.arch, a.all_tests, &a.cargo_args)?,
        _ => (Vec::new(), None),
    };
    let bench = match (&a.job, command) {
        (Job::Tests(t), _) if !a.bench || t.iter().any(|t| t == "--list") => None,
        (Job::Tests(_), None) => bail!("cargo test built no bpf-overhead command"),
        (Job::Tests(_), Some(exe)) => Some(Bench::new(exe, accel, &a.bench_args)),
        _ => None,
    };
    let series = debian::series_of(&k.release);
    let absent = absent_files(a.arch, &series)
        .into_iter()
        .map(|f| repo.join(f))
        .find(|f| f.is_file());
    let absent = absent.as_deref();
    if let Some(f) = absent {
        say!(
            "kernel series {series} ({}): {ABSENT_ENV}={}",
            a.arch.name(),
            f.display()
        );
    }
    let host: Vec<(String, String)> = env::vars().collect();
    let env = guest_env(a, accel, absent, &host);
    Ok(job_script(repo, &env, &a.job, &exes, bench.as_ref()))
}

/// Where a kernel series' declared absences may be, relative to the
/// repository, the first that exists being used: `ci/absent/<series>` for
/// x86_64 (none: every mechanism must run); for another architecture
/// `ci/absent/<arch>/<series>`, else `ci/absent/<arch>/default`, what any
/// kernel of that architecture lacks (arm64: the x86-only nop5 targets), so
/// that `newest` moving on needs no new file.
pub fn absent_files(arch: Arch, series: &str) -> Vec<PathBuf> {
    let base = Path::new("ci/absent");
    match arch {
        Arch::X86_64 => vec![base.join(series)],
        other => {
            let dir = base.join(other.name());
            vec![dir.join(series), dir.join("default")]
        }
    }
}

/// The exit status and why, said as it is decided.
fn judge(a: &Args, o: &vm::Outcome, status: Option<&str>) -> (i32, Vec<String>) {
    let rules = Rules {
        need_test_result: matches!(&a.job, Job::Tests(t) if !t.iter().any(|t| t == "--list")),
        timeouts_secs: (a.timeout, a.alive_timeout, a.boot_timeout),
    };
    let (rc, why) = vm::verdict(o, status, &rules);
    if o.up.is_none() && !a.verbose && !o.log.is_empty() {
        say!("the guest's last console lines:");
        eprintln!("{}", vm::tail(&o.log, 40));
    }
    if let (None, Some(first)) = (o.up, o.first_output) {
        say!(
            "first console output {} after qemu started",
            vm::secs(first - o.started)
        );
    }
    for w in &why {
        say!("{w}");
    }
    (rc, why)
}

/// Moves the guest's files into DIR; a failure to do so fails a passing run.
fn finish_out(out: Out, rc: i32) -> (i32, PathBuf) {
    let dir = out.dir.clone();
    let owner = owner(&dir);
    match out.finish(owner) {
        Ok(lines) => {
            for l in lines {
                say!("{l}");
            }
            (rc, dir)
        }
        Err(e) => {
            say!("{}", format!("{e:#}").replace('\n', " "));
            (if rc == 0 { 2 } else { rc }, dir)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("/t/overhead-1a2b"), "/t/overhead-1a2b");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn executables_in_a_stable_order() {
        let json = r#"{"reason":"compiler-artifact","profile":{"test":true},"executable":"/r/target/debug/deps/overhead-9f"}
{"reason":"compiler-artifact","profile":{"test":false},"executable":"/r/target/debug/bpf-overhead"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/r/target/debug/deps/bpf_overhead-11"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":null}
{"reason":"build-finished","success":true}
not json
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/r/target/debug/deps/cleanup-02"}"#;
        assert_eq!(
            test_executables(json),
            [
                "/r/target/debug/deps/bpf_overhead-11",
                "/r/target/debug/deps/cleanup-02",
                "/r/target/debug/deps/overhead-9f"
            ]
        );
    }

    fn args(v: &[&str]) -> Args {
        let argv: Vec<String> = std::iter::once("vmtest")
            .chain(v.iter().copied())
            .map(String::from)
            .collect();
        match crate::args::parse(&argv, None).unwrap() {
            crate::args::Parsed::Vmtest(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn guest_environment() {
        let a = args(&["6.1", "--env", "BPF_OVERHEAD_STRICT=0"]);
        let host = [
            ("BPF_OVERHEAD_CACHE".to_string(), "/c".to_string()),
            ("BPF_OVERHEAD_X".to_string(), "y z".to_string()),
            (
                "BPF_OVERHEAD_KTAP".to_string(),
                "/host/suite.ktap".to_string(),
            ),
            ("HOME".to_string(), "/root".to_string()),
        ];
        let env = guest_env(&a, Accel::Tcg, Some(Path::new("/r/ci/absent/6.1")), &host);
        let s = job_script(
            Path::new("/r"),
            &env,
            &a.job,
            &["/r/target/t-1".into()],
            None,
        );
        let want = "export BPF_OVERHEAD_X='y z'\n\
                    export BPF_OVERHEAD_KTAP=/host/suite.ktap\n\
                    export VMTEST_OUT=/run/vmtest-out\n\
                    export BPF_OVERHEAD_KTAP=/run/vmtest-out/suite.ktap\n\
                    export BPF_OVERHEAD_STRICT=1\n\
                    export RUST_BACKTRACE=0\n\
                    export BPF_OVERHEAD_EMULATED=tcg\n\
                    export BPF_OVERHEAD_ABSENT=/r/ci/absent/6.1\n\
                    export BPF_OVERHEAD_STRICT=0\n\
                    cd /r || exit 125\n\
                    rc=0\n\
                    echo 'vmtest: running target/t-1 --nocapture'\n\
                    t=$EPOCHREALTIME\n\
                    /r/target/t-1 --nocapture\n\
                    r=$?; [ $rc -ne 0 ] || rc=$r\n\
                    printf '%s\\t%s\\t%s\\t%s\\n' t $r $t $EPOCHREALTIME >>/run/vmtest-out/steps.tsv\n\
                    exit $rc\n";
        assert!(s.ends_with(want), "{s}");
        assert!(!s.contains("BPF_OVERHEAD_CACHE") && !s.contains("HOME=/root\n"));
        let a = args(&["6.1", "--exec", "/bin/x", "a b"]);
        let env = guest_env(&a, Accel::Kvm, None, &[]);
        let s = job_script(Path::new("/r"), &env, &a.job, &[], None);
        assert!(s.contains("unset BPF_OVERHEAD_EMULATED\n"));
        assert!(!s.contains("BPF_OVERHEAD_ABSENT"));
        assert!(s.contains("export VMTEST_OUT=/run/vmtest-out\n"));
        assert!(
            !s.contains("BPF_OVERHEAD_KTAP"),
            "only the suite writes KTAP"
        );
        assert!(s.ends_with("cd /r || exit 125\n/bin/x 'a b'\n"));
    }

    #[test]
    fn the_command_saves_its_result_after_the_tests() {
        let a = args(&["6.1"]);
        let env = guest_env(&a, Accel::Tcg, None, &[]);
        let bench = Bench::new(
            "/r/target/debug/bpf-overhead".into(),
            Accel::Tcg,
            &["--baseline".into(), "/b.json".into()],
        );
        let s = job_script(
            Path::new("/r"),
            &env,
            &a.job,
            &["/r/target/t-1".into()],
            Some(&bench),
        );
        let want = "steps.tsv\n\
             echo 'vmtest: running target/debug/bpf-overhead --iterations 1000 --repeat 1 \
             --no-prog-stats --save /run/vmtest-out/result.json --baseline /b.json'\n\
             t=$EPOCHREALTIME\n\
             { /r/target/debug/bpf-overhead --iterations 1000 --repeat 1 \
             --no-prog-stats --save /run/vmtest-out/result.json --baseline /b.json \
             2>&1; echo $? >/tmp/vmtest-command.rc; } | tee /run/vmtest-out/command.log\n\
             r=$(cat /tmp/vmtest-command.rc); [ $rc -ne 0 ] || rc=$r\n\
             printf '%s\\t%s\\t%s\\t%s\\n' bpf-overhead $r $t $EPOCHREALTIME \
             >>/run/vmtest-out/steps.tsv\n\
             echo \"vmtest: bpf-overhead exit $r in $(( ${EPOCHREALTIME%.*} - ${t%.*} ))s\"\n\
             exit $rc\n";
        assert!(s.ends_with(want), "{s}");
        let kvm = Bench::new("/b".into(), Accel::Kvm, &[]);
        assert_eq!(kvm.args, ["--save", "/run/vmtest-out/result.json"]);
    }

    #[test]
    fn the_guest_builds_what_the_kernel_decides() {
        let none: [String; 0] = [];
        assert_eq!(
            test_build_args(false, &none),
            ["--release", "--test", "overhead", "--test", "cleanup"]
        );
        assert!(test_build_args(true, &none).is_empty());
        let user = ["--test".to_owned(), "producers".to_owned()];
        assert_eq!(
            test_build_args(false, &user),
            ["--release", "--test", "producers"]
        );
    }

    #[test]
    fn the_command_among_the_artifacts() {
        let json = r#"{"reason":"compiler-artifact","profile":{"test":true},"target":{"name":"bpf-overhead","kind":["bin"]},"executable":"/r/target/debug/deps/bpf_overhead-1"}
{"reason":"compiler-artifact","profile":{"test":false},"target":{"name":"bpf-overhead","kind":["lib"]},"executable":null}
{"reason":"compiler-artifact","profile":{"test":false},"target":{"name":"suite-helper","kind":["bin"]},"executable":"/r/target/debug/suite-helper"}
{"reason":"compiler-artifact","profile":{"test":false},"target":{"name":"bpf-overhead","kind":["bin"]},"executable":"/r/target/debug/bpf-overhead"}"#;
        assert_eq!(
            command_executable(json).as_deref(),
            Some("/r/target/debug/bpf-overhead")
        );
        assert_eq!(command_executable("{}"), None);
    }

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
        use crate::image::{fixtures, Compression};
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
            let err = custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, false).err();
            let msg = format!("{:#}", err.expect(name));
            assert!(msg.contains(want) && !msg.contains('\n'), "{name}: {msg}");
        }
        assert!(!cache.exists(), "nothing cached for a damaged image");

        let p = dir.path().join("good.bzImage");
        fs::write(&p, &good).unwrap();
        let k = custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, false).unwrap();
        assert_eq!(k.release, fixtures::RELEASE);
        assert_eq!(k.boot.file_name().unwrap(), "vmlinux");
        assert_eq!(fs::read(&k.boot).unwrap(), elf);
        let k = custom_kernel(p.to_str().unwrap(), None, &cache, Arch::X86_64, true).unwrap();
        assert_eq!(
            k.boot,
            p.canonicalize().unwrap(),
            "--bzimage boots the bzImage"
        );
    }

    #[test]
    fn custom_arm64_kernels() {
        use crate::arm64_image::fixtures;
        use crate::image::Compression;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let img = fixtures::image();
        let z = dir.path().join("vmlinuz.efi");
        fs::write(&z, fixtures::zboot(Compression::Zstd, &img)).unwrap();
        let k = custom_kernel(z.to_str().unwrap(), None, &cache, Arch::Arm64, false).unwrap();
        assert_eq!(k.release, fixtures::RELEASE);
        assert_eq!(k.boot.file_name().unwrap(), "Image");
        assert_eq!(fs::read(&k.boot).unwrap(), img);
        let cut = dir.path().join("Image");
        fs::write(&cut, &img[..img.len() - 10]).unwrap();
        let msg = format!(
            "{:#}",
            custom_kernel(cut.to_str().unwrap(), None, &cache, Arch::Arm64, false).unwrap_err()
        );
        assert!(msg.contains("Image: truncated Image: PE section"), "{msg}");
        // An x86 bzImage is no arm64 kernel.
        let bz = dir.path().join("bzImage");
        let elf = crate::image::fixtures::elf(true);
        fs::write(
            &bz,
            crate::image::fixtures::bzimage(Compression::Gzip, &elf),
        )
        .unwrap();
        let msg = format!(
            "{:#}",
            custom_kernel(bz.to_str().unwrap(), None, &cache, Arch::Arm64, false).unwrap_err()
        );
        assert!(msg.contains("not an arm64 kernel"), "{msg}");
    }

    #[test]
    fn initramfs_layout() {
        let mods = [
            ("9pnet".to_string(), b"A".to_vec()),
            ("9p".to_string(), b"B".to_vec()),
        ];
        let img = initramfs_image(b"BB", &mods);
        let s = String::from_utf8_lossy(&img);
        for want in [
            "bin/busybox",
            "dev/console",
            "init",
            "modules/00-9pnet.ko",
            "modules/01-9p.ko",
        ] {
            assert!(s.contains(want), "{want}");
        }
        assert!(s.contains("00-9pnet.ko\n01-9p.ko\n"), "load order");
        assert!(s.contains("vmtest.status"), "the init is in");
        assert!(s.contains("TRAILER!!!"));
    }

    #[test]
    fn absences_per_series_and_architecture() {
        assert_eq!(
            absent_files(Arch::X86_64, "6.12"),
            [Path::new("ci/absent/6.12")]
        );
        assert_eq!(
            absent_files(Arch::Arm64, "6.12"),
            [
                Path::new("ci/absent/arm64/6.12"),
                Path::new("ci/absent/arm64/default")
            ]
        );
        // The files this repository has: a name and a reason a line, and
        // every arm64 list declares what the default one does.
        let default = fs::read_to_string(repo_root().join("ci/absent/arm64/default")).unwrap();
        let names = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| l.split('#').next().unwrap().trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect()
        };
        assert!(!names(&default).is_empty());
        for arch in [Arch::X86_64, Arch::Arm64] {
            for series in ["5.10", "6.1", "6.12", "7.3", "default"] {
                let f = repo_root().join(&absent_files(arch, series)[0]);
                let Ok(text) = fs::read_to_string(&f) else {
                    continue;
                };
                if arch == Arch::Arm64 {
                    for n in names(&default) {
                        assert!(names(&text).contains(&n), "{}: {n}", f.display());
                    }
                }
                for l in text.lines() {
                    let (name, why) = l.split_once('#').unwrap_or((l, ""));
                    assert!(
                        name.trim().is_empty() || !why.trim().is_empty(),
                        "{}: '{l}' gives no reason",
                        f.display()
                    );
                }
            }
        }
    }

    #[test]
    fn cross_builds_for_another_architecture() {
        let repo = Path::new("/r");
        let host = build_command(repo, Arch::X86_64, false, &[], true);
        assert!(
            shown(&host).ends_with(
                "test --no-run --message-format=json-render-diagnostics --release --test overhead \
                 --test cleanup"
            ),
            "{}",
            shown(&host)
        );
        let arm = build_command(repo, Arch::Arm64, false, &[], true);
        assert_eq!(arm.get_program(), "/r/scripts/cross-build-arm64");
        assert_eq!(
            shown(&arm),
            "cross-build-arm64 --message-format=json-render-diagnostics --test overhead \
             --test cleanup",
            "the script builds release"
        );
        assert_eq!(arm.get_current_dir(), Some(repo));
    }

    #[test]
    fn test_names_lose_the_hash() {
        assert_eq!(
            test_name("/r/target/release/deps/overhead-9f3a"),
            "overhead"
        );
        assert_eq!(test_name("/r/target/t-1"), "t");
        assert_eq!(test_name("/r/target/suite-helper"), "suite-helper");
    }

    #[test]
    fn fnv_is_stable() {
        let mut h = FNV_START;
        fnv(&mut h, b"a");
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
    }
}
