//! Loading and attaching a mechanism's program, the same way for every
//! catalogue entry: open the skeleton, enable that one program (by its
//! typed field, [`Program`]), load, attach as its kind's [`Attach`] says.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, ProgramMut, UprobeOpts};

use super::bpf_consts::MAX_SLOTS;
use super::catalogue::Mechanism;
use super::error::{errno_of, Error, Result};
use super::kind::Attach;
use super::options::Options;
use super::program::Program;
use super::skel::{types, OpenOverheadSkel, OverheadSkel, OverheadSkelBuilder};
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
    skel: OverheadSkel<'obj>,
}

/// Loads the skeleton with only `mechanism`'s program and its trigger's
/// driver enabled. `None` when the run needs neither (a comm or call base).
pub(crate) fn load<'obj>(
    mechanism: Mechanism,
    storage: &'obj mut MaybeUninit<OpenObject>,
    opts: &Options,
) -> Result<Option<Loaded<'obj>>> {
    let driver = driver_program(mechanism);
    let wanted: Vec<Program> = mechanism.program().into_iter().chain(driver).collect();
    if wanted.is_empty() {
        return Ok(None);
    }
    sys::capture_libbpf_log();
    sys::clear_libbpf_log();

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
    for program in &wanted {
        enable(&mut open, *program);
    }
    let skel = open
        .load()
        .map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;
    let fd_of = |program: Program| -> Result<OwnedFd> {
        loaded(&skel, program)
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::failed(format!("dup of a program fd failed: {e}")).of(mechanism))
    };
    let prog_fd = mechanism.program().map(fd_of).transpose()?;
    let driver_fd = driver.map(fd_of).transpose()?;
    Ok(Some(Loaded {
        link: None,
        prog_fd,
        driver_fd,
        skel,
    }))
}

/// Marks `program` to be loaded: every program is `SEC("?...")`, so only
/// what a run enables loads.
fn enable(open: &mut OpenOverheadSkel<'_>, program: Program) {
    match program {
        Program::Builtin(builtin) => (builtin.open)(open).set_autoload(true),
    }
}

/// `program` in the loaded skeleton.
fn loaded<'a, 'obj>(skel: &'a OverheadSkel<'obj>, program: Program) -> &'a ProgramMut<'obj> {
    match program {
        Program::Builtin(builtin) => (builtin.loaded)(skel),
    }
}

/// The kernel-loop driver `mechanism` runs, if any: a base's counts.
fn driver_program(mechanism: Mechanism) -> Option<Program> {
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
        let prog = loaded(&self.skel, program);
        let link = attach_program(mechanism, prog).map_err(|e| {
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
        Trigger::TaskRename | Trigger::Loop(_) => false,
    }
}

fn attach_program(mechanism: Mechanism, prog: &ProgramMut<'_>) -> libbpf_rs::Result<Link> {
    match mechanism.kind().spec().attach {
        Attach::Uprobe { ret } => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            let opts = UprobeOpts {
                retprobe: ret,
                func_name: Some(mechanism.hook().into()),
                ..Default::default()
            };
            // pid 0: this process only.
            prog.attach_uprobe_with_opts(0, exe, 0, opts)
        }
        Attach::UprobeMulti { ret, session } => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_uprobe_multi(0, exe, mechanism.hook(), ret, session)
        }
        Attach::Usdt => {
            let exe = sys::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_usdt(0, exe, USDT_PROVIDER, USDT_NAME)
        }
        // Where their SEC() says (a base has no program to get here).
        Attach::Section(_) | Attach::Nothing => prog.attach(),
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
    fn bss(&mut self) -> &mut types::bss {
        self.skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the BPF object has a .bss with the counters")
    }

    /// Counts events on `cpu` from thread `tid` only (0: from nobody).
    /// Volatile, as every access below: the BPF programs read and write
    /// this memory behind the compiler's back.
    pub(crate) fn register(&mut self, cpu: usize, tid: u32) {
        let slot = &mut self.bss().producer_tids[cpu % MAX_SLOTS];
        // SAFETY: the pointer is into the mmapped .bss, valid while self lives.
        unsafe { std::ptr::write_volatile(slot, tid) }
    }

    /// Zeroes every counter.
    pub(crate) fn reset_hits(&mut self) {
        for c in self.bss().counters.iter_mut() {
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
        unsafe { std::ptr::read_volatile(&self.bss().counters[cpu % MAX_SLOTS].hits) }
    }

    /// Session exits on `cpu` that found their entry's mark.
    pub(crate) fn session_exits(&mut self, cpu: usize) -> u64 {
        // SAFETY: as in register.
        unsafe { std::ptr::read_volatile(&self.bss().counters[cpu % MAX_SLOTS].exits) }
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
    use crate::measure::kind::SectionHook;
    use std::collections::BTreeSet;

    /// The programs of every catalogue entry and trigger, by name as the
    /// object has them.
    fn catalogue_programs() -> Vec<(Option<Mechanism>, Program)> {
        Mechanism::all()
            .flat_map(|m| {
                let own = m.program().map(|p| (Some(m), p));
                own.into_iter().chain(driver_program(m).map(|p| (None, p)))
            })
            .collect()
    }

    fn name_and_section(open: &mut OpenOverheadSkel<'_>, program: Program) -> (String, String) {
        match program {
            Program::Builtin(builtin) => {
                let prog = (builtin.open)(open);
                (
                    prog.name().to_string_lossy().into_owned(),
                    prog.section().to_string_lossy().into_owned(),
                )
            }
        }
    }

    /// Every program in bpf/overhead.bpf.c belongs to a catalogue entry
    /// or a trigger. Opening parses the ELF only: no privileges needed.
    #[test]
    fn the_catalogue_and_the_bpf_object_agree() {
        let mut storage = MaybeUninit::uninit();
        let mut open = OverheadSkelBuilder::default().open(&mut storage).unwrap();
        let in_object: BTreeSet<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        let in_catalogue: BTreeSet<String> = catalogue_programs()
            .into_iter()
            .map(|(_, p)| name_and_section(&mut open, p).0)
            .collect();
        assert_eq!(in_object, in_catalogue);
        // Each one is "?"-declared: only the one enabled per run loads.
        for prog in open.open_object().progs() {
            assert!(!prog.autoload(), "{:?} is auto-loaded", prog.name());
        }
    }

    /// The hook is said once, in the entry: a program's SEC() is one its
    /// kind allows, and names the entry's hook where it attaches by its
    /// section, and no target where the hook is given at attach time.
    #[test]
    fn each_section_is_its_kind_and_names_its_hook() {
        let mut storage = MaybeUninit::uninit();
        let mut open = OverheadSkelBuilder::default().open(&mut storage).unwrap();
        for (m, program) in catalogue_programs() {
            let Some(m) = m else { continue };
            let (name, section) = name_and_section(&mut open, program);
            let section = section.strip_prefix('?').unwrap_or(&section);
            let (prefix, target) = match section.split_once('/') {
                Some((prefix, target)) => (prefix, Some(target)),
                None => (section, None),
            };
            let spec = m.kind().spec();
            assert!(
                spec.sections.contains(&prefix),
                "{m}: {name}'s SEC(\"{section}\") is not one of {:?}",
                spec.sections
            );
            let hook = m.hook();
            let expected = match spec.attach {
                Attach::Section(SectionHook::Whole) => Some(hook),
                Attach::Section(SectionHook::Name) => hook.rsplit('/').next(),
                Attach::Uprobe { .. } | Attach::UprobeMulti { .. } | Attach::Usdt => None,
                Attach::Nothing => panic!("{m} attaches nothing but has {name}"),
            };
            assert_eq!(
                target, expected,
                "{m}: {name}'s SEC(\"{section}\") and the entry's hook {hook} differ"
            );
        }
    }

    /// The mechanisms a call fires are those attach_program attaches by
    /// this executable's path.
    #[test]
    fn what_attaches_to_this_executable() {
        for m in Mechanism::all() {
            assert_eq!(on_exe(m), m.kind().spec().attach.on_exe(), "{m}");
        }
    }
}
