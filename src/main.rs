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
    #[cfg(test)]
    mod documented;
    pub mod measure;
    pub mod object_args;
    pub mod report;
    pub mod save;
}

use command::cli::{parse_args, Command};

/// Every exit status of the command, one meaning each (see --help).
use bpf_overhead::exit_status as exit;

/// One line on stderr, `bpf-overhead: <msg>`. A closed or full stderr
/// does not stop the command (eprintln! would panic).
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "bpf-overhead: {msg}");
}

/// How the command ends when it does not end normally.
enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// The environment could not run it (not root, a capability missing,
    /// an output that could not be written): [`exit::ENVIRONMENT`].
    Environment(String),
}

impl From<Error> for Failure {
    fn from(err: Error) -> Self {
        Failure::Environment(err.to_string())
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
        Err(e) => Err(Failure::Environment(format!(
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
        Err(Failure::Environment(msg)) => {
            note(&format!("error: {msg}"));
            ExitCode::from(exit::ENVIRONMENT)
        }
    }
}
