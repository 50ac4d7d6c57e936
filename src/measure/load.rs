//! Loading and attaching a mechanism's program, the same way for every
//! catalogue entry: open the skeleton, enable that one program (by name),
//! load, attach as its kind says.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, ProgramMut, UprobeOpts};

use super::catalogue::{Kind, Mechanism};
use super::error::{errno_of, Error, Result};
use super::sys;
use crate::skel::{OverheadSkel, OverheadSkelBuilder};

/// A loaded, attached program. Dropping it detaches and unloads it.
pub(crate) struct Attached<'obj> {
    // Declared first so it drops first: detach before unloading.
    _link: Link,
    prog_fd: OwnedFd,
    skel: OverheadSkel<'obj>,
}

/// Loads the skeleton with only `mechanism`'s program enabled, counting
/// hits from thread `tid` only, and attaches it. `None` for a base.
pub(crate) fn attach(
    mechanism: Mechanism,
    storage: &mut MaybeUninit<OpenObject>,
    tid: u32,
) -> Result<Option<Attached<'_>>> {
    let Some(program) = mechanism.program() else {
        return Ok(None);
    };
    sys::capture_libbpf_log();
    sys::clear_libbpf_log();

    let mut open = OverheadSkelBuilder::default().open(storage).map_err(|e| {
        Error::failed(format!("opening the BPF object failed: {e:#}")).of(mechanism)
    })?;
    open.maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| Error::failed("BPF object has no .rodata"))?
        .target_tid = tid;
    let mut enabled = false;
    for mut prog in open.open_object_mut().progs_mut() {
        if prog.name() == program {
            prog.set_autoload(true);
            enabled = true;
        }
    }
    if !enabled {
        return Err(
            Error::failed(format!("bpf/overhead.bpf.c has no program {program}")).of(mechanism),
        );
    }
    let skel = open
        .load()
        .map_err(|e| mechanism.load_error(errno_of(&e), with_libbpf_reason(&e)))?;

    let prog = skel
        .object()
        .progs_mut()
        .find(|p| p.name() == program)
        .expect("the program enabled above is in the loaded object");
    let link = attach_program(mechanism, &prog)
        .map_err(|e| mechanism.attach_error(errno_of(&e), with_libbpf_reason(&e)))?;
    let prog_fd = prog
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::failed(format!("dup of the program fd failed: {e}")).of(mechanism))?;
    Ok(Some(Attached {
        _link: link,
        prog_fd,
        skel,
    }))
}

fn attach_program(mechanism: Mechanism, prog: &ProgramMut<'_>) -> libbpf_rs::Result<Link> {
    match mechanism.kind() {
        Kind::Uprobe { ret } => {
            let exe = std::env::current_exe().map_err(libbpf_rs::Error::from)?;
            let opts = UprobeOpts {
                retprobe: ret,
                func_name: Some(mechanism.hook().into()),
                ..Default::default()
            };
            // pid 0: this process only.
            prog.attach_uprobe_with_opts(0, &exe, 0, opts)
        }
        // The rest attach where their SEC() says.
        _ => prog.attach(),
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
        let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: info is a valid bpf_prog_info of len bytes.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                self.prog_fd.as_raw_fd(),
                &mut info,
                &mut len,
            )
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
            .filter_map(Mechanism::program)
            .map(String::from)
            .collect();
        assert_eq!(in_object, in_catalogue);
        // Each one is "?"-declared: only the one enabled per run loads.
        for prog in open.open_object().progs() {
            assert!(!prog.autoload(), "{:?} is auto-loaded", prog.name());
        }
    }
}
