//! The user functions that uprobes and USDT probes fire on, written in
//! assembly so that their first instruction is the one measured, and
//! checked to be before a run.

pub use bpf_overhead_common::document::Site;

use crate::measure::error::{Error, Result};
use crate::measure::kernel::features;

/// The user functions probed by uprobes, as in the kernel's bench
/// (benchs/bench_trigger.c). Their first instruction decides the uprobe's
/// cost: the kernel emulates `nop` and `push %rbp` in place but must
/// single-step anything else out of line, e.g. `ret`. Each architecture
/// has its own (arm64's below, at its `code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// First instruction `nop` (emulated).
    Nop,
    /// First instruction `push %rbp`, a frame-pointer prologue (emulated);
    /// on arm64 the frame-record store `stp x29, x30, [sp, #-16]!`.
    Push,
    /// First instruction `ret` (single-stepped).
    Ret,
    /// First instruction the 5-byte `nopl 0x0(%rax,%rax,1)`, which recent
    /// kernels optimize from a trap into a call (Jiri Olsa's series).
    /// x86_64 only.
    Nop5,
    /// A USDT probe point (a `nop`) described by a `.note.stapsdt` note,
    /// [`USDT_PROVIDER`]:`usdt_nop`, as sys/sdt.h writes one.
    Usdt,
    /// A USDT probe point on a 5-byte nop (`usdt_nop5`), as USDT probes
    /// move to so that a kernel can optimize them as `uprobe-nop5`.
    /// x86_64 only.
    UsdtNop5,
    /// First instruction the 10-byte `cs nopw 0x0(%rax,%rax,1)`, the one
    /// kernels optimize from 7.3 on (bench's `uprobe_target_nop10`).
    /// x86_64 only.
    Nop10,
    /// A USDT probe on the `nop; nop10` combo of 7.3's usdt.h
    /// (`usdt_nop10`), placed as 7.3's libbpf places it: on the nop10
    /// where the kernel has its uprobe syscall, else on the nop. Ours
    /// (1.7) knows only the nop,nop5 combo, so a second note
    /// (`usdt_nop10_moved`) marks the nop10 for it. x86_64 only.
    UsdtNop10,
}

/// The USDT note's provider and name, written only here: a macro, so
/// that `concat!` can put them into the note's assembly below.
macro_rules! usdt {
    (provider) => {
        "bpf_overhead"
    };
    (nop) => {
        "usdt_nop"
    };
    (nop5) => {
        "usdt_nop5"
    };
    (nop10) => {
        "usdt_nop10"
    };
    (nop10_moved) => {
        "usdt_nop10_moved"
    };
}

/// The USDT notes' provider.
pub const USDT_PROVIDER: &str = usdt!(provider);
/// `provider:name` of the probe on a nop, as the catalogue shows it.
pub const USDT_PROBE: &str = concat!(usdt!(provider), ":", usdt!(nop));
/// `provider:name` of the probe on a 5-byte nop.
pub const USDT_NOP5_PROBE: &str = concat!(usdt!(provider), ":", usdt!(nop5));
/// `provider:name` of the probe on the nop,nop10 combo.
pub const USDT_NOP10_PROBE: &str = concat!(usdt!(provider), ":", usdt!(nop10));

impl Target {
    pub const ALL: [Target; 8] = [
        Target::Nop,
        Target::Push,
        Target::Ret,
        Target::Nop5,
        Target::Nop10,
        Target::Usdt,
        Target::UsdtNop5,
        Target::UsdtNop10,
    ];

    /// The name of the USDT note at the target, if it is a USDT probe.
    pub const fn usdt_name(self) -> Option<&'static str> {
        match self {
            Target::Usdt => Some(usdt!(nop)),
            Target::UsdtNop5 => Some(usdt!(nop5)),
            Target::UsdtNop10 => Some(usdt!(nop10)),
            Target::Nop | Target::Push | Target::Ret | Target::Nop5 | Target::Nop10 => None,
        }
    }

    /// The ELF symbol libbpf resolves the uprobe against.
    pub const fn symbol(self) -> &'static str {
        match self {
            Target::Nop => "uprobe_target_nop",
            Target::Push => "uprobe_target_push",
            Target::Ret => "uprobe_target_ret",
            Target::Nop5 => "uprobe_target_nop5",
            Target::Usdt => "usdt_target",
            Target::UsdtNop5 => "usdt_target_nop5",
            Target::Nop10 => "uprobe_target_nop10",
            Target::UsdtNop10 => "usdt_target_nop10",
        }
    }

    /// The architectures (`std::env::consts::ARCH`) this binary has the
    /// target on: nop5 is an x86 instruction, the rest exist everywhere.
    pub const fn arches(self) -> &'static [&'static str] {
        match self {
            Target::Nop5 | Target::UsdtNop5 | Target::Nop10 | Target::UsdtNop10 => &["x86_64"],
            Target::Nop | Target::Push | Target::Ret | Target::Usdt => &["x86_64", "aarch64"],
        }
    }

    /// Whether this binary has the target.
    pub fn exists_here(self) -> bool {
        code(self).is_some()
    }

    /// Why a mechanism calling the target cannot run on this architecture,
    /// if it cannot.
    pub fn absent_here(self) -> Option<String> {
        (!self.exists_here()).then(|| {
            format!(
                "{} is not on {}: it exists on {} only",
                self.symbol(),
                std::env::consts::ARCH,
                self.arches().join(", ")
            )
        })
    }

    /// The machine code the target starts with, on this architecture.
    pub fn first_bytes(self) -> Option<&'static [u8]> {
        code(self).map(|(_, bytes)| bytes)
    }

    /// The function, once its code is checked to start with
    /// [`Target::first_bytes`]; unsupported where the architecture has no
    /// such target.
    pub fn verify(self) -> Result<unsafe extern "C" fn()> {
        let (f, want) =
            code(self).ok_or_else(|| Error::unsupported(self.absent_here().unwrap_or_default()))?;
        // SAFETY: the function's code is mapped, readable and longer than
        // its first instruction.
        let code = unsafe { std::slice::from_raw_parts(f as *const u8, want.len()) };
        if !same_instruction(want, code, self.operands()) {
            return Err(Error::failed(format!(
                "{} starts with bytes {code:02x?}, not {want:02x?}: the measurement would be of another instruction",
                self.symbol(),
            )));
        }
        Ok(f)
    }
}

/// What a probe left at `now`, read back at a probe placed on `built`
/// (whose last `operands` bytes are a nop's operands) from this process's
/// own text while it is attached and after it fired: a uprobe writes an
/// int3 there, which a kernel that optimizes the probe then rewrites into
/// a call (a system call into a trampoline, no trap).
pub fn site_of(built: &[u8], now: &[u8], operands: usize) -> Site {
    match now.first() {
        Some(0xcc) => Site::Int3,
        _ if same_instruction(built, now, operands) => Site::Untouched,
        _ => Site::Call,
    }
}

/// Whether `now` is still the instruction(s) `built`, whose last
/// `operands` bytes are a nop's operands and may hold anything.
fn same_instruction(built: &[u8], now: &[u8], operands: usize) -> bool {
    let fixed = built.len().saturating_sub(operands);
    now.len() == built.len() && now[..fixed] == built[..fixed]
}

impl Target {
    /// The USDT note a probe on the target attaches by: the nop,nop10
    /// combo's where 7.3's libbpf would place it ([`Target::UsdtNop10`]).
    pub fn usdt_note(self) -> Option<&'static str> {
        match self {
            Target::UsdtNop10 if features::uprobe_syscall() => Some(usdt!(nop10_moved)),
            Target::Nop
            | Target::Push
            | Target::Ret
            | Target::Nop5
            | Target::Nop10
            | Target::Usdt
            | Target::UsdtNop5
            | Target::UsdtNop10 => self.usdt_name(),
        }
    }

    /// Where a probe on the target sits from the function's start: the
    /// nop10 of the nop,nop10 combo where the probe moves there, else its
    /// first byte.
    fn probed_offset(self) -> usize {
        match self {
            Target::UsdtNop10 if features::uprobe_syscall() => 1,
            Target::UsdtNop10 => 0,
            Target::Nop
            | Target::Push
            | Target::Ret
            | Target::Nop5
            | Target::Nop10
            | Target::Usdt
            | Target::UsdtNop5 => 0,
        }
    }

    /// How many of the target's last bytes are a nop's operands: the
    /// nop10's SIB and displacement, which a kernel that unoptimizes a
    /// uprobe there leaves holding its call (7.3's
    /// arch/x86/kernel/uprobes.c, int3_update_unoptimize), so that the
    /// process's text keeps them for the rest of its life. The kernel
    /// itself checks only the five bytes before them.
    fn operands(self) -> usize {
        match self {
            Target::Nop10 | Target::UsdtNop10 => 5,
            Target::Nop
            | Target::Push
            | Target::Ret
            | Target::Nop5
            | Target::Usdt
            | Target::UsdtNop5 => 0,
        }
    }

    /// What a probe attached here left at its instruction, read now (see
    /// [`Site`]); `None` where the architecture has no such target.
    pub fn site(self) -> Option<Site> {
        let (f, built) = code(self)?;
        let at = self.probed_offset();
        let built = &built[at..];
        // SAFETY: as in verify: the code is mapped, readable and at least
        // as long as the bytes it was built with.
        let now = unsafe { std::slice::from_raw_parts((f as *const u8).add(at), built.len()) };
        log::debug!("{}+{at} reads {now:02x?}", self.symbol());
        Some(site_of(built, now, self.operands()))
    }
}

/// A target's function and first instruction on x86_64.
#[cfg(target_arch = "x86_64")]
fn code(target: Target) -> Option<(unsafe extern "C" fn(), &'static [u8])> {
    Some(match target {
        Target::Nop => (uprobe_target_nop, &[0x90]), // nop
        Target::Usdt => (usdt_target, &[0x90]),
        Target::Push => (uprobe_target_push, &[0x55]), // push %rbp
        Target::Ret => (uprobe_target_ret, &[0xc3]),   // ret
        // nopl 0x0(%rax,%rax,1)
        Target::Nop5 => (uprobe_target_nop5, &[0x0f, 0x1f, 0x44, 0x00, 0x00]),
        Target::UsdtNop5 => (usdt_target_nop5, &[0x0f, 0x1f, 0x44, 0x00, 0x00]),
        Target::Nop10 => (uprobe_target_nop10, &NOP10),
        // nop; nop10, as 7.3's usdt.h writes USDT_NOP
        Target::UsdtNop10 => (usdt_target_nop10, &NOP_NOP10),
    })
}

/// cs nopw 0x0(%rax,%rax,1)
#[cfg(target_arch = "x86_64")]
const NOP10: [u8; 10] = [0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00];
#[cfg(target_arch = "x86_64")]
const NOP_NOP10: [u8; 11] = [
    0x90, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// A target's function and first instruction word (little-endian) on
/// aarch64. The kernel simulates `nop` and the frame-record store
/// `stp x29, x30, [sp, #-16]!` (arch/arm64/kernel/probes), and must
/// single-step `ret`.
#[cfg(target_arch = "aarch64")]
fn code(target: Target) -> Option<(unsafe extern "C" fn(), &'static [u8])> {
    const NOP: &[u8] = &0xd503201f_u32.to_le_bytes();
    const STP_FP_LR: &[u8] = &0xa9bf7bfd_u32.to_le_bytes(); // stp x29, x30, [sp, #-16]!
    const RET: &[u8] = &0xd65f03c0_u32.to_le_bytes();
    Some(match target {
        Target::Nop => (uprobe_target_nop, NOP),
        Target::Usdt => (usdt_target, NOP),
        Target::Push => (uprobe_target_push, STP_FP_LR),
        Target::Ret => (uprobe_target_ret, RET),
        Target::Nop5 | Target::UsdtNop5 | Target::Nop10 | Target::UsdtNop10 => return None,
    })
}

/// The targets, written in assembly because the first instruction is what
/// is being measured, and a Rust function may begin with anything (a trial
/// Rust target started with an instruction the kernel single-steps: 30x
/// slower). Each is `symbol: [instructions]`, and each USDT probe `name
/// at symbol` (its name as in `usdt!`). `.type` matters: libbpf only resolves STT_FUNC symbols.
macro_rules! uprobe_targets {
    (function: $function:literal, progbits: $progbits:literal,
     $($symbol:literal: [$($insn:literal),+],)+
     usdt: [$($probe:ident at $at:literal,)+]) => {
        std::arch::global_asm!(
            concat!(".pushsection .text.uprobe_targets,\"ax\",", $progbits),
            $(
                concat!(".globl ", $symbol),
                concat!(".type ", $symbol, ",", $function),
                concat!($symbol, ":"),
                $($insn,)+
                concat!(".size ", $symbol, ", .-", $symbol),
            )+
            ".popsection",
            // A USDT note for each probe, at its target's first
            // instruction, laid out as sys/sdt.h's _SDT_ASM_BODY does on
            // 64-bit targets: the probe's address, the .stapsdt.base
            // anchor (which lets readers undo prelinking), no semaphore,
            // provider, name, no arguments.
            $(
                ".pushsection .note.stapsdt,\"\",\"note\"",
                ".balign 4",
                ".4byte 992f-991f, 994f-993f, 3",
                "991: .asciz \"stapsdt\"",
                "992: .balign 4",
                concat!("993: .8byte ", $at),
                ".8byte _.stapsdt.base",
                ".8byte 0",
                concat!(".asciz \"", usdt!(provider), "\""),
                concat!(".asciz \"", usdt!($probe), "\""),
                ".asciz \"\"",
                "994: .balign 4",
                ".popsection",
            )+
            ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat",
            ".weak _.stapsdt.base",
            ".hidden _.stapsdt.base",
            "_.stapsdt.base: .space 1",
            ".size _.stapsdt.base, 1",
            ".popsection",
        );
    };
}

#[cfg(target_arch = "x86_64")]
uprobe_targets! {
    function: "@function", progbits: "@progbits",
    "uprobe_target_nop": ["nop", "ret"],
    "uprobe_target_push": ["push rbp", "mov rbp, rsp", "pop rbp", "ret"],
    "uprobe_target_ret": ["ret"],
    "uprobe_target_nop5": [".byte 0x0f, 0x1f, 0x44, 0x00, 0x00", "ret"],
    "usdt_target": ["nop", "ret"],
    "usdt_target_nop5": [".byte 0x0f, 0x1f, 0x44, 0x00, 0x00", "ret"],
    "uprobe_target_nop10": [".byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00", "ret"],
    "usdt_target_nop10": [
        "nop",
        ".byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00",
        "ret"
    ],
    usdt: [
        nop at "usdt_target",
        nop5 at "usdt_target_nop5",
        nop10 at "usdt_target_nop10",
        nop10_moved at "usdt_target_nop10 + 1",
    ]
}

// The frame record goes as a C compiler's prologue puts it.
#[cfg(target_arch = "aarch64")]
uprobe_targets! {
    function: "%function", progbits: "%progbits",
    "uprobe_target_nop": ["nop", "ret"],
    "uprobe_target_push": [
        "stp x29, x30, [sp, #-16]!",
        "mov x29, sp",
        "ldp x29, x30, [sp], #16",
        "ret"
    ],
    "uprobe_target_ret": ["ret"],
    "usdt_target": ["nop", "ret"],
    usdt: [nop at "usdt_target",]
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("bpf-overhead's uprobe targets are written for x86_64 and aarch64 only");

extern "C" {
    fn uprobe_target_nop();
    fn uprobe_target_push();
    fn uprobe_target_ret();
    #[cfg(target_arch = "x86_64")]
    fn uprobe_target_nop5();
    fn usdt_target();
    #[cfg(target_arch = "x86_64")]
    fn usdt_target_nop5();
    #[cfg(target_arch = "x86_64")]
    fn uprobe_target_nop10();
    #[cfg(target_arch = "x86_64")]
    fn usdt_target_nop10();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::mechanism::trigger::Trigger;
    #[test]
    fn each_target_starts_with_its_instruction() {
        for target in Target::ALL {
            if target.exists_here() {
                target.verify().unwrap();
            } else {
                let err = target.verify().unwrap_err();
                assert!(err.is_unsupported(), "{err}");
                let want = format!("not on {}", std::env::consts::ARCH);
                assert!(err.reason().contains(&want), "{err}");
            }
        }
    }

    /// 7.3 leaves a nop10 it unoptimized holding the call in its
    /// operands (bytes read in a 7.3.4 guest): still the nop10, and a
    /// site nothing is attached to.
    #[test]
    fn a_nop10_keeps_its_identity_whatever_its_operands() {
        let built = [0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00];
        let left = [0x66, 0x2e, 0x0f, 0x1f, 0x84, 0xe8, 0xd6, 0x9c, 0x10, 0x00];
        assert!(same_instruction(&built, &left, 5));
        assert!(!same_instruction(&built, &left, 0));
        assert_eq!(site_of(&built, &left, 5), Site::Untouched);
        let mut trapping = left;
        trapping[0] = 0xcc;
        assert_eq!(site_of(&built, &trapping, 5), Site::Int3);
        // lea -0x80(%rsp),%rsp; call: the optimized uprobe
        let optimized = [0x48, 0x8d, 0x64, 0x24, 0x80, 0xe8, 0xd6, 0x9c, 0x10, 0x00];
        assert_eq!(site_of(&built, &optimized, 5), Site::Call);
        let other = [0x66, 0x2e, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x00, 0x00, 0x00];
        assert!(!same_instruction(&built, &other, 5));
    }

    /// The declared architectures match the code this binary has.
    #[test]
    fn targets_exist_where_declared() {
        for target in Target::ALL {
            assert_eq!(
                target.exists_here(),
                target.arches().contains(&std::env::consts::ARCH),
                "{target:?}"
            );
        }
        assert!(Target::Nop.exists_here());
        assert_eq!(Target::Nop5.exists_here(), cfg!(target_arch = "x86_64"));
    }

    /// The USDT note is what readelf, and so libbpf, read: provider, name,
    /// and a location inside usdt_target.
    #[test]
    fn the_usdt_note_reads_back() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output()
            .expect("readelf (binutils) runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let note = text
            .split("stapsdt")
            .find(|n| n.contains(&format!("Provider: {USDT_PROVIDER}")))
            .unwrap_or_else(|| panic!("no {USDT_PROVIDER} USDT note in:\n{text}"));
        assert!(note.contains("Name: usdt_nop\n"), "{note}");
        #[cfg(target_arch = "x86_64")]
        assert!(text.contains("Name: usdt_nop5\n"), "{text}");
        let location = note
            .split("Location: ")
            .nth(1)
            .and_then(|l| l.split(',').next())
            .and_then(|hex| u64::from_str_radix(hex.trim().trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| panic!("no location in {note}"));
        let symbols = std::process::Command::new("nm").arg(&exe).output().unwrap();
        let symbols = String::from_utf8_lossy(&symbols.stdout);
        let start = symbols
            .lines()
            .find(|l| l.ends_with(" usdt_target"))
            .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
            .expect("usdt_target in the symbol table");
        assert_eq!(
            location, start,
            "the probe is usdt_target's first instruction"
        );
    }

    #[test]
    fn targets_return() {
        let mut armed = Trigger::Call(Target::Push).arm(None, 1).unwrap();
        armed.fire(10).unwrap();
        armed.verify().unwrap();
    }
}
