//! The triggers: what user space does to make a probed kernel or user
//! function run once. Every mechanism is measured through one of these, and
//! each trigger is also measured alone ("base") for reference.

use std::ffi::{CStr, CString};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;

use nix::sys::prctl;

use super::error::{Error, Result};

/// What one event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// One write(2) of a short name to `/proc/thread-self/comm`, which runs
    /// `__set_task_comm()` and the `task/task_rename` tracepoint (as in the
    /// kernel's test_overhead and bench rename-*).
    TaskRename,
    /// One call of a user-space function of this binary (bench trig-uprobe-*).
    Call(Target),
}

impl Trigger {
    /// First word of the selftest line, e.g. `task_rename` in
    /// `task_rename fentry\t2710K events per sec`.
    pub const fn label(self) -> &'static str {
        match self {
            Trigger::TaskRename => "task_rename",
            Trigger::Call(_) => "uprobe_target",
        }
    }

    /// How many times more events its base fires than a mechanism run.
    /// A call is ~2 ns: 100000 of them last 0.2 ms, within the jitter of a
    /// single interrupt, which made the uprobes' ratios to base swing
    /// 12–28% between runs. Scaled, a call base lasts about as long as a
    /// comm-write run; rates are per event, so the figures still compare.
    pub const fn base_scale(self) -> u64 {
        match self {
            Trigger::TaskRename => 1,
            Trigger::Call(_) => 100,
        }
    }

    /// Prepares the trigger on the calling thread. The returned value puts
    /// back what it changed (the thread's name) when dropped.
    pub fn arm(self) -> Result<Armed> {
        match self {
            Trigger::TaskRename => CommWriter::open().map(Armed::Comm),
            // Checked now: once a uprobe is attached, the first byte reads
            // as int3.
            Trigger::Call(target) => target.verify().map(|()| Armed::Call(target)),
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::TaskRename => f.write_str("task_rename"),
            Trigger::Call(target) => write!(f, "call {}", target.symbol()),
        }
    }
}

/// A trigger ready to fire on the calling thread.
pub enum Armed {
    Comm(CommWriter),
    Call(Target),
}

impl Armed {
    /// Fires `n` events back to back. This is the timed loop: nothing else
    /// happens in it.
    pub fn fire(&mut self, n: u64) -> Result<()> {
        match self {
            Armed::Comm(writer) => writer.write_n(n),
            Armed::Call(target) => {
                let f = std::hint::black_box(target.function());
                for _ in 0..n {
                    // SAFETY: the targets take no arguments, touch no memory
                    // and preserve every callee-saved register.
                    unsafe { f() };
                }
                Ok(())
            }
        }
    }

    /// Checks that the events really happened (comm writes: the name
    /// changed), so a trigger that silently does nothing fails loudly.
    /// (Call targets are checked when armed.)
    pub fn verify(&self) -> Result<()> {
        match self {
            Armed::Comm(writer) => writer.verify(),
            Armed::Call(_) => Ok(()),
        }
    }
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

    /// The name the thread had before the run (restored on drop).
    pub fn saved_name(&self) -> &CStr {
        &self.saved
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
/// single-step anything else out of line, e.g. `ret`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// First instruction `nop` (emulated).
    Nop,
    /// First instruction `push %rbp`, a frame-pointer prologue (emulated).
    Push,
    /// First instruction `ret` (single-stepped).
    Ret,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Nop, Target::Push, Target::Ret];

    /// Short name used in mechanism names: `uprobe-nop`, `base-push`...
    pub const fn name(self) -> &'static str {
        match self {
            Target::Nop => "nop",
            Target::Push => "push",
            Target::Ret => "ret",
        }
    }

    /// The ELF symbol libbpf resolves the uprobe against.
    pub const fn symbol(self) -> &'static str {
        match self {
            Target::Nop => "uprobe_target_nop",
            Target::Push => "uprobe_target_push",
            Target::Ret => "uprobe_target_ret",
        }
    }

    /// The machine code the target must start with.
    pub fn first_byte(self) -> u8 {
        match self {
            Target::Nop => 0x90,  // nop
            Target::Push => 0x55, // push %rbp
            Target::Ret => 0xc3,  // ret
        }
    }

    /// Fails unless the code starts with [`Target::first_byte`].
    pub fn verify(self) -> Result<()> {
        // SAFETY: the function's code is mapped and readable.
        let byte = unsafe { (self.function() as *const u8).read() };
        if byte != self.first_byte() {
            return Err(Error::failed(format!(
                "{} starts with byte {byte:#04x}, not {:#04x}: the measurement would be of another instruction",
                self.symbol(),
                self.first_byte()
            )));
        }
        Ok(())
    }

    pub fn function(self) -> unsafe extern "C" fn() {
        match self {
            Target::Nop => uprobe_target_nop,
            Target::Push => uprobe_target_push,
            Target::Ret => uprobe_target_ret,
        }
    }
}

// Written in assembly because the first instruction is what is being
// measured, and a Rust function may begin with anything (a trial Rust target
// started with an instruction the kernel single-steps: 30x slower).
// `.type @function` matters: libbpf only resolves STT_FUNC symbols.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.uprobe_targets,\"ax\",@progbits",
    ".globl uprobe_target_nop",
    ".type uprobe_target_nop,@function",
    "uprobe_target_nop:",
    "nop",
    "ret",
    ".size uprobe_target_nop, .-uprobe_target_nop",
    ".globl uprobe_target_push",
    ".type uprobe_target_push,@function",
    "uprobe_target_push:",
    "push rbp",
    "mov rbp, rsp",
    "pop rbp",
    "ret",
    ".size uprobe_target_push, .-uprobe_target_push",
    ".globl uprobe_target_ret",
    ".type uprobe_target_ret,@function",
    "uprobe_target_ret:",
    "ret",
    ".size uprobe_target_ret, .-uprobe_target_ret",
    ".popsection",
);

#[cfg(not(target_arch = "x86_64"))]
compile_error!("bpf-overhead's uprobe targets are written for x86_64 only");

extern "C" {
    fn uprobe_target_nop();
    fn uprobe_target_push();
    fn uprobe_target_ret();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_starts_with_its_instruction() {
        for target in Target::ALL {
            let first = target.function() as *const u8;
            // SAFETY: the function's code is mapped and readable.
            let byte = unsafe { first.read() };
            assert_eq!(
                byte,
                target.first_byte(),
                "{} starts with {byte:#04x}",
                target.symbol()
            );
        }
    }

    #[test]
    fn targets_return() {
        let mut armed = Trigger::Call(Target::Push).arm().unwrap();
        armed.fire(10).unwrap();
        armed.verify().unwrap();
    }
}
