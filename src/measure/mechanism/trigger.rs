//! The triggers: what user space does to make a probed kernel or user
//! function run once. Every mechanism is measured through one of these, and
//! each trigger is also measured alone ("base") for reference.

use std::ffi::CString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::prctl;

use super::program::{builtin, Program};
use super::syscall::{Firing, Syscall};
use super::test_run::{self, TestRun};
use crate::measure::error::{Error, Result};
use crate::measure::kernel::features;

/// What one event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// One write(2) of a short name to `/proc/thread-self/comm`, which runs
    /// `__set_task_comm()` and the `task/task_rename` tracepoint (as in the
    /// kernel's test_overhead and bench rename-*).
    TaskRename,
    /// One call of a user-space function of this binary (bench trig-uprobe-*).
    Call(Target),
    /// One iteration of a BPF driver program's loop over a kernel function,
    /// run in batches by BPF_PROG_TEST_RUN (bench trig-*, since 6.10): the
    /// syscall is paid once per batch, not per event.
    Loop(Driver),
    /// One or two system calls from the measuring thread (a user's
    /// object: `--object`, syscall.rs).
    Syscall(Syscall),
    /// Runs of the program itself by BPF_PROG_TEST_RUN, nothing attached
    /// (a user's XDP, tc, socket filter, flow dissector or syscall
    /// program: test_run.rs).
    TestRun(TestRun),
}

/// The kernel function a [`Trigger::Loop`] driver calls once per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Driver {
    /// The helper `bpf_get_numa_node_id()`: kprobe, kretprobe, fentry, fexit.
    Helper,
    /// The kfunc `bpf_modify_return_test_tp()`, which fires the
    /// `bpf_test_run/bpf_trigger_tp` tracepoint: raw_tp, tp, tp_btf, fmod_ret.
    Kfunc,
}

/// The kfunc [`Driver::Kfunc`] calls (net/bpf/test_run.c, CONFIG_NET, 6.10+).
pub const LOOP_KFUNC: &str = "bpf_modify_return_test_tp";

/// Default and largest `--batch`: loop iterations per BPF_PROG_TEST_RUN
/// (upstream's `--trig-batch-iters`).
pub const DEFAULT_BATCH: u32 = 100;
pub const MAX_BATCH: u32 = 1000;

impl Driver {
    /// Its program in bpf/overhead.bpf.c.
    pub const fn program(self) -> Program {
        match self {
            Driver::Helper => builtin!(prog_driver_helper),
            Driver::Kfunc => builtin!(prog_driver_kfunc),
        }
    }

    /// The program a base runs instead: the same loop, counting its own
    /// iterations (upstream's trigger_kernel_count), with nothing attached.
    pub const fn counting_program(self) -> Program {
        match self {
            Driver::Helper => builtin!(prog_count_helper),
            Driver::Kfunc => builtin!(prog_count_kfunc),
        }
    }

    /// The function it calls once per event, where mechanisms attach.
    pub const fn function(self) -> &'static str {
        match self {
            Driver::Helper => "bpf_get_numa_node_id",
            Driver::Kfunc => LOOP_KFUNC,
        }
    }
}

impl Trigger {
    /// First word of the selftest line, e.g. `task_rename` in
    /// `task_rename fentry\t2710K events per sec`.
    pub const fn label(self) -> &'static str {
        match self {
            Trigger::TaskRename => "task_rename",
            Trigger::Call(_) => "uprobe_target",
            Trigger::Loop(_) => "kernel_loop",
            Trigger::Syscall(s) => s.label(),
            Trigger::TestRun(t) => t.label(),
        }
    }

    /// A trigger of the label `label` (a label names a family: every
    /// loop driver is `kernel_loop`), to read a result document's back.
    pub fn by_label(label: &str) -> Option<Trigger> {
        let families = [
            Trigger::TaskRename,
            Trigger::Call(Target::Nop),
            Trigger::Loop(Driver::Helper),
        ];
        let test_run = |prog_type| {
            Trigger::TestRun(TestRun {
                prog_type,
                packet: &test_run::PACKET,
            })
        };
        families
            .into_iter()
            .chain(Syscall::ALL.map(Trigger::Syscall))
            .chain(test_run::ProgType::ALL.map(test_run))
            .find(|t| t.label() == label)
    }

    /// The BPF driver program the trigger needs loaded, if any.
    pub const fn driver(self) -> Option<Driver> {
        match self {
            Trigger::Loop(driver) => Some(driver),
            Trigger::TaskRename | Trigger::Call(_) | Trigger::Syscall(_) | Trigger::TestRun(_) => {
                None
            }
        }
    }

    /// How many times more events than `--iterations` a mechanism run
    /// fires. A loop iteration costs ~14 ns: 100000 of them last 1.4 ms,
    /// too short to time against interrupts; ten times that is still quick
    /// under emulation.
    pub const fn scale(self) -> u64 {
        match self {
            // A test run of a small program is as quick as a loop iteration.
            Trigger::Loop(_) => 10,
            Trigger::TestRun(t) if t.prog_type.on_packet() => 10,
            // One syscall an event, as the syscall triggers.
            Trigger::TestRun(_) => 1,
            Trigger::TaskRename | Trigger::Call(_) | Trigger::Syscall(_) => 1,
        }
    }

    /// What the kernel must have for the trigger itself, checked before
    /// loading anything.
    pub fn check_support(self) -> Result<()> {
        match self {
            Trigger::Loop(Driver::Kfunc) => features::btf_has_function(LOOP_KFUNC).map_err(|why| {
                Error::unsupported(format!(
                    "kernel has no {LOOP_KFUNC}() kfunc (added in 6.10, needs CONFIG_NET): {why}"
                ))
            }),
            Trigger::Call(_) => match self.absent_here() {
                Some(why) => Err(Error::unsupported(why)),
                None => Ok(()),
            },
            // The program type (probed: a kernel may lack a newer one).
            Trigger::TestRun(t) => t.prog_type.check_support(),
            Trigger::TaskRename | Trigger::Loop(Driver::Helper) | Trigger::Syscall(_) => Ok(()),
        }
    }

    /// Why this architecture cannot fire it, if it cannot: no privileges
    /// needed to tell.
    pub fn absent_here(self) -> Option<String> {
        match self {
            Trigger::Call(target) => target.absent_here(),
            Trigger::TaskRename | Trigger::Loop(_) | Trigger::Syscall(_) | Trigger::TestRun(_) => {
                None
            }
        }
    }

    /// How many times more events its base fires than a mechanism run.
    /// A call is ~2 ns: 100000 of them last 0.2 ms, within the jitter of a
    /// single interrupt, which made the uprobes' ratios to base swing
    /// 12–28% between runs. Scaled, a call base lasts about as long as a
    /// comm-write run; rates are per event, so the figures still compare.
    pub const fn base_scale(self) -> u64 {
        match self {
            Trigger::TaskRename | Trigger::Syscall(_) => 1,
            Trigger::Call(_) => 100,
            Trigger::Loop(_) | Trigger::TestRun(_) => Self::scale(self),
        }
    }

    /// Prepares the trigger on the calling thread. The returned value puts
    /// back what it changed (the thread's name) when dropped. A loop needs
    /// its loaded driver program (`batch` iterations a run).
    pub fn arm(self, driver: Option<BorrowedFd<'_>>, batch: u32) -> Result<Armed> {
        match self {
            Trigger::TaskRename | Trigger::Syscall(Syscall::Comm) => {
                CommWriter::open().map(Armed::Comm)
            }
            Trigger::Syscall(s) => Firing::open(s).map(Armed::Syscall),
            // Checked now: once a uprobe is attached, the first byte reads
            // as int3.
            Trigger::Call(target) => target.verify().map(Armed::Call),
            Trigger::Loop(_) => {
                let fd = driver
                    .ok_or_else(|| Error::failed("the kernel-loop trigger has no driver program"))?
                    .try_clone_to_owned()
                    .map_err(|e| Error::failed(format!("dup of the driver's fd failed: {e}")))?;
                Ok(Armed::Loop { driver: fd, batch })
            }
            // The program to run is the "driver": the user's, or the base's.
            Trigger::TestRun(t) => {
                let fd = driver
                    .ok_or_else(|| Error::failed("the test-run trigger has no program to run"))?
                    .try_clone_to_owned()
                    .map_err(|e| Error::failed(format!("dup of the program's fd failed: {e}")))?;
                Ok(Armed::TestRun(t.arm(fd)))
            }
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::TaskRename => f.write_str("task_rename"),
            Trigger::Call(target) => write!(f, "call {}", target.symbol()),
            Trigger::Loop(driver) => write!(f, "kernel loop over {}()", driver.function()),
            Trigger::Syscall(s) => f.write_str(s.describe()),
            Trigger::TestRun(t) => f.write_str(t.describe()),
        }
    }
}

/// A trigger ready to fire on the calling thread.
pub enum Armed {
    Comm(CommWriter),
    Call(unsafe extern "C" fn()),
    Loop { driver: OwnedFd, batch: u32 },
    Syscall(Firing),
    TestRun(test_run::Armed),
}

impl Armed {
    /// Fires `n` events back to back and returns how many it fired: `n`,
    /// or for a loop `n` rounded up to whole batches. This is the timed
    /// loop: nothing else happens in it.
    pub fn fire(&mut self, n: u64) -> Result<u64> {
        match self {
            Armed::Comm(writer) => writer.write_n(n).map(|()| n),
            Armed::Call(f) => {
                let f = std::hint::black_box(*f);
                for _ in 0..n {
                    // SAFETY: the targets take no arguments, touch no memory
                    // and preserve every callee-saved register.
                    unsafe { f() };
                }
                Ok(n)
            }
            Armed::Loop { driver, batch } => {
                let runs = n.div_ceil(u64::from(*batch));
                for _ in 0..runs {
                    run_driver(driver, *batch)?;
                }
                Ok(runs * u64::from(*batch))
            }
            Armed::Syscall(firing) => firing.fire(n).map(|()| n),
            Armed::TestRun(run) => run.fire(n).map(|()| n),
        }
    }

    /// Checks that the events really happened (comm writes: the name
    /// changed), so a trigger that silently does nothing fails loudly.
    /// (Call targets are checked when armed; loop drivers on every run.)
    pub fn verify(&self) -> Result<()> {
        match self {
            Armed::Comm(writer) => writer.verify(),
            Armed::Call(_) | Armed::Loop { .. } | Armed::Syscall(_) | Armed::TestRun(_) => Ok(()),
        }
    }
}

/// One BPF_PROG_TEST_RUN of a loop driver, which returns its iteration
/// count: anything but `batch` means the loop did not run as loaded.
fn run_driver(driver: &OwnedFd, batch: u32) -> Result<()> {
    let mut opts = libbpf_rs::libbpf_sys::bpf_test_run_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_test_run_opts>() as _,
        ..Default::default()
    };
    // SAFETY: opts is a valid, sized bpf_test_run_opts; the fd is open.
    let ret =
        unsafe { libbpf_rs::libbpf_sys::bpf_prog_test_run_opts(driver.as_raw_fd(), &mut opts) };
    if ret != 0 {
        let err = std::io::Error::from_raw_os_error(-ret);
        return Err(Error::failed(format!(
            "BPF_PROG_TEST_RUN of the loop driver failed: {err}"
        ))
        .with_errno(Some(-ret)));
    }
    if opts.retval != batch {
        return Err(Error::failed(format!(
            "the loop driver ran {} iterations, not {batch}",
            opts.retval
        )));
    }
    Ok(())
}

/// Writes the calling thread's comm. `/proc/self/comm` would rename the
/// main thread instead, and `cargo test` runs each test on a worker thread.
pub struct CommWriter {
    file: File,
    saved: CString,
}

/// Written on every event. Short enough that the kernel copies it whole.
pub const COMM: &[u8] = b"test";

const COMM_PATH: &str = "/proc/thread-self/comm";

impl CommWriter {
    fn open() -> Result<Self> {
        let saved = prctl::get_name()
            .map_err(|e| Error::environment(format!("reading the thread name failed: {e}")))?;
        let file = OpenOptions::new()
            .write(true)
            .open(COMM_PATH)
            .map_err(|e| {
                Error::environment(format!(
                    "cannot open {COMM_PATH} for writing: {e} (is /proc mounted?)"
                ))
            })?;
        Ok(Self { file, saved })
    }

    fn write_n(&mut self, n: u64) -> Result<()> {
        let fd = self.file.as_raw_fd();
        for _ in 0..n {
            // write(2) as a single-threaded process makes it. glibc's
            // write() is a cancellation point: in a process with more than
            // one thread it wraps the syscall in two atomic updates of the
            // thread's cancel state, which cost a comm write ~15% here
            // (a C loop: 7.4M/s single-threaded, 6.2M/s on a second
            // thread, 7.3M/s there with the raw syscall). std's Write
            // would add a retry loop that hides short writes.
            // SAFETY: fd is open for the life of self; COMM is a valid buffer.
            let ret = unsafe { libc::syscall(libc::SYS_write, fd, COMM.as_ptr(), COMM.len()) };
            if ret != COMM.len() as libc::c_long {
                let err = std::io::Error::last_os_error();
                return Err(Error::failed(format!("write to {COMM_PATH} failed: {err}")));
            }
        }
        Ok(())
    }

    fn verify(&self) -> Result<()> {
        let now = prctl::get_name()
            .map_err(|e| Error::failed(format!("reading the thread name failed: {e}")))?;
        if now.as_bytes() != COMM {
            return Err(Error::failed(format!(
                "writing {COMM_PATH} did not rename the thread: its name is {now:?}, expected {:?}",
                String::from_utf8_lossy(COMM)
            )));
        }
        Ok(())
    }
}

impl Drop for CommWriter {
    fn drop(&mut self) {
        if let Err(e) = prctl::set_name(&self.saved) {
            log::warn!("could not restore the thread name {:?}: {e}", self.saved);
        }
    }
}

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
    /// [`USDT_PROVIDER`]:[`USDT_NAME`], as sys/sdt.h writes one.
    Usdt,
}

/// The USDT note's provider and name, written only here: a macro, so
/// that `concat!` can put them into the note's assembly below.
macro_rules! usdt {
    (provider) => {
        "bpf_overhead"
    };
    (name) => {
        "usdt_nop"
    };
}

/// The USDT note's provider.
pub const USDT_PROVIDER: &str = usdt!(provider);
/// The USDT note's name.
pub const USDT_NAME: &str = usdt!(name);
/// `provider:name`, as the catalogue shows the probe.
pub const USDT_PROBE: &str = concat!(usdt!(provider), ":", usdt!(name));

impl Target {
    pub const ALL: [Target; 5] = [
        Target::Nop,
        Target::Push,
        Target::Ret,
        Target::Nop5,
        Target::Usdt,
    ];

    /// The ELF symbol libbpf resolves the uprobe against.
    pub const fn symbol(self) -> &'static str {
        match self {
            Target::Nop => "uprobe_target_nop",
            Target::Push => "uprobe_target_push",
            Target::Ret => "uprobe_target_ret",
            Target::Nop5 => "uprobe_target_nop5",
            Target::Usdt => "usdt_target",
        }
    }

    /// The architectures (`std::env::consts::ARCH`) this binary has the
    /// target on: nop5 is an x86 instruction, the rest exist everywhere.
    pub const fn arches(self) -> &'static [&'static str] {
        match self {
            Target::Nop5 => &["x86_64"],
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
        if code != want {
            return Err(Error::failed(format!(
                "{} starts with bytes {code:02x?}, not {want:02x?}: the measurement would be of another instruction",
                self.symbol(),
            )));
        }
        Ok(f)
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
    })
}

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
        Target::Nop5 => return None,
    })
}

/// The targets, written in assembly because the first instruction is what
/// is being measured, and a Rust function may begin with anything (a trial
/// Rust target started with an instruction the kernel single-steps: 30x
/// slower). Each is `symbol: [instructions]`; usdt_target's probe is at
/// label 990. `.type` matters: libbpf only resolves STT_FUNC symbols.
macro_rules! uprobe_targets {
    (function: $function:literal, progbits: $progbits:literal,
     $($symbol:literal: [$($insn:literal),+],)+) => {
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
            // The USDT note for the nop at 990, laid out as sys/sdt.h's
            // _SDT_ASM_BODY does on 64-bit targets: the probe's address,
            // the .stapsdt.base anchor (which lets readers undo
            // prelinking), no semaphore, provider, name, no arguments.
            ".pushsection .note.stapsdt,\"\",\"note\"",
            ".balign 4",
            ".4byte 992f-991f, 994f-993f, 3",
            "991: .asciz \"stapsdt\"",
            "992: .balign 4",
            "993: .8byte 990b",
            ".8byte _.stapsdt.base",
            ".8byte 0",
            concat!(".asciz \"", usdt!(provider), "\""),
            concat!(".asciz \"", usdt!(name), "\""),
            ".asciz \"\"",
            "994: .balign 4",
            ".popsection",
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
    "usdt_target": ["990: nop", "ret"],
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
    "usdt_target": ["990: nop", "ret"],
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(note.contains(&format!("Name: {USDT_NAME}\n")), "{note}");
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
