//! The exit statuses of `bpf-overhead` (the command, `report`, `compare`)
//! and of `cargo xtask vmtest` and `history`: one meaning each, written
//! only here. `--help` and docs/gate.md show [`TABLE`]; a test checks
//! that the page shows it as it is.

/// Done: everything asked for was measured (skips beside measured
/// mechanisms included), and no gate found a regression.
pub const OK: u8 = 0;
/// The gate found a regression (or a mechanism the baseline or A measured
/// was lost), and nothing else gives 1.
pub const REGRESSED: u8 = 1;
/// Bad input: an argument, a result file, a baseline, a kernel name.
pub const INPUT: u8 = 2;
/// No regression, but the gate could not decide every comparison.
pub const UNDECIDED: u8 = 3;
/// Nothing measured: every selected mechanism (or every program of the
/// --object files) was skipped. kselftest's KSFT_SKIP.
pub const NOTHING_MEASURED: u8 = 4;
/// The environment could not run it: not root, a capability missing, a
/// mechanism that failed to run, a VM that did not boot or finish, an
/// output that could not be written. sysexits' EX_UNAVAILABLE: apart from
/// kselftest's codes (0 to 4), timeout(1)'s 124 and automake's 77 and 99.
pub const ENVIRONMENT: u8 = 69;
/// `--no-wait` and a CPU it needs is held by another measuring run:
/// sysexits' EX_TEMPFAIL ("try again later").
pub const BUSY: u8 = 75;
/// xtask: the VM ran past `--timeout` (timeout(1)'s status).
pub const TIMED_OUT: u8 = 124;

/// Every status, with what it means, in the order documented: the one
/// list `--help` and docs/gate.md show. 128 + N, a signal, is not here.
pub const TABLE: &[(u8, &str)] = &[
    (OK, "ok: measured, no regression"),
    (REGRESSED, "a regression, and only that"),
    (INPUT, "bad input: an argument, a result or baseline file, a kernel name"),
    (UNDECIDED, "could not decide: no regression, but a comparison was too noisy to tell (UNSURE)"),
    (NOTHING_MEASURED, "nothing measured: every mechanism skipped (kselftest's KSFT_SKIP)"),
    (ENVIRONMENT, "the environment could not run it: not root, a capability missing, a mechanism failed to run, a VM failed, an output could not be written"),
    (BUSY, "with --no-wait, another measuring run holds the CPU"),
    (TIMED_OUT, "cargo xtask only: the VM ran past --timeout"),
];

/// [`TABLE`] as lines of text, `  N  meaning`, and the signals' line.
pub fn help_text() -> String {
    let mut s = String::from("Exit status:\n");
    for (code, what) in TABLE {
        s.push_str(&format!("  {code:<4}{what}\n"));
    }
    s.push_str("  128+N interrupted by signal N (130 SIGINT, 143 SIGTERM)\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_has_one_meaning() {
        let mut codes: Vec<u8> = TABLE.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), TABLE.len());
    }
}
