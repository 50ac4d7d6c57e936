//! The kinds of events an exact count is split into beside its
//! instructions, as the TCG plugin's counts.txt spells them: what
//! `vmtest --explain` reports per mechanism and what `bpf-overhead
//! calibrate` prices.

/// In the order they are shown and priced: traps and system calls, their
/// returns and barriers (the first [`PATH`] make a path), then the returns
/// and indirect branches that every path has more or less of, and that a
/// mitigation may make dear (a return thunk on every `ret`).
pub const KINDS: [&str; 9] = [
    "int3",
    "debug",
    "page_fault",
    "syscall",
    "iret",
    "sysret",
    "serializing",
    "indirect",
    "ret",
];

/// How many of [`KINDS`], from the first, make a path: a change of one of
/// them is a change of path.
pub const PATH: usize = 7;
