//! Loading and attaching a mechanism's program, the same way for every
//! catalogue entry: open the skeleton, enable that one program (by name),
//! load, attach as its kind says.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, ProgramMut, UprobeOpts};

use super::bpf_consts::MAX_SLOTS;
use super::catalogue::{Kind, Mechanism};
use super::error::{errno_of, Error, Result};
use super::object;
use super::options::Options;
use super::skel::{types, OverheadSkel, OverheadSkelBuilder};
use super::sys;
use super::trigger::{Trigger, USDT_NAME, USDT_PROVIDER};

/// The BPF object loaded for one run: the mechanism's program (attached
/// by [`Loaded::attach`]) and the trigger's driver, if it has one. Dropping
/// it detaches and unloads everything.
pub(crate) struct Loaded<'obj> {
    // Declared first so it drops first: detach before unloading.
    link: Option<Link>,
    prog_fd: Option<OwnedFd>,
    driver_fd: Option<OwnedFd>,
    held: Held<'obj>,
}

/// What holds the loaded program: the suite's skeleton, or a user's
/// object (`--object`).
enum Held<'obj> {
    Skel(Box<OverheadSkel<'obj>>),
    Object(libbpf_rs::Object),
}

/// Loads the skeleton with only `mechanism`'s program and its trigger's
/// driver enabled. `None` when the run needs neither (a comm or call base).
pub(crate) fn load<'obj>(
    mechanism: Mechanism,
    storage: &'obj mut MaybeUninit<OpenObject>,
    opts: &Options,
) -> Result<Option<Loaded<'obj>>> {
    let driver = driver_program(mechanism);
    let wanted: Vec<&str> = mechanism.program().into_iter().chain(driver).collect();
    if wanted.is_empty() {
        return Ok(None);
    }
    sys::capture_libbpf_log();
    sys::clear_libbpf_log();
    if let Kind::Object(p) = mechanism.kind() {
        let obj = object::load(p)
            .map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;
        return Ok(Some(Loaded {
            link: None,
            prog_fd: Some(object::program_fd(&obj, p).map_err(|e| e.of(mechanism))?),
            driver_fd: None,
            held: Held::Object(obj),
        }));
    }

    let mut open = OverheadSkelBuilder::default().open(storage).map_err(|e| {
        Error::failed(format!("opening the BPF object failed: {e:#}")).of(mechanism)
    })?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| Error::failed("BPF object has no .rodata"))?;
    rodata.batch_iters = opts.batch.get();
    rodata.prog_work = opts.prog_work.get();
    let mut enabled = 0;
    for mut prog in open.open_object_mut().progs_mut() {
        if wanted.iter().any(|w| prog.name() == *w) {
            prog.set_autoload(true);
            enabled += 1;
        }
    }
    if enabled != wanted.len() {
        return Err(Error::failed(format!(
            "bpf/overhead.bpf.c lacks one of the programs {}",
            wanted.join(", ")
        ))
        .of(mechanism));
    }
    let skel = open
        .load()
        .map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;
    let fd_of = |name: &str| -> Result<OwnedFd> {
        let prog = skel
            .object()
            .progs()
            .find(|p| p.name() == name)
            .expect("the programs enabled above are in the loaded object");
        prog.as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::failed(format!("dup of a program fd failed: {e}")).of(mechanism))
    };
    let prog_fd = mechanism.program().map(fd_of).transpose()?;
    let driver_fd = driver.map(fd_of).transpose()?;
    Ok(Some(Loaded {
        link: None,
        prog_fd,
        driver_fd,
        held: Held::Skel(Box::new(skel)),
    }))
}

/// The kernel-loop driver `mechanism` runs, if any: a base's counts.
fn driver_program(mechanism: Mechanism) -> Option<&'static str> {
    let driver = mechanism.trigger().driver()?;
    Some(if mechanism.is_base() {
        driver.counting_program()
    } else {
        driver.program()
    })
}

impl Loaded<'_> {
    /// Attaches the mechanism's program, as its kind says (nothing for a
    /// base).
    pub(crate) fn attach(&mut self, mechanism: Mechanism) -> Result<()> {
        let Some(program) = mechanism.program() else {
            return Ok(());
        };
        let link = match (&self.held, mechanism.kind()) {
            (Held::Object(obj), Kind::Object(p)) => object::attach(obj, p),
            (Held::Skel(skel), _) => {
                let prog = skel
                    .object()
                    .progs_mut()
                    .find(|p| p.name() == program)
                    .expect("the mechanism's program is in the loaded object");
                attach_program(mechanism, &prog)
            }
            (Held::Object(_), _) => unreachable!("only an object program loads an object"),
        };
        let link = link.map_err(|e| {
            let why = with_libbpf_reason(&e);
            let why = if on_exe(mechanism) {
                sys::explain_replaced_exe(why)
            } else {
                why
            };
            mechanism.attach_error(errno_of(&e), why)
        })?;
        self.link = Some(link);
        Ok(())
    }

    pub(crate) fn driver_fd(&self) -> Option<BorrowedFd<'_>> {
        self.driver_fd.as_ref().map(|fd| fd.as_fd())
    }
}

/// Whether `mechanism` attaches to a function of this executable: what a
/// call fires is a function here (a test ties it to the kinds that attach
/// by this executable's path).
pub(crate) fn on_exe(mechanism: Mechanism) -> bool {
    match mechanism.trigger() {
        Trigger::Call(_) => !mechanism.is_base(),
        Trigger::TaskRename | Trigger::Loop(_) | Trigger::Syscall(_) => false,
    }
}

fn attach_program(mechanism: Mechanism, prog: &ProgramMut<'_>) -> libbpf_rs::Result<Link> {
    match mechanism.kind() {
        Kind::Uprobe { ret } => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            let opts = UprobeOpts {
                retprobe: ret,
                func_name: Some(mechanism.hook().into()),
                ..Default::default()
            };
            // pid 0: this process only.
            prog.attach_uprobe_with_opts(0, exe, 0, opts)
        }
        Kind::UprobeMulti { ret } => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_uprobe_multi(0, exe, mechanism.hook(), ret, false)
        }
        Kind::UprobeSession => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_uprobe_multi(0, exe, mechanism.hook(), false, true)
        }
        Kind::Usdt => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_usdt(0, exe, USDT_PROVIDER, USDT_NAME)
        }
        // These attach where their SEC() says.
        Kind::Base
        | Kind::Kprobe
        | Kind::RawTracepoint
        | Kind::Tracepoint
        | Kind::BtfTracepoint
        | Kind::Trampoline
        | Kind::KprobeMulti
        | Kind::KprobeSession
        | Kind::Object(_) => prog.attach(),
    }
}

/// libbpf-rs's error, plus libbpf's own account of it when that says more.
fn with_libbpf_reason(err: &libbpf_rs::Error) -> String {
    let err = format!("{err:#}");
    match sys::libbpf_reason() {
        Some(line) if !err.contains(&line) => format!("{err} (libbpf: {line})"),
        _ => err,
    }
}

/// The skeleton's per-CPU arrays are [`MAX_SLOTS`] long, as bpf_consts.rs
/// says: this does not compile otherwise.
const _: fn(&types::bss) -> (&[types::counter; MAX_SLOTS], &[u32; MAX_SLOTS]) =
    |bss| (&bss.counters, &bss.producer_tids);

impl Loaded<'_> {
    /// The skeleton's counters; a user's object has none (its hits are
    /// its run count).
    fn bss(&mut self) -> Option<&mut types::bss> {
        match &mut self.held {
            Held::Skel(skel) => Some(
                skel.maps
                    .bss_data
                    .as_deref_mut()
                    .expect("the BPF object has a .bss with the counters"),
            ),
            Held::Object(_) => None,
        }
    }

    /// Whether the program counts its own hits in the skeleton's counters.
    pub(crate) fn counts_hits(&self) -> bool {
        matches!(self.held, Held::Skel(_))
    }

    /// Counts events on `cpu` from thread `tid` only (0: from nobody).
    /// Volatile, as every access below: the BPF programs read and write
    /// this memory behind the compiler's back.
    pub(crate) fn register(&mut self, cpu: usize, tid: u32) {
        let Some(bss) = self.bss() else { return };
        let slot = &mut bss.producer_tids[cpu % MAX_SLOTS];
        // SAFETY: the pointer is into the mmapped .bss, valid while self lives.
        unsafe { std::ptr::write_volatile(slot, tid) }
    }

    /// Zeroes every counter.
    pub(crate) fn reset_hits(&mut self) {
        let Some(bss) = self.bss() else { return };
        for c in bss.counters.iter_mut() {
            // SAFETY: as in register.
            unsafe {
                std::ptr::write_volatile(&mut c.hits, 0);
                std::ptr::write_volatile(&mut c.exits, 0);
            }
        }
    }

    /// Hits counted on `cpu` for its producer.
    pub(crate) fn hits(&mut self, cpu: usize) -> u64 {
        // SAFETY: as in register.
        self.bss().map_or(0, |bss| unsafe {
            std::ptr::read_volatile(&bss.counters[cpu % MAX_SLOTS].hits)
        })
    }

    /// Session exits on `cpu` that found their entry's mark.
    pub(crate) fn session_exits(&mut self, cpu: usize) -> u64 {
        // SAFETY: as in register.
        self.bss().map_or(0, |bss| unsafe {
            std::ptr::read_volatile(&bss.counters[cpu % MAX_SLOTS].exits)
        })
    }

    /// The kernel's `run_time_ns` and `run_cnt` for the program (non-zero
    /// only while BPF run-time stats are enabled).
    pub(crate) fn prog_stats(&self) -> Option<(u64, u64)> {
        let fd = self.prog_fd.as_ref()?;
        let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: info is a valid bpf_prog_info of len bytes.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len)
        };
        (ret == 0).then_some((info.run_time_ns, info.run_cnt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every catalogue program is in bpf/overhead.bpf.c, and every program
    /// there belongs to a catalogue entry. Opening parses the ELF only: no
    /// privileges needed.
    #[test]
    fn the_catalogue_and_the_bpf_object_agree() {
        let mut storage = MaybeUninit::uninit();
        let open = OverheadSkelBuilder::default().open(&mut storage).unwrap();
        let in_object: BTreeSet<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        let in_catalogue: BTreeSet<String> = Mechanism::all()
            .flat_map(|m| m.program().into_iter().chain(driver_program(m)))
            .map(String::from)
            .collect();
        assert_eq!(in_object, in_catalogue);
        // Each one is "?"-declared: only the one enabled per run loads.
        for prog in open.open_object().progs() {
            assert!(!prog.autoload(), "{:?} is auto-loaded", prog.name());
        }
    }

    /// The mechanisms a call fires are those attach_program attaches by
    /// this executable's path.
    #[test]
    fn what_attaches_to_this_executable() {
        for m in Mechanism::all() {
            let by_path = matches!(
                m.kind(),
                Kind::Uprobe { .. } | Kind::UprobeMulti { .. } | Kind::UprobeSession | Kind::Usdt
            );
            assert_eq!(on_exe(m), by_path, "{m}");
        }
    }
}
