//! The attach mechanisms: what each one hooks, what it needs from the kernel,
//! and how it is loaded and attached. The BPF side of each is one tiny
//! program in bpf/overhead.bpf.c.

use std::fmt;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::str::FromStr;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, UprobeOpts};

use crate::error::{errno_name, errno_of, Error, Result, ENOTSUPP};
use crate::skel::{OpenOverheadProgs, OverheadProgs, OverheadSkel, OverheadSkelBuilder};
use crate::sys::{self, Tracefs};
use crate::trigger::{Target, Trigger};

/// The kernel function probed by kprobe, kretprobe, fentry and fexit
/// (test_overhead's target). The comm write reaches it once per write.
pub const KFUNC: &str = "__set_task_comm";
/// fmod_ret's target; see prog_fmod_ret in bpf/overhead.bpf.c for why it
/// cannot be KFUNC.
pub const FMOD_RET_KFUNC: &str = "security_file_permission";
/// The tracepoint behind raw_tp and tp (category/name).
pub const TRACEPOINT: (&str, &str) = ("task", "task_rename");

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// The trigger alone, nothing attached: the reference.
    Base(Trigger),
    Kprobe,
    Kretprobe,
    RawTp,
    Tp,
    Fentry,
    Fexit,
    FmodRet,
    Uprobe(Target),
    Uretprobe(Target),
}

use Mechanism::*;

impl Mechanism {
    /// Every measurement, each base just before the mechanisms it is the
    /// reference for.
    pub const ALL: [Mechanism; 17] = [
        Base(Trigger::TaskRename),
        Kprobe,
        Kretprobe,
        RawTp,
        Tp,
        Fentry,
        Fexit,
        FmodRet,
        Base(Trigger::Call(Target::Nop)),
        Uprobe(Target::Nop),
        Uretprobe(Target::Nop),
        Base(Trigger::Call(Target::Push)),
        Uprobe(Target::Push),
        Uretprobe(Target::Push),
        Base(Trigger::Call(Target::Ret)),
        Uprobe(Target::Ret),
        Uretprobe(Target::Ret),
    ];

    /// Stable name, used on the command line, in test names and in the
    /// selftest line: `base`, `kprobe`, ..., `uprobe-nop`, `base-ret`.
    pub fn name(self) -> String {
        match self {
            Base(Trigger::TaskRename) => "base".into(),
            Base(Trigger::Call(t)) => format!("base-{}", t.name()),
            Kprobe => "kprobe".into(),
            Kretprobe => "kretprobe".into(),
            RawTp => "raw_tp".into(),
            Tp => "tp".into(),
            Fentry => "fentry".into(),
            Fexit => "fexit".into(),
            FmodRet => "fmod_ret".into(),
            Uprobe(t) => format!("uprobe-{}", t.name()),
            Uretprobe(t) => format!("uretprobe-{}", t.name()),
        }
    }

    /// What fires it, once per event.
    pub fn trigger(self) -> Trigger {
        match self {
            Base(trigger) => trigger,
            Kprobe | Kretprobe | RawTp | Tp | Fentry | Fexit | FmodRet => Trigger::TaskRename,
            Uprobe(t) | Uretprobe(t) => Trigger::Call(t),
        }
    }

    /// The reference this mechanism's overhead is computed against.
    pub fn base(self) -> Mechanism {
        Base(self.trigger())
    }

    pub fn is_base(self) -> bool {
        matches!(self, Base(_))
    }

    /// Where it attaches, for humans.
    pub fn hook(self) -> String {
        match self {
            Base(_) => "nothing attached".into(),
            Kprobe | Kretprobe | Fentry | Fexit => KFUNC.into(),
            FmodRet => FMOD_RET_KFUNC.into(),
            RawTp | Tp => format!("{}/{}", TRACEPOINT.0, TRACEPOINT.1),
            Uprobe(t) | Uretprobe(t) => t.symbol().into(),
        }
    }

    /// What the kernel must have, for the README table and `--list`.
    pub fn needs(self) -> &'static str {
        match self {
            Base(_) => "nothing",
            Kprobe | Kretprobe => "CONFIG_KPROBES (kprobe PMU or kprobe_events)",
            RawTp => "CONFIG_BPF_EVENTS",
            Tp => "CONFIG_BPF_EVENTS, tracefs",
            Fentry | Fexit => "BTF (CONFIG_DEBUG_INFO_BTF), BPF trampolines",
            FmodRet => "BTF, BPF trampolines, a modifiable target (security_* hook)",
            Uprobe(_) | Uretprobe(_) => "CONFIG_UPROBES (uprobe PMU or uprobe_events)",
        }
    }

    /// Checks what can be checked before loading anything. Returns a
    /// tracefs guard that must outlive the attachment when the mechanism
    /// goes through tracefs. Trampoline support only shows at load time.
    pub fn check_support(self) -> Result<Option<Tracefs>> {
        match self {
            Base(_) | RawTp => Ok(None),
            Kprobe | Kretprobe => sys::probe_support("kprobe"),
            Uprobe(_) | Uretprobe(_) => sys::probe_support("uprobe"),
            Tp => Tracefs::ensure().map(Some),
            Fentry | Fexit | FmodRet => sys::btf_support().map(|()| None),
        }
    }

    /// Loads the skeleton with only this mechanism's program enabled,
    /// counting hits from thread `tid` only, and attaches it. `None` for a
    /// base. Everything is released when the returned value drops.
    pub(crate) fn attach(
        self,
        storage: &mut MaybeUninit<OpenObject>,
        tid: u32,
    ) -> Result<Option<Attached<'_>>> {
        if self.is_base() {
            return Ok(None);
        }
        sys::capture_libbpf_log();
        sys::clear_libbpf_log();

        let mut open = OverheadSkelBuilder::default()
            .open(storage)
            .map_err(|e| Error::failed(format!("{self}: opening the BPF object failed: {e:#}")))?;
        open.maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| Error::failed("BPF object has no .rodata"))?
            .target_tid = tid;
        self.open_program(&mut open.progs).set_autoload(true);
        let skel = open.load().map_err(|e| self.load_error(&e))?;

        let prog = self.program(&skel.progs);
        let link = match self {
            Uprobe(t) | Uretprobe(t) => {
                let exe = std::env::current_exe().map_err(|e| {
                    Error::environment(format!("cannot find this executable for uprobes: {e}"))
                })?;
                let opts = UprobeOpts {
                    retprobe: matches!(self, Uretprobe(_)),
                    func_name: Some(t.symbol().into()),
                    ..Default::default()
                };
                // pid 0: this process only.
                prog.attach_uprobe_with_opts(0, &exe, 0, opts)
            }
            // The rest attach where their SEC() says.
            _ => prog.attach(),
        }
        .map_err(|e| self.attach_error(&e))?;

        let prog_fd = prog.as_fd().try_clone_to_owned().ok();
        Ok(Some(Attached {
            _link: link,
            prog_fd,
            skel,
        }))
    }

    fn open_program<'a, 'obj>(
        self,
        progs: &'a mut OpenOverheadProgs<'obj>,
    ) -> &'a mut libbpf_rs::OpenProgramMut<'obj> {
        match self {
            Kprobe => &mut progs.prog_kprobe,
            Kretprobe => &mut progs.prog_kretprobe,
            RawTp => &mut progs.prog_raw_tp,
            Tp => &mut progs.prog_tp,
            Fentry => &mut progs.prog_fentry,
            Fexit => &mut progs.prog_fexit,
            FmodRet => &mut progs.prog_fmod_ret,
            Uprobe(_) => &mut progs.prog_uprobe,
            Uretprobe(_) => &mut progs.prog_uretprobe,
            Base(_) => unreachable!("a base has no program"),
        }
    }

    fn program<'a, 'obj>(self, progs: &'a OverheadProgs<'obj>) -> &'a libbpf_rs::ProgramMut<'obj> {
        match self {
            Kprobe => &progs.prog_kprobe,
            Kretprobe => &progs.prog_kretprobe,
            RawTp => &progs.prog_raw_tp,
            Tp => &progs.prog_tp,
            Fentry => &progs.prog_fentry,
            Fexit => &progs.prog_fexit,
            FmodRet => &progs.prog_fmod_ret,
            Uprobe(_) => &progs.prog_uprobe,
            Uretprobe(_) => &progs.prog_uretprobe,
            Base(_) => unreachable!("a base has no program"),
        }
    }

    fn is_trampoline(self) -> bool {
        matches!(self, Fentry | Fexit | FmodRet)
    }

    /// Sorts a load failure into "kernel lacks the feature" (a skip) and
    /// everything else (a failure).
    fn load_error(self, err: &libbpf_rs::Error) -> Error {
        let errno = errno_of(err);
        let why = with_libbpf_reason(format!("{err:#}"));
        match errno {
            // We checked privileges before loading, so EPERM here is the
            // kernel refusing trampoline programs (seen under PVM), like
            // ENOTSUPP/EOPNOTSUPP on arches without trampolines.
            Some(n @ (libc::EPERM | libc::EOPNOTSUPP | ENOTSUPP)) if self.is_trampoline() => {
                Error::unsupported(format!(
                    "kernel refused the tracing (BPF trampoline) program at load with {} \
                     although we are privileged: this kernel cannot run fentry/fexit/fmod_ret",
                    errno_name(n)
                ))
            }
            Some(libc::ESRCH) if self.is_trampoline() => Error::failed(format!(
                "{self}: target function {} not found in the kernel's BTF: {why}",
                self.hook()
            )),
            _ => Error::failed(format!("{self}: loading the BPF program failed: {why}")),
        }
    }

    fn attach_error(self, err: &libbpf_rs::Error) -> Error {
        let why = with_libbpf_reason(format!("{err:#}"));
        match (self, errno_of(err)) {
            (Kprobe | Kretprobe, Some(libc::ENOENT | libc::EINVAL)) => Error::failed(format!(
                "{self}: symbol {KFUNC} not found or not probe-able in this kernel \
                 (check /proc/kallsyms): {why}"
            )),
            (Tp | RawTp, Some(libc::ENOENT)) => Error::failed(format!(
                "{self}: tracepoint {}/{} not found in this kernel: {why}",
                TRACEPOINT.0, TRACEPOINT.1
            )),
            (Uprobe(t) | Uretprobe(t), Some(libc::ENOENT | libc::ESRCH)) => Error::failed(format!(
                "{self}: symbol {} not found in this executable (was it stripped?): {why}",
                t.symbol()
            )),
            _ => Error::failed(format!("{self}: attach failed: {why}")),
        }
    }

    /// All mechanism names, for error messages and `--list`.
    pub fn names() -> Vec<String> {
        Self::ALL.iter().map(|m| m.name()).collect()
    }
}

fn with_libbpf_reason(err: String) -> String {
    match sys::libbpf_reason() {
        Some(line) if !err.contains(&line) => format!("{err} (libbpf: {line})"),
        _ => err,
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Mechanism {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown mechanism '{s}': expected one of {}",
                    Self::names().join(", ")
                )
            })
    }
}

/// A loaded, attached program. Dropping it detaches and unloads it.
pub(crate) struct Attached<'obj> {
    // Declared first so it drops first: detach before unloading.
    _link: Link,
    prog_fd: Option<std::os::fd::OwnedFd>,
    skel: OverheadSkel<'obj>,
}

impl Attached<'_> {
    fn hits_ptr(&mut self) -> *mut u64 {
        let bss = self
            .skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the BPF object has a .bss with the hit counter");
        &mut bss.hits
    }

    /// Zeroes the hit counter. Volatile: the BPF program writes this
    /// memory behind the compiler's back.
    pub(crate) fn reset_hits(&mut self) {
        // SAFETY: the pointer is to the mmapped .bss, valid while self lives.
        unsafe { self.hits_ptr().write_volatile(0) }
    }

    pub(crate) fn hits(&mut self) -> u64 {
        // SAFETY: as in reset_hits.
        unsafe { self.hits_ptr().read_volatile() }
    }

    /// The kernel's `run_time_ns` and `run_cnt` for the program (non-zero
    /// only while BPF run-time stats are enabled).
    pub(crate) fn prog_stats(&self) -> Option<(u64, u64)> {
        use std::os::fd::AsRawFd;
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

    #[test]
    fn names_round_trip() {
        for m in Mechanism::ALL {
            assert_eq!(m.name().parse::<Mechanism>(), Ok(m));
        }
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = "kprobes".parse::<Mechanism>().unwrap_err();
        assert!(
            err.contains("unknown mechanism 'kprobes'") && err.contains("kretprobe"),
            "{err}"
        );
    }

    #[test]
    fn every_mechanism_follows_its_base() {
        for (i, m) in Mechanism::ALL.iter().enumerate() {
            let base = Mechanism::ALL.iter().position(|b| *b == m.base()).unwrap();
            assert!(base <= i, "{m} comes before its base {}", m.base());
        }
    }
}
