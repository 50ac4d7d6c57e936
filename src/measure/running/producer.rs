//! Extra producers for multi-producer runs (`--producers N`, after bench's
//! `-p N -a`): threads that each fire the trigger from a CPU of their own,
//! started together, and count into their own CPU's slot.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, unshare, CloneFlags, CpuSet};
use nix::unistd::{gettid, Pid};

use crate::measure::error::{Error, Result};
use crate::measure::mechanism::trigger::Trigger;

/// What one producer did in one timed run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fired {
    pub cpu: usize,
    pub events: u64,
    pub elapsed: Duration,
}

struct Fire {
    events: u64,
    start: Arc<Barrier>,
}

/// A producer thread, armed and waiting for runs. Dropping it ends the
/// thread, which puts back what its trigger changed.
pub(crate) struct Producer<'scope> {
    pub cpu: usize,
    pub tid: u32,
    orders: Option<Sender<Fire>>,
    results: Receiver<Result<Fired>>,
    thread: Option<ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> Producer<'scope> {
    /// Starts a producer on `cpu` and waits until its trigger is armed.
    /// Like the measuring thread, it has a file table of its own.
    pub(crate) fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        cpu: usize,
        trigger: Trigger,
        driver: Option<OwnedFd>,
        batch: u32,
    ) -> Result<Self> {
        let (order_tx, order_rx) = channel::<Fire>();
        let (result_tx, result_rx) = channel::<Result<Fired>>();
        let (ready_tx, ready_rx) = channel::<Result<u32>>();
        let thread = std::thread::Builder::new()
            .name(format!("producer-{cpu}"))
            .spawn_scoped(scope, move || {
                let armed = (|| {
                    let mut one = CpuSet::new();
                    one.set(cpu)
                        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &one))
                        .map_err(|e| {
                            Error::environment(format!("pinning a producer to CPU {cpu}: {e}"))
                        })?;
                    unshare(CloneFlags::CLONE_FILES).map_err(|e| {
                        Error::environment(format!("unshare(CLONE_FILES) for a producer: {e}"))
                    })?;
                    trigger.arm(driver.as_ref().map(|d| d.as_fd()), batch)
                })();
                let mut armed = match armed {
                    Ok(armed) => {
                        let _ = ready_tx.send(Ok(gettid().as_raw() as u32));
                        armed
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                for order in order_rx {
                    order.start.wait();
                    let start = Instant::now();
                    let fired = armed.fire(order.events);
                    let elapsed = start.elapsed();
                    let result = fired.and_then(|events| {
                        armed.verify()?;
                        Ok(Fired {
                            cpu,
                            events,
                            elapsed,
                        })
                    });
                    if result_tx.send(result).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::environment(format!("cannot start a producer thread: {e}")))?;
        let tid = ready_rx
            .recv()
            .map_err(|_| Error::failed(format!("the producer on CPU {cpu} died while arming")))??;
        Ok(Self {
            cpu,
            tid,
            orders: Some(order_tx),
            results: result_rx,
            thread: Some(thread),
        })
    }

    /// Tells the producer to fire `events` once everyone reaches `start`.
    pub(crate) fn order(&self, events: u64, start: Arc<Barrier>) -> Result<()> {
        self.orders
            .as_ref()
            .and_then(|o| o.send(Fire { events, start }).ok())
            .ok_or_else(|| Error::failed(format!("the producer on CPU {} is gone", self.cpu)))
    }

    /// What it fired for the last order.
    pub(crate) fn result(&self) -> Result<Fired> {
        self.results.recv().map_err(|_| {
            Error::failed(format!(
                "the producer on CPU {} died while firing",
                self.cpu
            ))
        })?
    }
}

impl Drop for Producer<'_> {
    fn drop(&mut self) {
        // Closing the order channel ends the thread's loop.
        self.orders.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
