//! The check before the run: each program of a user's object loaded
//! once and dropped, so that what the kernel refuses is bad input, said
//! once, not a failure found in the run.

use super::object::load;
use crate::measure::mechanism::catalogue::Mechanism;

/// Loads `m`'s program and drops it, before the run: what the kernel
/// refuses (the verifier, a missing map pin or BTF) is bad input, said
/// once, rather than a failure found in the run. A kind this kernel lacks
/// is left to the run, which skips it as it skips the built-ins.
/// `flag` is what named its file (`--object`, `--against object=`).
pub fn try_load(m: Mechanism, flag: &str) -> std::result::Result<(), String> {
    let Some(p) = m.object() else {
        return Ok(());
    };
    crate::measure::kernel::libbpf_log::capture_libbpf_log();
    crate::measure::kernel::libbpf_log::clear_libbpf_log();
    let Err(e) = load(p) else { return Ok(()) };
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
