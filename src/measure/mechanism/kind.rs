//! How a mechanism attaches ([`Kind`]), and every decision a kind makes
//! ([`Spec`]: link type, session, support probe, privileges, attach call,
//! sections): one match, so a new kind is placed once.

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
    /// lsm: a BPF LSM hook, through a trampoline (CONFIG_BPF_LSM, and
    /// `bpf` among the active LSMs).
    Lsm,
    /// uprobe, uretprobe on the trigger's target symbol.
    Uprobe { ret: bool },
    /// kprobe.multi, kretprobe.multi: fprobe-based (5.18, CONFIG_FPROBE).
    KprobeMulti,
    /// kprobe.multi, kretprobe.multi on every function fprobe can attach
    /// to, by name from tracefs (upstream's kprobe-multi-all).
    KprobeMultiAll { ret: bool },
    /// kprobe.session: one program on entry and exit (6.10).
    KprobeSession,
    /// fsession: one trampoline program on a function's entry and exit
    /// (7.3).
    Fsession,
    /// fentry.multi, fexit.multi, fsession.multi: one tracing program on
    /// many functions through one link (7.3), on the hook or, `every`, on
    /// every function kprobe.multi-all attaches to.
    TracingMulti { flavor: Multi, every: bool },
    /// uprobe.multi, uretprobe.multi on the target symbol (6.6).
    UprobeMulti { ret: bool },
    /// uprobe.session (6.13).
    UprobeSession,
    /// A USDT probe, through libbpf's USDT support.
    Usdt,
    /// Attached nowhere: run by BPF_PROG_TEST_RUN (a user's XDP, tc,
    /// socket filter, flow dissector or syscall program, `--object`).
    TestRun,
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
            | Lsm
            | Uprobe { .. }
            | KprobeMulti
            | KprobeMultiAll { .. }
            | KprobeSession
            | Fsession
            | TracingMulti { .. }
            | UprobeMulti { .. }
            | UprobeSession
            | Usdt
            | TestRun
    };
}
pub(crate) use every_kind;

use super::test_run::ProgType;
use crate::measure::kernel::tracefs::ProbeType;
use Kind::*;

/// Which of the tracing programs a [`Kind::TracingMulti`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Multi {
    Fentry,
    Fexit,
    Fsession,
}

/// Everything a [`Kind`] decides, in one place (as bench_trigger.c keeps a
/// mechanism's setup in one place): the one match in [`Kind::spec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The entry of `enum bpf_attach_type` a kernel must know for it.
    pub link_type: Option<&'static str>,
    /// A session program: every entry must have its exit.
    pub session: bool,
    /// What is probed before loading anything.
    pub probe: Probe,
    /// What it needs of the process's privileges besides loading (caps.rs).
    pub access: Access,
    /// How its program is attached, and so where its hook is written.
    pub attach: Attach,
    /// The `SEC()` names its programs may have (after the `?`, before
    /// the `/`): a test checks each program's.
    pub sections: &'static [&'static str],
    /// What the kernel must have for any hook of this kind, in words: what
    /// a user's program of it is told (an entry says its mechanism's own).
    pub needs: &'static str,
}

const TRAMPOLINES: &str = "BTF, BPF trampolines";

/// The support probe a kind needs before loading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Nothing beyond its link type, if any.
    Nothing,
    /// A perf PMU or the legacy `<kind>_events` of tracefs.
    Events(ProbeType),
    /// tracefs, for the tracepoint's id.
    Tracefs,
    /// The kernel's BTF.
    Btf,
    /// fprobe in the kernel (`register_fprobe_ips` in /proc/kallsyms), and
    /// tracefs, for the functions it may attach to.
    Fprobe,
    /// The kernel's BTF, and `bpf` among the active LSMs: an LSM
    /// program on an inactive BPF LSM attaches but never runs.
    Lsm,
}

/// What a kind needs of the process besides loading its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Nothing is loaded at all (a base).
    Nothing,
    /// Only loading: it attaches by a BPF link (BPF_LINK_CREATE), no
    /// perf event.
    Load,
    /// Reading the tracepoint's id in tracefs.
    ReadTracefs,
    /// A perf event through the PMU, or a probe written into tracefs.
    Probe(ProbeType),
}

/// How a kind's program is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Nothing is attached (a base).
    Nothing,
    /// Where its `SEC()` says (libbpf's auto-attach): the hook is in the
    /// section, as `form` writes it.
    Section(SectionHook),
    /// A uprobe on the hook, a symbol of this executable.
    Uprobe { ret: bool },
    /// uprobe.multi (or its session) on the hook, a symbol of this executable.
    UprobeMulti { ret: bool, session: bool },
    /// The USDT probe of this executable.
    Usdt,
    /// kprobe.multi on every function of [`functions::traceable`].
    ///
    /// [`functions::traceable`]: crate::measure::kernel::functions::traceable
    EveryFunction { ret: bool },
    /// A tracing_multi link ([`tracing_multi`]) on the hook, or on every
    /// function of [`functions::traceable`] the BTF lets a trampoline take.
    ///
    /// [`tracing_multi`]: crate::measure::kernel::tracing_multi
    /// [`functions::traceable`]: crate::measure::kernel::functions::traceable
    TracingMulti { every: bool },
}

/// How a `SEC("kind/...")` writes the hook that [`Attach::Section`]
/// attaches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionHook {
    /// The hook itself: a kernel function, or `group/name` for tp.
    Whole,
    /// The tracepoint's name without its group (raw_tp, tp_btf).
    Name,
}

impl Attach {
    /// A link on every function, whose attach cost is a result of its own.
    pub const fn every_function(self) -> bool {
        matches!(
            self,
            Attach::EveryFunction { .. } | Attach::TracingMulti { every: true }
        )
    }

    /// Whether the hook is a symbol of this executable, attached by its path.
    pub const fn on_exe(self) -> bool {
        match self {
            Attach::Uprobe { .. } | Attach::UprobeMulti { .. } | Attach::Usdt => true,
            Attach::Nothing
            | Attach::Section(_)
            | Attach::EveryFunction { .. }
            | Attach::TracingMulti { .. } => false,
        }
    }
}

impl Kind {
    /// Every decision this kind makes: one match, so a new kind is placed
    /// once.
    pub const fn spec(self) -> Spec {
        // Every field in every arm, no defaults: a new kind is asked each.
        match self {
            Base => Spec {
                link_type: None,
                session: false,
                probe: Probe::Nothing,
                access: Access::Nothing,
                attach: Attach::Nothing,
                sections: &[],
                needs: "BPF",
            },
            Kprobe => Spec {
                link_type: None,
                session: false,
                probe: Probe::Events(ProbeType::Kprobe),
                access: Access::Probe(ProbeType::Kprobe),
                attach: Attach::Section(SectionHook::Whole),
                sections: &["kprobe", "kretprobe"],
                needs: "CONFIG_KPROBES",
            },
            RawTracepoint => Spec {
                link_type: None,
                session: false,
                probe: Probe::Nothing,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Name),
                sections: &["raw_tp"],
                needs: "CONFIG_BPF_EVENTS",
            },
            Tracepoint => Spec {
                link_type: None,
                session: false,
                probe: Probe::Tracefs,
                access: Access::ReadTracefs,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["tp"],
                needs: "CONFIG_BPF_EVENTS, tracefs",
            },
            BtfTracepoint => Spec {
                link_type: None,
                session: false,
                probe: Probe::Btf,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Name),
                sections: &["tp_btf"],
                needs: "BTF (CONFIG_DEBUG_INFO_BTF)",
            },
            Trampoline => Spec {
                link_type: None,
                session: false,
                probe: Probe::Btf,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["fentry", "fexit", "fmod_ret"],
                needs: TRAMPOLINES,
            },
            Lsm => Spec {
                link_type: Some("BPF_LSM_MAC"),
                session: false,
                probe: Probe::Lsm,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["lsm"],
                needs: "CONFIG_BPF_LSM, bpf among the active LSMs (lsm=...,bpf), BPF trampolines",
            },
            Uprobe { ret } => Spec {
                link_type: None,
                session: false,
                probe: Probe::Events(ProbeType::Uprobe),
                access: Access::Probe(ProbeType::Uprobe),
                attach: Attach::Uprobe { ret },
                sections: if ret { &["uretprobe"] } else { &["uprobe"] },
                needs: "BPF",
            },
            KprobeMulti => Spec {
                link_type: Some("BPF_TRACE_KPROBE_MULTI"),
                session: false,
                probe: Probe::Nothing,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["kprobe.multi", "kretprobe.multi"],
                needs: "BPF",
            },
            KprobeMultiAll { ret } => Spec {
                link_type: Some("BPF_TRACE_KPROBE_MULTI"),
                session: false,
                probe: Probe::Fprobe,
                access: Access::ReadTracefs,
                attach: Attach::EveryFunction { ret },
                sections: if ret {
                    &["kretprobe.multi"]
                } else {
                    &["kprobe.multi"]
                },
                needs: "BPF",
            },
            KprobeSession => Spec {
                link_type: Some("BPF_TRACE_KPROBE_SESSION"),
                session: true,
                probe: Probe::Nothing,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["kprobe.session"],
                needs: "BPF",
            },
            Fsession => Spec {
                link_type: Some("BPF_TRACE_FSESSION"),
                session: true,
                probe: Probe::Btf,
                access: Access::Load,
                attach: Attach::Section(SectionHook::Whole),
                sections: &["fsession"],
                needs: TRAMPOLINES,
            },
            TracingMulti { flavor, every } => Spec {
                link_type: Some(match flavor {
                    Multi::Fentry => "BPF_TRACE_FENTRY_MULTI",
                    Multi::Fexit => "BPF_TRACE_FEXIT_MULTI",
                    Multi::Fsession => "BPF_TRACE_FSESSION_MULTI",
                }),
                session: matches!(flavor, Multi::Fsession),
                // Every function: tracefs's list of them (BTF is read
                // for the link type first).
                probe: if every { Probe::Tracefs } else { Probe::Btf },
                access: if every {
                    Access::ReadTracefs
                } else {
                    Access::Load
                },
                attach: Attach::TracingMulti { every },
                sections: match flavor {
                    Multi::Fentry => &["fentry.multi"],
                    Multi::Fexit => &["fexit.multi"],
                    Multi::Fsession => &["fsession.multi"],
                },
                needs: TRAMPOLINES,
            },
            UprobeMulti { ret } => Spec {
                link_type: Some("BPF_TRACE_UPROBE_MULTI"),
                session: false,
                probe: Probe::Events(ProbeType::Uprobe),
                access: Access::Load,
                attach: Attach::UprobeMulti {
                    ret,
                    session: false,
                },
                sections: if ret {
                    &["uretprobe.multi"]
                } else {
                    &["uprobe.multi"]
                },
                needs: "BPF",
            },
            UprobeSession => Spec {
                link_type: Some("BPF_TRACE_UPROBE_SESSION"),
                session: true,
                probe: Probe::Events(ProbeType::Uprobe),
                access: Access::Load,
                attach: Attach::UprobeMulti {
                    ret: false,
                    session: true,
                },
                sections: &["uprobe.session"],
                needs: "BPF",
            },
            Usdt => Spec {
                link_type: None,
                session: false,
                probe: Probe::Events(ProbeType::Uprobe),
                access: Access::Load,
                attach: Attach::Usdt,
                sections: &["usdt"],
                needs: "BPF",
            },
            TestRun => Spec {
                link_type: None,
                session: false,
                probe: Probe::Nothing,
                access: Access::Load,
                attach: Attach::Nothing,
                sections: &ProgType::PLAIN_SECTIONS,
                needs: "BPF_PROG_TEST_RUN of its program type",
            },
        }
    }

    pub(crate) const fn attach_type(self) -> Option<&'static str> {
        self.spec().link_type
    }

    /// A session program: every entry must have its exit.
    pub const fn is_session(self) -> bool {
        self.spec().session
    }
}
