//! The charts' colours, one palette for every SVG the command and xtask
//! draw: Okabe and Ito's, safe for colour-blind readers, without its
//! yellow, which a white page hides.

/// Red, green and blue of each colour, to take in turn.
pub const PALETTE: [(u8, u8, u8); 7] = [
    (0x00, 0x72, 0xB2),
    (0xE6, 0x9F, 0x00),
    (0x00, 0x9E, 0x73),
    (0xCC, 0x79, 0xA7),
    (0x56, 0xB4, 0xE9),
    (0xD5, 0x5E, 0x00),
    (0x33, 0x33, 0x33),
];

/// The `n`th colour, the palette taken round again past its end.
pub fn nth(n: usize) -> (u8, u8, u8) {
    PALETTE[n % PALETTE.len()]
}

/// What a chart does not name one by one (the rest of a bar, the lines
/// that never moved): a light grey.
pub const OTHER: (u8, u8, u8) = (0xc8, 0xc8, 0xc8);
