//! Kernel images: the x86 boot header of a bzImage, its compressed payload, and the
//! kernel ELF inside it (booted directly through its PVH entry).
//!
//! Everything is checked before a VM boots it: a truncated or corrupt image is
//! refused with one line instead of hanging a guest until the timeout.

use std::io::Read;

use anyhow::{anyhow, ensure, Context, Result};
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::Endianness;

/// Boot header offsets (Documentation/arch/x86/boot.rst).
const SETUP_SECTS: usize = 0x1f1;
const SYSSIZE: usize = 0x1f4;
const HEADER_MAGIC: usize = 0x202;
const VERSION: usize = 0x206;
const KERNEL_VERSION: usize = 0x20e;
const PAYLOAD_OFFSET: usize = 0x248;
const PAYLOAD_LENGTH: usize = 0x24c;
/// The header must reach at least past payload_length.
const HEADER_END: usize = 0x250;

/// XEN_ELFNOTE_PHYS32_ENTRY: the PVH entry point qemu's `-kernel` uses for an ELF.
const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;

/// The compression of a bzImage payload (the kernel's CONFIG_KERNEL_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Xz,
    Zstd,
    Lzma,
    Bzip2,
    Lz4,
    Lzo,
}

impl Compression {
    pub fn of(payload: &[u8]) -> Option<Compression> {
        const MAGICS: &[(Compression, &[u8])] = &[
            (Compression::Gzip, b"\x1f\x8b\x08"),
            (Compression::Xz, b"\xfd7zXZ\x00"),
            (Compression::Zstd, b"\x28\xb5\x2f\xfd"),
            (Compression::Lzma, b"\x5d\x00\x00"),
            (Compression::Bzip2, b"BZh"),
            (Compression::Lz4, b"\x02\x21\x4c\x18"),
            (Compression::Lzo, b"\x89LZO\x00\r\n\x1a\n"),
        ];
        MAGICS
            .iter()
            .find(|(_, magic)| payload.starts_with(magic))
            .map(|&(c, _)| c)
    }

    /// Whether the kernel's build appends the uncompressed size to the
    /// compressed stream ([`SIZE_APPENDED`]).
    pub fn size_appended(self) -> bool {
        SIZE_APPENDED
            .iter()
            .any(|&(c, appended)| c == self && appended)
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Lzma => "lzma",
            Compression::Bzip2 => "bzip2",
            Compression::Lz4 => "lz4",
            Compression::Lzo => "lzo",
        }
    }
}

/// Whether the kernel's build appends the uncompressed size (4 bytes, little
/// endian: scripts/Makefile.lib's `size_append`) to each compression's
/// stream. From arch/x86/boot/compressed/Makefile and scripts/Makefile.lib,
/// 5.10 to 7.3: vmlinux.bin.gz is made by `cmd_gzip`, which appends nothing
/// (gzip's own trailer ends in ISIZE, the same size); every other one by a
/// command that runs `$(size_append)` after the compressor: 5.10's
/// `cmd_{bzip2,lzma,xzkern,lzo,lz4,zstd22}`, renamed `cmd_*_with_size` in
/// 5.16. Either way mkpiggy reads the payload's last 4 bytes as the size.
pub const SIZE_APPENDED: [(Compression, bool); 7] = [
    (Compression::Gzip, false),
    (Compression::Bzip2, true),
    (Compression::Lzma, true),
    (Compression::Xz, true),
    (Compression::Lzo, true),
    (Compression::Lz4, true),
    (Compression::Zstd, true),
];

/// What the boot header of a bzImage says, checked against the file.
#[derive(Debug)]
pub struct BzImage<'a> {
    /// The kernel release from the header's kernel_version string, if any.
    pub release: Option<String>,
    pub compression: Compression,
    /// The compressed stream: the payload without the size word the build
    /// appended, if it appended one.
    payload: &'a [u8],
    /// The uncompressed size: the payload's last 4 bytes (appended by the
    /// build, or gzip's ISIZE).
    pub uncompressed_size: u32,
}

fn u16_at(data: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([data[off], data[off + 1]])
}

pub fn u32_at(data: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(data[off..off + 4].try_into().expect("4 bytes"))
}

/// True if `data` starts like a bzImage (the "HdrS" boot header magic).
pub fn is_bzimage(data: &[u8]) -> bool {
    data.len() >= HEADER_END && &data[HEADER_MAGIC..HEADER_MAGIC + 4] == b"HdrS"
}

/// True if `data` starts with the ELF magic.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

impl<'a> BzImage<'a> {
    /// Parses the boot header and checks the file against it: the size that
    /// setup_sects and syssize give (a signed image may carry more: its
    /// signature), and the payload inside the protected-mode part.
    pub fn parse(data: &'a [u8]) -> Result<BzImage<'a>> {
        ensure!(is_bzimage(data), "not a bzImage (no HdrS boot header)");
        let version = u16_at(data, VERSION);
        ensure!(
            version >= 0x208,
            "boot protocol {}.{:02} is older than 2.08: its payload cannot be located",
            version >> 8,
            version & 0xff
        );
        let setup_sects = match data[SETUP_SECTS] {
            0 => 4,
            n => usize::from(n),
        };
        let setup_len = (setup_sects + 1) * 512;
        let syssize = u32_at(data, SYSSIZE) as usize;
        let expected = setup_len + syssize * 16;
        ensure!(
            data.len() >= expected,
            "truncated: {} bytes, but its boot header says {expected} \
             (setup_sects {setup_sects}, syssize {syssize})",
            data.len()
        );
        let offset = u32_at(data, PAYLOAD_OFFSET) as usize;
        let length = u32_at(data, PAYLOAD_LENGTH) as usize;
        let start = setup_len + offset;
        ensure!(
            length >= 8 && start + length <= expected,
            "damaged boot header: payload at {start}+{length} does not fit in the {expected} \
             bytes of the image"
        );
        let payload = &data[start..start + length];
        let compression = Compression::of(payload).ok_or_else(|| {
            anyhow!(
                "damaged: its payload at offset {start} starts with {:02x?}, no known compression",
                &payload[..4]
            )
        })?;
        // The last 4 bytes are the size, little endian: appended by the
        // build, or gzip's own ISIZE, which stays in the stream.
        let uncompressed_size = u32_at(payload, length - 4);
        let payload = match compression.size_appended() {
            true => &payload[..length - 4],
            false => payload,
        };
        Ok(BzImage {
            release: header_release(data),
            compression,
            payload,
            uncompressed_size,
        })
    }

    /// Decompresses the payload completely and checks that it is a whole x86-64
    /// ELF of the size the image declares. `Ok(None)`: a compression this tool
    /// does not decompress (the image can still boot as a bzImage).
    pub fn vmlinux(&self) -> Result<Option<Vec<u8>>> {
        let name = self.compression.name();
        let elf = match decompress(self.compression, self.payload) {
            Some(r) => r.with_context(|| format!("damaged: its {name} payload"))?,
            None => return Ok(None),
        };
        ensure!(
            elf.len() == self.uncompressed_size as usize,
            "damaged: its {name} payload decompressed to {} bytes, the image says {}",
            elf.len(),
            self.uncompressed_size
        );
        check_elf(&elf).context("damaged: the kernel inside it")?;
        Ok(Some(elf))
    }
}

/// The release at the start of the header's kernel_version string.
fn header_release(data: &[u8]) -> Option<String> {
    let ptr = usize::from(u16_at(data, KERNEL_VERSION));
    if ptr == 0 {
        return None;
    }
    let s = data.get(ptr + 0x200..)?;
    let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len()).min(256)];
    let word = String::from_utf8_lossy(s)
        .split_whitespace()
        .next()?
        .to_owned();
    Some(word)
}

/// The release from a "Linux version X" banner anywhere in `data` (a vmlinux).
pub fn banner_release(data: &[u8]) -> Option<String> {
    const BANNER: &[u8] = b"Linux version ";
    let mut from = 0;
    while let Some(pos) = find(&data[from..], BANNER) {
        let at = from + pos + BANNER.len();
        let rest = &data[at..data.len().min(at + 100)];
        let end = rest
            .iter()
            .position(|&b| b == b' ' || b == 0)
            .unwrap_or(rest.len());
        // Skip the "%s" of the format string.
        if end > 0 && rest[0].is_ascii_digit() {
            return Some(String::from_utf8_lossy(&rest[..end]).into_owned());
        }
        from = at;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Decompresses one complete stream of `kind` (trailing bytes are ignored);
/// `None` for a format this tool does not decompress.
pub fn decompress(kind: Compression, data: &[u8]) -> Option<Result<Vec<u8>>> {
    let mut out = Vec::with_capacity(data.len() * 4);
    let r = match kind {
        Compression::Gzip => flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .map(drop)
            .map_err(anyhow::Error::from),
        Compression::Xz | Compression::Lzma => {
            let stream = if kind == Compression::Xz {
                liblzma::stream::Stream::new_stream_decoder(u64::MAX, 0)
            } else {
                liblzma::stream::Stream::new_lzma_decoder(u64::MAX)
            };
            stream
                .map_err(anyhow::Error::from)
                .and_then(|s| {
                    liblzma::read::XzDecoder::new_stream(data, s)
                        .read_to_end(&mut out)
                        .map_err(anyhow::Error::from)
                })
                .and_then(|_| {
                    // liblzma stops quietly at the end of its input: a cut
                    // stream reads as a short one.
                    ensure!(!out.is_empty(), "no data");
                    Ok(())
                })
        }
        Compression::Zstd => zstd(data, &mut out),
        Compression::Bzip2 | Compression::Lz4 | Compression::Lzo => return None,
    };
    Some(r.map(|()| out))
}

fn zstd(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let mut input = data;
    let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut input)
        .map_err(|e| anyhow!("bad zstd frame header: {e}"))?;
    // ruzstd's errors nest their causes in one long Display: keep the first.
    dec.read_to_end(out).map_err(|e| {
        let e = e.to_string();
        anyhow!("corrupt zstd data ({})", e.split(':').next().unwrap_or(&e))
    })?;
    let frame = dec.into_frame_decoder();
    ensure!(frame.is_finished(), "the zstd frame ends early");
    if let (Some(want), Some(got)) = (
        frame.get_checksum_from_data(),
        frame.get_calculated_checksum(),
    ) {
        ensure!(
            want == got,
            "zstd checksum mismatch (frame says {want:08x}, data gives {got:08x})"
        );
    }
    Ok(())
}

/// What the kernel ELF offers the VM.
#[derive(Debug, PartialEq, Eq)]
pub struct ElfInfo {
    /// It has a PVH entry note: qemu can boot it directly.
    pub pvh: bool,
}

/// Checks that `data` is a whole little-endian x86-64 ELF: its program headers,
/// every segment and the section headers lie within the file. Reports the PVH note.
pub fn check_elf(data: &[u8]) -> Result<ElfInfo> {
    ensure!(is_elf(data), "not an ELF file");
    let header = elf::FileHeader64::<Endianness>::parse(data)
        .map_err(|e| anyhow!("not a whole 64-bit ELF: {e}"))?;
    let endian = header
        .endian()
        .map_err(|e| anyhow!("not a whole 64-bit ELF: {e}"))?;
    ensure!(
        header.e_machine(endian) == elf::EM_X86_64,
        "an ELF for machine {}, not x86-64",
        header.e_machine(endian)
    );
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| anyhow!("truncated ELF: its program headers: {e}"))?;
    ensure!(!phdrs.is_empty(), "an ELF without program headers");
    let mut pvh = false;
    for (i, ph) in phdrs.iter().enumerate() {
        let (off, size) = (ph.p_offset(endian), ph.p_filesz(endian));
        ensure!(
            off.checked_add(size)
                .is_some_and(|end| end <= data.len() as u64),
            "truncated ELF: segment {i} ({off:#x}+{size:#x}) ends past the file's {} bytes",
            data.len()
        );
        if let Some(mut notes) = ph
            .notes(endian, data)
            .map_err(|e| anyhow!("damaged ELF: notes of segment {i}: {e}"))?
        {
            while let Some(note) = notes
                .next()
                .map_err(|e| anyhow!("damaged ELF: notes of segment {i}: {e}"))?
            {
                if note.name() == b"Xen" && note.n_type(endian) == XEN_ELFNOTE_PHYS32_ENTRY {
                    pvh = true;
                }
            }
        }
    }
    header
        .sections(endian, data)
        .map_err(|e| anyhow!("truncated ELF: its section headers: {e}"))?;
    Ok(ElfInfo { pvh })
}

#[cfg(test)]
pub mod fixtures {
    //! Tiny kernel images for the tests: a small x86-64 ELF with a PVH note and a
    //! banner, wrapped in a minimal bzImage with a compressed payload.
    use super::*;
    use std::io::Write;

    pub const RELEASE: &str = "6.99.0-fixture";

    /// A small whole ELF: one PT_LOAD with the banner and filler, one PT_NOTE.
    pub fn elf(pvh: bool) -> Vec<u8> {
        let mut note = Vec::new();
        let (name, ntype): (&[u8], u32) = if pvh {
            (b"Xen\0", XEN_ELFNOTE_PHYS32_ENTRY)
        } else {
            (b"GNU\0", 3)
        };
        note.extend_from_slice(&(name.len() as u32).to_le_bytes());
        note.extend_from_slice(&4u32.to_le_bytes());
        note.extend_from_slice(&ntype.to_le_bytes());
        note.extend_from_slice(name);
        note.extend_from_slice(&0x0100_0000u32.to_le_bytes());

        let mut text =
            format!("Linux version %s\0Linux version {RELEASE} (fixture) #1\0").into_bytes();
        // Compressible, but not trivially: enough to span a few blocks.
        text.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 & 0x3f));
        text.resize(text.len().next_multiple_of(8), 0); // notes are aligned

        let phoff = 64u64;
        let data_off = phoff + 2 * 56;
        let note_off = data_off + text.len() as u64;
        let end = note_off + note.len() as u64;

        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        out.extend_from_slice(&2u16.to_le_bytes()); // e_type EXEC
        out.extend_from_slice(&elf::EM_X86_64.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0x0100_0000u64.to_le_bytes()); // e_entry
        out.extend_from_slice(&phoff.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // e_shoff: none
        out.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        out.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
        out.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
        out.extend_from_slice(&2u16.to_le_bytes()); // e_phnum
        out.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
        out.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
        out.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
        let ph = |out: &mut Vec<u8>, ptype: u32, off: u64, size: u64| {
            out.extend_from_slice(&ptype.to_le_bytes());
            out.extend_from_slice(&5u32.to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&(0x0100_0000 + off).to_le_bytes());
            out.extend_from_slice(&(0x0100_0000 + off).to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&4u64.to_le_bytes());
        };
        ph(&mut out, elf::PT_LOAD, data_off, text.len() as u64);
        ph(&mut out, elf::PT_NOTE, note_off, note.len() as u64);
        out.extend_from_slice(&text);
        out.extend_from_slice(&note);
        assert_eq!(out.len() as u64, end);
        out
    }

    pub fn compress(kind: Compression, data: &[u8]) -> Vec<u8> {
        match kind {
            Compression::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Xz => {
                // As the kernel does: x86 BCJ filter, then LZMA2, CRC32.
                let mut filters = liblzma::stream::Filters::new();
                filters.x86();
                filters.lzma2(&liblzma::stream::LzmaOptions::new_preset(6).unwrap());
                let stream = liblzma::stream::Stream::new_stream_encoder(
                    &filters,
                    liblzma::stream::Check::Crc32,
                )
                .unwrap();
                let mut out = Vec::new();
                liblzma::read::XzEncoder::new_stream(data, stream)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            Compression::Zstd => {
                ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
            }
            Compression::Lzma => {
                // `lzma -9` from a pipe: the .lzma ("alone") format, size unknown.
                let opts = liblzma::stream::LzmaOptions::new_preset(9).unwrap();
                let stream = liblzma::stream::Stream::new_lzma_encoder(&opts).unwrap();
                let mut out = Vec::new();
                liblzma::read::XzEncoder::new_stream(data, stream)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            // No compressor here: a stand-in stream with the format's magic,
            // which the parser accepts and does not decompress.
            Compression::Bzip2 | Compression::Lz4 | Compression::Lzo => {
                let magic: &[u8] = match kind {
                    Compression::Bzip2 => b"BZh9",
                    Compression::Lz4 => b"\x02\x21\x4c\x18",
                    _ => b"\x89LZO\x00\r\n\x1a\n",
                };
                let mut out = magic.to_vec();
                out.extend(data.iter().take(4000).map(|b| b ^ 0x5a));
                out
            }
        }
    }

    /// The command arch/x86/boot/compressed/Makefile makes each payload with
    /// (`$(call if_changed,CMD)`, as named since 5.16): the `_with_size` ones
    /// run `$(size_append)` after the compressor (in 5.10 the same commands,
    /// without the suffix, did). Written out from the Makefile, apart from
    /// the parser's table, so that the two are checked against each other.
    pub const KERNEL_RULE: [(Compression, &str); 7] = [
        (Compression::Gzip, "gzip"),
        (Compression::Bzip2, "bzip2_with_size"),
        (Compression::Lzma, "lzma_with_size"),
        (Compression::Xz, "xzkern_with_size"),
        (Compression::Lzo, "lzo_with_size"),
        (Compression::Lz4, "lz4_with_size"),
        (Compression::Zstd, "zstd22_with_size"),
    ];

    /// The payload the kernel's build makes of `elf`: compressed, then the
    /// size appended if its rule says so.
    pub fn payload(kind: Compression, elf: &[u8]) -> Vec<u8> {
        let (_, cmd) = KERNEL_RULE.iter().find(|(k, _)| *k == kind).unwrap();
        let mut payload = compress(kind, elf);
        if cmd.ends_with("_with_size") {
            payload.extend_from_slice(&(elf.len() as u32).to_le_bytes());
        }
        payload
    }

    /// A minimal bzImage (boot protocol 2.15) around `elf` compressed with `kind`.
    pub fn bzimage(kind: Compression, elf: &[u8]) -> Vec<u8> {
        let setup_sects = 1usize;
        let mut out = vec![0u8; (setup_sects + 1) * 512];
        out[SETUP_SECTS] = setup_sects as u8;
        out[0x1fe] = 0x55;
        out[0x1ff] = 0xaa;
        out[HEADER_MAGIC..HEADER_MAGIC + 4].copy_from_slice(b"HdrS");
        out[VERSION..VERSION + 2].copy_from_slice(&0x020fu16.to_le_bytes());
        let banner = format!("{RELEASE} (fixture@example) #1 SMP\0");
        out[0x300..0x300 + banner.len()].copy_from_slice(banner.as_bytes());
        out[KERNEL_VERSION..KERNEL_VERSION + 2].copy_from_slice(&0x100u16.to_le_bytes());
        // Protected-mode part: a stand-in decompressor stub, then the payload.
        let stub = [0x90u8; 64];
        let payload = payload(kind, elf);
        out[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&(stub.len() as u32).to_le_bytes());
        out[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4]
            .copy_from_slice(&(payload.len() as u32).to_le_bytes());
        let mut pm = stub.to_vec();
        pm.extend_from_slice(&payload);
        pm.resize(pm.len().div_ceil(16) * 16, 0);
        out[SYSSIZE..SYSSIZE + 4].copy_from_slice(&((pm.len() / 16) as u32).to_le_bytes());
        out.extend_from_slice(&pm);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    /// The compressions this tool decompresses and checks.
    const KINDS: [Compression; 4] = [
        Compression::Gzip,
        Compression::Xz,
        Compression::Zstd,
        Compression::Lzma,
    ];
    /// The payload's offset in a fixture image: the setup sectors, the stub.
    const START: usize = 1024 + 64;

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        let msg = format!("{:#}", r.expect_err("should fail"));
        assert!(!msg.contains('\n'), "one line: {msg}");
        msg
    }

    fn extract(data: &[u8]) -> Result<Vec<u8>> {
        Ok(BzImage::parse(data)?.vmlinux()?.expect("supported"))
    }

    #[test]
    fn whole_images_give_their_elf() {
        let elf = elf(true);
        for kind in KINDS {
            let bz = bzimage(kind, &elf);
            let img = BzImage::parse(&bz).unwrap();
            assert_eq!(img.compression, kind);
            assert_eq!(img.release.as_deref(), Some(RELEASE));
            assert_eq!(img.vmlinux().unwrap().unwrap(), elf, "{kind:?}");
        }
        assert_eq!(check_elf(&elf).unwrap(), ElfInfo { pvh: true });
        assert_eq!(
            check_elf(&super::fixtures::elf(false)).unwrap(),
            ElfInfo { pvh: false }
        );
        assert_eq!(banner_release(&elf).as_deref(), Some(RELEASE));
    }

    /// An image made by the kernel's rule for `kind`: parsed, its size word
    /// found, and either decompressed to the ELF or accepted unchecked.
    fn by_the_kernels_rule(kind: Compression) {
        let elf = elf(true);
        let bz = bzimage(kind, &elf);
        let img = BzImage::parse(&bz).unwrap();
        assert_eq!(img.compression, kind);
        assert_eq!(img.uncompressed_size as usize, elf.len(), "{kind:?}");
        assert_eq!(img.release.as_deref(), Some(RELEASE));
        match img.vmlinux().unwrap() {
            Some(got) => assert_eq!(got, elf, "{kind:?}"),
            None => assert!(!KINDS.contains(&kind), "{kind:?} should be checked"),
        }
        // The parser's table and the Makefile's commands agree.
        let cmd = KERNEL_RULE.iter().find(|(k, _)| *k == kind).unwrap().1;
        assert_eq!(
            kind.size_appended(),
            cmd.ends_with("_with_size"),
            "{kind:?}"
        );
    }

    #[test]
    fn gzip_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Gzip);
    }

    #[test]
    fn bzip2_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Bzip2);
    }

    #[test]
    fn lzma_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Lzma);
    }

    #[test]
    fn xz_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Xz);
    }

    #[test]
    fn lzo_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Lzo);
    }

    #[test]
    fn lz4_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Lz4);
    }

    #[test]
    fn zstd_image_by_the_kernels_rule() {
        by_the_kernels_rule(Compression::Zstd);
    }

    #[test]
    fn a_gzip_payload_is_whole_to_its_isize() {
        // The issue-56 image: gzip's last 4 bytes are its ISIZE, not a
        // word the build appended; cutting them cuts the stream.
        let elf = elf(true);
        let bz = bzimage(Compression::Gzip, &elf);
        let plen = u32_at(&bz, PAYLOAD_LENGTH) as usize;
        let stream = &bz[START..START + plen];
        assert_eq!(&stream[plen - 4..], &(elf.len() as u32).to_le_bytes());
        assert!(decompress(Compression::Gzip, &stream[..plen - 4])
            .unwrap()
            .is_err());
        assert_eq!(extract(&bz).unwrap(), elf);
    }

    #[test]
    fn a_signature_after_the_image_is_fine() {
        let mut bz = bzimage(Compression::Zstd, &elf(true));
        bz.extend_from_slice(&[0x30; 1500]); // like an appended Authenticode signature
        assert!(extract(&bz).is_ok());
    }

    #[test]
    fn truncated_images_are_refused_by_the_header() {
        for kind in KINDS {
            let bz = bzimage(kind, &elf(true));
            for cut in [1, 16, 100, bz.len() / 2, bz.len() - 1100] {
                let msg = err(extract(&bz[..bz.len() - cut]));
                assert!(msg.starts_with("truncated: "), "{kind:?} cut {cut}: {msg}");
            }
        }
        let msg = err(extract(&bzimage(Compression::Gzip, &elf(true))[..600]));
        assert!(msg.starts_with("truncated: 600 bytes"), "{msg}");
    }

    #[test]
    fn a_truncated_image_with_a_fixed_up_header_is_refused_by_its_payload() {
        // Cut the payload and shrink the header to match: only decompression can tell.
        for kind in KINDS {
            let bz = bzimage(kind, &elf(true));
            let plen = u32_at(&bz, PAYLOAD_LENGTH) as usize;
            let start = START;
            let keep = plen / 2;
            let mut cut = bz[..start + keep].to_vec();
            cut.extend_from_slice(&bz[start + plen - 4..start + plen]); // the size word
            cut[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4]
                .copy_from_slice(&((keep + 4) as u32).to_le_bytes());
            let pm = cut.len() - 1024;
            cut.resize(1024 + pm.div_ceil(16) * 16, 0);
            let syssize = ((cut.len() - 1024) / 16) as u32;
            cut[SYSSIZE..SYSSIZE + 4].copy_from_slice(&syssize.to_le_bytes());
            let msg = err(extract(&cut));
            assert!(msg.starts_with("damaged: its "), "{kind:?}: {msg}");
        }
    }

    #[test]
    fn bit_flips_in_the_payload_are_refused() {
        // The .lzma format carries no checksum: a flip may decode to other
        // bytes of the same length, unseen (the ELF check may catch it).
        for kind in KINDS.into_iter().filter(|&k| k != Compression::Lzma) {
            let bz = bzimage(kind, &elf(true));
            let img = BzImage::parse(&bz).unwrap();
            let start = START;
            let len = img.payload.len();
            for at in [len / 4, len / 2, len * 3 / 4, len - 6] {
                let mut bad = bz.clone();
                bad[start + at] ^= 0x10;
                let msg = err(extract(&bad));
                assert!(msg.starts_with("damaged: "), "{kind:?} flip at {at}: {msg}");
            }
        }
    }

    #[test]
    fn a_wrong_size_word_is_refused() {
        for kind in [Compression::Zstd, Compression::Xz, Compression::Lzma] {
            let mut bz = bzimage(kind, &elf(true));
            let img = BzImage::parse(&bz).unwrap();
            let at = START + img.payload.len();
            bz[at] ^= 1;
            let msg = err(extract(&bz));
            assert!(msg.contains("decompressed to"), "{kind:?}: {msg}");
        }
        // gzip's size is its ISIZE, inside the stream: the decoder checks it.
        let mut bz = bzimage(Compression::Gzip, &elf(true));
        let plen = u32_at(&bz, PAYLOAD_LENGTH) as usize;
        bz[START + plen - 4] ^= 1;
        let msg = err(extract(&bz));
        assert!(msg.starts_with("damaged: its gzip payload"), "{msg}");
    }

    #[test]
    fn a_bad_header_is_refused() {
        let good = bzimage(Compression::Xz, &elf(true));
        let mut bad = good.clone();
        bad[PAYLOAD_LENGTH + 3] = 0x7f; // a payload far past the end
        assert!(err(extract(&bad)).starts_with("damaged boot header"));
        let mut bad = good.clone();
        bad[1024 + 64] = 0; // the magic
        assert!(err(extract(&bad)).contains("no known compression"));
        let mut bad = good.clone();
        bad[VERSION..VERSION + 2].copy_from_slice(&0x0204u16.to_le_bytes());
        assert!(err(extract(&bad)).contains("older than 2.08"));
        assert!(err(BzImage::parse(b"hello")).contains("not a bzImage"));
    }

    #[test]
    fn payloads_that_are_no_whole_elf_are_refused() {
        let mut elf = elf(true);
        elf[0x20] = 0xf0; // e_phoff past the end
        let msg = err(extract(&bzimage(Compression::Zstd, &elf)));
        assert!(
            msg.starts_with("damaged: the kernel inside it: truncated ELF"),
            "{msg}"
        );
        let msg = err(extract(&bzimage(Compression::Gzip, b"not an elf at all")));
        assert!(msg.contains("not an ELF"), "{msg}");
    }

    #[test]
    fn truncated_elves_are_refused() {
        let elf = elf(true);
        for cut in [1, 10, 200, elf.len() - 100] {
            let msg = err(check_elf(&elf[..elf.len() - cut]));
            assert!(msg.contains("ELF"), "cut {cut}: {msg}");
        }
        let mut arm = elf.clone();
        arm[18] = 183; // EM_AARCH64
        assert!(err(check_elf(&arm)).contains("not x86-64"));
    }
}
