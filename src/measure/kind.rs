//! How a mechanism attaches ([`Kind`]), and the kernel's attach type a
//! kind needs: one match, so a new kind is placed once. And what a user's
//! object program is ([`ObjectProgram`]), which [`Kind::Object`] points to.

use std::fmt;
use std::path::PathBuf;

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
    /// A program of a user's object (`--object`), attached by its section
    /// as libbpf's auto-attach does. Its support probe, capabilities and
    /// error sorting are those of the built-in kind it attaches as
    /// ([`Kind::behaves_like`]).
    Object(&'static ObjectProgram),
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
            | Object(_)
    };
}
pub(crate) use every_kind;

use Kind::*;

/// One program of a user's object, as `Kind::Object` attaches it.
pub struct ObjectProgram {
    /// The file, as given.
    pub path: PathBuf,
    /// The ELF, read once: every run loads this copy.
    pub(crate) bytes: Vec<u8>,
    pub program: String,
    pub section: String,
    /// The built-in kind it attaches as: its support probe, capabilities
    /// and error sorting are that kind's.
    pub like: Kind,
    /// `--set`'s writes into the `.rodata` map: offset and bytes.
    pub(crate) rodata: Vec<(usize, Vec<u8>)>,
}

impl PartialEq for ObjectProgram {
    fn eq(&self, other: &Self) -> bool {
        (&self.path, &self.program) == (&other.path, &other.program)
    }
}

impl Eq for ObjectProgram {}

impl fmt::Debug for ObjectProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} ({})",
            self.path.display(),
            self.program,
            self.section
        )
    }
}

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
            Object(p) => p.like.link_type(),
        }
    }

    /// The built-in kind whose probe, capabilities and errors this one's
    /// are: an object program's hook kind, every other kind itself.
    pub const fn behaves_like(self) -> Kind {
        match self {
            Object(p) => p.like,
            Base
            | Kprobe
            | RawTracepoint
            | Tracepoint
            | BtfTracepoint
            | Trampoline
            | Uprobe { .. }
            | KprobeMulti
            | KprobeSession
            | UprobeMulti { .. }
            | UprobeSession
            | Usdt => self,
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
