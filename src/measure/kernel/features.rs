//! Kernel features a mechanism needs, probed with a precise reason: BTF,
//! the BPF LSM, functions and attach types in BTF, run-time statistics.

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use nix::mount::{mount, umount2, MntFlags, MsFlags};

use super::tracefs::private_mount_namespace;
use crate::measure::error::{Error, Result};

/// Checks for the kernel BTF that fentry/fexit/fmod_ret attach through.
pub fn btf_support() -> Result<()> {
    const BTF: &str = "/sys/kernel/btf/vmlinux";
    if Path::new(BTF).exists() {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "kernel has no BTF ({BTF} missing; needs CONFIG_DEBUG_INFO_BTF)"
        )))
    }
}

const SECURITYFS: &str = "/sys/kernel/security";

/// Checks that the BPF LSM is active: an LSM program on a kernel built
/// without it, or booted without `bpf` in `lsm=`, loads and attaches but
/// never runs. Reads securityfs's list of the active LSMs, where it is
/// not mounted from a thread of its own that mounts it in a mount
/// namespace of its own and ends: the namespace goes with it, and the
/// calling thread keeps its own (in a new one, /proc/self/exe does not
/// resolve on 5.10, and the usdt attach through it failed). Worked out
/// once per process.
pub fn bpf_lsm_support() -> Result<()> {
    static ACTIVE: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    let active = ACTIVE.get_or_init(active_lsms).as_ref().map_err(|why| {
        Error::environment(format!("cannot tell whether the BPF LSM is active: {why}"))
    })?;
    if is_active(active, "bpf") {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "the BPF LSM is not active (active LSMs: {active}): needs CONFIG_BPF_LSM and \
             booting with lsm={active},bpf"
        )))
    }
}

/// Whether `lsm` is in securityfs's comma-separated list of active LSMs.
fn is_active(list: &str, lsm: &str) -> bool {
    list.trim().split(',').any(|l| l == lsm)
}

fn active_lsms() -> std::result::Result<String, String> {
    let file = Path::new(SECURITYFS).join("lsm");
    if let Ok(list) = fs::read_to_string(&file) {
        return Ok(list.trim().to_string());
    }
    if !Path::new(SECURITYFS).is_dir() {
        return Err(format!("no {SECURITYFS} (CONFIG_SECURITYFS off)"));
    }
    let read = move || {
        private_mount_namespace()?;
        mount(
            Some("securityfs"),
            SECURITYFS,
            Some("securityfs"),
            MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| format!("mounting securityfs on {SECURITYFS} failed: {e}"))?;
        let list = fs::read_to_string(&file);
        if let Err(e) = umount2(SECURITYFS, MntFlags::MNT_DETACH) {
            log::warn!("could not unmount {SECURITYFS}: {e}");
        }
        list.map(|l| l.trim().to_string())
            .map_err(|e| format!("cannot read {}: {e}", file.display()))
    };
    std::thread::spawn(read)
        .join()
        .unwrap_or_else(|_| Err("the thread reading securityfs panicked".into()))
}

/// Answers about the kernel's BTF, each worked out once per process:
/// parsing the BTF takes tens of ms natively and about a second under
/// emulation, and the kernel does not change under a running process.
fn btf_answer(
    question: String,
    answer: impl FnOnce(&libbpf_rs::btf::Btf<'_>) -> Result<(), String>,
) -> Result<(), String> {
    static ANSWERS: Mutex<BTreeMap<String, Result<(), String>>> = Mutex::new(BTreeMap::new());
    let mut answers = ANSWERS.lock().unwrap_or_else(|p| p.into_inner());
    answers
        .entry(question)
        .or_insert_with(|| {
            libbpf_rs::btf::Btf::from_vmlinux()
                .map_err(|e| format!("cannot read the kernel's BTF: {e}"))
                .and_then(|btf| answer(&btf))
        })
        .clone()
}

/// Whether the kernel's BTF has a function `name` (a kfunc, say): a
/// feature probe that needs no load. `Err` says why not.
pub fn btf_has_function(name: &str) -> Result<(), String> {
    btf_answer(format!("function {name}"), |btf| match btf
        .type_by_name::<libbpf_rs::btf::types::Func<'_>>(name)
    {
        Some(_) => Ok(()),
        None => Err(format!("no function {name} in the kernel's BTF")),
    })
}

/// Whether the kernel's `enum bpf_attach_type` has `value` (say
/// `BPF_TRACE_UPROBE_MULTI`): whether this kernel knows an attach type,
/// from its BTF, without loading anything. `Err` says why not.
pub fn btf_has_attach_type(value: &str) -> Result<(), String> {
    btf_answer(format!("attach type {value}"), |btf| {
        let attach_types = btf
            .type_by_name::<libbpf_rs::btf::types::Enum<'_>>("bpf_attach_type")
            .ok_or("no enum bpf_attach_type in the kernel's BTF")?;
        if attach_types
            .iter()
            .any(|m| m.name.is_some_and(|n| n == value))
        {
            Ok(())
        } else {
            Err(format!("its enum bpf_attach_type has no {value}"))
        }
    })
}

/// Whether the kernel has the uprobe syscall as 7.3's libbpf probes it
/// (FEAT_UPROBE_SYSCALL: EPROTO when called from outside a uprobe
/// trampoline; 6.18's answers ENXIO). Where it does, that libbpf moves a
/// USDT probe off the nop of a nop,nop10 combo onto the nop10.
pub fn uprobe_syscall() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            const NR_UPROBE: libc::c_long = 336;
            // SAFETY: outside a uprobe trampoline the call only answers an error.
            let ret = unsafe { libc::syscall(NR_UPROBE) };
            ret < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPROTO)
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Turns on the kernel's BPF run-time statistics (`run_time_ns`, `run_cnt`)
/// for as long as the returned fd is open. BPF_ENABLE_STATS is reference
/// counted and goes off by itself when the fd closes, even if we crash,
/// which the `kernel.bpf_stats_enabled` sysctl would not.
pub fn enable_run_time_stats() -> Result<OwnedFd> {
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    if fd == -libc::EPERM {
        return Err(Error::unsupported(
            "BPF_ENABLE_STATS needs CAP_SYS_ADMIN (or --no-prog-stats)",
        ));
    }
    if fd < 0 {
        return Err(Error::unsupported(format!(
            "BPF_ENABLE_STATS failed ({}): kernel older than 5.8?",
            std::io::Error::from_raw_os_error(-fd)
        )));
    }
    // SAFETY: the kernel just gave us this fd; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bpf_lsm_is_found_by_its_whole_name() {
        assert!(is_active("lockdown,capability,yama,apparmor,bpf\n", "bpf"));
        assert!(!is_active("lockdown,capability,yama,apparmor", "bpf"));
        assert!(!is_active("capability,bpfx", "bpf"));
    }
}
