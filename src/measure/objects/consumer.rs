//! The consumer of a user's object's ring buffers (`--object`): as an
//! agent reads its events, a thread on another CPU than the measuring one
//! polls every `BPF_MAP_TYPE_RINGBUF` map of the object while it is
//! loaded. Without one the buffer fills within a few hundred events, and
//! every later reserve fails at once: the run would time a full buffer,
//! not the agent.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use libbpf_rs::libbpf_sys;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::measure::error::{Error, Result};

/// Polls ring buffers on another CPU until dropped.
pub(crate) struct Consumer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

extern "C" fn consume(
    _ctx: *mut std::ffi::c_void,
    _data: *mut std::ffi::c_void,
    _size: u64,
) -> i32 {
    0
}

impl Consumer {
    /// Starts polling `maps` (ring buffer fds) on a CPU other than
    /// `measuring` (best effort: an offline one leaves it where the
    /// scheduler puts it). `None` when there is nothing to poll.
    pub(crate) fn start(maps: Vec<OwnedFd>, measuring: usize) -> Result<Option<Consumer>> {
        if maps.is_empty() {
            return Ok(None);
        }
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
        let other = (0..cpus).find(|&c| c != measuring);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ringbuf-consumer".into())
            .spawn(move || {
                if let Some(cpu) = other {
                    let mut set = CpuSet::new();
                    if set.set(cpu).is_ok() {
                        // Best effort: a consumer on the measuring CPU
                        // still consumes.
                        let _ = sched_setaffinity(Pid::from_raw(0), &set);
                    }
                }
                poll(&maps, &stopped);
            })
            .map_err(|e| Error::failed(format!("starting the ring buffer consumer: {e}")))?;
        Ok(Some(Consumer {
            stop,
            thread: Some(thread),
        }))
    }
}

/// Polls until `stop`, 10 ms at a time.
fn poll(maps: &[OwnedFd], stop: &AtomicBool) {
    let mut rb: *mut libbpf_sys::ring_buffer = std::ptr::null_mut();
    for fd in maps {
        // SAFETY: the fd is an open ring buffer map, kept open by `maps`
        // for as long as `rb` lives; the callback takes no context.
        unsafe {
            if rb.is_null() {
                rb = libbpf_sys::ring_buffer__new(
                    fd.as_raw_fd(),
                    Some(consume),
                    std::ptr::null_mut(),
                    std::ptr::null(),
                );
            } else {
                libbpf_sys::ring_buffer__add(
                    rb,
                    fd.as_raw_fd(),
                    Some(consume),
                    std::ptr::null_mut(),
                );
            }
        }
    }
    if rb.is_null() {
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: rb is a live ring buffer manager.
        unsafe { libbpf_sys::ring_buffer__poll(rb, 10) };
    }
    // SAFETY: as above; not used after.
    unsafe { libbpf_sys::ring_buffer__free(rb) };
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
