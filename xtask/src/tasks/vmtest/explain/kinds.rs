//! The kinds of events a count of instructions prices wrong (issue 64),
//! per mechanism and event, by the count's own rule: the fewest per event
//! in any of its runs, less the fewest in any of its base's runs.
//!
//! Two sources, both in what the plugin already writes:
//! - each instruction's class, from its bytes at translation (the plugin's
//!   `kinds.rs`: `int3`, `syscall`, `iret`, `sysret`, `serializing`,
//!   `indirect`, `ret`), the third field of a counts.txt line;
//! - the exceptions that no instruction names (a single step's debug trap,
//!   a page fault): the times the first instruction of their entry code
//!   ran, from the kernel's symbols.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::util::kinds::{self, KINDS};

use super::fewest::{least, side_by_side, Windows};
use super::symbols::Sorted;

/// Per window, each kind's events per event.
pub type KindWindows = Windows<String>;

/// Exceptions counted by their entry code: kernel symbol, kind.
pub const ENTRIES: [(&str, &str); 2] = [
    ("asm_exc_debug", "debug"),
    ("asm_exc_page_fault", "page_fault"),
];

/// The kinds in the order they are shown (common's one list).
pub const ORDER: [&str; 9] = KINDS;

/// The kinds that make a path: a change of one of them is a change of
/// path; returns and indirect branches change with any code.
pub const PATH: &[&str] = ORDER.split_at(kinds::PATH).0;

/// One kind's events per event over the base's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kind {
    pub kind: String,
    pub per_event: f64,
}

/// One counts.txt line: address, instructions, class.
pub type Counted = (u64, u64, Option<String>);

/// Each window's events of each kind per event.
pub fn per_window(
    counts: &BTreeMap<u64, Vec<Counted>>,
    events: &BTreeMap<u64, u64>,
    kernel: &Sorted,
) -> KindWindows {
    let entries: HashMap<u64, &str> = ENTRIES
        .iter()
        .filter_map(|(sym, kind)| Some((kernel.start_of(sym)?, *kind)))
        .collect();
    let mut out = KindWindows::new();
    for (n, events) in events {
        let mut k: HashMap<String, f64> = HashMap::new();
        for (a, ran, class) in counts.get(n).into_iter().flatten() {
            let kind = class.as_deref().or_else(|| entries.get(a).copied());
            if let Some(kind) = kind {
                *k.entry(kind.to_owned()).or_default() += *ran as f64;
            }
        }
        for v in k.values_mut() {
            *v /= (*events).max(1) as f64;
        }
        out.insert(*n, k);
    }
    out
}

/// A mechanism's kinds over its base's, non-zero ones, in [`ORDER`].
pub fn over_base(runs: &[u64], bases: &[u64], per: &KindWindows) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = side_by_side(&least(runs, per), &least(bases, per))
        .into_iter()
        .map(|(kind, a, b)| Kind {
            kind,
            per_event: a - b,
        })
        .filter(|k| k.per_event.abs() >= 0.05)
        .collect();
    let rank = |k: &Kind| {
        ORDER
            .iter()
            .position(|o| *o == k.kind)
            .unwrap_or(ORDER.len())
    };
    kinds.sort_by_key(rank);
    kinds
}

/// `int3 +1.0, iret +1.0, ret +3.0`, or `none`.
pub fn line(kinds: &[Kind]) -> String {
    if kinds.is_empty() {
        return "none".into();
    }
    kinds
        .iter()
        .map(|k| format!("{} {:+.1}", k.kind, k.per_event))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_classes_and_entry_code_less_the_base() {
        let kernel = Sorted::new(vec![
            (0xffff_ffff_8100_0000, "asm_exc_debug".into()),
            (0xffff_ffff_8100_0100, "other".into()),
        ]);
        let c = |a: u64, n: u64, class: Option<&str>| (a, n, class.map(str::to_owned));
        // Window 0: the mechanism, 10 events: an int3, a debug trap (its
        // entry's first instruction; the second is no new trap) and two
        // returns each. Windows 1 and 2: its base, a return each.
        let counts = BTreeMap::from([
            (
                0,
                vec![
                    c(0x10, 10, Some("int3")),
                    c(0xffff_ffff_8100_0000, 10, None),
                    c(0xffff_ffff_8100_0004, 10, None),
                    c(0x20, 20, Some("ret")),
                ],
            ),
            (1, vec![c(0x20, 10, Some("ret"))]),
            (2, vec![c(0x20, 12, Some("ret"))]),
        ]);
        let events = BTreeMap::from([(0, 10), (1, 10), (2, 10)]);
        let per = per_window(&counts, &events, &kernel);
        let kinds = over_base(&[0], &[1, 2], &per);
        assert_eq!(line(&kinds), "int3 +1.0, debug +1.0, ret +1.0");
        assert_eq!(line(&over_base(&[1], &[1], &per)), "none");
    }
}
