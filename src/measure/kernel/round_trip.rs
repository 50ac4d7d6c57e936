//! One kind of event alone, timed on this host: a system call's round
//! trip, entry to return, with the least work a system call does
//! (getppid). `calibrate` sets it beside the price its fit gives the
//! `syscall` and `sysret` kinds, which it learns only from mechanisms
//! whose system calls do more.

use std::time::Instant;

/// ns per getppid round trip: the fewest of `rounds` runs of `calls`.
pub fn syscall_ns(calls: u32, rounds: u32) -> f64 {
    let calls = calls.max(1);
    (0..rounds.max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                // SAFETY: getppid takes no arguments and cannot fail.
                std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
            }
            t.elapsed().as_nanos() as f64 / f64::from(calls)
        })
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_round_trip_takes_some_time() {
        let ns = super::syscall_ns(1000, 3);
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
