//! The checks a run needs, made once up front and carried as proof: a run
//! ([`with_attached`](crate::measure::with_attached)) takes a [`Ready`], which only
//! [`Support::check`] makes, so it never checks again.

use super::caps::{self, Missing};
use crate::measure::error::{errno_name, Error, Result, ENOTSUPP};
use crate::measure::kernel::tracefs::ProbeType;
use crate::measure::kernel::tracefs::{self, Tracefs};
use crate::measure::kernel::{features, functions};
use crate::measure::mechanism::catalogue::{Kind, Mechanism};
use crate::measure::mechanism::kind::{every_kind, Probe};
use crate::measure::mechanism::target::Target;
use crate::measure::mechanism::trigger::Trigger;
use Kind::*;

/// Proof that this process may load tracing programs
/// ([`caps::check_privileges`]), with what each of its mechanisms, and the
/// BPF-stats run, still lacks of the capabilities ([`caps`]). Only
/// [`Privileged::check`] makes one.
#[derive(Clone, Debug)]
pub struct Privileged {
    mechanisms: Vec<(Mechanism, Option<Missing>)>,
    stats: Option<Missing>,
}

impl Privileged {
    pub fn check(mechanisms: &[Mechanism]) -> Result<Self> {
        caps::check_privileges()?;
        Ok(Self {
            mechanisms: mechanisms.iter().map(|&m| (m, caps::missing(m))).collect(),
            stats: caps::missing_for_stats(),
        })
    }

    /// The mechanisms that lack a capability, and what they lack.
    pub fn lacking(&self) -> impl Iterator<Item = (Mechanism, &Missing)> {
        self.mechanisms
            .iter()
            .filter_map(|(m, missing)| Some((*m, missing.as_ref()?)))
    }

    /// What the BPF-stats run lacks.
    pub fn stats_lacking(&self) -> Option<&Missing> {
        self.stats.as_ref()
    }
}

/// The mechanisms that passed every check (privileges, capabilities, the
/// kernel's support probe), made once on the measuring thread. Holds
/// tracefs reachable while it lives. Only [`Support::check`] makes one.
pub struct Support {
    passed: Vec<Mechanism>,
    stats: Option<Missing>,
    _tracefs: Vec<Tracefs>,
}

impl Support {
    /// Runs each mechanism's support probe ([`Mechanism::check_support`]),
    /// tp first so that the tracefs it keeps mounted serves the others'
    /// probes instead of each mounting (and announcing) its own. Returns
    /// the mechanisms that did not pass, and why, in `privileged`'s order.
    pub fn check(privileged: &Privileged) -> (Self, Vec<(Mechanism, Error)>) {
        let all = &privileged.mechanisms;
        let mut tracefs = Vec::new();
        let mut problems: Vec<Option<Error>> = all.iter().map(|_| None).collect();
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.sort_by_key(|&i| all[i].0.kind() != Kind::Tracepoint);
        for i in order {
            let (m, missing) = &all[i];
            if let Some(missing) = missing {
                problems[i] = Some(Error::environment(format!("{m} needs {missing}")));
                continue;
            }
            match m.check_support() {
                Ok(guard) => tracefs.extend(guard),
                Err(err) => problems[i] = Some(err),
            }
        }
        let mut passed = Vec::new();
        let mut failed = Vec::new();
        for ((m, _), problem) in all.iter().zip(problems) {
            match problem {
                Some(err) => failed.push((*m, err)),
                None => passed.push(*m),
            }
        }
        let support = Self {
            passed,
            stats: privileged.stats.clone(),
            _tracefs: tracefs,
        };
        (support, failed)
    }

    /// Every check for `mechanism` alone, its problem as the error.
    pub fn one(mechanism: Mechanism) -> Result<Self> {
        let (support, mut problems) = Self::check(&Privileged::check(&[mechanism])?);
        match problems.pop() {
            Some((_, err)) => Err(err),
            None => Ok(support),
        }
    }

    /// The proof that `mechanism` passed.
    pub fn ready(&self, mechanism: Mechanism) -> Result<Ready<'_>> {
        if self.passed.contains(&mechanism) {
            Ok(Ready {
                mechanism,
                support: self,
            })
        } else {
            Err(Error::failed("did not pass its checks before the run").of(mechanism))
        }
    }
}

/// Proof that a mechanism passed the checks of a [`Support`] that still
/// lives (so tracefs is still reachable).
#[derive(Clone, Copy)]
pub struct Ready<'a> {
    mechanism: Mechanism,
    support: &'a Support,
}

impl<'a> Ready<'a> {
    pub fn mechanism(self) -> Mechanism {
        self.mechanism
    }

    /// What the BPF-stats run lacks of the capabilities.
    pub fn stats_lacking(self) -> Option<&'a Missing> {
        self.support.stats.as_ref()
    }
}

/// What this kernel supports of a mechanism: probed before loading, and
/// read from the errors of its load and attach.
impl Mechanism {
    /// Checks what can be checked before loading anything. Returns a
    /// tracefs guard that must outlive the attachment when the mechanism
    /// goes through tracefs. Trampoline support only shows at load time.
    pub fn check_support(self) -> Result<Option<Tracefs>> {
        self.trigger().check_support().map_err(|e| e.of(self))?;
        if let Some(attach_type) = self.kind().attach_type() {
            features::btf_has_attach_type(attach_type).map_err(|why| {
                Error::unsupported(format!("kernel too old for {}: {why}", self.needs())).of(self)
            })?;
        }
        match self.kind().spec().probe {
            Probe::Nothing => Ok(None),
            Probe::Events(probe) => tracefs::probe_support(probe, &kprobe_hooks()),
            Probe::Tracefs => Tracefs::ensure().map(Some),
            Probe::Fprobe => fprobe_support().and_then(|()| Tracefs::ensure().map(Some)),
            Probe::Btf => features::btf_support().map(|()| None),
            Probe::Lsm => features::btf_support()
                .and_then(|()| features::bpf_lsm_support())
                .map(|()| None),
        }
        .map_err(|e| e.of(self))
    }

    /// Sorts a load failure: the kernel lacking the feature (a skip) or
    /// anything else (a failure).
    pub(crate) fn load_error(self, errno: Option<i32>, why: String) -> Error {
        let err = match (self.kind(), errno) {
            // Privileges were checked before loading, so EPERM here is the
            // kernel refusing trampoline programs (seen under PVM), like
            // ENOTSUPP/EOPNOTSUPP on arches without trampolines.
            (
                Trampoline | Lsm | Fsession | TracingMulti { .. },
                Some(n @ (libc::EPERM | libc::EOPNOTSUPP | ENOTSUPP)),
            ) => Error::unsupported(format!(
                "kernel refused the tracing (BPF trampoline) program at load with {} \
                     although we are privileged: this kernel cannot run fentry/fexit/fmod_ret/lsm",
                errno_name(n)
            )),
            // A user's hook this kernel lacks is a skip, as a missing feature
            // is; a built-in's target is always there.
            (Trampoline | Lsm | BtfTracepoint, Some(libc::ESRCH)) if self.object().is_some() => {
                Error::unsupported(format!("this kernel's BTF has no {}: {why}", self.hook()))
            }
            (Trampoline | Lsm | BtfTracepoint, Some(libc::ESRCH)) => Error::failed(format!(
                "target {} not found in the kernel's BTF: {why}",
                self.hook()
            )),
            (every_kind!(), _) => Error::failed(format!("loading the BPF program failed: {why}")),
        };
        err.with_errno(errno).of(self)
    }

    /// Sorts an attach failure.
    pub(crate) fn attach_error(self, errno: Option<i32>, why: String) -> Error {
        let err = match (self.kind(), errno) {
            // The attach type exists (checked before loading), but fprobe,
            // which it runs on, does not.
            (
                KprobeMulti | KprobeMultiAll { .. } | KprobeSession,
                Some(n @ (libc::EOPNOTSUPP | ENOTSUPP)),
            ) => Error::unsupported(format!(
                "kernel has no fprobe (CONFIG_FPROBE off): attaching returned {}",
                errno_name(n)
            )),
            (
                Kprobe | KprobeMulti | KprobeMultiAll { .. } | KprobeSession,
                Some(libc::ENOENT | libc::EINVAL),
            ) => Error::failed(format!(
                "symbol {} not found or not probe-able in this kernel \
                 (check /proc/kallsyms): {why}",
                self.hook()
            )),
            (Tracepoint | RawTracepoint | BtfTracepoint, Some(libc::ENOENT)) => Error::failed(
                format!("tracepoint {} not found in this kernel: {why}", self.hook()),
            ),
            // x86's uprobes refuse an instruction with a segment prefix
            // (is_prefix_bad()), and so the nop10's cs, until a kernel
            // that optimizes the nop10 lets them. libbpf's words hold the
            // probe's offset, which differs from binary to binary.
            (Uprobe { .. } | UprobeMulti { .. } | UprobeSession | Usdt, Some(ENOTSUPP))
                if matches!(
                    self.trigger(),
                    Trigger::Call(Target::Nop10 | Target::UsdtNop10)
                ) =>
            {
                Error::unsupported(
                    "this kernel refuses a uprobe on the 10-byte nop (its cs prefix): \
                     attaching returned ENOTSUPP",
                )
            }
            (
                Uprobe { .. } | UprobeMulti { .. } | UprobeSession | Usdt,
                Some(libc::ENOENT | libc::ESRCH),
            ) => Error::failed(format!(
                "symbol {} not found in this executable (was it stripped?): {why}",
                self.hook()
            )),
            (every_kind!(), _) => Error::failed(format!("attach failed: {why}")),
        };
        err.with_errno(errno).of(self)
    }
}

/// fprobe, which kprobe.multi runs on: its registration function is in
/// the kernel's symbols exactly when CONFIG_FPROBE is on. Checked before
/// reading tracefs for the functions (which a locked-down kernel refuses
/// anyway), so a kernel without it skips for that reason.
fn fprobe_support() -> Result<()> {
    const FPROBE_SYMBOL: &str = "register_fprobe_ips";
    match functions::kallsyms_has(FPROBE_SYMBOL)? {
        true => Ok(()),
        false => Err(Error::unsupported(format!(
            "kernel has no fprobe (CONFIG_FPROBE off: no {FPROBE_SYMBOL} in /proc/kallsyms)"
        ))),
    }
}

/// The kernel functions kprobes go on through `kprobe_events` when there
/// is no kprobe PMU: what a stale legacy probe of ours can be on.
fn kprobe_hooks() -> Vec<&'static str> {
    Mechanism::all()
        .filter(|m| m.kind().spec().probe == Probe::Events(ProbeType::Kprobe))
        // A user's program's hook is its section: the function follows
        // the kind (`kprobe/__x64_sys_getppid`).
        .map(|m| m.hook().rsplit('/').next().unwrap_or(m.hook()))
        .collect()
}
