//! The check before the run: each program of a user's object loaded
//! once (a tracepoint's attached too) and dropped, so that what the
//! kernel refuses is bad input, said once, not a failure found in the run.

use libbpf_rs::Object;

use super::object::{attach, load, ObjectProgram};
use crate::measure::mechanism::catalogue::{Kind, Mechanism};

/// Loads `m`'s program (and attaches a tracepoint's: `try_attach`) and
/// drops it, before the run: what the kernel refuses (the verifier, a
/// missing map pin or BTF, a read past the event's record) is bad input,
/// said once, rather than a failure found in the run. A kind this kernel lacks
/// is left to the run, which skips it as it skips the built-ins.
/// `flag` is what named its file (`--object`, `--against object=`).
pub fn try_load(m: Mechanism, flag: &str) -> std::result::Result<(), String> {
    let Some(p) = m.object() else {
        return Ok(());
    };
    crate::measure::kernel::libbpf_log::capture_libbpf_log();
    crate::measure::kernel::libbpf_log::clear_libbpf_log();
    let e = match load(p) {
        Ok(obj) => return try_attach(m, p, obj, flag),
        Err(e) => e,
    };
    let why = match crate::measure::kernel::libbpf_log::libbpf_reason() {
        Some(line) => format!("{e:#} (libbpf: {line})"),
        None => format!("{e:#}"),
    };
    let err = m.load_error(crate::measure::error::errno_of(&e), why);
    // A program type this kernel lacks (a syscall program before 5.14)
    // fails to load as the verifier's refusal would: the run skips it
    // instead, with the probe's reason. Probed only when the load failed.
    if err.is_unsupported() || m.trigger().check_support().is_err() {
        return Ok(());
    }
    // The verifier's reason is one line of a long log: that line, and
    // where the rest is.
    let why = match crate::measure::kernel::libbpf_log::verifier_verdict() {
        Some(verdict) => {
            let errno = err
                .errno()
                .map(|n| format!("{}; ", crate::measure::error::errno_name(n)))
                .unwrap_or_default();
            format!(
                "the verifier refused it: {verdict} ({errno}RUST_LOG=debug prints its whole log)"
            )
        }
        None => err.reason().to_string(),
    };
    Err(format!(
        "{flag}{}: program {} (SEC(\"{}\")) does not load: {why}",
        p.path.display(),
        p.program,
        p.section,
    ))
}

/// Attaches `m`'s program, loaded in `obj`, and detaches it, where the
/// kernel checks the program itself at attach: a tracepoint program's
/// reads of its context must lie within the event's record (EACCES for
/// `tp`, EINVAL for `raw_tp`), which the verifier cannot know at load.
/// That refusal is the object's, bad input as the verifier's is; any
/// other attach failure is left to the run, which sorts it.
fn try_attach(
    m: Mechanism,
    p: &'static ObjectProgram,
    obj: Object,
    flag: &str,
) -> std::result::Result<(), String> {
    let (refused, past) = match m.kind() {
        Kind::Tracepoint => (libc::EACCES, "the end of its tracepoint's record"),
        Kind::RawTracepoint => (libc::EINVAL, "its tracepoint's arguments"),
        _ => return Ok(()),
    };
    // On a thread of its own: tp reads the event's id in tracefs, mounted
    // (if it must be) in that thread's mount namespace, as the run's is.
    // The thread detaches after it answers: a perf event's detach waits
    // ~0.1 s for RCU, and the program is off the hook before that wait.
    let (answer, errno) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tracefs = crate::measure::kernel::tracefs::Tracefs::ensure();
        let link = tracefs.as_ref().ok().map(|_| attach(&obj, p));
        let errno = match &link {
            Some(Err(e)) => crate::measure::error::errno_of(e),
            _ => None,
        };
        let _ = answer.send(errno);
        drop((link, obj, tracefs));
    });
    if errno.recv().ok().flatten() != Some(refused) {
        return Ok(());
    }
    Err(format!(
        "{flag}{}: program {} (SEC(\"{}\")) does not attach: the kernel refused it ({}), \
         as it does a program that reads past {past}",
        p.path.display(),
        p.program,
        p.section,
        crate::measure::error::errno_name(refused),
    ))
}
