//! The verifier's reason for refusing a program, from the log libbpf
//! prints between its begin and end marks: one line of a trace that can
//! run to a million.

/// The line of a warning's program load log that says why the verifier
/// refused: the last one that is not its trace (instructions, source
/// lines, register and stack states, the states it compared) or its
/// statistics.
pub(crate) fn verdict_of(warning: &str, begin: &str, end: &str) -> Option<String> {
    let log = warning.split_once(begin)?.1;
    let log = log.split(end).next().unwrap_or(log);
    log.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !is_trace(l))
        .map(String::from)
}

/// A verifier log line that traces what it walked, or counts it.
fn is_trace(line: &str) -> bool {
    const TRACE: &[&str] = &[
        ";",
        "from ",
        "cur state:",
        "old state:",
        "caller:",
        "callee:",
        "mark_precise:",
        "last_idx ",
        "regs=",
        "parent ",
        "propagating ",
        "processed ",
        "verification time",
        "stack depth",
        "max_states_per_insn",
        "Live regs",
        "Validating ",
        "Func#",
        "func#",
    ];
    if TRACE.iter().any(|p| line.starts_with(p)) {
        return true;
    }
    // `12: (61) r2 = ...` and `12: R1=...`; `frame1: R1=...`.
    let rest = match line.split_once(": ") {
        Some((at, rest))
            if at.bytes().all(|b| b.is_ascii_digit())
                || (at.starts_with("frame") && at[5..].bytes().all(|b| b.is_ascii_digit())) =>
        {
            rest
        }
        _ => line,
    };
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
}
