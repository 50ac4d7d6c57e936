//! The guest's architecture: what differs between an x86-64 and an arm64 VM
//! (Debian's name for it, qemu, the console, the ELF machine).

use anyhow::{bail, Result};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arch {
    #[default]
    X86_64,
    Arm64,
}

impl Arch {
    /// `--arch`'s spellings: the kernel's, Debian's and Rust's names.
    pub fn parse(s: &str) -> Result<Arch> {
        Ok(match s {
            "x86_64" | "x86-64" | "amd64" => Arch::X86_64,
            "arm64" | "aarch64" => Arch::Arm64,
            _ => bail!("wants x86_64 or arm64"),
        })
    }

    /// As said to people and in file names: the kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Debian's architecture: package names, release suffixes, apt.
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    pub fn qemu(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
        }
    }

    /// The Debian package that has [`Arch::qemu`].
    pub fn qemu_package(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86",
            Arch::Arm64 => "qemu-system-arm",
        }
    }

    /// The serial console's device in the guest.
    pub fn console(self) -> &'static str {
        match self {
            Arch::X86_64 => "ttyS0",
            Arch::Arm64 => "ttyAMA0",
        }
    }

    /// The ELF e_machine of its executables and kernels.
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::X86_64 => object::elf::EM_X86_64,
            Arch::Arm64 => object::elf::EM_AARCH64,
        }
    }

    /// The architecture this runner was built for: a VM of another one
    /// cannot use KVM and needs a cross build.
    pub fn host() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Arm64),
            _ => None,
        }
    }

    /// `what` for x86_64, `what-ARCH` for another: names in CI's tables,
    /// directories and artifacts (`newest-arm64`, `guest-build-arm64`).
    pub fn tagged(self, what: &str) -> String {
        match self {
            Arch::X86_64 => what.to_owned(),
            other => format!("{what}-{}", other.name()),
        }
    }

    pub fn is_host(self) -> bool {
        Arch::host() == Some(self)
    }
}

/// `--arch`'s value parser (clap's): its message follows the option's name.
pub fn arch(v: &str) -> Result<Arch, String> {
    Arch::parse(v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for (s, a) in [
            ("x86_64", Arch::X86_64),
            ("amd64", Arch::X86_64),
            ("arm64", Arch::Arm64),
            ("aarch64", Arch::Arm64),
        ] {
            assert_eq!(Arch::parse(s).unwrap(), a);
        }
        assert!(Arch::parse("s390x").is_err());
        assert_eq!(Arch::default(), Arch::X86_64);
        assert_eq!(
            (Arch::Arm64.debian(), Arch::Arm64.qemu_package()),
            ("arm64", "qemu-system-arm")
        );
        assert_eq!(Arch::X86_64.elf_machine(), 62);
        assert_eq!(Arch::Arm64.elf_machine(), 183);
        assert_eq!(Arch::X86_64.tagged("6.12"), "6.12");
        assert_eq!(Arch::Arm64.tagged("6.12"), "6.12-arm64");
    }
}
