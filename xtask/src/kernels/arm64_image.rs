//! arm64 kernel images, checked before a VM boots them: the `Image` with its
//! boot header (Documentation/arch/arm64/booting.rst), which Debian ships as
//! vmlinuz (6.12 and 7.3 alike: uncompressed, with the EFI stub's PE header),
//! an `Image.gz`, or an EFI zboot image (`vmlinuz.efi`, CONFIG_EFI_ZBOOT: a
//! small PE program with the compressed Image inside). qemu's `-kernel`
//! boots an Image (and an Image.gz); the others are unpacked to an Image.

use anyhow::{anyhow, ensure, Context, Result};

use crate::kernels::image::{decompress, u32_at, Compression};

/// "ARM\x64" at offset 56 of the Image header.
const IMAGE_MAGIC: &[u8] = b"ARM\x64";
const IMAGE_MAGIC_AT: usize = 56;
const HEADER_LEN: usize = 64;
/// The EFI zboot header: "MZ\0\0" then "zimg", payload offset and size, and
/// the compression's name at 24 (drivers/firmware/efi/libstub/zboot-header.S).
const ZIMG_AT: usize = 4;

/// What an arm64 kernel file is.
#[derive(Debug, PartialEq, Eq)]
pub enum Format {
    Image,
    Gzip,
    Zboot(Compression),
}

impl Format {
    pub fn name(&self) -> String {
        match self {
            Format::Image => "Image".into(),
            Format::Gzip => "Image.gz".into(),
            Format::Zboot(c) => format!("EFI zboot ({})", c.name()),
        }
    }
}

/// A little-endian 32-bit field, as an offset or size.
fn usize_at(data: &[u8], off: usize) -> usize {
    u32_at(data, off) as usize
}

fn u64_at(data: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(data[off..off + 8].try_into().expect("8 bytes"))
}

pub fn is_image(data: &[u8]) -> bool {
    data.len() >= HEADER_LEN && &data[IMAGE_MAGIC_AT..HEADER_LEN - 4] == IMAGE_MAGIC
}

pub fn is_zboot(data: &[u8]) -> bool {
    data.len() >= 0x40 && data.starts_with(b"MZ") && &data[ZIMG_AT..ZIMG_AT + 4] == b"zimg"
}

/// What `data` is, and the Image inside it when it is not one itself.
/// Everything is checked: the Image header and the PE sections of its EFI
/// stub within the file, a compressed one decompressed completely.
pub fn unpack(data: &[u8]) -> Result<(Format, Option<Vec<u8>>)> {
    if is_image(data) {
        check_image(data)?;
        return Ok((Format::Image, None));
    }
    let (format, kind, payload) = if is_zboot(data) {
        let (off, size) = (usize_at(data, 8), usize_at(data, 12));
        ensure!(
            off.checked_add(size).is_some_and(|end| end <= data.len()),
            "truncated: its zboot header puts the payload at {off}+{size}, past the file's {} \
             bytes",
            data.len()
        );
        let payload = &data[off..off + size];
        let kind = Compression::of(payload).ok_or_else(|| {
            anyhow!(
                "damaged: its zboot payload at offset {off} starts with {:02x?}, no known \
                 compression",
                &payload[..payload.len().min(4)]
            )
        })?;
        (Format::Zboot(kind), kind, payload)
    } else if Compression::of(data) == Some(Compression::Gzip) {
        (Format::Gzip, Compression::Gzip, data)
    } else {
        return Err(anyhow!(
            "not an arm64 kernel: no Image header, zboot header or gzip magic"
        ));
    };
    let image = decompress(kind, payload)
        .with_context(|| format!("cannot decompress {} here", kind.name()))?
        .with_context(|| format!("damaged: its {} payload", kind.name()))?;
    check_image(&image).context("damaged: the Image inside it")?;
    Ok((format, Some(image)))
}

/// Checks an Image: its header, the effective size it declares, and, when it
/// carries the EFI stub (Debian's do), each PE section within the file: a cut
/// Image is refused.
pub fn check_image(data: &[u8]) -> Result<()> {
    ensure!(is_image(data), "not an arm64 Image (no ARM\\x64 magic)");
    let size = u64_at(data, 16);
    ensure!(
        size == 0 || data.len() as u64 <= size,
        "damaged Image header: {} bytes, more than the {size} it declares",
        data.len()
    );
    let pe = usize_at(data, 60);
    if !data.starts_with(b"MZ") || pe == 0 {
        return Ok(()); // no EFI stub: nothing more says how long it is
    }
    ensure!(
        data.len() >= pe + 24 && &data[pe..pe + 4] == b"PE\0\0",
        "damaged Image: no PE header at {pe:#x}"
    );
    let sections = usize::from(u16::from_le_bytes([data[pe + 6], data[pe + 7]]));
    let opt_len = usize::from(u16::from_le_bytes([data[pe + 20], data[pe + 21]]));
    let table = pe + 24 + opt_len;
    ensure!(
        data.len() >= table + 40 * sections,
        "truncated Image: its PE section table ends past the file's {} bytes",
        data.len()
    );
    for i in 0..sections {
        let s = table + 40 * i;
        let (raw_size, raw_at) = (usize_at(data, s + 16), usize_at(data, s + 20));
        let name = String::from_utf8_lossy(&data[s..s + 8]);
        let name = name.trim_end_matches('\0');
        ensure!(
            raw_at + raw_size <= data.len(),
            "truncated Image: PE section {name} ({raw_at:#x}+{raw_size:#x}) ends past the \
             file's {} bytes",
            data.len()
        );
    }
    Ok(())
}

#[cfg(test)]
pub mod fixtures {
    //! A tiny arm64 Image with an EFI stub's PE header, and its wrappings.
    use crate::kernels::image::fixtures::compress;
    use crate::kernels::image::Compression;

    pub const RELEASE: &str = "6.99.0-arm64-fixture";

    /// An Image: the boot header, a PE header with two sections that cover
    /// the file, and a banner in its text.
    pub fn image() -> Vec<u8> {
        let mut text = format!("Linux version {RELEASE} (fixture) #1 SMP\0").into_bytes();
        text.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 & 0x3f));
        let pe = 0x40usize;
        let opt_len = 0xf0usize;
        let table = pe + 24 + opt_len;
        let text_at = 0x1000usize;
        let len = text_at + text.len();
        let mut d = vec![0u8; text_at];
        d[0..2].copy_from_slice(b"MZ");
        d[16..24].copy_from_slice(&((len + 0x10000) as u64).to_le_bytes()); // image_size: + bss
        d[56..60].copy_from_slice(b"ARM\x64");
        d[60..64].copy_from_slice(&(pe as u32).to_le_bytes());
        d[pe..pe + 4].copy_from_slice(b"PE\0\0");
        d[pe + 4..pe + 6].copy_from_slice(&0xaa64u16.to_le_bytes());
        d[pe + 6..pe + 8].copy_from_slice(&2u16.to_le_bytes());
        d[pe + 20..pe + 22].copy_from_slice(&(opt_len as u16).to_le_bytes());
        let half = text.len() / 2;
        for (i, (name, at, size)) in [
            (b".text\0\0\0", text_at, half),
            (b".data\0\0\0", text_at + half, text.len() - half),
        ]
        .into_iter()
        .enumerate()
        {
            let s = table + 40 * i;
            d[s..s + 8].copy_from_slice(name);
            d[s + 16..s + 20].copy_from_slice(&(size as u32).to_le_bytes());
            d[s + 20..s + 24].copy_from_slice(&(at as u32).to_le_bytes());
        }
        d.extend_from_slice(&text);
        d
    }

    /// An EFI zboot image around `image`, as drivers/firmware/efi/libstub
    /// lays it out: a stub, then the payload, then (not gzip) its size.
    pub fn zboot(kind: Compression, image: &[u8]) -> Vec<u8> {
        let mut payload = compress(kind, image);
        let size = payload.len();
        if kind != Compression::Gzip {
            payload.extend_from_slice(&(image.len() as u32).to_le_bytes());
        }
        let off = 0x200usize;
        let mut d = vec![0u8; off];
        d[0..2].copy_from_slice(b"MZ");
        d[4..8].copy_from_slice(b"zimg");
        d[8..12].copy_from_slice(&(off as u32).to_le_bytes());
        d[12..16].copy_from_slice(&(size as u32).to_le_bytes());
        d[24..24 + kind.name().len()].copy_from_slice(kind.name().as_bytes());
        d.extend_from_slice(&payload);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::kernels::image::fixtures::compress;

    fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
        let msg = format!("{:#}", r.expect_err("should fail"));
        assert!(!msg.contains('\n'), "one line: {msg}");
        msg
    }

    #[test]
    fn whole_images_in_each_wrapping() {
        let img = image();
        assert_eq!(unpack(&img).unwrap(), (Format::Image, None));
        let gz = compress(Compression::Gzip, &img);
        assert_eq!(unpack(&gz).unwrap(), (Format::Gzip, Some(img.clone())));
        for kind in [Compression::Gzip, Compression::Zstd, Compression::Xz] {
            let z = zboot(kind, &img);
            assert_eq!(
                unpack(&z).unwrap(),
                (Format::Zboot(kind), Some(img.clone())),
                "{kind:?}"
            );
        }
        assert_eq!(
            crate::kernels::image::banner_release(&img).as_deref(),
            Some(RELEASE)
        );
    }

    #[test]
    fn cut_and_flipped_images_are_refused() {
        let img = image();
        for cut in [1, 100, img.len() - 0x1000] {
            let msg = err(unpack(&img[..img.len() - cut]));
            assert!(
                msg.starts_with("truncated Image: PE section"),
                "{cut}: {msg}"
            );
        }
        let msg = err(unpack(&img[..100]));
        assert!(
            msg.starts_with("truncated Image: its PE section table"),
            "{msg}"
        );
        let gz = compress(Compression::Gzip, &img);
        let msg = err(unpack(&gz[..gz.len() - 10]));
        assert!(msg.starts_with("damaged: its gzip payload"), "{msg}");
        let mut flipped = gz.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0x10;
        assert!(err(unpack(&flipped)).starts_with("damaged: its gzip payload"));
        let z = zboot(Compression::Zstd, &img);
        let msg = err(unpack(&z[..z.len() - 100]));
        assert!(msg.starts_with("truncated: its zboot header"), "{msg}");
        let mut flipped = z.clone();
        flipped[0x200 + (z.len() - 0x200) / 2] ^= 0x10;
        assert!(err(unpack(&flipped)).starts_with("damaged: its zstd payload"));
        // A whole payload around a cut Image.
        let z = zboot(Compression::Gzip, &img[..img.len() - 1]);
        assert!(err(unpack(&z)).starts_with("damaged: the Image inside it: truncated Image"));
        assert!(err(unpack(b"hello, world")).starts_with("not an arm64 kernel"));
    }
}
