//! What each mechanism needs from the process's privileges, found out by
//! trying each one with fewer capabilities than root's (`setpriv
//! --reuid=65534 --inh-caps=... --ambient-caps=...`) and checked before
//! anything is loaded, so that a missing capability is named instead of
//! surfacing as EACCES from deep inside libbpf.
//!
//! | what | needs |
//! |---|---|
//! | loading any of the programs | CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) |
//! | tp: reading the tracepoint's id in tracefs | root's files, mode 0700: uid 0, CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE |
//! | mounting tracefs where it is not mounted | CAP_SYS_ADMIN |
//! | uprobes through the perf PMU | CAP_SYS_ADMIN (since Linux 6.16, commit ba677dbe, also in stable kernels; CAP_PERFMON before) |
//! | kprobes through the perf PMU | CAP_PERFMON |
//! | kprobes/uprobes through tracefs's `*_events` (no PMU) | writing root's files: uid 0 or CAP_DAC_OVERRIDE |
//! | the BPF run-time stats (`prog ns`) | CAP_SYS_ADMIN (BPF_ENABLE_STATS) |
//! | loading XDP, tc and flow dissector programs (a user's, `--object`, and their bases) | CAP_NET_ADMIN (or CAP_SYS_ADMIN), with CAP_BPF |

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::measure::kernel::tracefs;
use crate::measure::kernel::tracefs::ProbeType;
use crate::measure::mechanism::catalogue::{hit_counter, HitCounter, Kind, Mechanism};
use crate::measure::mechanism::kind::Access;
use crate::measure::mechanism::trigger::Trigger;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    DacOverride,
    DacReadSearch,
    NetAdmin,
    SysAdmin,
    Perfmon,
    Bpf,
}

impl Cap {
    const fn bit(self) -> u32 {
        match self {
            Cap::DacOverride => 1,
            Cap::DacReadSearch => 2,
            Cap::NetAdmin => 12,
            Cap::SysAdmin => 21,
            Cap::Perfmon => 38,
            Cap::Bpf => 39,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Cap::DacOverride => "CAP_DAC_OVERRIDE",
            Cap::DacReadSearch => "CAP_DAC_READ_SEARCH",
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::Bpf => "CAP_BPF",
        }
    }
}

/// Fails with one line saying to use sudo unless this process may load
/// tracing programs (CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON). Read
/// once per process: capabilities do not come back once dropped.
pub fn check_privileges() -> crate::measure::error::Result<()> {
    static PRIVILEGED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let may_load = *PRIVILEGED.get_or_init(|| {
        let p = Privileges::current();
        p.has(Cap::SysAdmin) || (p.has(Cap::Bpf) && p.has(Cap::Perfmon))
    });
    if may_load {
        Ok(())
    } else {
        Err(crate::measure::error::Error::Environment(
            "bpf-overhead must run as root (loading its BPF programs needs CAP_BPF and \
             CAP_PERFMON; tp, uprobes and the prog ns run need more): run it with sudo"
                .into(),
        ))
    }
}

/// The calling thread's effective capabilities and user id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privileges {
    caps: u64,
    euid: u32,
}

impl Privileges {
    pub fn current() -> Self {
        let caps = std::fs::read_to_string("/proc/thread-self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("CapEff:"))
                    .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            })
            .unwrap_or(0);
        Self {
            caps,
            euid: nix::unistd::geteuid().as_raw(),
        }
    }

    /// `caps` as the effective set of user `euid` (for tests).
    pub fn of(euid: u32, caps: &[Cap]) -> Self {
        Self {
            caps: caps.iter().fold(0, |set, c| set | 1 << c.bit()),
            euid,
        }
    }

    pub fn has(self, cap: Cap) -> bool {
        self.caps & (1 << cap.bit()) != 0
    }

    fn has_any(self, caps: &[Cap]) -> bool {
        caps.iter().any(|&c| self.has(c))
    }
}

/// One thing a mechanism needs: any of `any_of` will do (or being uid 0,
/// for `uid0_will_do`: root owns the files in question).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CapNeed {
    any_of: &'static [Cap],
    uid0_will_do: bool,
    what: &'static str,
}

const LOAD_BPF: CapNeed = CapNeed {
    any_of: &[Cap::Bpf, Cap::SysAdmin],
    uid0_will_do: false,
    what: "to load BPF programs",
};
const LOAD_TRACING: CapNeed = CapNeed {
    any_of: &[Cap::Perfmon, Cap::SysAdmin],
    uid0_will_do: false,
    what: "to load tracing programs",
};
const LOAD_NET: CapNeed = CapNeed {
    any_of: &[Cap::NetAdmin, Cap::SysAdmin],
    uid0_will_do: false,
    what: "to load XDP, tc and flow dissector programs",
};
const MOUNT_TRACEFS: CapNeed = CapNeed {
    any_of: &[Cap::SysAdmin],
    uid0_will_do: false,
    what: "to mount tracefs (not mounted here)",
};
const READ_TRACEFS: CapNeed = CapNeed {
    any_of: &[Cap::DacReadSearch, Cap::DacOverride],
    uid0_will_do: true,
    what: "to read tracefs (root's, mode 0700)",
};
const WRITE_TRACEFS: CapNeed = CapNeed {
    any_of: &[Cap::DacOverride],
    uid0_will_do: true,
    what: "to create probes in tracefs (root's files)",
};
const PERF_UPROBE: CapNeed = CapNeed {
    any_of: &[Cap::SysAdmin],
    uid0_will_do: false,
    what: "to create uprobes (the kernel asks for it since 6.16)",
};
const ENABLE_STATS: CapNeed = CapNeed {
    any_of: &[Cap::SysAdmin],
    uid0_will_do: false,
    what: "for BPF_ENABLE_STATS",
};

/// What the machine offers, as far as privileges go.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Env {
    kprobe_pmu: bool,
    uprobe_pmu: bool,
    /// tracefs as the calling thread sees it: `None` if not mounted (it
    /// will be mounted, root's, mode 0700), else whether its files can be
    /// read and its probe files written by this thread as it is.
    tracefs: Option<TracefsAccess>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TracefsAccess {
    read: bool,
    write: bool,
}

impl Env {
    fn current() -> Self {
        let pmu = |kind: &str| {
            Path::new("/sys/bus/event_source/devices")
                .join(kind)
                .exists()
        };
        let tracefs = tracefs::tracefs_visible().then(|| {
            let dir = tracefs_dir();
            TracefsAccess {
                read: accessible(&dir.join("events"), libc::R_OK | libc::X_OK),
                write: accessible(&dir.join("uprobe_events"), libc::W_OK)
                    || accessible(&dir.join("kprobe_events"), libc::W_OK),
            }
        });
        Self {
            kprobe_pmu: pmu("kprobe"),
            uprobe_pmu: pmu("uprobe"),
            tracefs,
        }
    }
}

fn tracefs_dir() -> PathBuf {
    let debugfs = Path::new("/sys/kernel/debug/tracing");
    if debugfs.join("events").exists() {
        debugfs.into()
    } else {
        tracefs::TRACEFS.into()
    }
}

/// access(2) with the effective ids and capabilities, as open(2) checks.
fn accessible(path: &Path, mode: libc::c_int) -> bool {
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: path is a valid C string.
    unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), mode, libc::AT_EACCESS) == 0 }
}

fn tracefs_needs(env: &Env, write: bool) -> Vec<CapNeed> {
    let (need, ok) = if write {
        (WRITE_TRACEFS, env.tracefs.is_some_and(|t| t.write))
    } else {
        (READ_TRACEFS, env.tracefs.is_some_and(|t| t.read))
    };
    let mut needs = Vec::new();
    if env.tracefs.is_none() {
        needs.push(MOUNT_TRACEFS);
    }
    if !ok {
        needs.push(need);
    }
    needs
}

fn needs(kind: Kind, env: &Env) -> Vec<CapNeed> {
    let mut needs = vec![LOAD_BPF, LOAD_TRACING];
    match kind.spec().access {
        Access::Nothing => return Vec::new(),
        Access::Load => {}
        Access::ReadTracefs => needs.extend(tracefs_needs(env, false)),
        // The perf kprobe PMU asks for CAP_PERFMON, needed anyway.
        Access::Probe(ProbeType::Kprobe) if env.kprobe_pmu => {}
        Access::Probe(ProbeType::Uprobe) if env.uprobe_pmu => needs.push(PERF_UPROBE),
        Access::Probe(ProbeType::Kprobe | ProbeType::Uprobe) => {
            needs.extend(tracefs_needs(env, true))
        }
    }
    needs
}

/// What `privileges` lack among `needs`, as one phrase:
/// `CAP_SYS_ADMIN to create uprobes (...)`.
fn lacking(needs: &[CapNeed], privileges: Privileges) -> Option<Missing> {
    let missing: Vec<CapNeed> = needs
        .iter()
        .copied()
        .filter(|n| !(privileges.has_any(n.any_of) || n.uid0_will_do && privileges.euid == 0))
        .collect();
    (!missing.is_empty()).then_some(Missing(missing))
}

/// Capabilities a mechanism (or the stats run) lacks. Displays as
/// `CAP_SYS_ADMIN to create uprobes (...)`, several joined by ", and".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing(Vec<CapNeed>);

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, need) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", and ")?;
            }
            let caps: Vec<&str> = need.any_of.iter().map(|c| c.name()).collect();
            let caps = if need.uid0_will_do {
                format!("uid 0 or {}", caps.join(" or "))
            } else {
                caps.join(" or ")
            };
            write!(f, "{caps} {}", need.what)?;
        }
        Ok(())
    }
}

/// What the calling thread lacks to run `mechanism` on this machine.
pub fn missing(mechanism: Mechanism) -> Option<Missing> {
    let mut needs = match mechanism.trigger() {
        // Its program (a base's too) is loaded, and run by the kernel.
        Trigger::TestRun(t) if t.prog_type.needs_net_admin() => vec![LOAD_BPF, LOAD_NET],
        Trigger::TestRun(_) => vec![LOAD_BPF],
        Trigger::TaskRename | Trigger::Call(_) | Trigger::Loop(_) | Trigger::Syscall(_) => {
            needs(mechanism.kind(), &Env::current())
        }
    };
    // A user's object program's hits are the BPF stats' run count.
    if hit_counter(mechanism) == HitCounter::Stats {
        needs.push(ENABLE_STATS);
    }
    lacking(&needs, Privileges::current())
}

/// What the calling thread lacks for the BPF run-time stats.
pub fn missing_for_stats() -> Option<Missing> {
    lacking(&[ENABLE_STATS], Privileges::current())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[Cap] = &[
        Cap::DacOverride,
        Cap::DacReadSearch,
        Cap::NetAdmin,
        Cap::SysAdmin,
        Cap::Perfmon,
        Cap::Bpf,
    ];

    fn host() -> Env {
        // This project's CI host: uprobe PMU, no kprobes, tracefs unmounted.
        Env {
            kprobe_pmu: false,
            uprobe_pmu: true,
            tracefs: None,
        }
    }

    fn missing(kind: Kind, env: &Env, p: Privileges) -> Option<String> {
        lacking(&needs(kind, env), p).map(|m| m.to_string())
    }

    #[test]
    fn root_lacks_nothing() {
        let root = Privileges::of(0, ALL);
        for env in [
            host(),
            Env {
                kprobe_pmu: true,
                tracefs: Some(TracefsAccess {
                    read: true,
                    write: true,
                }),
                ..host()
            },
        ] {
            for kind in [
                Kind::Base,
                Kind::Kprobe,
                Kind::RawTracepoint,
                Kind::Tracepoint,
                Kind::BtfTracepoint,
                Kind::Trampoline,
                Kind::Lsm,
                Kind::Uprobe { ret: false },
            ] {
                assert_eq!(missing(kind, &env, root), None, "{kind:?}");
            }
        }
        assert_eq!(lacking(&[ENABLE_STATS], root), None);
    }

    /// What `setpriv --reuid=65534 --inh-caps=+bpf,+perfmon
    /// --ambient-caps=+bpf,+perfmon` showed on kernel 6.18: raw_tp and
    /// tp_btf run; tp fails with EACCES reading the tracepoint id; uprobes
    /// fail with EACCES creating the perf event; BPF_ENABLE_STATS EPERM.
    #[test]
    fn bpf_and_perfmon_are_not_enough_for_tp_and_uprobes() {
        let p = Privileges::of(65534, &[Cap::Bpf, Cap::Perfmon]);
        let mounted = Env {
            tracefs: Some(TracefsAccess {
                read: false,
                write: false,
            }),
            ..host()
        };
        for kind in [Kind::Base, Kind::RawTracepoint, Kind::BtfTracepoint] {
            assert_eq!(missing(kind, &mounted, p), None, "{kind:?}");
        }
        assert_eq!(
            missing(Kind::Tracepoint, &mounted, p).as_deref(),
            Some("uid 0 or CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE to read tracefs (root's, mode 0700)")
        );
        let uprobe = missing(Kind::Uprobe { ret: true }, &mounted, p).unwrap();
        assert!(
            uprobe.starts_with("CAP_SYS_ADMIN to create uprobes"),
            "{uprobe}"
        );
        // Not mounted: mounting it needs CAP_SYS_ADMIN too.
        let tp = missing(Kind::Tracepoint, &host(), p).unwrap();
        assert!(
            tp.starts_with("CAP_SYS_ADMIN to mount tracefs") && tp.contains(", and uid 0 or "),
            "{tp}"
        );
        assert!(lacking(&[ENABLE_STATS], p).is_some());
    }

    /// The kernel's is_net_admin_prog_type: XDP, tc and flow dissector
    /// programs need CAP_NET_ADMIN (or CAP_SYS_ADMIN) besides CAP_BPF to
    /// load; socket filters and syscall programs CAP_BPF alone.
    #[test]
    fn xdp_and_tc_programs_need_cap_net_admin() {
        let bpf = Privileges::of(65534, &[Cap::Bpf, Cap::Perfmon]);
        assert_eq!(
            lacking(&[LOAD_BPF, LOAD_NET], bpf)
                .map(|m| m.to_string())
                .as_deref(),
            Some("CAP_NET_ADMIN or CAP_SYS_ADMIN to load XDP, tc and flow dissector programs")
        );
        let net = Privileges::of(65534, &[Cap::Bpf, Cap::NetAdmin]);
        assert_eq!(lacking(&[LOAD_BPF, LOAD_NET], net), None);
    }

    #[test]
    fn cap_sys_admin_alone_lacks_only_tracefs_access() {
        // Seen: with CAP_SYS_ADMIN only, uprobes run and tp cannot read tracefs.
        let p = Privileges::of(65534, &[Cap::SysAdmin]);
        assert_eq!(missing(Kind::Uprobe { ret: false }, &host(), p), None);
        assert_eq!(missing(Kind::RawTracepoint, &host(), p), None);
        let tp = missing(Kind::Tracepoint, &host(), p).unwrap();
        assert!(
            tp.contains("to read tracefs") && !tp.contains("mount"),
            "{tp}"
        );
        // ...unless tracefs is mounted readable for this user.
        let open = Env {
            tracefs: Some(TracefsAccess {
                read: true,
                write: false,
            }),
            ..host()
        };
        assert_eq!(missing(Kind::Tracepoint, &open, p), None);
    }

    #[test]
    fn probes_without_a_pmu_write_tracefs() {
        let p = Privileges::of(65534, &[Cap::Bpf, Cap::Perfmon, Cap::SysAdmin]);
        let legacy = Env {
            kprobe_pmu: false,
            uprobe_pmu: false,
            tracefs: Some(TracefsAccess {
                read: false,
                write: false,
            }),
        };
        let kprobe = missing(Kind::Kprobe, &legacy, p).unwrap();
        assert!(
            kprobe.contains("CAP_DAC_OVERRIDE to create probes"),
            "{kprobe}"
        );
        // uid 0 owns tracefs: no DAC capability needed.
        let root_without_dac = Privileges::of(0, &[Cap::Bpf, Cap::Perfmon, Cap::SysAdmin]);
        assert_eq!(missing(Kind::Kprobe, &legacy, root_without_dac), None);
        // With the PMU, kprobes need only what loading needs.
        let pmu = Env {
            kprobe_pmu: true,
            ..legacy
        };
        let perfmon = Privileges::of(65534, &[Cap::Bpf, Cap::Perfmon]);
        assert_eq!(missing(Kind::Kprobe, &pmu, perfmon), None);
    }

    #[test]
    fn nothing_at_all_names_both_load_capabilities() {
        let none = Privileges::of(1000, &[]);
        assert_eq!(
            missing(Kind::RawTracepoint, &host(), none).as_deref(),
            Some(
                "CAP_BPF or CAP_SYS_ADMIN to load BPF programs, and \
                 CAP_PERFMON or CAP_SYS_ADMIN to load tracing programs"
            )
        );
    }
}
