//! What an arm64 guest needs besides its kernel's packages: the Image to
//! boot, checked (and unpacked when compressed), and an arm64 busybox for the
//! initramfs, from Debian's busybox-static through the runner's arm64 apt.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::kernels::arm64_image::{self, Format};
use crate::kernels::debian::{self, Apt};
use crate::util::{say, write_whole};

/// Where an unpacked Image is kept, next to the kernel's other files.
const IMAGE: &str = "Image";

/// Checks the arm64 kernel at `path`; an Image boots as it is, a compressed
/// one is unpacked into `dir/Image`. Returns the file to boot.
pub fn prepare(path: &Path, dir: &Path) -> Result<PathBuf> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let (format, image) =
        arm64_image::unpack(&data).with_context(|| format!("{}", path.display()))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let Some(image) = image else {
        say!("checked {name}: {} byte arm64 Image", data.len());
        return Ok(path.to_path_buf());
    };
    let out = dir.join(IMAGE);
    write_whole(&out, &image)?;
    say!(
        "checked {name}: {} bytes, {}, unpacked to a {} byte Image",
        data.len(),
        format.name(),
        image.len()
    );
    Ok(out)
}

/// The file to boot of a kernel unpacked into `kdir` earlier (its vmlinuz
/// at `vmlinuz`), checked again: a cut file is not booted.
pub fn cached_boot(kdir: &Path, vmlinuz: &Path) -> Result<PathBuf> {
    let unpacked = kdir.join(IMAGE);
    let boot = if unpacked.is_file() {
        unpacked
    } else {
        vmlinuz.to_path_buf()
    };
    let data = fs::read(&boot).with_context(|| format!("reading {}", boot.display()))?;
    let (format, _) = arm64_image::unpack(&data).with_context(|| {
        format!(
            "cached {} is damaged: remove {}",
            boot.display(),
            kdir.display()
        )
    })?;
    ensure!(
        format == Format::Image,
        "cached {} is not the unpacked Image: remove {}",
        boot.display(),
        kdir.display()
    );
    Ok(boot)
}

/// A statically linked arm64 busybox: Debian's busybox-static for arm64,
/// downloaded with the runner's arm64 apt and unpacked (never installed)
/// into `cache/busybox-arm64/`; the host's x86 busybox cannot run in an
/// arm64 guest.
pub fn busybox(cache: &Path) -> Result<PathBuf> {
    let dir = cache.join("busybox-arm64");
    let bb = dir.join("busybox");
    if bb.is_file() && is_static(&fs::read(&bb)?, Arch::Arm64) {
        return Ok(bb);
    }
    let apt = Apt::new(cache, Arch::Arm64);
    apt.update(debian::LISTS_MAX_AGE)?;
    say!("fetching busybox-static (arm64) for the initramfs");
    let (debs, _) = apt.download(&["busybox-static".to_owned()])?;
    let tmp = tempfile::Builder::new()
        .prefix(".busybox-")
        .tempdir_in(cache)?;
    debian::unpack(&debs[0], tmp.path())?;
    let _ = fs::remove_file(&debs[0]);
    let found = ["bin/busybox", "usr/bin/busybox"]
        .iter()
        .map(|p| tmp.path().join(p))
        .find(|p| p.is_file())
        .context("busybox-static (arm64) holds no bin/busybox nor usr/bin/busybox")?;
    let data = fs::read(&found)?;
    ensure!(
        is_static(&data, Arch::Arm64),
        "busybox-static (arm64)'s busybox is not a statically linked arm64 ELF"
    );
    write_whole(&bb, &data)?;
    Ok(bb)
}

/// A 64-bit ELF executable of `arch` without a program interpreter.
pub fn is_static(data: &[u8], arch: Arch) -> bool {
    use object::read::elf::{FileHeader, ProgramHeader};
    (|| -> Option<bool> {
        let h = object::elf::FileHeader64::<object::Endianness>::parse(data).ok()?;
        let e = h.endian().ok()?;
        if h.e_machine(e) != arch.elf_machine() {
            return Some(false);
        }
        let ph = h.program_headers(e, data).ok()?;
        Some(!ph.iter().any(|p| p.p_type(e) == object::elf::PT_INTERP))
    })()
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::arm64_image::fixtures;
    use crate::kernels::image::fixtures::compress;
    use crate::kernels::image::Compression;

    #[test]
    fn images_boot_as_they_are_compressed_ones_unpacked() {
        let dir = tempfile::tempdir().unwrap();
        let img = fixtures::image();
        let plain = dir.path().join("vmlinuz");
        fs::write(&plain, &img).unwrap();
        assert_eq!(prepare(&plain, &dir.path().join("k")).unwrap(), plain);
        assert!(
            !dir.path().join("k").exists(),
            "nothing written for an Image"
        );
        assert_eq!(cached_boot(&dir.path().join("k"), &plain).unwrap(), plain);

        let z = dir.path().join("vmlinuz.efi");
        fs::write(&z, fixtures::zboot(Compression::Zstd, &img)).unwrap();
        let kdir = dir.path().join("z");
        let boot = prepare(&z, &kdir).unwrap();
        assert_eq!(boot, kdir.join("Image"));
        assert_eq!(fs::read(&boot).unwrap(), img);
        assert_eq!(cached_boot(&kdir, &z).unwrap(), boot);
        fs::write(&boot, &img[..img.len() - 1]).unwrap();
        let msg = format!("{:#}", cached_boot(&kdir, &z).unwrap_err());
        assert!(
            msg.starts_with("cached ") && msg.contains("damaged"),
            "{msg}"
        );

        let gz = dir.path().join("Image.gz");
        let mut cut = compress(Compression::Gzip, &img);
        cut.truncate(cut.len() - 8);
        fs::write(&gz, cut).unwrap();
        let msg = format!("{:#}", prepare(&gz, &dir.path().join("g")).unwrap_err());
        assert!(msg.contains("Image.gz: damaged: its gzip payload"), "{msg}");
        assert!(!dir.path().join("g").exists());
    }

    #[test]
    fn static_elves_of_an_arch() {
        let elf = crate::kernels::image::fixtures::elf(false); // x86-64, no PT_INTERP
        assert!(is_static(&elf, Arch::X86_64));
        assert!(!is_static(&elf, Arch::Arm64));
        let mut arm = elf.clone();
        arm[18..20].copy_from_slice(&183u16.to_le_bytes());
        assert!(is_static(&arm, Arch::Arm64));
        assert!(!is_static(b"#!/bin/sh\n", Arch::Arm64));
    }
}
