//! Shared by the integration tests: run one mechanism the way the kernel's
//! test_overhead does and check what it should have done.

use std::fmt;

use bpf_overhead::measure::{measure, Options, DEFAULT_ITERATIONS};
use bpf_overhead::report::{detail_line, selftest_line};
use bpf_overhead::{Error, Mechanism, Sample};

/// Set to 1 by CI jobs that expect every mechanism: a skip becomes a failure.
pub const STRICT_ENV: &str = "BPF_OVERHEAD_STRICT";

pub fn strict() -> bool {
    std::env::var(STRICT_ENV).is_ok_and(|v| v == "1")
}

/// A test failure that prints as its one-line message: the harness shows
/// `Error: <message>` rather than a panic location and backtrace.
pub struct Failure(String);

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Outcome = Result<(), Failure>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Failure(format!($($msg)+)));
        }
    };
}

/// What a test does with an error: a missing kernel feature prints
/// `SKIP <mechanism>: <reason>` and passes (fails in strict mode); any
/// other error fails with its one-line message.
fn skip_or_fail(mechanism: Mechanism, err: Error) -> Outcome {
    match err {
        Error::Unsupported(reason) if !strict() => {
            println!("SKIP {mechanism}: {reason}");
            Ok(())
        }
        Error::Unsupported(reason) => Err(Failure(format!(
            "{mechanism}: {reason} (a skip, failed because {STRICT_ENV}=1)"
        ))),
        err => Err(Failure(err.to_string())),
    }
}

/// Measures the base of `mechanism`'s trigger, then `mechanism`, with
/// test_overhead's 100000 events, and checks the program counted exactly
/// one hit per event from this thread. Prints the selftest line and the
/// overhead against the base measured just before.
pub fn check(mechanism: Mechanism) -> Outcome {
    let opts = Options::default();
    if mechanism.is_base() {
        return check_base(mechanism, &opts);
    }
    let base = match measure(mechanism.base(), &opts) {
        Ok(base) => base,
        Err(err) => return skip_or_fail(mechanism.base(), err),
    };
    let sample = match measure(mechanism, &opts) {
        Ok(sample) => sample,
        Err(err) => return skip_or_fail(mechanism, err),
    };
    println!("{}", selftest_line(&sample));
    println!("{}", detail_line(&sample, &base));
    check_sample(&sample, Some(DEFAULT_ITERATIONS))
}

/// A base run: the trigger alone. Its checks are the trigger's own (the
/// comm writes renamed the thread) and that nothing counted hits.
fn check_base(base: Mechanism, opts: &Options) -> Outcome {
    let sample = match measure(base, opts) {
        Ok(sample) => sample,
        Err(err) => return skip_or_fail(base, err),
    };
    println!("{}", selftest_line(&sample));
    println!("  {base}: {:.1} ns/event", sample.ns_per_event());
    check_sample(&sample, None)
}

fn check_sample(sample: &Sample, hits: Option<u64>) -> Outcome {
    let m = sample.mechanism;
    ensure!(
        sample.iterations == DEFAULT_ITERATIONS,
        "{m}: ran {} events, not {DEFAULT_ITERATIONS}",
        sample.iterations
    );
    ensure!(
        sample.hits == hits,
        "{m}: the BPF program counted {:?} hits from this thread for {DEFAULT_ITERATIONS} events, expected {hits:?}",
        sample.hits
    );
    Ok(())
}
