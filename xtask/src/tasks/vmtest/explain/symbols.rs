//! Names for the guest addresses the TCG plugin counted: kernel text from
//! the guest's /proc/kallsyms (read once at the start; with `nokaslr` it
//! is the kernel's System.map), the code the kernel makes at run time
//! (BPF programs, trampolines) from the kallsyms lines read in each
//! window while attached, and user space from the command's mappings and
//! its own ELF symbols.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// Where a name comes from: the table's third column.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Region {
    /// The kernel's text or a module's.
    Kernel,
    /// Code the kernel made at run time for BPF: a program, a
    /// trampoline (`bpf_*`).
    Bpf,
    /// User space.
    User,
}

/// A function (or, where none can be named, a region).
pub type Name = (Region, String);

/// Kernel addresses start here on x86_64 (the upper half).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// A function is not longer than this: past it, an address is not taken
/// for the symbol below it.
const LONGEST: u64 = 1 << 20;

/// Symbols sorted by address, for the one below an address.
#[derive(Default, Debug)]
pub struct Sorted(Vec<(u64, String)>);

impl Sorted {
    pub fn new(mut v: Vec<(u64, String)>) -> Sorted {
        v.sort();
        Sorted(v)
    }

    /// Where the symbol `name` starts, if listed.
    pub fn start_of(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(_, n)| n == name).map(|(a, _)| *a)
    }

    /// The symbol at or below `a`, and how far below.
    fn below(&self, a: u64) -> Option<(&str, u64)> {
        let i = self.0.partition_point(|(s, _)| *s <= a);
        let (s, name) = self.0.get(i.checked_sub(1)?)?;
        Some((name.as_str(), a - s))
    }
}

/// A window's run-time code: its programs, by their exact extent (start,
/// end, name), and what kallsyms listed, if read.
#[derive(Debug, Default, Clone)]
pub struct Made {
    pub progs: Vec<(u64, u64, String)>,
    pub sym: Vec<(u64, String)>,
}

/// [`Made`], ready to look up.
#[derive(Debug, Default)]
pub struct MadeSorted {
    progs: Vec<(u64, u64, String)>,
    sym: Sorted,
}

impl Made {
    pub fn sorted(&self) -> MadeSorted {
        MadeSorted {
            progs: self.progs.clone(),
            sym: Sorted::new(self.sym.clone()),
        }
    }
}

/// `ADDRESS TYPE NAME [MODULE]` lines of /proc/kallsyms: the text ones.
pub fn kallsyms(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let t = f.next()?;
            let name = f.next()?;
            matches!(t, "t" | "T" | "w" | "W").then(|| (a, name.to_owned()))
        })
        .filter(|(a, _)| *a != 0)
        .collect()
}

/// One executable mapping of the command: `map START END OFFSET PATH`.
#[derive(Debug, Clone, PartialEq)]
pub struct Map {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// An ELF file's function symbols, by the file offset of their code.
#[derive(Debug, Default)]
pub struct Elf {
    /// (file offset, size, name)
    functions: Vec<(u64, u64, String)>,
}

impl Elf {
    pub fn read(path: &Path) -> Result<Elf> {
        let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let file = object::File::parse(&*data).with_context(|| format!("{}", path.display()))?;
        // Segment file offsets: a symbol's address less its segment's
        // address, plus the segment's offset.
        let segments: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| (s.address(), s.size(), s.file_range().0))
            .collect();
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let a = s.address();
                let &(va, _, off) = segments
                    .iter()
                    .find(|(va, sz, _)| a >= *va && a < va + sz)?;
                let name = s.name().ok()?;
                Some((
                    a - va + off,
                    s.size(),
                    rustc_demangle::demangle(name).to_string(),
                ))
            })
            .collect();
        functions.sort();
        Ok(Elf { functions })
    }

    fn at(&self, offset: u64) -> Option<&str> {
        let i = self.functions.partition_point(|(o, _, _)| *o <= offset);
        let (o, size, name) = self.functions.get(i.checked_sub(1)?)?;
        (offset < o + (*size).max(1)).then_some(name.as_str())
    }
}

/// Everything that names addresses, but the per-window code.
pub struct Symbols {
    pub kernel: Sorted,
    pub maps: Vec<Map>,
    /// The ELF symbols of each mapped file that could be read.
    pub elves: HashMap<String, Elf>,
}

impl Symbols {
    /// Names `a`; `made`: the window's run-time code.
    pub fn name(&self, a: u64, made: &MadeSorted) -> Name {
        // The nearest start below among the code that holds `a`: a
        // trampoline's extent is a page, which programs share.
        let holding = made.progs.iter().filter(|(s, e, _)| a >= *s && a < *e);
        if let Some((_, _, p)) = holding.max_by_key(|(s, _, _)| *s) {
            return (made_region(p), p.clone());
        }
        if a >= KERNEL_START {
            let kernel = self.kernel.below(a).filter(|(_, d)| *d < LONGEST);
            let made = made.sym.below(a).filter(|(_, d)| *d < LONGEST);
            // The nearer symbol below: run-time code sits between modules.
            return match (kernel, made) {
                (Some((_, dk)), Some((m, dm))) if dm <= dk => (made_region(m), m.to_owned()),
                (None, Some((m, _))) => (made_region(m), m.to_owned()),
                (Some((k, _)), _) => (Region::Kernel, k.to_owned()),
                (None, None) => (Region::Kernel, "kernel, unnamed".into()),
            };
        }
        let Some(m) = self.maps.iter().find(|m| a >= m.start && a < m.end) else {
            return (Region::User, "user, unnamed".into());
        };
        let offset = a - m.start + m.offset;
        match self.elves.get(&m.path).and_then(|e| e.at(offset)) {
            Some(f) => (Region::User, f.to_owned()),
            None => (Region::User, format!("user, unnamed ({})", short(&m.path))),
        }
    }
}

/// BPF's own run-time code, or the kernel's (an ftrace trampoline, a
/// kprobe's page).
fn made_region(name: &str) -> Region {
    match name.starts_with("bpf_") {
        true => Region::Bpf,
        false => Region::Kernel,
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbols() -> Symbols {
        Symbols {
            kernel: Sorted::new(kallsyms(
                "ffffffff81000000 T _stext\n\
                 ffffffff81100000 t bpf_trace_run1\n\
                 ffffffff81100080 T bpf_get_numa_node_id\n\
                 ffffffff82000000 d some_data\n\
                 ffffffffc0000000 t nf_hook [nf]\n",
            )),
            maps: vec![Map {
                start: 0x5555_0000_0000,
                end: 0x5555_0010_0000,
                offset: 0x1000,
                path: "/x/bpf-overhead".into(),
            }],
            elves: HashMap::new(),
        }
    }

    #[test]
    fn kernel_text_by_the_symbol_below() {
        let s = symbols();
        let none = MadeSorted::default();
        assert_eq!(
            s.name(0xffff_ffff_8110_0010, &none),
            (Region::Kernel, "bpf_trace_run1".into())
        );
        assert_eq!(
            s.name(0xffff_ffff_8110_0080, &none),
            (Region::Kernel, "bpf_get_numa_node_id".into())
        );
        // Data symbols are not text, and a function is not 15 MiB long.
        assert_eq!(s.name(0xffff_ffff_8200_0010, &none).1, "kernel, unnamed");
        assert_eq!(
            s.name(0xffff_8000_0000_0000, &none),
            (Region::Kernel, "kernel, unnamed".into())
        );
    }

    #[test]
    fn run_time_code_when_nearer_than_kernel_text() {
        let s = symbols();
        let made = Made {
            progs: vec![(
                0xffff_ffff_c000_3000,
                0xffff_ffff_c000_3080,
                "bpf_prog_6deef7357e7b4530_prog_raw_tp".into(),
            )],
            sym: vec![(0xffff_ffff_c000_2000, "bpf_trampoline_6442484580".into())],
        }
        .sorted();
        assert_eq!(
            s.name(0xffff_ffff_c000_2040, &made),
            (Region::Bpf, "bpf_trampoline_6442484580".into())
        );
        assert_eq!(
            s.name(0xffff_ffff_c000_3040, &made),
            (Region::Bpf, "bpf_prog_6deef7357e7b4530_prog_raw_tp".into())
        );
        assert_eq!(
            s.name(0xffff_ffff_c000_0040, &made),
            (Region::Kernel, "nf_hook".into())
        );
        // A program inside a trampoline's page is the program.
        let shared = Made {
            progs: vec![
                (
                    0xffff_ffff_c000_0640,
                    0xffff_ffff_c000_1640,
                    "bpf_trampoline_1".into(),
                ),
                (
                    0xffff_ffff_c000_067c,
                    0xffff_ffff_c000_0765,
                    "bpf_prog_x".into(),
                ),
            ],
            sym: Vec::new(),
        }
        .sorted();
        assert_eq!(s.name(0xffff_ffff_c000_0650, &shared).1, "bpf_trampoline_1");
        assert_eq!(s.name(0xffff_ffff_c000_0690, &shared).1, "bpf_prog_x");
        assert_eq!(s.name(0xffff_ffff_c000_0800, &shared).1, "bpf_trampoline_1");
    }

    #[test]
    fn user_space_by_mapping_then_elf() {
        let s = symbols();
        let none = MadeSorted::default();
        assert_eq!(
            s.name(0x5555_0000_0010, &none),
            (Region::User, "user, unnamed (bpf-overhead)".into())
        );
        assert_eq!(s.name(0x10, &none), (Region::User, "user, unnamed".into()));
        let elf = Elf {
            functions: vec![(0x1000, 0x20, "uprobe_target_nop".into())],
        };
        let mut s = s;
        s.elves.insert("/x/bpf-overhead".into(), elf);
        assert_eq!(s.name(0x5555_0000_0010, &none).1, "uprobe_target_nop");
        assert_eq!(
            s.name(0x5555_0000_0030, &none).1,
            "user, unnamed (bpf-overhead)"
        );
    }
}
