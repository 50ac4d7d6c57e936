//! `bpf-overhead`: the benchmark matrix, its statistics and a regression
//! gate, on top of the library the tests use. This file parses the
//! command line, dispatches to a subcommand of `src/command/` and owns
//! the exit codes; the logic lives in the library.

use std::io::Write as _;
use std::process::ExitCode;

use bpf_overhead::Error;

/// The command: its arguments and each subcommand, a module apiece.
mod command {
    pub mod calibrate;
    pub mod cli;
    pub mod compare;
    pub mod measure;
    pub mod object_args;
    pub mod report;
    pub mod save;
}

use command::cli::{parse_args, Command};

/// Every exit code of the command (see --help), but 0 and 128 + a signal.
mod exit {
    /// A mechanism failed, the run could not be made, or a regression.
    pub const FAILED: u8 = 1;
    /// Bad input.
    pub const INPUT: u8 = 2;
    /// The gate found no regression but could not decide every
    /// comparison.
    pub const INCONCLUSIVE: u8 = 3;
    /// kselftest's "skipped" (tools/testing/selftests/kselftest.h).
    pub const KSFT_SKIP: u8 = 4;
    /// `--no-wait` and a CPU it needs is taken: sysexits' EX_TEMPFAIL
    /// ("try again later").
    pub const BUSY: u8 = 75;
}

/// One line on stderr, `bpf-overhead: <msg>`. A closed or full stderr
/// does not stop the command (eprintln! would panic).
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "bpf-overhead: {msg}");
}

/// How the command ends when it does not end normally.
enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// The run could not be made or completed: exit 1.
    Runtime(String),
}

impl From<Error> for Failure {
    fn from(err: Error) -> Self {
        Failure::Runtime(err.to_string())
    }
}

/// Writes the output to stdout. A reader that went away (`| head`, a
/// closed pipe) ends it quietly, as it ends `cat`; any other failure
/// (`>/dev/full`) is the run's, in one line.
fn print(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::Runtime(format!(
            "cannot write the output to stdout: {e}"
        ))),
    }
}

/// The library reports through `log`: warnings (tracefs mounted for the
/// run, say) print as `bpf-overhead: ...`; RUST_LOG=debug adds libbpf's log.
fn init_log() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|buf, record| writeln!(buf, "bpf-overhead: {}", record.args()))
        .init();
}

fn main() -> ExitCode {
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    init_log();
    let ran = match &cli.command {
        Some(Command::Report(args)) => command::report::report(args),
        Some(Command::Compare(args)) => command::compare::compare(args),
        Some(Command::Calibrate(args)) => command::calibrate::calibrate(args),
        None => command::measure::main(&cli),
    };
    match ran {
        Ok(code) => code,
        Err(Failure::Input(msg)) => {
            note(&format!("error: {msg}"));
            ExitCode::from(exit::INPUT)
        }
        Err(Failure::Runtime(msg)) => {
            note(&format!("error: {msg}"));
            ExitCode::from(exit::FAILED)
        }
    }
}
