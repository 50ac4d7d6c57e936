//! A catalogue [`Entry`] and the ways one is made: a base, a kernel
//! function's, the kernel loop's, a uprobe's on a target, and what each
//! needs of the kernel, in words for `--list` and the README.

use super::kind::{every_kind, Kind};
use super::program::{builtin, Program};
use super::target::Target;
use super::trigger::{Driver, Trigger};
use Kind::*;
use Target::{Nop, Nop10, Nop5, Push, Ret};

/// The tracepoint the kernel-loop kfunc fires.
pub const LOOP_TRACEPOINT: &str = "bpf_test_run/bpf_trigger_tp";

/// One mechanism, as the catalogue describes it.
#[derive(Debug)]
pub struct Entry {
    /// Stable name: `-m`, test names, selftest lines, JSON.
    pub name: &'static str,
    /// What fires it, once per event.
    pub trigger: Trigger,
    pub kind: Kind,
    /// Its program, `builtin!(field)` of the skeleton; `None` for a base.
    pub program: Option<Program>,
    /// Where it attaches, written only here: uprobes attach to it, and a
    /// test checks each program's `SEC()` against it (load.rs).
    pub hook: &'static str,
    /// What the kernel must have, for `--list` and the README table.
    pub needs: &'static str,
}

pub(super) const fn base(name: &'static str, trigger: Trigger) -> Entry {
    Entry {
        name,
        trigger,
        kind: Kind::Base,
        program: None,
        hook: "nothing attached",
        needs: match trigger {
            Trigger::Call(Nop5 | Target::UsdtNop5) => NOP5,
            Trigger::Call(Nop10 | Target::UsdtNop10) => NOP10,
            Trigger::Call(Nop | Push | Ret | Target::Usdt)
            | Trigger::TaskRename
            | Trigger::Loop(_)
            | Trigger::Syscall(_)
            | Trigger::TestRun(_) => "nothing",
        },
    }
}

pub(super) const KPROBES: &str = "CONFIG_KPROBES (kprobe PMU or kprobe_events)";
pub(super) const UPROBES: &str = "CONFIG_UPROBES (uprobe PMU or uprobe_events)";
/// nop5 is an x86 instruction: no other architecture has its target
/// ([`Target::arches`]), and its mechanisms skip there.
pub(super) const NOP5: &str = "x86_64 (the target's nopl is an x86 instruction)";
pub(super) const UPROBES_NOP5: &str = "CONFIG_UPROBES (uprobe PMU or uprobe_events), x86_64 (nopl)";
/// nop10 likewise: x86's.
pub(super) const NOP10: &str = "x86_64 (the target's cs nopw is an x86 instruction)";
pub(super) const UPROBES_NOP10: &str =
    "CONFIG_UPROBES (uprobe PMU or uprobe_events), x86_64 (cs nopw)";
pub(super) const TRAMPOLINES: &str = "BTF (CONFIG_DEBUG_INFO_BTF), BPF trampolines";

pub(super) const fn kernel(
    name: &'static str,
    kind: Kind,
    program: Program,
    hook: &'static str,
    needs: &'static str,
) -> Entry {
    Entry {
        name,
        trigger: Trigger::TaskRename,
        kind,
        program: Some(program),
        hook,
        needs,
    }
}

pub(super) const fn on_loop(
    name: &'static str,
    driver: Driver,
    kind: Kind,
    program: Program,
    needs: &'static str,
) -> Entry {
    let hook = match (driver, kind) {
        (Driver::Kfunc, RawTracepoint | Tracepoint | BtfTracepoint) => LOOP_TRACEPOINT,
        (Driver::Kfunc | Driver::Helper, every_kind!()) => driver.function(),
    };
    Entry {
        name,
        trigger: Trigger::Loop(driver),
        kind,
        program: Some(program),
        hook,
        needs,
    }
}

pub(super) const fn uprobe(name: &'static str, target: Target, ret: bool) -> Entry {
    Entry {
        name,
        trigger: Trigger::Call(target),
        kind: Kind::Uprobe { ret },
        program: Some(if ret {
            builtin!(prog_uretprobe)
        } else {
            builtin!(prog_uprobe)
        }),
        hook: target.symbol(),
        needs: match target {
            Nop5 | Target::UsdtNop5 => UPROBES_NOP5,
            Nop10 | Target::UsdtNop10 => UPROBES_NOP10,
            Nop | Push | Ret | Target::Usdt => UPROBES,
        },
    }
}

/// uprobe.multi (`ret`: uretprobe.multi) on `target`.
pub(super) const fn uprobe_multi(name: &'static str, target: Target, ret: bool) -> Entry {
    let program = if ret {
        builtin!(prog_uretprobe_multi)
    } else {
        builtin!(prog_uprobe_multi)
    };
    let needs = match target {
        Nop5 | Target::UsdtNop5 | Nop10 | Target::UsdtNop10 => UPROBE_MULTI_X86,
        Nop | Push | Ret | Target::Usdt => UPROBE_MULTI,
    };
    on_target(name, target, UprobeMulti { ret }, program, needs)
}

pub(super) const fn uprobe_session(name: &'static str, target: Target) -> Entry {
    on_target(
        name,
        target,
        UprobeSession,
        builtin!(prog_uprobe_session),
        UPROBE_SESSION,
    )
}

pub(super) const fn on_target(
    name: &'static str,
    target: Target,
    kind: Kind,
    program: Program,
    needs: &'static str,
) -> Entry {
    Entry {
        name,
        trigger: Trigger::Call(target),
        kind,
        program: Some(program),
        hook: target.symbol(),
        needs,
    }
}

pub(super) const UPROBE_MULTI: &str = "CONFIG_UPROBES, the uprobe.multi attach type (6.6)";
pub(super) const UPROBE_MULTI_X86: &str =
    "CONFIG_UPROBES, the uprobe.multi attach type (6.6), x86_64";
pub(super) const UPROBE_SESSION: &str = "CONFIG_UPROBES, the uprobe.session attach type (6.13)";
pub(super) const KPROBE_MULTI: &str = "CONFIG_FPROBE, the kprobe.multi attach type (5.18)";
pub(super) const KPROBE_MULTI_ALL: &str =
    "CONFIG_FPROBE, the kprobe.multi attach type (5.18), tracefs";
pub(super) const KPROBE_SESSION: &str = "CONFIG_FPROBE, the kprobe.session attach type (6.10)";
pub(super) const FSESSION: &str = "BTF, BPF trampolines, the fsession attach type (7.3)";
pub(super) const TRACING_MULTI: &str = "BTF, BPF trampolines, the tracing_multi attach types (7.3)";
pub(super) const TRACING_MULTI_ALL: &str =
    "BTF, BPF trampolines, the tracing_multi attach types (7.3), tracefs";
