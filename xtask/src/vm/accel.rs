//! Which accelerator a VM runs under: KVM where the host has it, TCG for
//! a foreign architecture and for `--exact`, whose instruction counts
//! only TCG's instruction clock gives. The host's probe is a parameter,
//! so that a test can say /dev/kvm is there or not.

use std::fs;
use std::path::Path;

use anyhow::{ensure, Result};

use crate::kernels::arch::Arch;
use crate::util::say;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Accel {
    Kvm,
    Tcg,
}

/// What the guest's clock counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Time, the host's (KVM) or TCG's.
    Time,
    /// The guest's instructions (`--exact`): TCG with `-icount shift=0`,
    /// 1 ns a guest instruction, so that a run's time is a count.
    Instructions,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// The accelerator: `forced`, else KVM where it is hardware virtualization;
/// a foreign architecture runs under TCG only.
pub fn choose_accel(forced: Option<Accel>, arch: Arch, clock: Clock) -> Result<Accel> {
    let (accel, why) = pick_accel(forced, arch, clock, host_kvm)?;
    say!("accel={} ({why})", accel.name());
    Ok(accel)
}

/// What the host offers KVM: /dev/kvm there, writable by us, and vmx or
/// svm in /proc/cpuinfo.
#[derive(Clone, Copy, Debug)]
pub struct KvmProbe {
    pub dev: bool,
    pub writable: bool,
    pub virt: bool,
}

/// This host's [`KvmProbe`].
fn host_kvm() -> KvmProbe {
    let kvm = Path::new("/dev/kvm");
    // SAFETY: access(2) on a NUL-terminated path.
    let writable = kvm.exists() && unsafe { libc::access(c"/dev/kvm".as_ptr(), libc::W_OK) } == 0;
    let virt = fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    KvmProbe {
        dev: kvm.exists(),
        writable,
        virt,
    }
}

/// The accelerator and why, with the host probed by `probe` (only when
/// the choice depends on it): `--exact` counts instructions, which only
/// TCG's instruction clock does, so it takes TCG whatever the host has.
pub fn pick_accel(
    forced: Option<Accel>,
    arch: Arch,
    clock: Clock,
    probe: impl FnOnce() -> KvmProbe,
) -> Result<(Accel, String)> {
    if clock == Clock::Instructions {
        ensure!(
            forced != Some(Accel::Kvm),
            crate::util::BadInput(
                "--exact counts instructions under TCG only: drop --accel kvm (or VMTEST_ACCEL)"
                    .into()
            )
        );
        return Ok((
            Accel::Tcg,
            "--exact counts instructions under TCG only".into(),
        ));
    }
    if !arch.is_host() {
        ensure!(
            forced != Some(Accel::Kvm),
            crate::util::BadInput(format!(
                "--accel kvm: an {} guest on this {} host runs under TCG only",
                arch.name(),
                std::env::consts::ARCH
            ))
        );
        return Ok((Accel::Tcg, format!("an {} guest on this host", arch.name())));
    }
    if let Some(a) = forced {
        return Ok((a, "forced".into()));
    }
    let p = probe();
    Ok(if p.writable && p.virt {
        (Accel::Kvm, "/dev/kvm and vmx/svm present".into())
    } else if p.dev {
        (
            Accel::Tcg,
            "no vmx/svm in /proc/cpuinfo: /dev/kvm is not hardware virtualization".into(),
        )
    } else {
        (Accel::Tcg, "no /dev/kvm".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// --exact takes TCG with /dev/kvm there or not, saying why in one
    /// line; without it, KVM where the host has it.
    #[test]
    fn exact_picks_tcg_whether_or_not_kvm_is_there() {
        let host = crate::kernels::arch::Arch::host().expect("a host xtask runs guests of");
        let kvm = |dev| {
            move || KvmProbe {
                dev,
                writable: dev,
                virt: true,
            }
        };
        for dev in [true, false] {
            let (accel, why) = pick_accel(None, host, Clock::Instructions, kvm(dev)).unwrap();
            assert_eq!(
                (accel, why.as_str()),
                (Accel::Tcg, "--exact counts instructions under TCG only")
            );
        }
        assert_eq!(
            pick_accel(None, host, Clock::Time, kvm(true)).unwrap().0,
            Accel::Kvm
        );
        assert_eq!(
            pick_accel(None, host, Clock::Time, kvm(false)).unwrap().0,
            Accel::Tcg
        );
        let e = pick_accel(Some(Accel::Kvm), host, Clock::Instructions, kvm(true)).unwrap_err();
        assert_eq!(crate::util::error_status(&e), 2, "{e}");
    }
}
