//! Loading and attaching a mechanism's program, the same way for every
//! catalogue entry: open the skeleton, enable that one program (by its
//! typed field, [`Program`]), load, attach as its kind's [`Attach`] says.
//! A user's object program (`--object`) loads alone from its object
//! instead, and attaches by its section.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf as _, Link, OpenObject, ProgramMut, UprobeOpts};

use libbpf_rs::MapCore as _;

use crate::measure::error::{errno_of, Error, Result};
use crate::measure::kernel::{exe, functions, libbpf_log, tracing_multi};
use crate::measure::mechanism::catalogue::Mechanism;
use crate::measure::mechanism::kind::Attach;
use crate::measure::mechanism::program::{Builtin, ObjectProgram, Program};
use crate::measure::mechanism::target::USDT_PROVIDER;
use crate::measure::mechanism::trigger::Trigger;
use crate::measure::objects::consumer::Consumer;
use crate::measure::objects::object;
use crate::measure::running::attach_cost::{AttachCost, Timing};
use crate::measure::settings::options::Options;
use crate::measure::skel::{types, OpenOverheadSkel, OverheadSkel, OverheadSkelBuilder};
use bpf_overhead_common::bpf_consts::{EXTRA_COUNT, EXTRA_STACK, EXTRA_WORK, MAX_SLOTS};

/// The BPF object loaded for one run: the mechanism's program (attached
/// by [`Loaded::attach`]) and the trigger's driver, if it has one. Dropping
/// it detaches and unloads everything.
pub(crate) struct Loaded<'obj> {
    // Declared first so they drop first: detach before unloading.
    link: Option<Link>,
    /// A link libbpf cannot make ([`tracing_multi`]).
    raw_link: Option<OwnedFd>,
    prog_fd: Option<OwnedFd>,
    /// What the trigger runs by BPF_PROG_TEST_RUN: the kernel loop's
    /// driver, or a user's program under test run.
    test_run_fd: Option<OwnedFd>,
    held: Held<'obj>,
    /// What attaching took, where it is worth telling ([`Attach::EveryFunction`]).
    attach_cost: Option<AttachCost>,
}

/// What holds the loaded programs, and the one to attach.
enum Held<'obj> {
    /// The suite's skeleton: the mechanism's program (none for a base) and
    /// the trigger's driver.
    Skel {
        skel: Box<OverheadSkel<'obj>>,
        program: Option<Builtin>,
    },
    /// A user's object, with only `program` loaded, and the consumer of
    /// its ring buffers (declared first: it stops before they close).
    Object {
        _consumer: Option<Consumer>,
        object: libbpf_rs::Object,
        program: &'static ObjectProgram,
    },
}

/// The skeleton's own program, or `None` for a user's object's.
fn builtin(program: Program) -> Option<Builtin> {
    match program {
        Program::Builtin(b) => Some(b),
        Program::Object(_) => None,
    }
}

/// Loads the skeleton with only `mechanism`'s program and its trigger's
/// driver enabled. `None` when the run needs neither (a comm or call base).
pub(crate) fn load<'obj>(
    mechanism: Mechanism,
    storage: &'obj mut MaybeUninit<OpenObject>,
    opts: &Options,
) -> Result<Option<Loaded<'obj>>> {
    let program = match mechanism.program() {
        Some(Program::Object(p)) => return load_object(mechanism, p).map(Some),
        Some(Program::Builtin(b)) => Some(b),
        None => None,
    };
    let driver = driver_program(mechanism);
    let wanted: Vec<Builtin> = program.into_iter().chain(driver).collect();
    if wanted.is_empty() {
        return Ok(None);
    }
    libbpf_log::capture_libbpf_log();
    libbpf_log::clear_libbpf_log();

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
    rodata.counting = opts.counting.bpf_value();
    rodata.stacktrace = u32::from(opts.stacktrace);
    if mechanism.kind().spec().attach.every_function() {
        // Its program runs on every function and counts the hook's hits.
        rodata.loop_fn_ip =
            functions::kallsyms_address(mechanism.hook()).map_err(|e| e.of(mechanism))?;
    }
    for program in &wanted {
        enable(&mut open, *program);
    }
    if let (Some(program), Some(link_type), Attach::TracingMulti { .. }) = (
        program,
        mechanism.kind().attach_type(),
        mechanism.kind().spec().attach,
    ) {
        // libbpf 1.7 knows no such section: the type and attach type set
        // here, and no attach_btf_id, as 7.3's libbpf loads them.
        let value = tracing_multi::attach_type(link_type).map_err(|e| e.of(mechanism))?;
        let prog = (program.open)(&mut open);
        let ptr = prog.as_libbpf_object().as_ptr();
        // SAFETY: ptr is the open object's program, before load.
        unsafe {
            libbpf_sys::bpf_program__set_type(ptr, libbpf_sys::BPF_PROG_TYPE_TRACING);
            libbpf_sys::bpf_program__set_expected_attach_type(ptr, value);
        }
    }
    let skel = open
        .load()
        .map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;
    let fd_of = |program: Builtin| -> Result<OwnedFd> {
        loaded(&skel, program)
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::failed(format!("dup of a program fd failed: {e}")).of(mechanism))
    };
    let prog_fd = program.map(fd_of).transpose()?;
    let test_run_fd = driver.map(fd_of).transpose()?;
    Ok(Some(Loaded {
        link: None,
        raw_link: None,
        prog_fd,
        test_run_fd,
        held: Held::Skel {
            skel: Box::new(skel),
            program,
        },
        attach_cost: None,
    }))
}

/// Loads a user's object program alone from its object (object.rs).
fn load_object(mechanism: Mechanism, p: &'static ObjectProgram) -> Result<Loaded<'static>> {
    libbpf_log::capture_libbpf_log();
    libbpf_log::clear_libbpf_log();
    let object =
        object::load(p).map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;
    let prog_fd = object::program_fd(&object, p).map_err(|e| e.of(mechanism))?;
    // A test run runs the program itself, by the same call that runs a loop.
    let test_run_fd = match mechanism.trigger() {
        Trigger::TestRun(_) => Some(prog_fd.try_clone().map_err(|e| {
            Error::failed(format!("dup of a program fd failed: {e}")).of(mechanism)
        })?),
        Trigger::TaskRename | Trigger::Call(_) | Trigger::Loop(_) | Trigger::Syscall(_) => None,
    };
    let rings = object
        .maps()
        .filter(|m| m.map_type() == libbpf_rs::MapType::RingBuf)
        .map(|m| m.as_fd().try_clone_to_owned())
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| {
            Error::failed(format!("dup of a ring buffer's fd failed: {e}")).of(mechanism)
        })?;
    // SAFETY: sched_getcpu has no preconditions; this thread is pinned.
    let here = unsafe { libc::sched_getcpu() }.max(0) as usize;
    let consumer = Consumer::start(rings, here).map_err(|e| e.of(mechanism))?;
    Ok(Loaded {
        link: None,
        raw_link: None,
        prog_fd: Some(prog_fd),
        test_run_fd,
        held: Held::Object {
            _consumer: consumer,
            object,
            program: p,
        },
        attach_cost: None,
    })
}

/// Marks `program` to be loaded: every program is `SEC("?...")`, so only
/// what a run enables loads.
fn enable(open: &mut OpenOverheadSkel<'_>, program: Builtin) {
    (program.open)(open).set_autoload(true)
}

/// `program` in the loaded skeleton.
fn loaded<'a, 'obj>(skel: &'a OverheadSkel<'obj>, program: Builtin) -> &'a ProgramMut<'obj> {
    (program.loaded)(skel)
}

/// The program the trigger runs, if any: the kernel-loop driver (a base's
/// counts), or a test run's base program. Always the skeleton's.
fn driver_program(mechanism: Mechanism) -> Option<Builtin> {
    builtin(match mechanism.trigger() {
        Trigger::Loop(driver) if mechanism.is_base() => driver.counting_program(),
        Trigger::Loop(driver) => driver.program(),
        Trigger::TestRun(t) if mechanism.is_base() => t.base_program(),
        Trigger::TestRun(_) | Trigger::TaskRename | Trigger::Call(_) | Trigger::Syscall(_) => {
            return None
        }
    })
}

impl Loaded<'_> {
    /// Attaches the mechanism's program, as its kind says (nothing for a
    /// base).
    pub(crate) fn attach(&mut self, mechanism: Mechanism) -> Result<()> {
        if mechanism.kind().spec().attach == Attach::Nothing {
            return Ok(());
        }
        if let Attach::TracingMulti { every } = mechanism.kind().spec().attach {
            return self.attach_multi(mechanism, every);
        }
        // A link on every function: its functions, and the call timed.
        let every = match mechanism.kind().spec().attach {
            Attach::EveryFunction { .. } => {
                Some(functions::traceable(mechanism.hook()).map_err(|e| e.of(mechanism))?)
            }
            _ => None,
        };
        let timing = every
            .as_ref()
            .map(|names| (names.len() as u64, Timing::start()));
        let link = match &self.held {
            Held::Skel {
                skel,
                program: Some(program),
            } => attach_program(mechanism, loaded(skel, *program), every),
            Held::Skel { program: None, .. } => return Ok(()),
            Held::Object {
                object, program, ..
            } => object::attach(object, program),
        };
        let cost = timing.map(|(functions, timing)| timing.done(functions));
        let link = link.map_err(|e| {
            let why = with_libbpf_reason(&e);
            let why = if on_exe(mechanism) {
                exe::explain_replaced_exe(why)
            } else {
                why
            };
            mechanism.attach_error(errno_of(&e), why)
        })?;
        self.link = Some(link);
        self.attach_cost = cost;
        Ok(())
    }

    /// A tracing_multi link on the hook, or on every function a trampoline
    /// may take, timed as kprobe.multi-all's is.
    fn attach_multi(&mut self, mechanism: Mechanism, every: bool) -> Result<()> {
        let names = match every {
            true => functions::traceable(mechanism.hook())
                .and_then(tracing_multi::unique_in_kallsyms)
                .map_err(|e| e.of(mechanism))?,
            false => vec![mechanism.hook().to_string()],
        };
        let link_type = mechanism
            .kind()
            .attach_type()
            .ok_or_else(|| Error::failed("a tracing_multi kind without its attach type"))?;
        let value = tracing_multi::attach_type(link_type).map_err(|e| e.of(mechanism))?;
        let exits = !matches!(link_type, "BPF_TRACE_FENTRY_MULTI");
        let ids = tracing_multi::btf_ids(&names, exits).map_err(|e| e.of(mechanism))?;
        if ids.is_empty() {
            return Err(Error::failed(format!(
                "no function of {} is in the kernel's BTF",
                names.join(", ")
            ))
            .of(mechanism));
        }
        let prog = self
            .prog_fd
            .as_ref()
            .ok_or_else(|| Error::failed("no program to attach").of(mechanism))?;
        let timing = Timing::start();
        let link = tracing_multi::link(prog.as_fd(), value, &ids).map_err(|e| {
            mechanism.attach_error(
                e.raw_os_error(),
                format!("BPF_LINK_CREATE of {} functions: {e}", ids.len()),
            )
        })?;
        if every {
            self.attach_cost = Some(timing.done(ids.len() as u64));
        }
        self.raw_link = Some(link);
        Ok(())
    }

    pub(crate) fn attach_cost(&self) -> Option<AttachCost> {
        self.attach_cost
    }

    pub(crate) fn test_run_fd(&self) -> Option<BorrowedFd<'_>> {
        self.test_run_fd.as_ref().map(|fd| fd.as_fd())
    }
}

/// Whether `mechanism` attaches to a function of this executable: what a
/// call fires is a function here (a test ties it to the kinds that attach
/// by this executable's path).
pub(crate) fn on_exe(mechanism: Mechanism) -> bool {
    match mechanism.trigger() {
        Trigger::Call(_) => !mechanism.is_base(),
        Trigger::TaskRename | Trigger::Loop(_) | Trigger::Syscall(_) | Trigger::TestRun(_) => false,
    }
}

/// `every`: the functions of an [`Attach::EveryFunction`], none otherwise.
fn attach_program(
    mechanism: Mechanism,
    prog: &ProgramMut<'_>,
    every: Option<Vec<String>>,
) -> libbpf_rs::Result<Link> {
    match mechanism.kind().spec().attach {
        Attach::Uprobe { ret } => {
            let exe = exe::exe_path().map_err(libbpf_rs::Error::from)?;
            let opts = UprobeOpts {
                retprobe: ret,
                func_name: Some(mechanism.hook().into()),
                ..Default::default()
            };
            // pid 0: this process only.
            prog.attach_uprobe_with_opts(0, exe, 0, opts)
        }
        Attach::UprobeMulti { ret, session } => {
            let exe = exe::exe_path().map_err(libbpf_rs::Error::from)?;
            prog.attach_uprobe_multi(0, exe, mechanism.hook(), ret, session)
        }
        Attach::Usdt => {
            let exe = exe::exe_path().map_err(libbpf_rs::Error::from)?;
            let name = match mechanism.trigger() {
                Trigger::Call(target) => target.usdt_note(),
                Trigger::TaskRename
                | Trigger::Loop(_)
                | Trigger::Syscall(_)
                | Trigger::TestRun(_) => None,
            };
            let name = name.ok_or_else(|| {
                libbpf_rs::Error::from(std::io::Error::other(format!(
                    "{mechanism}: a USDT program on a trigger with no USDT note"
                )))
            })?;
            prog.attach_usdt(0, exe, USDT_PROVIDER, name)
        }
        // Where their SEC() says (a base has no program to get here).
        Attach::Section(_) | Attach::Nothing => prog.attach(),
        Attach::EveryFunction { ret } => prog.attach_kprobe_multi(ret, every.unwrap_or_default()),
        Attach::TracingMulti { .. } => Err(libbpf_rs::Error::from(std::io::Error::other(
            "a tracing_multi link is made by Loaded::attach_multi",
        ))),
    }
}

/// libbpf-rs's error, plus libbpf's own account of it when that says more.
fn with_libbpf_reason(err: &libbpf_rs::Error) -> String {
    let err = format!("{err:#}");
    match libbpf_log::libbpf_reason() {
        Some(line) if !err.contains(&line) => format!("{err} (libbpf: {line})"),
        _ => err,
    }
}

/// The skeleton's per-CPU arrays are [`MAX_SLOTS`] long, as common/src/bpf_consts.rs
/// says: this does not compile otherwise.
const _: fn(&types::bss) -> (&[types::counter; MAX_SLOTS], &[u32; MAX_SLOTS]) =
    |bss| (&bss.counters, &bss.producer_tids);

impl Loaded<'_> {
    /// The skeleton's counters; a user's object has none (its hits are
    /// its run count).
    fn bss(&mut self) -> Option<&mut types::bss> {
        match &mut self.held {
            Held::Skel { skel, .. } => Some(
                skel.maps
                    .bss_data
                    .as_deref_mut()
                    .expect("the BPF object has a .bss with the counters"),
            ),
            Held::Object { .. } => None,
        }
    }

    /// Counts events on `cpu` from thread `tid` only (0: from nobody).
    /// Volatile, as every access below: the BPF programs read and write
    /// this memory behind the compiler's back.
    pub(crate) fn count_thread(&mut self, cpu: usize, tid: u32) {
        let Some(bss) = self.bss() else { return };
        let slot = &mut bss.producer_tids[cpu % MAX_SLOTS];
        // SAFETY: the pointer is into the mmapped .bss, valid while self lives.
        unsafe { std::ptr::write_volatile(slot, tid) }
    }

    /// Sets what the comm and call programs do beyond test_overhead's
    /// (their `extra` switch): count (`count`), else `--prog-work`'s steps
    /// (`work`), else the stack alone (`stack`), else nothing; the stack
    /// in every case under --stacktrace. No syscall; a producer on another
    /// CPU sees it after the barrier that starts its run.
    pub(crate) fn set_extra(&mut self, count: bool, work: bool, stack: bool) {
        let Some(bss) = self.bss() else { return };
        let extra = if count {
            EXTRA_COUNT
        } else if work {
            EXTRA_WORK
        } else if stack {
            EXTRA_STACK
        } else {
            0
        };
        // SAFETY: as in count_thread.
        unsafe { std::ptr::write_volatile(&mut bss.extra, extra) }
    }

    /// Zeroes every counter.
    pub(crate) fn reset_hits(&mut self) {
        let Some(bss) = self.bss() else { return };
        for c in bss.counters.iter_mut() {
            // SAFETY: as in count_thread.
            unsafe {
                std::ptr::write_volatile(&mut c.hits, 0);
                std::ptr::write_volatile(&mut c.exits, 0);
            }
        }
    }

    /// Hits counted on `cpu` for its producer.
    pub(crate) fn hits(&mut self, cpu: usize) -> u64 {
        // SAFETY: as in count_thread.
        self.bss().map_or(0, |bss| unsafe {
            std::ptr::read_volatile(&bss.counters[cpu % MAX_SLOTS].hits)
        })
    }

    /// Session exits on `cpu` that found their entry's mark.
    pub(crate) fn session_exits(&mut self, cpu: usize) -> u64 {
        // SAFETY: as in count_thread.
        self.bss().map_or(0, |bss| unsafe {
            std::ptr::read_volatile(&bss.counters[cpu % MAX_SLOTS].exits)
        })
    }

    /// Where the kernel put the JITed code of the program and of the
    /// loop's driver (their first kernel symbols), for the debug log: two
    /// loads of one program land in different places, which may time
    /// differently.
    pub(crate) fn jited_at(&self) -> (Option<u64>, Option<u64>) {
        let at = |fd: &Option<OwnedFd>| fd.as_ref().and_then(jited_code).map(|c| c.0);
        (at(&self.prog_fd), at(&self.test_run_fd))
    }

    /// The JITed code of the program and of a loop's driver, as the
    /// kernel names it in kallsyms: where it starts, how long it is, its
    /// name. For `--explain`'s windows (window.rs) where perf cannot
    /// tell: two syscalls, where reading kallsyms takes a second under
    /// TCG.
    pub(crate) fn jited(&self) -> Vec<(u64, u32, String)> {
        [&self.prog_fd, &self.test_run_fd]
            .into_iter()
            .filter_map(|fd| fd.as_ref().and_then(jited_code))
            .collect()
    }

    /// The kernel's `run_time_ns` and `run_cnt` for the program (non-zero
    /// only while BPF run-time stats are enabled).
    pub(crate) fn prog_stats(&self) -> Option<(u64, u64)> {
        let fd = self.prog_fd.as_ref()?;
        let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
        prog_info(fd, &mut info).map(|i| (i.run_time_ns, i.run_cnt))
    }
}

/// The program `fd`'s first JITed function: its start, its length and
/// its kallsyms name (`bpf_prog_<tag>_<name>`).
fn jited_code(fd: &OwnedFd) -> Option<(u64, u32, String)> {
    let (mut ksym, mut len) = (0u64, 0u32);
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info {
        nr_jited_ksyms: 1,
        jited_ksyms: std::ptr::addr_of_mut!(ksym) as u64,
        nr_jited_func_lens: 1,
        jited_func_lens: std::ptr::addr_of_mut!(len) as u64,
        ..Default::default()
    };
    // The kernel wrote `ksym` and `len` through the pointers `info` carries.
    let i = prog_info(fd, &mut info).filter(|i| i.nr_jited_ksyms > 0)?;
    let name: Vec<u8> = i
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let tag: String = i.tag.iter().map(|b| format!("{b:02x}")).collect();
    let name = format!("bpf_prog_{tag}_{}", String::from_utf8_lossy(&name));
    Some((ksym, len, name))
}

/// `BPF_OBJ_GET_INFO_BY_FD` of the program `fd` into `info` (whose
/// pointers, if any, say where the kernel may write more), or `None` when
/// the kernel refuses.
fn prog_info<'a>(
    fd: &OwnedFd,
    info: &'a mut libbpf_rs::libbpf_sys::bpf_prog_info,
) -> Option<&'a libbpf_rs::libbpf_sys::bpf_prog_info> {
    let mut len = std::mem::size_of_val(info) as u32;
    // SAFETY: info is a valid bpf_prog_info of len bytes; the caller made
    // any buffer it points at large enough for what it asks.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut *info, &mut len)
    };
    (ret == 0).then_some(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::mechanism::kind::SectionHook;
    use crate::measure::mechanism::test_run::{ProgType, TestRun};
    use std::collections::BTreeSet;

    /// The programs of every catalogue entry and trigger, by name as the
    /// object has them.
    fn catalogue_programs() -> Vec<(Option<Mechanism>, Builtin)> {
        // Test runs' bases are made for users' objects, at run time.
        let test_run_bases = ProgType::ALL.iter().filter_map(|&prog_type| {
            let t = TestRun {
                prog_type,
                packet: &[],
            };
            builtin(t.base_program()).map(|p| (None, p))
        });
        Mechanism::all()
            .flat_map(|m| {
                let own = m.program().and_then(builtin).map(|p| (Some(m), p));
                own.into_iter().chain(driver_program(m).map(|p| (None, p)))
            })
            .chain(test_run_bases)
            .collect()
    }

    fn name_and_section(open: &mut OpenOverheadSkel<'_>, program: Builtin) -> (String, String) {
        let prog = (program.open)(open);
        (
            prog.name().to_string_lossy().into_owned(),
            prog.section().to_string_lossy().into_owned(),
        )
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
                Attach::Uprobe { .. }
                | Attach::UprobeMulti { .. }
                | Attach::Usdt
                | Attach::EveryFunction { .. }
                | Attach::TracingMulti { .. } => None,
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

    /// On a timed event a comm or call program adds to test_overhead's
    /// only the switch's load and branch (RETURN_AFTER_EXTRAS): it keeps
    /// no callee-saved register and no stack slot, whose saves and frame
    /// the JIT would add to every event. (--stacktrace's check once did
    /// so: ten more x86 instructions an event, the flag off.)
    #[test]
    fn a_switched_program_keeps_no_register_or_stack_slot() {
        const LD_IMM64: u8 = 0x18;
        const CALL: u8 = 0x85;
        let mut storage = MaybeUninit::uninit();
        let mut open = OverheadSkelBuilder::default().open(&mut storage).unwrap();
        let mut checked = 0;
        for (m, program) in catalogue_programs() {
            let Some(m) = m.filter(|&m| super::super::run::switched(m)) else {
                continue;
            };
            let prog = (program.open)(&mut open);
            for (i, insn) in prog.insns().iter().enumerate() {
                // An ld_imm64's and a call's src_reg says what, not which register.
                let regs = match insn.code {
                    LD_IMM64 => vec![insn.dst_reg()],
                    CALL => vec![],
                    _ => vec![insn.dst_reg(), insn.src_reg()],
                };
                assert!(
                    regs.iter().all(|&r| r < 6),
                    "{m}: instruction {i} of {:?} uses registers {regs:?} (r6 up: saved, frame)",
                    prog.name()
                );
            }
            checked += 1;
        }
        assert!(checked > 20, "only {checked} switched programs");
    }
}
