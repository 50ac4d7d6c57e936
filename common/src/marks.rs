//! The marks that open and close a counting window for the TCG plugin
//! (tcg-plugin/, `cargo xtask vmtest --exact --explain`): a long nop,
//! `nopl DISP32(%rax)`, whose displacement says which. The plugin sees
//! the bytes when it translates the instruction; on real hardware and
//! under plain TCG it is a nop.

/// The opcode and ModRM byte of `nopl disp32(%rax)`; four displacement
/// bytes follow, little-endian.
pub const NOPL_DISP32: [u8; 3] = [0x0f, 0x1f, 0x80];

/// Displacements: "BO" (bpf-overhead) and the mark's number.
pub const OPEN: u32 = 0x424f_0001;
pub const CLOSE: u32 = 0x424f_0002;

/// The mark an instruction's bytes are, if any.
pub fn mark_of(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [a, b, c, d @ ..] if [*a, *b, *c] == NOPL_DISP32 && d.len() == 4 => {
            let disp = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            [OPEN, CLOSE].contains(&disp).then_some(disp)
        }
        _ => None,
    }
}
