//! The integration tests' one helper: every test file has `mod common;`
//! and takes what it needs. Here, what tests/overhead.rs runs: one
//! mechanism through the same pipeline as the `bpf-overhead` command, the
//! way the kernel's test_overhead does, checked for what it should have
//! done. In the submodules: running the command ([`cli`]), the suite's
//! BPF objects ([`objects`]), what a process holds ([`procs`]), the mutation tests' seeded
//! sequences ([`rng`]), what a test
//! needs of the machine ([`system`]), another user's files and sudo
//! ([`users`]) and the suite's KTAP ([`ktap`]).
//!
//! Each test file uses a different part, and what one does not use is no
//! warning.
#![allow(dead_code)]

use std::fmt;

use bpf_overhead::document::{Document, MechanismResult};
use bpf_overhead::expect::{Conclusion, Expectations};
use bpf_overhead::measure::kernel::host::{emulated, Host};
use bpf_overhead::measure::Privileged;
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::render::KtapResult;
use bpf_overhead::{render, Mechanism};

pub mod cli;
pub mod ktap;
pub mod objects;
pub mod procs;
pub mod rng;
pub mod system;
pub mod users;

/// A test failure that prints as its one-line message: the harness shows
/// `Error: <message>` rather than a panic location and backtrace.
pub struct Failure(String);

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type TestResult = Result<(), Failure>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Failure(format!($($msg)+)));
        }
    };
}

/// Measures `name` and its base with test_overhead's 100000 events (one
/// timed round: base, `name`, base), and checks the program
/// counted exactly one hit per event from the measuring thread and that
/// the run left nothing behind in the process (tests/cleanup.rs checks
/// the mounts and the BPF-stats run). Prints the
/// selftest line and the overhead against the base measured in the same
/// round. A missing kernel feature prints `SKIP <mechanism>: <reason>` and
/// passes, unless strict mode says otherwise ([`Expectations`]: the
/// kernel's declared absences); anything else fails with one line.
///
/// With [`ktap::KTAP_ENV`] set, also appends the test's KTAP result to
/// that file (see [`ktap::append`]). Under vmtest, a mechanism the file
/// already has a result for ran in an earlier boot, which crashed: it is
/// not run again ([`ktap::resumed`]).
pub fn check(name: &str) -> TestResult {
    if ktap::resumed(name)? {
        println!("{name}: its result is from an earlier boot, not run again");
        return Ok(());
    }
    let (outcome, diagnostics) = match selftest(name) {
        Ok(Checked::Passed(lines)) => (Ok(()), lines),
        Ok(Checked::Skipped(reason)) => {
            ktap::record(name, KtapResult::Skip(&reason), &[])?;
            return Ok(());
        }
        Err(Failure(why)) => (Err(Failure(why.clone())), vec![why]),
    };
    let result = if outcome.is_ok() {
        KtapResult::Pass
    } else {
        KtapResult::Fail
    };
    ktap::record(name, result, &diagnostics)?;
    outcome
}

/// What [`measure`] found, short of a failure.
enum Checked {
    /// Measured and counted right: the lines printed.
    Passed(Vec<String>),
    /// The kernel lacks what it needs, and may: why.
    Skipped(String),
}

fn selftest(name: &str) -> Result<Checked, Failure> {
    let expect = Expectations::from_env().map_err(Failure)?;
    let mechanism: Mechanism = name.parse().map_err(Failure)?;
    let plan = Plan::selftest(mechanism, emulated());
    let before = procs::Footprint::now();
    let doc = Privileged::check(&plan.mechanisms)
        .and_then(|privileged| pipeline::execute(&plan, &privileged, Host::current, |_| {}))
        .map_err(|e| Failure(e.to_string()))?;
    // Nothing left behind, whether it ran, skipped or failed.
    if let Some(changed) = before.changed() {
        return Err(Failure(format!("{name}: left behind: {changed}")));
    }
    let result = doc
        .mechanism(name)
        .ok_or_else(|| Failure(format!("{name}: not in the result document")))?;
    let base = doc
        .mechanism(&result.base)
        .ok_or_else(|| Failure(format!("{name}: its base is not in the result document")))?;
    // A base that failed or skipped says why itself, better than "its base
    // failed"; the mechanism is judged by its own name all the same.
    let why = if base.is_ok() { result } else { base };
    match expect.judge(name, result.status, why.reason.as_deref()) {
        Conclusion::Pass => {}
        Conclusion::Skip(reason) => {
            println!("SKIP {name}: {reason}");
            return Ok(Checked::Skipped(reason));
        }
        Conclusion::Fail(reason) => return Err(Failure(reason)),
    }
    let lines: Vec<String> = [
        render::selftest_line(&doc, result),
        render::detail_line(&doc, result),
    ]
    .into_iter()
    .map(Option::unwrap_or_default)
    .collect();
    for line in &lines {
        println!("{line}");
    }
    check_counts(&doc, result, plan.options.iterations.get())?;
    check_attach_cost(mechanism, result)?;
    Ok(Checked::Passed(lines))
}

/// `planned`: test_overhead's 100000 events, fewer under emulation
/// ([`Plan::selftest`]).
fn check_counts(doc: &Document, m: &MechanismResult, planned: u64) -> TestResult {
    let name = &m.name;
    ensure!(
        doc.iterations == planned,
        "{name}: ran {} events, not {planned}",
        doc.iterations
    );
    // Fewer where they are slow, down to the lead-in's tenth
    // (`SELFTEST_LONGEST_RUN`).
    let events = m.events_per_run;
    let least = if m.is_base() {
        planned
    } else {
        bpf_overhead::measure::lead_in(planned)
    };
    ensure!(
        events >= least,
        "{name}: ran {events} events a run, fewer than {least}"
    );
    if m.is_base() {
        ensure!(m.hits.is_none(), "{name}: a base counted {:?} hits", m.hits);
        return Ok(());
    }
    // Counted on the lead-in (the comm and call triggers, by default), or
    // on every timed event: exactly, and never nothing.
    let counted = m.counted_events.clone().unwrap_or_else(|| vec![events]);
    let least = bpf_overhead::measure::lead_in(planned);
    ensure!(
        counted.iter().all(|&n| n >= least),
        "{name}: counted {counted:?} events, fewer than the lead-in's {least}"
    );
    ensure!(
        m.hits.as_ref() == Some(&counted),
        "{name}: the BPF program counted {:?} hits from the measuring thread for {counted:?} events",
        m.hits
    );
    Ok(())
}

/// A link on every function says how many it is on: thousands on any
/// kernel with fprobe (the count is exact, unlike the time it took).
fn check_attach_cost(mechanism: Mechanism, m: &MechanismResult) -> TestResult {
    let name = &m.name;
    let every = mechanism.kind().spec().attach.every_function();
    match &m.attach {
        Some(cost) => {
            ensure!(every, "{name}: one hook, yet its result has an attach cost");
            ensure!(
                cost.functions >= 1000,
                "{name}: attached to {} functions, expected every traceable one (thousands)",
                cost.functions
            );
        }
        None => ensure!(
            !every,
            "{name}: its result says nothing of what attaching took"
        ),
    }
    Ok(())
}

/// Every catalogue entry has a test line, and every test line names one.
#[track_caller]
pub fn check_coverage(tested: &[&str]) {
    let mut tested: Vec<&str> = tested.to_vec();
    let mut catalogue: Vec<&str> = Mechanism::all().map(Mechanism::name).collect();
    tested.sort_unstable();
    catalogue.sort_unstable();
    assert_eq!(
        tested, catalogue,
        "tests/overhead.rs and the catalogue (src/measure/mechanism/catalogue.rs) list different mechanisms"
    );
}
