//! What a user's object program's section says (`--object`): the
//! built-in kind it attaches as, and the syscall trigger that reaches it.

use crate::measure::mechanism::kind::Kind;
use crate::measure::mechanism::syscall::Syscall;
use crate::measure::mechanism::test_run::{ProgType, TestRun};
use crate::measure::mechanism::trigger::Trigger;

/// The built-in kind a section attaches as, and the trigger that fires
/// it: from the event the section names, else `--trigger`.
pub(crate) fn hook(
    section: &str,
    flag: Option<Syscall>,
    packet: &'static [u8],
) -> std::result::Result<(Kind, Trigger), String> {
    let (kind_name, target) = section.split_once('/').unwrap_or((section, ""));
    if !libbpf_knows(section) {
        return Err(unknown_section(section, kind_name));
    }
    // Run by the kernel itself on a packet, attached nowhere.
    if let Some(prog_type) = ProgType::of_section(section) {
        let t = TestRun { prog_type, packet };
        return Ok((Kind::TestRun, Trigger::TestRun(t)));
    }
    // A sleepable program (`fentry.s`, `lsm.s`) attaches as the other.
    let kind_name = kind_name.strip_suffix(".s").unwrap_or(kind_name);
    let like = match kind_name {
        "tp" | "tracepoint" => Kind::Tracepoint,
        "raw_tp" | "raw_tracepoint" => Kind::RawTracepoint,
        "tp_btf" => Kind::BtfTracepoint,
        "kprobe" | "kretprobe" | "ksyscall" | "kretsyscall" => Kind::Kprobe,
        "fentry" | "fexit" | "fmod_ret" => Kind::Trampoline,
        "lsm" => Kind::Lsm,
        _ => {
            return Err(format!(
                "no trigger for {kind_name} programs: they run on {}, which this command \
                 cannot make yet (it measures tp, raw_tp, tp_btf, kprobe, ksyscall, fentry, \
                 fexit and lsm programs on syscalls, and xdp, tc, socket filter, flow dissector \
                 and syscall programs by BPF_PROG_TEST_RUN)",
                runs_on(kind_name)
            ))
        }
    };
    let event = match like {
        Kind::Tracepoint => target
            .strip_prefix("syscalls/sys_enter_")
            .or_else(|| target.strip_prefix("syscalls/sys_exit_"))
            .or_else(|| (target == "task/task_rename").then_some("write")),
        Kind::RawTracepoint | Kind::BtfTracepoint => (target == "task_rename").then_some("write"),
        _ if kind_name.ends_with("syscall") => Some(target),
        _ if target == "file_open" && kind_name == "lsm" => Some("openat"),
        _ if target == "__set_task_comm" => Some("write"),
        _ => ["__x64_sys_", "__arm64_sys_", "__se_sys_"]
            .iter()
            .find_map(|p| target.strip_prefix(p)),
    };
    let trigger = match (event, flag) {
        (Some(event), _) => Syscall::making(event).ok_or_else(|| {
            format!(
                "no trigger makes the syscall {event}: the triggers make {} (--list-triggers)",
                made()
            )
        })?,
        (None, Some(flag)) => flag,
        (None, None) => {
            return Err(format!(
                "its section names no event a trigger makes: name the one to make with \
                 --trigger NAME ({}; see --list-triggers)",
                Syscall::names()
            ))
        }
    };
    Ok((like, Trigger::Syscall(trigger)))
}

/// Whether libbpf knows the section's program type: it loads no other.
fn libbpf_knows(section: &str) -> bool {
    let Ok(name) = std::ffi::CString::new(section) else {
        return false;
    };
    let mut prog_type = 0;
    let mut attach_type = 0;
    // SAFETY: a NUL-terminated name and two out-parameters; libbpf only
    // looks the name up in its table of sections.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::libbpf_prog_type_by_name(
            name.as_ptr(),
            &mut prog_type,
            &mut attach_type,
        )
    };
    ret == 0
}

/// Why a section libbpf does not know cannot be measured, and the one it
/// knows where the name is near one.
fn unknown_section(section: &str, kind_name: &str) -> String {
    let near = match kind_name {
        "socket" | "socket_filter" | "sock_filter" => Some("socket"),
        "classifier" | "tc" | "tcx" => Some("tc/ingress"),
        "xdp" => Some("xdp"),
        _ => None,
    };
    let rename = match near {
        Some(known) => format!("; libbpf's for this type is SEC(\"{known}\")"),
        None => String::new(),
    };
    format!(
        "libbpf knows no program type for SEC(\"{section}\"), so it cannot load it: \
         name the section as libbpf does{rename} (libbpf's docs, program types and ELF sections)"
    )
}

/// The syscalls the triggers make, for error messages.
fn made() -> String {
    Syscall::ALL
        .iter()
        .flat_map(|s| s.syscalls())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// What fires a program type the command has no trigger for.
fn runs_on(kind_name: &str) -> &'static str {
    match kind_name {
        "xdp" => "packets arriving at a device (xdp/devmap and xdp/cpumap: a map's redirects)",
        "tc" | "classifier" | "tcx" | "action" => "packets through a tc hook",
        n if n.starts_with("cgroup") => "a cgroup's sockets, devices or sysctls",
        "uprobe" | "uretprobe" | "usdt" => "a user-space function",
        "perf_event" => "perf events",
        "struct_ops" => "a kernel subsystem's callbacks",
        "iter" => "reads of a BPF iterator",
        _ => "events of their own",
    }
}

/// `--list-triggers`: each trigger, what one event is, and the sections
/// it fires.
pub fn list_triggers() -> String {
    let test_runs = ProgType::ALL.map(|prog_type| TestRun {
        prog_type,
        packet: &[],
    });
    // Each column as wide as its longest entry (flow_dissector; a test
    // run's packet).
    let w = test_runs
        .iter()
        .map(|t| t.name().len())
        .chain(Syscall::ALL.iter().map(|s| s.name().len()))
        .fold("trigger".len(), usize::max);
    let d = test_runs
        .iter()
        .map(|t| t.prog_type.one_event().len())
        .chain(Syscall::ALL.iter().map(|s| s.describe().len()))
        .fold(0, usize::max);
    let mut out = format!("{:<w$} {:<d$} fires\n", "trigger", "one event is");
    for s in Syscall::ALL {
        let fires: Vec<String> = s
            .syscalls()
            .iter()
            .map(|n| format!("tp/syscalls/sys_{{enter,exit}}_{n}, ksyscall/{n}"))
            .collect();
        let extra = match s {
            Syscall::OpenClose => ", lsm/file_open",
            Syscall::Comm => ", tp/task/task_rename, raw_tp/task_rename",
            _ => "",
        };
        out.push_str(&format!(
            "{:<w$} {:<d$} {}{extra}\n",
            s.name(),
            s.describe(),
            fires.join(", ")
        ));
    }
    out.push_str(
        "raw_tp/sys_enter, tp_btf/sys_enter and other hooks every syscall passes: --trigger NAME\n",
    );
    for run in test_runs {
        out.push_str(&format!(
            "{:<w$} {:<d$} {}\n",
            run.name(),
            run.prog_type.one_event(),
            run.prog_type.sections().join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_name_their_hook_and_trigger() {
        let t = |s| hook(s, None, &[]);
        assert_eq!(
            t("tp/syscalls/sys_enter_getpid"),
            Ok((Kind::Tracepoint, Trigger::Syscall(Syscall::Getpid)))
        );
        assert_eq!(
            t("tracepoint/syscalls/sys_exit_close"),
            Ok((Kind::Tracepoint, Trigger::Syscall(Syscall::OpenClose)))
        );
        assert_eq!(
            t("kprobe/__x64_sys_getppid"),
            Ok((Kind::Kprobe, Trigger::Syscall(Syscall::Getppid)))
        );
        assert_eq!(
            t("lsm/file_open"),
            Ok((Kind::Lsm, Trigger::Syscall(Syscall::OpenClose)))
        );
        assert!(t("raw_tp/sys_enter")
            .unwrap_err()
            .contains("--trigger NAME"));
        assert_eq!(
            hook("raw_tp/sys_enter", Some(Syscall::ReadZero), &[]),
            Ok((Kind::RawTracepoint, Trigger::Syscall(Syscall::ReadZero)))
        );
        assert!(t("cgroup_skb/ingress").unwrap_err().contains("cgroup"));
        assert!(t("tp/syscalls/sys_enter_fork")
            .unwrap_err()
            .contains("fork"));
    }

    #[test]
    fn test_run_sections_name_their_program_type() {
        let t = |s| hook(s, None, &[]);
        assert!(matches!(
            t("tcx/ingress"),
            Ok((
                Kind::TestRun,
                Trigger::TestRun(TestRun {
                    prog_type: ProgType::Tc,
                    ..
                })
            ))
        ));
        assert!(matches!(
            t("socket"),
            Ok((
                Kind::TestRun,
                Trigger::TestRun(TestRun {
                    prog_type: ProgType::Socket,
                    ..
                })
            ))
        ));
        for (section, prog_type) in [
            ("flow_dissector", ProgType::FlowDissector),
            ("syscall", ProgType::Syscall),
        ] {
            assert_eq!(
                t(section),
                Ok((
                    Kind::TestRun,
                    Trigger::TestRun(TestRun {
                        prog_type,
                        packet: &[]
                    })
                )),
                "{section}"
            );
        }
    }

    /// Sections libbpf does not know, said as such, not as a trigger.
    #[test]
    fn sections_libbpf_does_not_know_are_said_so() {
        let t = |s| hook(s, None, &[]);
        for section in [
            "socket/filter",
            "socket_filter/x",
            "kprobe_nope",
            "tc/egress/extra",
        ] {
            let why = t(section).unwrap_err();
            assert!(why.contains("libbpf knows no program type"), "{why}");
        }
        assert!(t("socket/filter").unwrap_err().contains("SEC(\"socket\")"));
    }

    #[test]
    fn sleepable_programs_attach_as_the_others() {
        let t = |s| hook(s, None, &[]);
        assert_eq!(
            t("fentry.s/__x64_sys_getpid"),
            Ok((Kind::Trampoline, Trigger::Syscall(Syscall::Getpid)))
        );
        assert_eq!(
            t("lsm.s/file_open"),
            Ok((Kind::Lsm, Trigger::Syscall(Syscall::OpenClose)))
        );
    }
}
