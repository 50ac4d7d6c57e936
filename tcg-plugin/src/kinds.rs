//! The instructions a count prices wrong, known by their bytes when they
//! are translated: on a real CPU a trap's return, a system call, a
//! serializing barrier or a mitigation's indirect branch costs hundreds
//! of cycles in one instruction. x86-64 only, as the marks.

/// A class of instruction worth counting apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `int3` (and `int $3`): a breakpoint trap, as a uprobe takes.
    Int3,
    /// `syscall`.
    Syscall,
    /// `iret`: the return from an exception or interrupt.
    Iret,
    /// `sysret`: the return from a system call.
    Sysret,
    /// `lfence`, `mfence`, `cpuid`, `wrmsr`, `verw`: barriers and the
    /// speculation mitigations' instructions.
    Serializing,
    /// An indirect call or jump (`call *`, `jmp *`).
    Indirect,
    /// `ret`.
    Return,
}

impl Class {
    /// As counts.txt spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Int3 => "int3",
            Class::Syscall => "syscall",
            Class::Iret => "iret",
            Class::Sysret => "sysret",
            Class::Serializing => "serializing",
            Class::Indirect => "indirect",
            Class::Return => "ret",
        }
    }
}

/// The class of the instruction `bytes`, if it is one of [`Class`]'s.
pub fn classify(bytes: &[u8]) -> Option<Class> {
    // Legacy prefixes, then at most one REX prefix.
    let mut i = 0;
    while bytes.get(i).is_some_and(|b| {
        matches!(
            b,
            0x66 | 0x67 | 0xF2 | 0xF3 | 0x2E | 0x3E | 0x26 | 0x64 | 0x65 | 0x36 | 0xF0
        )
    }) {
        i += 1;
    }
    if bytes.get(i).is_some_and(|b| (0x40..=0x4F).contains(b)) {
        i += 1;
    }
    let reg = |modrm: u8| (modrm >> 3) & 7;
    match bytes.get(i..)? {
        [0xCC, ..] | [0xCD, 0x03, ..] => Some(Class::Int3),
        [0xCF, ..] => Some(Class::Iret),
        [0xC3, ..] | [0xC2, ..] => Some(Class::Return),
        [0x0F, 0x05, ..] => Some(Class::Syscall),
        [0x0F, 0x07, ..] => Some(Class::Sysret),
        [0x0F, 0x30, ..] | [0x0F, 0xA2, ..] => Some(Class::Serializing),
        [0x0F, 0xAE, 0xE8, ..] | [0x0F, 0xAE, 0xF0, ..] => Some(Class::Serializing),
        [0x0F, 0x00, m, ..] if reg(*m) == 5 => Some(Class::Serializing),
        [0xFF, m, ..] if matches!(reg(*m), 2..=5) => Some(Class::Indirect),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each class is spelled as one of the kinds xtask's --explain reads
    /// and calibrate prices (common's one list).
    #[test]
    fn every_class_is_one_of_the_kinds() {
        use bpf_overhead_common::kinds::KINDS;
        for c in [
            Class::Int3,
            Class::Syscall,
            Class::Iret,
            Class::Sysret,
            Class::Serializing,
            Class::Indirect,
            Class::Return,
        ] {
            assert!(KINDS.contains(&c.name()), "{c:?} is {}", c.name());
        }
    }

    #[test]
    fn classes_are_read_from_the_bytes() {
        let cases: [(&[u8], Option<Class>); 16] = [
            (&[0xCC], Some(Class::Int3)),
            (&[0x48, 0xCF], Some(Class::Iret)),
            (&[0xC3], Some(Class::Return)),
            (&[0xF3, 0xC3], Some(Class::Return)),
            (&[0x0F, 0x05], Some(Class::Syscall)),
            (&[0x48, 0x0F, 0x07], Some(Class::Sysret)),
            (&[0x0F, 0xAE, 0xE8], Some(Class::Serializing)),
            (&[0x0F, 0x30], Some(Class::Serializing)),
            // verw (%rip+disp32): modrm 0x2d, reg 5.
            (&[0x0F, 0x00, 0x2D, 0, 0, 0, 0], Some(Class::Serializing)),
            // verr: reg 4, not a mitigation.
            (&[0x0F, 0x00, 0x25, 0, 0, 0, 0], None),
            (&[0xFF, 0xD0], Some(Class::Indirect)),
            (&[0x41, 0xFF, 0xE3], Some(Class::Indirect)),
            // inc/dec and push through 0xFF are not branches.
            (&[0xFF, 0xC0], None),
            (&[0xFF, 0x30], None),
            (&[0x90], None),
            (&[0x0F, 0x1F, 0x44, 0, 0], None),
        ];
        for (bytes, class) in cases {
            assert_eq!(classify(bytes), class, "{bytes:x?}");
        }
    }
}
