//! Facts about the machine recorded with a result: the kernel and its
//! build id, the CPU's model, the time; and the emulator the run is under, from the
//! environment, which the caller reads once and gives to the plan.

use std::collections::BTreeMap;
use std::fs;
use std::time::SystemTime;

use bpf_overhead_common::document::Emulation;
pub use bpf_overhead_common::mitigations::read as mitigations;

use crate::env_vars::{EMULATED_ENV, EMULATOR_ENV};

/// Facts about the machine recorded with a result.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub kernel_release: String,
    /// The running kernel's GNU build id, in hex: what tells two builds of
    /// one release apart.
    pub kernel_build_id: Option<String>,
    pub cpu_model: String,
    pub arch: String,
    pub timestamp: String,
    /// [`mitigations`]: what makes a trap or a return dear here.
    pub mitigations: BTreeMap<String, String>,
}

impl Host {
    pub fn current() -> Self {
        Self {
            kernel_release: kernel_release(),
            kernel_build_id: fs::read("/sys/kernel/notes")
                .ok()
                .and_then(|notes| gnu_build_id(&notes)),
            cpu_model: cpu_model(),
            arch: std::env::consts::ARCH.into(),
            timestamp: rfc3339_utc(SystemTime::now()),
            mitigations: mitigations(),
        }
    }
}

/// The emulator the run is under, as its runner named it in
/// [`EMULATED_ENV`] (`tcg`, or `tcg-icount` where the guest's clock counts
/// instructions); `None` on real or virtualised hardware.
pub fn emulated() -> Option<Emulation> {
    std::env::var(EMULATED_ENV)
        .ok()
        .filter(|v| !v.is_empty() && v != "0")
        .map(Emulation::from)
}

/// The emulator's version, as its runner gave it ([`EMULATOR_ENV`]).
pub fn emulator() -> Option<String> {
    std::env::var(EMULATOR_ENV).ok().filter(|v| !v.is_empty())
}

pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// `NT_GNU_BUILD_ID`, the note type of a build id (elf.h).
const NT_GNU_BUILD_ID: u32 = 3;

/// The build id in a run of ELF notes (`/sys/kernel/notes`, a vmlinux's
/// `.notes`), in hex: each note a name size, a description size and a
/// type, then the name and the description, each padded to 4 bytes, in
/// the machine's byte order. None without a `GNU` build-id note.
pub fn gnu_build_id(notes: &[u8]) -> Option<String> {
    let word = |at: usize| -> Option<usize> {
        let bytes = notes.get(at..at + 4)?;
        Some(u32::from_ne_bytes(bytes.try_into().ok()?) as usize)
    };
    let padded = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut at = 0;
    while at + 12 <= notes.len() {
        let (name_size, desc_size, kind) = (word(at)?, word(at + 4)?, word(at + 8)?);
        let name_at = at + 12;
        let desc_at = name_at.checked_add(padded(name_size)?)?;
        let end = desc_at.checked_add(padded(desc_size)?)?;
        let name = notes.get(name_at..name_at + name_size)?;
        let desc = notes.get(desc_at..desc_at + desc_size)?;
        if kind == NT_GNU_BUILD_ID as usize && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = end;
    }
    None
}

/// The CPU model from /proc/cpuinfo ([`cpu_model_of`]); "unknown" without one.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| cpu_model_of(&text))
        .unwrap_or_else(|| "unknown".into())
}

/// x86's "model name"; arm64 names no model, only the implementer and
/// part numbers (0x41 0xd0c: Arm's Neoverse N1), which say as much.
fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    field("model name").or_else(|| {
        Some(format!(
            "CPU implementer {} part {}",
            field("CPU implementer")?,
            field("CPU part")?
        ))
    })
}

/// `2026-05-01T12:00:00Z`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn the_cpu_model_is_named_on_x86_and_arm64() {
        let x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n";
        assert_eq!(cpu_model_of(x86).as_deref(), Some("AMD EPYC 7B13"));
        let arm64 = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\
                     CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n";
        assert_eq!(
            cpu_model_of(arm64).as_deref(),
            Some("CPU implementer 0x41 part 0xd0c")
        );
        assert_eq!(cpu_model_of("processor\t: 0\n"), None);
    }

    /// A note as the kernel lays it out: sizes and type, then the name and
    /// the description, each padded to 4 bytes.
    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        for w in [name.len() as u32, desc.len() as u32, kind] {
            n.extend(w.to_ne_bytes());
        }
        for part in [name, desc] {
            n.extend(part);
            n.resize(n.len().next_multiple_of(4), 0);
        }
        n
    }

    #[test]
    fn the_build_id_is_read_from_the_kernels_notes() {
        let id: Vec<u8> = (1..=20).collect();
        let xen = note(b"Xen\0", 18, &[0, 0x2f, 0x58, 3, 0, 0, 0, 0]);
        let linux = note(b"Linux\0", 6, b"6.12.0\0");
        let gnu = note(b"GNU\0", NT_GNU_BUILD_ID, &id);
        let notes = [linux.clone(), gnu.clone(), xen.clone()].concat();
        assert_eq!(
            gnu_build_id(&notes).as_deref(),
            Some("0102030405060708090a0b0c0d0e0f1011121314")
        );
        // Another build of the same release: another id.
        let other = note(b"GNU\0", NT_GNU_BUILD_ID, &[0xfa; 20]);
        assert_eq!(
            gnu_build_id(&[linux.clone(), other].concat()).as_deref(),
            Some("fafafafafafafafafafafafafafafafafafafafa")
        );
        // No build id, a GNU note of another type, a cut note: none.
        assert_eq!(gnu_build_id(&[linux.clone(), xen].concat()), None);
        assert_eq!(gnu_build_id(&note(b"GNU\0", 1, &id)), None);
        assert_eq!(gnu_build_id(&gnu[..gnu.len() - 8]), None);
        assert_eq!(gnu_build_id(&[]), None);
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696); // leap day
        assert_eq!(rfc3339_utc(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(rfc3339_utc(t), "2025-12-31T23:59:59Z");
    }
}
