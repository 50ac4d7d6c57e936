//! The project's tooling, run as `cargo xtask TASK` (an alias in .cargo/config.toml).
//!
//! Tasks:
//! - `vmtest KERNEL [-- TEST-ARGS]`: run the test suite in a VM booted on another
//!   kernel (a Debian kernel by series or release, or one you built).
//! - `ci`: what .ci/run runs: lint, host tests, every CI kernel in a VM, the report.

mod arch;
mod args;
mod arm64;
mod arm64_image;
mod ci;
mod cpio;
mod debian;
// The names it shares with the suite, from the main crate's one list
// (xtask does not depend on the main crate: that would build its BPF).
#[path = "../../src/env_vars.rs"]
mod env_vars;
mod image;
mod lint;
mod modules;
mod out;
mod summary;
mod vm;
mod vmtest;

use std::process::ExitCode;

use args::Parsed;

/// Prints one `vmtest:` line on stderr.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { eprintln!("vmtest: {}", format!($($t)*)) };
}

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
