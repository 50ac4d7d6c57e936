//! The catalogue of attach mechanisms, after the kernel's
//! `benchs/bench_trigger.c` (one `struct bench` per mechanism): one
//! [`Entry`] holds everything about a mechanism — its name, trigger, hook,
//! kernel needs and BPF program — and its [`Kind`] says how it attaches,
//! how its support is probed and how its errors are sorted.
//!
//! Adding a mechanism is one entry here, one program in
//! bpf/overhead.bpf.c and one line in tests/overhead.rs; tests fail until
//! all three (and the README's table) agree.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Mutex;

use super::entry::*;
pub use super::entry::{Entry, LOOP_TRACEPOINT};
pub use super::kind::Kind;
use super::kind::Multi;
use super::program::{builtin, Program};
use super::target::{Target, USDT_NOP10_PROBE, USDT_NOP5_PROBE, USDT_PROBE};
use super::trigger::{Driver, Trigger};

/// The kernel function probed by kprobe, kretprobe, fentry and fexit
/// (test_overhead's target). The comm write reaches it once per write.
pub const KFUNC: &str = "__set_task_comm";
/// fmod_ret's target; see prog_fmod_ret in bpf/overhead.bpf.c for why it
/// cannot be KFUNC.
pub const FMOD_RET_KFUNC: &str = "security_file_permission";
/// lsm's hook: the BPF LSM's own for the same security_file_permission().
pub const LSM_HOOK: &str = "file_permission";
/// The tracepoint behind raw_tp, tp and tp_btf.
pub const TRACEPOINT: &str = "task/task_rename";

use Driver::{Helper, Kfunc};
use Kind::*;
use Target::{Nop, Nop10, Nop5, Push, Ret};

const LOOP_KFUNC_NEEDS: &str = "the bpf_modify_return_test_tp kfunc (6.10+, CONFIG_NET)";

/// Every mechanism, each base just before the mechanisms it is the
/// reference for. This order is the order of runs, `--list` and output.
pub static CATALOGUE: &[Entry] = &[
    base("base", Trigger::TaskRename),
    kernel("kprobe", Kprobe, builtin!(prog_kprobe), KFUNC, KPROBES),
    kernel(
        "kretprobe",
        Kprobe,
        builtin!(prog_kretprobe),
        KFUNC,
        KPROBES,
    ),
    kernel(
        "kprobe.multi",
        KprobeMulti,
        builtin!(prog_kprobe_multi),
        KFUNC,
        KPROBE_MULTI,
    ),
    kernel(
        "kretprobe.multi",
        KprobeMulti,
        builtin!(prog_kretprobe_multi),
        KFUNC,
        KPROBE_MULTI,
    ),
    kernel(
        "kprobe.session",
        KprobeSession,
        builtin!(prog_kprobe_session),
        KFUNC,
        KPROBE_SESSION,
    ),
    kernel(
        "fsession",
        Fsession,
        builtin!(prog_fsession),
        KFUNC,
        FSESSION,
    ),
    kernel(
        "fentry.multi",
        TracingMulti {
            flavor: Multi::Fentry,
            every: false,
        },
        builtin!(prog_fentry_multi),
        KFUNC,
        TRACING_MULTI,
    ),
    kernel(
        "fexit.multi",
        TracingMulti {
            flavor: Multi::Fexit,
            every: false,
        },
        builtin!(prog_fexit_multi),
        KFUNC,
        TRACING_MULTI,
    ),
    kernel(
        "fsession.multi",
        TracingMulti {
            flavor: Multi::Fsession,
            every: false,
        },
        builtin!(prog_fsession_multi),
        KFUNC,
        TRACING_MULTI,
    ),
    kernel(
        "raw_tp",
        RawTracepoint,
        builtin!(prog_raw_tp),
        TRACEPOINT,
        "CONFIG_BPF_EVENTS",
    ),
    kernel(
        "tp",
        Tracepoint,
        builtin!(prog_tp),
        TRACEPOINT,
        "CONFIG_BPF_EVENTS, tracefs",
    ),
    kernel(
        "tp_btf",
        BtfTracepoint,
        builtin!(prog_tp_btf),
        TRACEPOINT,
        "BTF (CONFIG_DEBUG_INFO_BTF)",
    ),
    kernel(
        "fentry",
        Trampoline,
        builtin!(prog_fentry),
        KFUNC,
        TRAMPOLINES,
    ),
    kernel(
        "fexit",
        Trampoline,
        builtin!(prog_fexit),
        KFUNC,
        TRAMPOLINES,
    ),
    kernel(
        "fmod_ret",
        Trampoline,
        builtin!(prog_fmod_ret),
        FMOD_RET_KFUNC,
        "BTF, BPF trampolines, a modifiable target (security_* hook)",
    ),
    kernel(
        "lsm",
        Lsm,
        builtin!(prog_lsm),
        LSM_HOOK,
        "CONFIG_BPF_LSM, bpf among the active LSMs (lsm=...,bpf), BPF trampolines",
    ),
    base("base-nop", Trigger::Call(Nop)),
    uprobe("uprobe-nop", Nop, false),
    uprobe("uretprobe-nop", Nop, true),
    uprobe_multi("uprobe.multi-nop", Nop, false),
    uprobe_multi("uretprobe.multi-nop", Nop, true),
    uprobe_session("uprobe.session-nop", Nop),
    base("base-push", Trigger::Call(Push)),
    uprobe("uprobe-push", Push, false),
    uprobe("uretprobe-push", Push, true),
    uprobe_multi("uprobe.multi-push", Push, false),
    uprobe_multi("uretprobe.multi-push", Push, true),
    uprobe_session("uprobe.session-push", Push),
    base("base-ret", Trigger::Call(Ret)),
    uprobe("uprobe-ret", Ret, false),
    uprobe("uretprobe-ret", Ret, true),
    uprobe_multi("uprobe.multi-ret", Ret, false),
    uprobe_multi("uretprobe.multi-ret", Ret, true),
    uprobe_session("uprobe.session-ret", Ret),
    base("base-nop5", Trigger::Call(Nop5)),
    uprobe("uprobe-nop5", Nop5, false),
    uprobe("uretprobe-nop5", Nop5, true),
    uprobe_multi("uprobe.multi-nop5", Nop5, false),
    uprobe_multi("uretprobe.multi-nop5", Nop5, true),
    base("base-nop10", Trigger::Call(Nop10)),
    uprobe("uprobe-nop10", Nop10, false),
    uprobe("uretprobe-nop10", Nop10, true),
    uprobe_multi("uprobe.multi-nop10", Nop10, false),
    uprobe_multi("uretprobe.multi-nop10", Nop10, true),
    base("base-usdt", Trigger::Call(Target::Usdt)),
    Entry {
        name: "usdt",
        trigger: Trigger::Call(Target::Usdt),
        kind: Usdt,
        program: Some(builtin!(prog_usdt)),
        hook: USDT_PROBE,
        needs: UPROBES,
    },
    base("base-usdt-nop5", Trigger::Call(Target::UsdtNop5)),
    Entry {
        name: "usdt-nop5",
        trigger: Trigger::Call(Target::UsdtNop5),
        kind: Usdt,
        program: Some(builtin!(prog_usdt)),
        hook: USDT_NOP5_PROBE,
        needs: UPROBES_NOP5,
    },
    base("base-usdt-nop10", Trigger::Call(Target::UsdtNop10)),
    Entry {
        name: "usdt-nop10",
        trigger: Trigger::Call(Target::UsdtNop10),
        kind: Usdt,
        program: Some(builtin!(prog_usdt)),
        hook: USDT_NOP10_PROBE,
        needs: UPROBES_NOP10,
    },
    base("base-loop", Trigger::Loop(Helper)),
    on_loop(
        "kprobe-loop",
        Helper,
        Kprobe,
        builtin!(prog_loop_kprobe),
        KPROBES,
    ),
    on_loop(
        "kretprobe-loop",
        Helper,
        Kprobe,
        builtin!(prog_loop_kretprobe),
        KPROBES,
    ),
    on_loop(
        "kprobe.multi-loop",
        Helper,
        KprobeMulti,
        builtin!(prog_loop_kprobe_multi),
        KPROBE_MULTI,
    ),
    on_loop(
        "kretprobe.multi-loop",
        Helper,
        KprobeMulti,
        builtin!(prog_loop_kretprobe_multi),
        KPROBE_MULTI,
    ),
    on_loop(
        "kprobe.multi-all-loop",
        Helper,
        KprobeMultiAll { ret: false },
        builtin!(prog_loop_kprobe_multi_all),
        KPROBE_MULTI_ALL,
    ),
    on_loop(
        "kretprobe.multi-all-loop",
        Helper,
        KprobeMultiAll { ret: true },
        builtin!(prog_loop_kretprobe_multi_all),
        KPROBE_MULTI_ALL,
    ),
    on_loop(
        "kprobe.session-loop",
        Helper,
        KprobeSession,
        builtin!(prog_loop_kprobe_session),
        KPROBE_SESSION,
    ),
    on_loop(
        "fentry-loop",
        Helper,
        Trampoline,
        builtin!(prog_loop_fentry),
        TRAMPOLINES,
    ),
    on_loop(
        "fexit-loop",
        Helper,
        Trampoline,
        builtin!(prog_loop_fexit),
        TRAMPOLINES,
    ),
    on_loop(
        "fsession-loop",
        Helper,
        Fsession,
        builtin!(prog_loop_fsession),
        FSESSION,
    ),
    on_loop(
        "fentry.multi-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fentry,
            every: false,
        },
        builtin!(prog_loop_fentry_multi),
        TRACING_MULTI,
    ),
    on_loop(
        "fexit.multi-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fexit,
            every: false,
        },
        builtin!(prog_loop_fexit_multi),
        TRACING_MULTI,
    ),
    on_loop(
        "fsession.multi-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fsession,
            every: false,
        },
        builtin!(prog_loop_fsession_multi),
        TRACING_MULTI,
    ),
    on_loop(
        "fentry.multi-all-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fentry,
            every: true,
        },
        builtin!(prog_loop_fentry_multi_all),
        TRACING_MULTI_ALL,
    ),
    on_loop(
        "fexit.multi-all-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fexit,
            every: true,
        },
        builtin!(prog_loop_fexit_multi_all),
        TRACING_MULTI_ALL,
    ),
    on_loop(
        "fsession.multi-all-loop",
        Helper,
        TracingMulti {
            flavor: Multi::Fsession,
            every: true,
        },
        builtin!(prog_loop_fsession_multi_all),
        TRACING_MULTI_ALL,
    ),
    base("base-loop-kfunc", Trigger::Loop(Kfunc)),
    on_loop(
        "raw_tp-loop",
        Kfunc,
        RawTracepoint,
        builtin!(prog_loop_raw_tp),
        LOOP_KFUNC_NEEDS,
    ),
    on_loop(
        "tp-loop",
        Kfunc,
        Tracepoint,
        builtin!(prog_loop_tp),
        LOOP_KFUNC_NEEDS,
    ),
    on_loop(
        "tp_btf-loop",
        Kfunc,
        BtfTracepoint,
        builtin!(prog_loop_tp_btf),
        LOOP_KFUNC_NEEDS,
    ),
    on_loop(
        "fmod_ret-loop",
        Kfunc,
        Trampoline,
        builtin!(prog_loop_fmod_ret),
        LOOP_KFUNC_NEEDS,
    ),
];

/// A handle to a catalogue entry: cheap to copy, compared by name.
#[derive(Clone, Copy)]
pub struct Mechanism(&'static Entry);

/// The entries added at run time (`--object`: each program of a user's
/// object, and a base for each of their triggers), in groups: a base,
/// then its programs. A slice that is replaced, not grown, so that
/// [`Mechanism::all`] (called for every name looked up) copies a pointer,
/// not a list.
static REGISTERED: Mutex<&'static [&'static Entry]> = Mutex::new(&[]);

fn registered() -> &'static [&'static Entry] {
    *REGISTERED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds `entries` after the catalogue, for [`Mechanism::all`]. Once a
/// process, as the command does it: each call leaks the list anew.
pub(crate) fn extend(entries: Vec<&'static Entry>) {
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    let all = [*registered, &entries[..]].concat();
    *registered = Vec::leak(all);
}

impl Mechanism {
    /// Every mechanism, in catalogue order, then those of users' objects
    /// (`--object`), added at run time.
    pub fn all() -> impl Iterator<Item = Mechanism> + Clone {
        CATALOGUE
            .iter()
            .chain(registered().iter().copied())
            .map(Mechanism)
    }

    pub(crate) fn from_entry(entry: &'static Entry) -> Mechanism {
        Mechanism(entry)
    }

    pub fn by_name(name: &str) -> Option<Mechanism> {
        Self::all().find(|m| m.name() == name)
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn trigger(self) -> Trigger {
        self.0.trigger
    }

    pub fn kind(self) -> Kind {
        self.0.kind
    }

    pub fn hook(self) -> &'static str {
        self.0.hook
    }

    pub fn needs(self) -> &'static str {
        self.0.needs
    }

    pub fn program(self) -> Option<Program> {
        self.0.program
    }

    /// Its program, if it is one of a user's object (`--object`).
    pub fn object(self) -> Option<&'static super::program::ObjectProgram> {
        self.0.program.and_then(Program::object)
    }

    pub fn is_base(self) -> bool {
        self.0.kind == Base
    }

    /// The reference this mechanism's overhead is computed against: the
    /// base of its trigger (a base is its own).
    pub fn base(self) -> Mechanism {
        Self::all()
            .find(|m| m.is_base() && m.trigger() == self.trigger())
            .expect("every trigger has a base in the catalogue (checked by a test)")
    }

    /// Events one run fires for `iterations`: the trigger scales them.
    pub fn events(self, iterations: u64) -> u64 {
        let trigger = self.trigger();
        let scale = if self.is_base() {
            trigger.base_scale()
        } else {
            trigger.scale()
        };
        iterations.saturating_mul(scale)
    }

    /// All mechanism names, for error messages.
    pub fn names() -> Vec<&'static str> {
        Self::all().map(Mechanism::name).collect()
    }
}

impl PartialEq for Mechanism {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Mechanism {}

impl Hash for Mechanism {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Its name, for [`Error::of`], which sits below the catalogue.
impl From<Mechanism> for &'static str {
    fn from(m: Mechanism) -> Self {
        m.name()
    }
}

impl FromStr for Mechanism {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::by_name(s).ok_or_else(|| {
            format!(
                "unknown mechanism '{s}': expected one of {}",
                Self::names().join(", ")
            )
        })
    }
}

/// Who counts a run's hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HitCounter {
    /// The skeleton's programs, in its counters (and a loop's counting
    /// driver in a base run).
    Program,
    /// The kernel's BPF stats (`run_cnt`): a user's object program.
    Stats,
    /// The kernel's test run, which returns only once it has run the
    /// program as often as asked.
    TestRun,
}

/// Who counts the hits of `mechanism`'s runs (when anything is loaded for
/// them). Stats means the BPF stats are on in all its runs.
pub(crate) fn hit_counter(mechanism: Mechanism) -> HitCounter {
    match (mechanism.trigger(), mechanism.object()) {
        (Trigger::TestRun(_), _) => HitCounter::TestRun,
        (Trigger::TaskRename | Trigger::Call(_) | Trigger::Loop(_) | Trigger::Syscall(_), None) => {
            HitCounter::Program
        }
        (
            Trigger::TaskRename | Trigger::Call(_) | Trigger::Loop(_) | Trigger::Syscall(_),
            Some(_),
        ) => HitCounter::Stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_round_trip() {
        let names: HashSet<&str> = Mechanism::all().map(Mechanism::name).collect();
        assert_eq!(names.len(), CATALOGUE.len());
        for m in Mechanism::all() {
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
        let all: Vec<Mechanism> = Mechanism::all().collect();
        for (i, m) in all.iter().enumerate() {
            let base = all.iter().position(|b| *b == m.base()).unwrap();
            assert!(base <= i, "{m} comes before its base {}", m.base());
            assert!(m.base().is_base());
        }
    }

    #[test]
    fn a_base_has_no_program_and_the_others_one() {
        for m in Mechanism::all() {
            assert_eq!(m.is_base(), m.program().is_none(), "{m}");
        }
    }

    /// The README's table of mechanisms names each catalogue entry once.
    #[test]
    fn the_readme_table_lists_the_catalogue() {
        let readme = include_str!("../../../README.md");
        let table = readme
            .split_once("| mechanisms | attaches to |")
            .expect("README.md has the table of mechanisms")
            .1;
        let mut listed: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .flat_map(|row| row.split('|').nth(1).unwrap_or_default().split(','))
            .map(|cell| cell.trim().trim_matches('`'))
            .collect();
        let mut catalogue = Mechanism::names();
        listed.sort_unstable();
        catalogue.sort_unstable();
        assert_eq!(
            listed, catalogue,
            "README.md's table and the catalogue differ"
        );
    }

    #[test]
    fn triggers_scale_their_events() {
        let n = |name: &str| name.parse::<Mechanism>().unwrap().events(1000);
        assert_eq!(n("base"), 1000);
        assert_eq!(n("base-nop"), 100_000);
        assert_eq!(n("uprobe-nop"), 1000);
        assert_eq!(n("raw_tp"), 1000);
        // A loop's events are ~14 ns: all of them scale, base or not.
        assert_eq!(n("base-loop"), 10_000);
        assert_eq!(n("raw_tp-loop"), 10_000);
    }
}
