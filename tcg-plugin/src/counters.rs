//! The counters and the windows: pure, tested without QEMU.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::kinds::Class;

/// Counters per block of memory: each block stays where it is, since
/// translated code holds pointers into it.
const CHUNK: usize = 1 << 16;

#[derive(Default)]
pub struct Counters {
    chunks: Vec<Box<[u64]>>,
    /// Each slot's guest address, and its instruction's class if any.
    addrs: Vec<u64>,
    classes: Vec<Option<Class>>,
    slots: HashMap<u64, usize>,
    /// The counts when the open window opened.
    opened: Vec<u64>,
    open: Option<u64>,
    windows: u64,
}

impl Counters {
    /// The counter of the instruction at `vaddr`, for translated code to
    /// add to.
    pub fn counter(&mut self, vaddr: u64) -> *mut u64 {
        self.counter_of(vaddr, None)
    }

    /// The same, for an instruction of `class` (the last translation's).
    pub fn counter_of(&mut self, vaddr: u64, class: Option<Class>) -> *mut u64 {
        let n = self.addrs.len();
        let slot = *self.slots.entry(vaddr).or_insert(n);
        if slot < n {
            // Code is rewritten in place (a uprobe's int3, text poking).
            self.classes[slot] = class;
        } else {
            self.classes.push(class);
            self.addrs.push(vaddr);
            if n.is_multiple_of(CHUNK) {
                self.chunks.push(vec![0; CHUNK].into_boxed_slice());
            }
        }
        &mut self.chunks[slot / CHUNK][slot % CHUNK]
    }

    fn count(&self, slot: usize) -> u64 {
        // Written by translated code, not through this struct.
        unsafe { std::ptr::read_volatile(&self.chunks[slot / CHUNK][slot % CHUNK]) }
    }

    /// Opens the next window (one left open is dropped).
    pub fn open(&mut self) {
        self.opened = (0..self.addrs.len()).map(|s| self.count(s)).collect();
        self.open = Some(self.windows);
        self.windows += 1;
    }

    /// Closes the open window, if any, and writes it: `window N`, then
    /// `ADDRESS COUNT [CLASS]` (hex, decimal, [`Class::name`]) for each
    /// address that ran in it, then `total COUNT`.
    pub fn close(&mut self, out: &mut impl Write) -> io::Result<()> {
        let Some(n) = self.open.take() else {
            return Ok(());
        };
        writeln!(out, "window {n}")?;
        let mut total = 0;
        for (slot, addr) in self.addrs.iter().enumerate() {
            let before = self.opened.get(slot).copied().unwrap_or(0);
            let ran = self.count(slot).wrapping_sub(before);
            if ran != 0 {
                match self.classes[slot] {
                    Some(c) => writeln!(out, "{addr:x} {ran} {}", c.name())?,
                    None => writeln!(out, "{addr:x} {ran}")?,
                }
                total += ran;
            }
        }
        writeln!(out, "total {total}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(c: &mut Counters, vaddr: u64, n: u64) {
        let p = c.counter(vaddr);
        unsafe { *p += n };
    }

    #[test]
    fn a_window_holds_what_ran_while_it_was_open() {
        let mut c = Counters::default();
        add(&mut c, 0x10, 5);
        c.open();
        add(&mut c, 0x10, 2);
        add(&mut c, 0xffff_ffff_8100_0000, 3);
        let mut out = Vec::new();
        c.close(&mut out).unwrap();
        add(&mut c, 0x10, 7);
        c.close(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "window 0\n10 2\nffffffff81000000 3\ntotal 5\n"
        );
    }

    #[test]
    fn classified_instructions_say_their_class() {
        let mut c = Counters::default();
        c.open();
        let p = c.counter_of(0x20, Some(Class::Int3));
        unsafe { *p += 2 };
        let mut out = Vec::new();
        c.close(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "window 0\n20 2 int3\ntotal 2\n"
        );
    }

    #[test]
    fn counters_stay_put_as_more_are_made() {
        let mut c = Counters::default();
        let first = c.counter(0);
        for a in 1..3 * CHUNK as u64 {
            c.counter(a);
        }
        assert_eq!(first, c.counter(0));
        c.open();
        unsafe { *first += 1 };
        add(&mut c, 2 * CHUNK as u64 + 1, 1);
        let mut out = Vec::new();
        c.close(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("total 2\n"), "{text}");
    }

    #[test]
    fn marks_are_read_from_the_bytes() {
        use crate::marks::*;
        let mut open = NOPL_DISP32.to_vec();
        open.extend(OPEN.to_le_bytes());
        assert_eq!(mark_of(&open), Some(OPEN));
        let mut other = NOPL_DISP32.to_vec();
        other.extend(7u32.to_le_bytes());
        assert_eq!(mark_of(&other), None);
        assert_eq!(mark_of(&[0x90]), None);
    }
}
