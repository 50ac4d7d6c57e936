//! The project's tooling, run as `cargo xtask TASK` (an alias in .cargo/config.toml).
//!
//! Tasks:
//! - `vmtest KERNEL [-- TEST-ARGS]`: run the test suite in a VM booted on another
//!   kernel (a Debian kernel by series or release, or one you built).

mod args;
mod cpio;
mod debian;
mod image;
mod modules;
mod out;
mod vm;
mod vmtest;

use std::process::ExitCode;

/// Prints one `vmtest:` line on stderr.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { eprintln!("vmtest: {}", format!($($t)*)) };
}

const TASKS: &str = "tasks: vmtest (cargo xtask vmtest --help)";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let code = match argv.first().map(String::as_str) {
        Some("vmtest") => vmtest::main(&argv[1..]),
        Some("-h" | "--help") => {
            println!("Usage: cargo xtask TASK [ARGS]\n{TASKS}");
            0
        }
        Some(other) => {
            eprintln!("xtask: unknown task '{other}'; {TASKS}");
            2
        }
        None => {
            eprintln!("xtask: no task given; {TASKS}");
            2
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
