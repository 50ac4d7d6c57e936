//! libbpf's log: kept, so that an error can quote the warning (or the
//! verifier's verdict) that explains it.

use std::collections::VecDeque;
use std::sync::{Mutex, Once};

use super::verifier_log::verdict_of;

/// libbpf's warnings since the last clear, kept so an error can quote the
/// one that explains it; the full log goes to the `log` crate
/// (RUST_LOG=debug).
static LIBBPF_WARNINGS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const LIBBPF_LOG_KEEP: usize = 64;

fn on_libbpf_message(level: libbpf_rs::PrintLevel, msg: String) {
    let msg = msg.trim_end();
    let msg = msg.strip_prefix("libbpf: ").unwrap_or(msg).to_string();
    // Debug, not warn: what matters reaches the user in the error itself,
    // and a skipped mechanism should print one line, not libbpf's log.
    match level {
        libbpf_rs::PrintLevel::Warn => log::debug!("libbpf: {msg}"),
        _ => log::trace!("libbpf: {msg}"),
    }
    if level != libbpf_rs::PrintLevel::Warn {
        return;
    }
    let mut log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if log.len() == LIBBPF_LOG_KEEP {
        log.pop_front();
    }
    log.push_back(msg);
}

/// Routes libbpf's messages to the `log` crate (and a short buffer) instead of
/// stderr: a mechanism the kernel lacks should print one SKIP line, not a
/// verifier dump.
pub fn capture_libbpf_log() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, on_libbpf_message)));
    });
}

/// Forgets earlier libbpf messages (called before each load).
pub fn clear_libbpf_log() {
    LIBBPF_WARNINGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
}

/// libbpf's own account of the last failure: the verifier's verdict when
/// libbpf dumped a program load log, else its first warning (libbpf warns
/// first where the failure starts, then once per layer it unwinds).
pub fn libbpf_reason() -> Option<String> {
    let log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    reason_of(log.iter().map(String::as_str))
}

/// The verifier's verdict on the last load, when libbpf dumped its log.
pub fn verifier_verdict() -> Option<String> {
    let log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    log.iter().find_map(|w| verdict_of(w, LOG_BEGIN, LOG_END))
}

const LOG_BEGIN: &str = "-- BEGIN PROG LOAD LOG --";
const LOG_END: &str = "-- END PROG LOAD LOG --";

fn reason_of<'a>(warnings: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let verdict = warnings
        .clone()
        .find_map(|w| verdict_of(w, LOG_BEGIN, LOG_END));
    verdict.or_else(|| {
        warnings
            .into_iter()
            .next()
            .map(|l| l.lines().next().unwrap_or_default().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_warning_is_the_reason() {
        let warnings = [
            "prog 'prog_kprobe': failed to create kprobe '__set_task_comm+0x0' perf event: No such file or directory",
            "prog 'prog_kprobe': failed to auto-attach: -ENOENT",
        ];
        assert_eq!(
            reason_of(warnings.into_iter()).as_deref(),
            Some(warnings[0])
        );
        assert_eq!(reason_of([].into_iter()), None);
    }

    #[test]
    fn the_verifier_verdict_beats_the_first_warning() {
        let warnings = [
            "prog 'prog_fmod_ret': BPF program load failed: -EINVAL",
            "prog 'prog_fmod_ret': -- BEGIN PROG LOAD LOG --\n__set_task_comm() is not modifiable\nprocessed 0 insns (limit 1000000)\n-- END PROG LOAD LOG --",
            "failed to load object 'overhead_bpf'",
        ];
        assert_eq!(
            reason_of(warnings.into_iter()).as_deref(),
            Some("__set_task_comm() is not modifiable")
        );
    }
}
