//! The kernel functions a kprobe.multi on "every function" attaches to:
//! tracefs's available_filter_functions, less what upstream's
//! kprobe-multi-all bench leaves out and what the measurement itself runs
//! on each hit. Also the address of one function, from /proc/kallsyms.

use std::collections::HashSet;
use std::fs;

use super::tracefs::tracing_dir;
use crate::measure::error::{Error, Result};

/// Left out, and why (`*` ends a prefix).
const EXCLUDED: &[(&str, &str)] = &[
    // Upstream's list (selftests' trace_helpers.c): probing these makes
    // "suspicious RCU usage" splats, or runs in the idle loop or in XDP's
    // dispatcher, a trampoline of its own.
    ("arch_cpu_idle", "the idle loop"),
    ("default_idle", "the idle loop"),
    ("rcu_*", "RCU's own functions: suspicious RCU usage"),
    ("bpf_dispatcher_xdp_func", "XDP's dispatcher"),
    ("__ftrace_invalid_address__*", "not a function"),
    // Ours: every BPF program run calls these around the program, so each
    // hit would set off nested probe entries (turned away as recursion)
    // that cost the measurement's own time, not the loop function's.
    ("migrate_disable", "called around every BPF program run"),
    ("migrate_enable", "called around every BPF program run"),
    ("___migrate_enable", "called around every BPF program run"),
    ("preempt_count_*", "called around every BPF program run"),
    ("__rcu_read_*", "called around every BPF program run"),
];

fn is_excluded(name: &str) -> bool {
    EXCLUDED
        .iter()
        .any(|(pattern, _)| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *pattern,
        })
}

/// The functions of `available_filter_functions` (its text) to attach to:
/// the kernel's own (a module's line ends in `[module]`), each name once
/// (static functions share names; the kernel resolves a name to one
/// address), less [`EXCLUDED`], in the file's order.
pub fn every_function(text: &str) -> Vec<&str> {
    let mut seen = HashSet::new();
    text.lines()
        .filter(|line| !line.contains('['))
        .map(str::trim)
        .filter(|name| !name.is_empty() && !is_excluded(name))
        .filter(|name| seen.insert(*name))
        .collect()
}

/// [`every_function`] on this kernel, which must include `needed` (the
/// function the loop fires). Needs tracefs reachable.
pub fn traceable(needed: &str) -> Result<Vec<String>> {
    let path = tracing_dir().join("available_filter_functions");
    let text = fs::read_to_string(&path)
        .map_err(|e| Error::failed(format!("reading {} failed: {e}", path.display())))?;
    let names = every_function(&text);
    if !names.contains(&needed) {
        return Err(Error::failed(format!(
            "{needed} is not among the {} functions of {}",
            names.len(),
            path.display()
        )));
    }
    Ok(names.into_iter().map(String::from).collect())
}

/// The address of `symbol` in /proc/kallsyms (of the kernel itself, not a
/// module's). Zeros there mean kernel pointers are hidden from us.
pub fn kallsyms_address(symbol: &str) -> Result<u64> {
    let text = fs::read_to_string("/proc/kallsyms")
        .map_err(|e| Error::failed(format!("reading /proc/kallsyms failed: {e}")))?;
    match address_in(&text, symbol) {
        Some(0) => Err(Error::environment(format!(
            "/proc/kallsyms shows {symbol} at 0: kernel pointers are hidden \
             (kernel.kptr_restrict); run as root with kptr_restrict at 0 or 1"
        ))),
        Some(addr) => Ok(addr),
        None => Err(Error::failed(format!("{symbol} is not in /proc/kallsyms"))),
    }
}

/// Whether the kernel has `symbol` (address hidden or not).
pub fn kallsyms_has(symbol: &str) -> Result<bool> {
    let text = fs::read_to_string("/proc/kallsyms")
        .map_err(|e| Error::failed(format!("reading /proc/kallsyms failed: {e}")))?;
    Ok(address_in(&text, symbol).is_some())
}

fn address_in(kallsyms: &str, symbol: &str) -> Option<u64> {
    kallsyms.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let (addr, _kind, name, module) = (f.next()?, f.next()?, f.next()?, f.next());
        (name == symbol && module.is_none())
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_keeps_the_kernels_own_once_less_the_excluded() {
        let text = "\
do_one_initcall
rcu_note_context_switch
bpf_get_numa_node_id
arch_cpu_idle
dup_name
dup_name
__rcu_read_lock
migrate_disable
preempt_count_add
__ftrace_invalid_address___64
xfs_fs_fill_super [xfs]
";
        assert_eq!(
            every_function(text),
            ["do_one_initcall", "bpf_get_numa_node_id", "dup_name"]
        );
    }

    #[test]
    fn kallsyms_addresses_are_the_kernels_own() {
        let text = "\
ffffffff81000000 T _text
ffffffffc0001000 t bpf_get_numa_node_id\t[fake]
ffffffff81234560 T bpf_get_numa_node_id
0000000000000000 T hidden
";
        assert_eq!(
            address_in(text, "bpf_get_numa_node_id"),
            Some(0xffffffff81234560)
        );
        assert_eq!(address_in(text, "hidden"), Some(0));
        assert_eq!(address_in(text, "absent"), None);
    }
}
