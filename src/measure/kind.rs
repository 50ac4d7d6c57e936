//! How a mechanism attaches ([`Kind`]), and the kernel's attach type a
//! kind needs: one match, so a new kind is placed once.

/// How a mechanism attaches: this decides its support probe, its attach
/// call and how its load and attach errors are sorted into "this kernel
/// lacks it" (a skip) and "broken" (a failure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The trigger alone, nothing attached: the reference.
    Base,
    /// kprobe, kretprobe: CONFIG_KPROBES, through the perf PMU or tracefs.
    Kprobe,
    /// raw_tp: a raw tracepoint, by name.
    RawTracepoint,
    /// tp: a tracepoint through its tracefs id.
    Tracepoint,
    /// tp_btf: a raw tracepoint typed by the kernel's BTF.
    BtfTracepoint,
    /// fentry, fexit, fmod_ret: BPF trampolines.
    Trampoline,
    /// uprobe, uretprobe on the trigger's target symbol.
    Uprobe { ret: bool },
    /// kprobe.multi, kretprobe.multi: fprobe-based (5.18, CONFIG_FPROBE).
    KprobeMulti,
    /// kprobe.session: one program on entry and exit (6.10).
    KprobeSession,
    /// uprobe.multi, uretprobe.multi on the target symbol (6.6).
    UprobeMulti { ret: bool },
    /// uprobe.session (6.13).
    UprobeSession,
    /// A USDT probe, through libbpf's USDT support.
    Usdt,
}

/// Every [`Kind`], as a pattern: where a match ends with "any other kind",
/// a new kind is a compile error until it is added here, and so a decision
/// made at each such place.
macro_rules! every_kind {
    () => {
        Base | Kprobe
            | RawTracepoint
            | Tracepoint
            | BtfTracepoint
            | Trampoline
            | Uprobe { .. }
            | KprobeMulti
            | KprobeSession
            | UprobeMulti { .. }
            | UprobeSession
            | Usdt
    };
}
pub(crate) use every_kind;

use Kind::*;

impl Kind {
    /// The entry of `enum bpf_attach_type` a kernel must know for it, and
    /// whether it is a session: one match, so a new kind is placed once.
    const fn link_type(self) -> (Option<&'static str>, bool) {
        match self {
            KprobeMulti => (Some("BPF_TRACE_KPROBE_MULTI"), false),
            KprobeSession => (Some("BPF_TRACE_KPROBE_SESSION"), true),
            UprobeMulti { .. } => (Some("BPF_TRACE_UPROBE_MULTI"), false),
            UprobeSession => (Some("BPF_TRACE_UPROBE_SESSION"), true),
            Base
            | Kprobe
            | RawTracepoint
            | Tracepoint
            | BtfTracepoint
            | Trampoline
            | Uprobe { .. }
            | Usdt => (None, false),
        }
    }

    pub(crate) const fn attach_type(self) -> Option<&'static str> {
        self.link_type().0
    }

    /// A session program: every entry must have its exit.
    pub const fn is_session(self) -> bool {
        self.link_type().1
    }
}
