//! The project's tooling, run as `cargo xtask TASK` (an alias in .cargo/config.toml).
//!
//! Tasks:
//! - `vmtest KERNEL [-- TEST-ARGS]`: run the test suite in a VM booted on another
//!   kernel (a Debian kernel by series or release, or one you built).
//! - `ci`: what .ci/run runs: lint, host tests, every CI kernel in a VM, the report.
//! - `kselftest --out DIR`: the suite as a kselftest collection, its install
//!   layout and tarball, the programs static (docs/kernel-ci.md).
//! - `flakes`: the README's test command N times alone, beside a CPU hog and
//!   beside disk writes, and how often each test failed (docs/suite.md).
//! - `history SERIES`: every Debian build of a series counted exactly, and
//!   the build where each count changed, split by function (docs/history.md).
//!
//! Rooms by concern, in layers, each importing only from those under it
//! (`layers.rs` checks it):
//! 1. [`util`], the helpers every room shares (say!, the signal check, the
//!    value parsers, the environment's names): it imports nothing of the crate;
//! 2. the parts: [`kernels`] (a kernel to boot and its image), [`build`]
//!    (the host's builds of the guest's programs) and [`vm`] (qemu, the
//!    initramfs, the guest's job, the output directory, the summary), in
//!    that order, without a cycle;
//! 3. [`tasks`], one room per task, each owning its options: vmtest (with
//!    its `--against` modes duet and exact), ci, kselftest and flakes. No
//!    part imports a task and no task another, so what two tasks share is
//!    a part;
//! 4. [`cli`], the command line, which reads the arguments into a task's
//!    options; only this file imports it, and nothing imports this file.

mod build;
mod cli;
mod kernels;
mod tasks;
mod util;
mod vm;

// The layer tests (their cycle finder is the main crate's, shared).
#[cfg(test)]
mod layers;

use std::process::ExitCode;

use cli::args::{self, Parsed, Task};
use tasks::vmtest::{self, duet, exact, Mode};
use tasks::{ci, flakes, history, kselftest};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let env_accel = std::env::var("VMTEST_ACCEL").ok();
    let tasks = args::tasks();
    let task = argv.first().filter(|t| tasks.contains(t));
    if let Some(task) = task {
        util::set_task(task);
    }
    let code = match args::parse(&argv, env_accel.as_deref()).and_then(run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {e:#}", task.map_or("xtask", String::as_str));
            2
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// What the command line asks for, done: the one match on the tasks. Bad
/// input is the error.
fn run(parsed: Parsed) -> anyhow::Result<i32> {
    Ok(match parsed {
        Parsed::Help(h) => {
            print!("{h}");
            0
        }
        Parsed::Task(Task::Vmtest(v)) => {
            let a = v.checked()?;
            match (&a.against, &a.mode) {
                (Some(_), Mode::Exact(_)) => exact::main(a),
                (Some(_), Mode::Timed) => duet::main(a),
                (None, _) => vmtest::main(a),
            }
        }
        Parsed::Task(Task::Ci(c)) => ci::main(c),
        Parsed::Task(Task::Kselftest(k)) => kselftest::main(k),
        Parsed::Task(Task::Flakes(f)) => flakes::main(f),
        Parsed::Task(Task::History(h)) => history::main(*h),
    })
}
