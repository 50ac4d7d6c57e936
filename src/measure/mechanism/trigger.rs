//! The triggers: what user space does to make a probed kernel or user
//! function run once. Every mechanism is measured through one of these, and
//! each trigger is also measured alone ("base") for reference.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use super::program::{builtin, Program};
use super::syscall::{Firing, Syscall};
use super::target::Target;
use super::test_run::{self, TestRun};
use crate::measure::error::{Error, Result};
use crate::measure::kernel::features;

/// What one event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// One write(2) of a short name to `/proc/self/comm`, which runs
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
    TestRun(test_run::ArmedTestRun),
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

/// Writes the process's name, its main thread's comm, through
/// `/proc/self/comm` from the calling thread, as test_overhead does: the
/// kernel renames a main thread some 10% slower than a thread of its own,
/// so writing our own thread's would time a cheaper base. Puts the name
/// back when dropped.
pub struct CommWriter {
    file: File,
    saved: Vec<u8>,
}

/// Written on every event: test_overhead's and bench rename's buffer,
/// `char buf[] = "test_overhead"` written whole (its NUL too). The name is
/// part of what tp costs: its event copies the old and the new name.
pub const COMM: &[u8] = b"test_overhead\0";

/// The process's name once [`COMM`] is written.
fn comm_name() -> &'static [u8] {
    COMM.strip_suffix(b"\0").unwrap_or(COMM)
}

const COMM_PATH: &str = "/proc/self/comm";

/// The process's name, as `/proc/self/comm` reads (without its newline).
fn process_name() -> std::io::Result<Vec<u8>> {
    let mut name = std::fs::read(COMM_PATH)?;
    if name.last() == Some(&b'\n') {
        name.pop();
    }
    Ok(name)
}

impl CommWriter {
    fn open() -> Result<Self> {
        let saved = process_name()
            .map_err(|e| Error::environment(format!("reading the process name failed: {e}")))?;
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
        let now = process_name()
            .map_err(|e| Error::failed(format!("reading the process name failed: {e}")))?;
        if now != comm_name() {
            return Err(Error::failed(format!(
                "writing {COMM_PATH} did not rename the process: its name is {:?}, expected {:?}",
                String::from_utf8_lossy(&now),
                String::from_utf8_lossy(comm_name())
            )));
        }
        Ok(())
    }
}

impl Drop for CommWriter {
    fn drop(&mut self) {
        // One write of the whole name, as the kernel takes it (at most
        // TASK_COMM_LEN - 1 bytes, so it was read whole).
        // SAFETY: the fd is open for the life of self; saved is a valid buffer.
        let fd = self.file.as_raw_fd();
        let ret =
            unsafe { libc::syscall(libc::SYS_write, fd, self.saved.as_ptr(), self.saved.len()) };
        if ret != self.saved.len() as libc::c_long {
            let err = std::io::Error::last_os_error();
            log::warn!(
                "could not restore the process name {:?}: {err}",
                String::from_utf8_lossy(&self.saved)
            );
        }
    }
}
