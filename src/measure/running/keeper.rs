//! Keeps the measuring CPU busy whenever the measuring thread sleeps.
//!
//! On a shared VM, a vCPU that goes idle is descheduled by the host and
//! comes back cold: 100000 comm writes after a 100 ms sleep ran at
//! 1812–3774K/s, against 3041–3176K/s in a continuous loop (issue 15; see
//! `gate_power --only noise` for this machine). Between two timed runs the measuring thread does sleep:
//! detaching a program waits for RCU grace periods, loading one may wait
//! too. A keeper thread, pinned to the same CPU at `SCHED_IDLE`, spins
//! whenever that thread sleeps, so the vCPU never idles; at `SCHED_IDLE`
//! it yields to the measuring thread as soon as that wakes. During a timed
//! run ([`timed`]) it parks, so that it takes nothing from the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};

/// Set while a timed run is in progress: the keepers park.
static TIMING: AtomicBool = AtomicBool::new(false);
/// The keepers to wake once a timed run ends.
static KEEPERS: Mutex<Vec<Thread>> = Mutex::new(Vec::new());

/// A keeper thread on one CPU, stopped on drop.
pub struct Keeper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Keeper {
    /// Starts a keeper on `cpu`. Where it cannot be pinned or made
    /// `SCHED_IDLE`, it ends at once (a keeper at normal priority would
    /// compete with the measurement) and says why at debug level.
    pub fn start(cpu: usize) -> Keeper {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, started) = std::sync::mpsc::channel();
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("bpf-overhead-keeper".into())
                .spawn(move || {
                    // A file table of its own first: sharing the measuring
                    // thread's would send each of its writes down the
                    // refcounted fd path, 15% slower (on_measuring_thread).
                    let alone = nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES)
                        .map_err(|e| format!("unshare(CLONE_FILES) failed: {e}"))
                        .and_then(|()| become_idle_class_on(cpu));
                    let _ = ready.send(());
                    if let Err(why) = alone {
                        log::debug!("no keeper on CPU {cpu}: {why}");
                        return;
                    }
                    keep(&stop);
                })
                .ok()
        };
        // Not before the keeper has left the shared file table.
        if thread.is_some() {
            let _ = started.recv();
        }
        if let Some(t) = &thread {
            lock().push(t.thread().clone());
        }
        Keeper { stop, thread }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let id = t.thread().id();
            t.thread().unpark();
            let _ = t.join();
            lock().retain(|k| k.id() != id);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Thread>> {
    KEEPERS.lock().unwrap_or_else(|p| p.into_inner())
}

fn become_idle_class_on(cpu: usize) -> Result<(), String> {
    let mut one = nix::sched::CpuSet::new();
    one.set(cpu).map_err(|e| format!("CPU {cpu}: {e}"))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &one)
        .map_err(|e| format!("pinning failed: {e}"))?;
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sets the calling thread's policy; param is valid.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        return Err(format!(
            "SCHED_IDLE refused: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn keep(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        if TIMING.load(Ordering::Relaxed) {
            std::thread::park();
        } else {
            for _ in 0..1000 {
                std::hint::spin_loop();
            }
        }
    }
}

/// Runs `f`, a timed run, with every keeper parked.
pub fn timed<R>(f: impl FnOnce() -> R) -> R {
    TIMING.store(true, Ordering::SeqCst);
    let r = f();
    TIMING.store(false, Ordering::SeqCst);
    for k in lock().iter() {
        k.unpark();
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two threads of this process share their file table.
    fn share_files(a: libc::pid_t, b: libc::pid_t) -> bool {
        const KCMP_FILES: libc::c_long = 2;
        // SAFETY: kcmp compares two tasks' resources; no memory is passed.
        let r = unsafe { libc::syscall(libc::SYS_kcmp, a, b, KCMP_FILES, 0, 0) };
        assert!(r >= 0, "kcmp: {}", std::io::Error::last_os_error());
        r == 0
    }

    #[test]
    fn the_keeper_has_a_file_table_of_its_own() {
        let me = nix::unistd::gettid().as_raw();
        let _k = Keeper::start(0);
        let threads: Vec<libc::pid_t> = std::fs::read_dir("/proc/thread-self/../")
            .unwrap()
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse().ok())
            .collect();
        let keeper = threads
            .iter()
            .copied()
            .find(|&t| {
                std::fs::read_to_string(format!("/proc/self/task/{t}/comm"))
                    .is_ok_and(|c| c.trim() == "bpf-overhead-ke")
            })
            .expect("the keeper thread");
        assert!(!share_files(me, keeper));
    }

    #[test]
    fn a_keeper_stops_and_unregisters() {
        let k = Keeper::start(0);
        let id = k.thread.as_ref().unwrap().thread().id();
        assert!(lock().iter().any(|t| t.id() == id));
        assert_eq!(timed(|| 7), 7);
        drop(k);
        assert!(!lock().iter().any(|t| t.id() == id));
    }
}
