//! The verifier's reason for refusing a program, from the log libbpf
//! prints between its begin and end marks: one sentence in a trace that
//! can run to a million lines.
//!
//! The verifier writes its error last, then the states it compared and
//! its statistics ("processed N insns ..."). The error sits on a line of
//! its own, or at the end of the trace line of the instruction it stopped
//! at, when no source line came between (`3: (15) if r2 == 0x0 goto pc-2
//! infinite loop detected at insn 2`). What comes first in the log
//! differs by kernel (BTF notes, for one), so the reason is read back
//! from the statistics, never by its place from the top.

/// The verifier's reason in a warning's program load log: the sentence
/// right before the statistics and the state dumps that follow the error
/// (and before the report that 7.3 adds after it, "Verification failed:
/// ..."). Without statistics (a log cut short), the last line that is not
/// trace.
pub(crate) fn verdict_of(warning: &str, begin: &str, end: &str) -> Option<String> {
    let log = warning.split_once(begin)?.1;
    let log = log.split(end).next().unwrap_or(log);
    verdict_in(log)
}

fn verdict_in(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let stats = lines.iter().rposition(|l| is_statistics(l));
    if let Some(stats) = stats {
        let report = lines[..stats]
            .iter()
            .rposition(|l| l.starts_with("Verification failed:"));
        let error_end = report.unwrap_or(stats);
        let last = lines[..error_end].iter().rev().find(|l| !is_dump(l));
        if let Some(reason) = last.and_then(|l| reason_in(l)) {
            return Some(reason);
        }
    }
    lines
        .iter()
        .rfind(|l| !l.is_empty() && !is_trace(l))
        .map(|l| l.to_string())
}

/// `processed 14 insns (limit 1000000) ...`: the verifier's last word.
fn is_statistics(line: &str) -> bool {
    line.starts_with("processed ") && line.contains(" insns")
}

/// What the verifier prints between its error and its statistics: the
/// states it compared, its timing, stack depths and blank lines.
fn is_dump(line: &str) -> bool {
    line.is_empty()
        || DUMP.iter().any(|p| line.starts_with(p))
        || is_state(after_index(line).unwrap_or(line))
}

/// The starts of [`is_dump`]'s lines: every one of them trace too.
const DUMP: &[&str] = &[
    "cur state:",
    "old state:",
    "verification time",
    "stack depth",
    "max_states_per_insn",
    "Live regs",
    "mark_precise:",
    "last_idx ",
    "regs=",
    "parent ",
    "propagating ",
    "from ",
    "caller:",
    "callee:",
];

/// The reason a line gives: the line itself, or the tail of an
/// instruction's trace line; none for other trace.
fn reason_in(line: &str) -> Option<String> {
    if !is_trace(line) {
        return Some(line.to_string());
    }
    insn_tail(line)
}

/// What follows the disassembly on an instruction's trace line (`12: (61)
/// r2 = *(u32 *)(r1 +0) unreachable ...`), up to any `;` comment. The
/// disassembly is lowercase registers, numbers, operators and a few
/// mnemonics; the verifier's sentences start with a word or a capital.
fn insn_tail(line: &str) -> Option<String> {
    let insn = after_index(line)?.strip_prefix('(')?;
    let (_, insn) = insn.split_once(") ")?;
    let insn = insn.split(" ;").next().unwrap_or(insn);
    const MNEMONICS: &[&str] = &[
        "if", "goto", "gotol", "call", "exit", "lock", "may_goto", "nospec",
    ];
    let words: Vec<&str> = insn.split(' ').collect();
    // The word after `call` is the function called, whatever it looks like.
    let mut after_call = false;
    let at = words.iter().position(|&word| {
        let is_word = word.len() >= 2 && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
        let starts = !after_call && (capital || (is_word && !MNEMONICS.contains(&word)));
        after_call = word == "call";
        starts
    })?;
    Some(words[at..].join(" ").trim().to_string()).filter(|t| !t.is_empty())
}

/// The text after a trace line's instruction index or frame (`12: `,
/// `frame1: `), if it has one.
fn after_index(line: &str) -> Option<&str> {
    let (at, rest) = line.split_once(": ")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(at) || at.strip_prefix("frame").is_some_and(digits)).then_some(rest)
}

/// A verifier log line that traces what it walked, or counts it.
fn is_trace(line: &str) -> bool {
    // Source lines, the statistics and the subprograms' headers, besides
    // what [`is_dump`] skips.
    const TRACE: &[&str] = &[";", "processed ", "Validating ", "Func#", "func#"];
    if TRACE.iter().chain(DUMP).any(|p| line.starts_with(p)) {
        return true;
    }
    // `12: (61) r2 = ...` and `12: R1=...`; `frame1: R1=...`.
    let rest = after_index(line).unwrap_or(line);
    rest.starts_with('(') || is_state(rest)
}

/// `R1=ctx() R10=fp0`, `R2_w=0`, `fp-8=mmmmmmmm`: registers' and stack
/// slots' states.
fn is_state(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    let Some((slot, _)) = first.split_once('=') else {
        return false;
    };
    let slot = slot.strip_suffix("_w").unwrap_or(slot);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    slot.strip_prefix('R').is_some_and(digits) || slot.strip_prefix("fp-").is_some_and(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "-- BEGIN PROG LOAD LOG --";
    const E: &str = "-- END PROG LOAD LOG --";

    /// Verifier logs of kernel 6.18, cut short: the verdict is the line
    /// that says why, not the states or statistics around it.
    #[test]
    fn the_verdict_is_the_line_that_says_why() {
        let log = |body: &str| format!("prog 'p': {B}\n{body}\n{E}");
        let infinite = log("arg#0 reference type('UNKNOWN ') size cannot be determined: -22\n\
            0: R1=ctx() R10=fp0\n\
            ; int spin(void *ctx) @ infinite_loop.bpf.c:11\n\
            0: (18) r1 = 0xffffc90005520000       ; R1=map_value(map=5570ba14.bss,ks=4,vs=4)\n\
            3: (16) if w2 == 0x0 goto pc-2 ; while (!stop) { @ infinite_loop.bpf.c:13\n\
            infinite loop detected at insn 2\n\
            cur state: R1=map_value(map=5570ba14.bss,ks=4,vs=4) R2=0 R10=fp0\n\
            old state: R1=map_value(map=5570ba14.bss,ks=4,vs=4) R2=0 R10=fp0\n\
            processed 14 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0");
        assert_eq!(
            verdict_of(&infinite, B, E).as_deref(),
            Some("infinite loop detected at insn 2")
        );
        let oob = log("0: (07) r1 += 65536                   ; R1=ctx(off=0x10000)\n\
            1: (79) r1 = *(u64 *)(r1 +0)\n\
            dereference of modified ctx ptr R1 off=65536 disallowed\n\
            processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0");
        assert_eq!(
            verdict_of(&oob, B, E).as_deref(),
            Some("dereference of modified ctx ptr R1 off=65536 disallowed")
        );
        let map = log("2: (79) r0 = *(u64 *)(r0 +8)\n\
            R0 invalid mem access 'map_value_or_null'\n\
            from 1 to 2: R0=map_value(ks=4,vs=8) R10=fp0 fp-8=mmmm????\n\
            frame1: R1=ctx() R10=fp0\n\
            verification time 30 usec\n\
            stack depth 8");
        assert_eq!(
            verdict_of(&map, B, E).as_deref(),
            Some("R0 invalid mem access 'map_value_or_null'")
        );
        assert_eq!(
            verdict_of("prog 'p': BPF program load failed: -EINVAL", B, E),
            None
        );
    }

    /// The reason at the end of an instruction's trace line, after a BTF
    /// note that comes first (kernel 6.18, an object without line info).
    #[test]
    fn the_reason_can_end_an_instruction_line() {
        let log = format!(
            "prog 'spin': {B}\n\
            arg#0 reference type('UNKNOWN ') size cannot be determined: -22\n\
            0: R1=ctx() R10=fp0\n\
            2: (61) r2 = *(u32 *)(r1 +0)          ; R1=map_value(map=loop.bss,ks=4,vs=4) R2=scalar()\n\
            3: (15) if r2 == 0x0 goto pc-2 infinite loop detected at insn 2\n\
            cur state: R1=map_value(map=loop.bss,ks=4,vs=4) R2=0 R10=fp0\n\
            old state: R1=map_value(map=loop.bss,ks=4,vs=4) R2=0 R10=fp0\n\
            processed 14 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0\n{E}"
        );
        assert_eq!(
            verdict_of(&log, B, E).as_deref(),
            Some("infinite loop detected at insn 2")
        );
    }

    /// Only the words after the disassembly make a reason: operands,
    /// mnemonics and a called function's name do not.
    #[test]
    fn an_instruction_alone_has_no_tail() {
        for line in [
            "3: (15) if r2 == 0x0 goto pc-2",
            "7: (85) call bpf_get_current_pid_tgid#14",
            "9: (95) exit",
            "4: (c3) lock *(u32 *)(r1 +0) += r2",
            "5: (db) r0 = atomic64_fetch_add((u64 *)(r1 +0), r0)",
            "6: (dc) r1 = be16 r1",
            "2: (61) r2 = *(u32 *)(r1 +0)          ; R1=map_value(map=loop.bss,ks=4,vs=4)",
            "8: (e5) may_goto pc+3",
        ] {
            assert_eq!(insn_tail(line), None, "{line}");
        }
        assert_eq!(
            insn_tail("7: (85) call bpf_probe_read_kernel#113 R1 type=ctx expected=fp").as_deref(),
            Some("R1 type=ctx expected=fp")
        );
    }

    /// Real logs of every kernel the suite runs on (tests/fixtures/verifier,
    /// its README says how they were made): each reason is the verifier's
    /// own sentence, whatever the kernel logs first or after it.
    #[test]
    fn real_logs_give_the_verifier_sentence() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/verifier");
        let expected = std::fs::read_to_string(format!("{dir}/expected.tsv")).unwrap();
        let mut checked = 0;
        for line in expected.lines().filter(|l| !l.starts_with('#')) {
            let (file, reason) = line.split_once('\t').unwrap();
            let log = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            assert_eq!(verdict_in(&log).as_deref(), Some(reason), "{file}");
            checked += 1;
        }
        let logs = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|d| std::fs::read_dir(d.ok()?.path()).ok())
            .flatten()
            .count();
        assert_eq!(checked, logs, "a log without its reason in expected.tsv");
    }
}
