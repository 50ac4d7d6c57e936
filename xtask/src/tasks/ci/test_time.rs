//! The README's test command's test time: the loop a developer waits
//! on beyond the build, said after CI's host-tests step.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};

/// Runs the README's test command with its output passed on, and says
/// its test time: what a developer waits for beyond the build, the loop
/// whose cost each addition should see.
pub fn run(mut cmd: Command) -> std::io::Result<ExitStatus> {
    let mut child = cmd.stdout(Stdio::piped()).spawn()?;
    let (mut total, mut binaries) = (0.0, 0);
    // Bytes, not lines of UTF-8: a test may print anything.
    for line in BufReader::new(child.stdout.take().expect("piped")).split(b'\n') {
        let line = line?;
        if let Some(s) = finished_in(&String::from_utf8_lossy(&line)) {
            total += s;
            binaries += 1;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&line).and_then(|()| out.write_all(b"\n"));
    }
    let status = child.wait()?;
    eprintln!(
        "ci: host-tests: test time {total:.1}s (the sum of {binaries} test binaries' \"finished in\")"
    );
    Ok(status)
}

/// The seconds of a libtest summary line (`test result: ... finished in
/// 1.23s`).
fn finished_in(line: &str) -> Option<f64> {
    let rest = line.strip_prefix("test result: ")?;
    rest.rsplit_once("finished in ")?
        .1
        .trim()
        .strip_suffix('s')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_binarys_time_is_its_summary_lines() {
        let line = "test result: ok. 66 passed; 0 failed; 0 ignored; 0 measured; \
                    0 filtered out; finished in 9.48s";
        assert_eq!(finished_in(line), Some(9.48));
        assert_eq!(finished_in("test foo ... ok"), None);
        assert_eq!(finished_in("  test result: ok. finished in 1s"), None);
    }
}
