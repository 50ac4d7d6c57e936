//! The guest's initramfs: a static busybox of its architecture, the init
//! (`init.sh`), and the modules it loads, cached beside the kernel.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::kernels::arm64;
use crate::kernels::kernel::Kernel;
use crate::kernels::modules::{self, Tree};
use crate::util::{fnv, which, FNV_START};
use crate::vm::cpio::Cpio;

const INIT: &str = include_str!("init.sh");
/// Bumped when the initramfs layout changes, so cached ones are rebuilt.
const INITRAMFS_FORMAT: &str = "vmtest-initramfs-2";

/// A statically linked busybox of the guest's architecture (a dynamic one
/// cannot run in the initramfs): the host's for x86_64, Debian's arm64 one
/// for arm64.
pub fn busybox(arch: Arch, cache: &Path) -> Result<PathBuf> {
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
pub fn initramfs(k: &Kernel, bb_path: &Path) -> Result<PathBuf> {
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
    crate::util::write_file(&out, image)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
