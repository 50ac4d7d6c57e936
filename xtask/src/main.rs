//! The project's tooling, run as `cargo xtask TASK` (an alias in .cargo/config.toml).
//!
//! Tasks:
//! - `vmtest KERNEL [-- TEST-ARGS]`: run the test suite in a VM booted on another
//!   kernel (a Debian kernel by series or release, or one you built).
//! - `ci`: what .ci/run runs: lint, host tests, every CI kernel in a VM, the report.
//!
//! Three layers, each importing only from those under it:
//! 1. [`util`], the helpers every module shares: it imports no other module;
//! 2. the parts: the command line ([`args`]), kernels and their images, the
//!    initramfs, the guest's build and job, qemu, the output directory, the
//!    summary, the table of a CI run; they import each other without a cycle;
//! 3. one module per task, [`vmtest`] and [`ci`]: no part imports a task and
//!    no task another, so what two tasks share is a part.

// The tasks.
mod ci;
mod vmtest;

// The parts.
mod arch;
mod args;
mod arm64;
mod arm64_image;
mod collect;
mod cpio;
mod debian;
// The names it shares with the suite, from the main crate's one list
// (xtask does not depend on the main crate: that would build its BPF).
#[path = "../../src/env_vars.rs"]
mod env_vars;
mod guest_build;
mod image;
mod initramfs;
mod job;
mod kernel;
mod lint;
mod modules;
mod out;
mod summary;
mod vm;

mod util;

use std::process::ExitCode;

use args::Parsed;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let env_accel = std::env::var("VMTEST_ACCEL").ok();
    let code = match args::parse(&argv, env_accel.as_deref()) {
        Ok(Parsed::Help(h)) => {
            print!("{h}");
            0
        }
        Ok(Parsed::Vmtest(a)) => vmtest::main(a),
        Ok(Parsed::Ci(c)) => ci::main(c),
        Err(e) => {
            let task = argv
                .first()
                .map(String::as_str)
                .filter(|t| ["vmtest", "ci"].contains(t))
                .unwrap_or("xtask");
            eprintln!("{task}: {e:#}");
            2
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
