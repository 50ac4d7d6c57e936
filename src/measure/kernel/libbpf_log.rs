//! libbpf's log: kept, so that an error can quote the warning (or the
//! verifier's verdict) that explains it.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, Once};

use super::verifier_log::verdict_of;

/// libbpf's warnings since the last clear, kept so an error can quote the
/// one that explains it; the full log goes to the `log` crate
/// (RUST_LOG=debug).
static LIBBPF_WARNINGS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const LIBBPF_LOG_KEEP: usize = 64;

fn on_libbpf_message(level: libbpf_sys::libbpf_print_level, msg: &str) {
    let msg = msg.trim_end();
    let msg = msg.strip_prefix("libbpf: ").unwrap_or(msg).to_string();
    // Debug, not warn: what matters reaches the user in the error itself,
    // and a skipped mechanism should print one line, not libbpf's log.
    if level != libbpf_sys::LIBBPF_WARN {
        log::trace!("libbpf: {msg}");
        return;
    }
    log::debug!("libbpf: {msg}");
    let mut log = LIBBPF_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if log.len() == LIBBPF_LOG_KEEP {
        log.pop_front();
    }
    log.push_back(msg);
}

unsafe extern "C" {
    // glibc's and musl's: formats into a buffer of the right size in one
    // pass, so the va_list is read exactly once.
    fn vasprintf(out: *mut *mut c_char, fmt: *const c_char, ap: *mut c_void) -> c_int;
}

/// The callback's type, `libbpf_print_fn_t` but for `ap`: bindgen's
/// va_list type differs by architecture, a pointer on each.
type PrintFn =
    unsafe extern "C" fn(libbpf_sys::libbpf_print_level, *const c_char, *mut c_void) -> c_int;

/// libbpf's print callback. A message holds whatever bytes libbpf
/// formats, names from the object file among them: they reach the log
/// lossily, and nothing here may panic, since a panic cannot unwind
/// through libbpf (libbpf-rs's own callback aborts the process on a
/// message that is not UTF-8: see docs/objects.md).
///
/// `ap` is a `va_list`: a pointer to its state on x86_64, and on aarch64
/// a pointer to the caller's copy (AAPCS64 passes that 32-byte struct by
/// reference), so it is passed on as it came.
unsafe extern "C" fn print_cb(
    level: libbpf_sys::libbpf_print_level,
    fmt: *const c_char,
    ap: *mut c_void,
) -> c_int {
    let mut buf: *mut c_char = std::ptr::null_mut();
    // SAFETY: fmt and ap are libbpf's, valid for this call; vasprintf
    // reads ap once and mallocs buf, freed below.
    let len = unsafe { vasprintf(&mut buf, fmt, ap) };
    if len < 0 || buf.is_null() {
        return 0;
    }
    // SAFETY: vasprintf wrote len bytes and a NUL into buf.
    let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len as usize) };
    let msg = String::from_utf8_lossy(bytes).into_owned();
    // SAFETY: buf came from vasprintf's malloc, and is no longer used.
    unsafe { libc::free(buf.cast()) };
    // A panic in a logger must not cross into C either.
    let _ = std::panic::catch_unwind(|| on_libbpf_message(level, &msg));
    0
}

/// Routes libbpf's messages to the `log` crate (and a short buffer) instead of
/// stderr: a mechanism the kernel lacks should print one SKIP line, not a
/// verifier dump. Our own callback, not libbpf-rs's `set_print`.
pub fn capture_libbpf_log() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the two types differ only in `ap`'s pointee (see PrintFn).
        let cb = unsafe {
            std::mem::transmute::<PrintFn, libbpf_sys::libbpf_print_fn_t>(print_cb as PrintFn)
        };
        // SAFETY: the callback lives as long as the program.
        unsafe { libbpf_sys::libbpf_set_print(cb) };
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
