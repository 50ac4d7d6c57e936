//! Work in a thread of its own, round after round until dropped: the loads
//! that the experiments (research/) and `cargo xtask flakes` run beside a
//! measurement, to prove a claim on a busy machine too.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A thread running rounds of work; dropping it stops it after its round.
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// `setup` once in the new thread (a CPU pin; what it returns lives as
    /// long as the thread), then `round` until dropped.
    pub fn start<G>(
        setup: impl FnOnce() -> G + Send + 'static,
        mut round: impl FnMut() + Send + 'static,
    ) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let _kept = setup();
            while !flag.load(Ordering::Relaxed) {
                round();
            }
        });
        Background {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One round of the CPU hog: a million multiply-adds the optimizer keeps.
pub fn spin() {
    let mut x = 0u64;
    for _ in 0..1_000_000 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// One round of the disk load: 20 MiB written to `file` (made by
/// `create`), every dirty page synced, the file removed.
pub fn disk<E>(file: &Path, create: impl Fn() -> Result<File, E>) {
    let block = [0x5au8; 1 << 16];
    if let Ok(mut f) = create() {
        for _ in 0..20 * 16 {
            let _ = f.write_all(&block);
        }
    }
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let _ = std::fs::remove_file(file);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn rounds_run_until_dropped_and_no_more() {
        let rounds = Arc::new(AtomicUsize::new(0));
        let counted = rounds.clone();
        let load = Background::start(
            || (),
            move || {
                counted.fetch_add(1, Ordering::Relaxed);
            },
        );
        while rounds.load(Ordering::Relaxed) < 3 {
            std::thread::yield_now();
        }
        drop(load);
        let after = rounds.load(Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(rounds.load(Ordering::Relaxed), after);
    }

    #[test]
    fn the_disk_load_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("load.bin");
        disk(&file, || File::create(&file));
        assert!(!file.exists());
    }
}
