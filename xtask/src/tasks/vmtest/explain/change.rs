//! `--against KERNEL_B --exact --explain`: for each mechanism whose count
//! changed beyond the threshold, the functions whose instructions
//! changed, largest first, adding up to the change.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::symbols::{Name, Region};
use super::{side_by_side, signed, Explained, Part, Split, B_SIDE, TOP};

/// One function's instructions per event in A and in B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    pub function: String,
    pub region: Region,
    pub a: f64,
    pub b: f64,
    pub change: f64,
}

/// One mechanism's change, split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub mechanism: String,
    pub verdict: String,
    pub a: f64,
    pub b: f64,
    /// Largest first; none unchanged.
    pub functions: Vec<Delta>,
    /// B − A less what the functions' changes add up to.
    pub residual: f64,
}

/// The name a function is matched by across kernels: a program's tag
/// (a digest of its instructions) and a trampoline's key (BTF ids) are
/// left out, as they are the kernel's numbering, not the code.
pub fn key(name: &str) -> String {
    if let Some(rest) = name.strip_prefix("bpf_prog_") {
        if let Some((tag, prog)) = rest.split_once('_') {
            if tag.len() == 16 && tag.chars().all(|c| c.is_ascii_hexdigit()) {
                return format!("bpf_prog_{prog}");
            }
        }
    }
    // 5.10 names one `bpf_trampoline_<BTF id>_<slot>`.
    if let Some(k) = name.strip_prefix("bpf_trampoline_") {
        if !k.is_empty() && k.chars().all(|c| c.is_ascii_digit() || c == '_') {
            return "bpf_trampoline".into();
        }
    }
    name.to_owned()
}

fn by_key(parts: &[Part]) -> BTreeMap<Name, f64> {
    let mut m = BTreeMap::new();
    for p in parts {
        *m.entry((p.region, key(&p.function))).or_default() += p.per_event;
    }
    m
}

/// B's split against A's: its functions' changes, largest first.
fn change(sa: &Split, sb: &Split, verdict: &str) -> Change {
    let mut functions: Vec<Delta> = side_by_side(&by_key(&sa.functions), &by_key(&sb.functions))
        .into_iter()
        .map(|((region, function), a, b)| Delta {
            function,
            region,
            a,
            b,
            change: b - a,
        })
        .filter(|d| d.change.abs() >= 0.05)
        .collect();
    functions.sort_by(|x, y| y.change.abs().total_cmp(&x.change.abs()));
    let sum: f64 = functions.iter().map(|d| d.change).sum();
    Change {
        mechanism: sa.mechanism.clone(),
        verdict: verdict.to_owned(),
        a: sa.count,
        b: sb.count,
        residual: (sb.count - sa.count) - sum,
        functions,
    }
}

/// For each of `changed` (mechanism, verdict) that both sides split:
/// its functions' changes.
pub fn changes(a: &Explained, b: &Explained, changed: &[(String, String)]) -> Vec<Change> {
    changed
        .iter()
        .filter_map(|(m, verdict)| Some(change(a.split(m)?, b.split(m)?, verdict)))
        .collect()
}

/// Build against build in one run (`--against VARIANT`): each
/// mechanism's B side (`raw_tp (B)`) against its A side, split by
/// function.
pub fn in_run(e: &Explained) -> Vec<Change> {
    e.mechanisms
        .iter()
        .filter_map(|sb| {
            let m = sb.mechanism.strip_suffix(B_SIDE)?;
            let sa = e.split(m)?;
            Some(change(sa, sb, "B against A"))
        })
        .collect()
}

pub fn table(changes: &[Change]) -> String {
    let mut t = String::new();
    for c in changes {
        let _ = writeln!(
            t,
            "{} {} {} -> {} ({} ins/ev): functions' changes, residual {}",
            c.mechanism,
            c.verdict,
            signed(c.a),
            signed(c.b),
            signed(c.b - c.a),
            signed(c.residual)
        );
        for d in c.functions.iter().take(TOP) {
            let _ = writeln!(
                t,
                "  {:>9}  {:<6} {}  ({} -> {})",
                signed(d.change),
                super::region_word(d.region),
                d.function,
                signed(d.a),
                signed(d.b)
            );
        }
        let rest = &c.functions[c.functions.len().min(TOP)..];
        if !rest.is_empty() {
            let v: f64 = rest.iter().map(|d| d.change).sum();
            let _ = writeln!(t, "  {:>9}  other  ({} functions)", signed(v), rest.len());
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(m: &str, count: f64, parts: &[(&str, f64)]) -> Explained {
        Explained {
            unit: "instructions".into(),
            kernel: "k".into(),
            emulator: "q".into(),
            mechanisms: vec![Split {
                mechanism: m.into(),
                base: "base".into(),
                count,
                sum: parts.iter().map(|p| p.1).sum(),
                residual: 0.0,
                kinds: Vec::new(),
                functions: parts
                    .iter()
                    .map(|(f, v)| Part {
                        function: (*f).into(),
                        region: Region::Kernel,
                        per_event: *v,
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn a_change_split_by_function_adds_up() {
        let a = split(
            "raw_tp",
            121.0,
            &[
                ("bpf_trace_run2", 43.0),
                ("bpf_prog_48238c609ad43634_prog_raw_tp", 78.0),
            ],
        );
        let b = split(
            "raw_tp",
            130.0,
            &[
                ("bpf_trace_run2", 44.0),
                ("bpf_trace_run_extra", 8.0),
                ("bpf_prog_0123456789abcdef_prog_raw_tp", 78.0),
            ],
        );
        let c = changes(&a, &b, &[("raw_tp".into(), "REGRESSED".into())]);
        assert_eq!(c.len(), 1);
        let names: Vec<&str> = c[0].functions.iter().map(|d| d.function.as_str()).collect();
        assert_eq!(names, ["bpf_trace_run_extra", "bpf_trace_run2"]);
        assert_eq!(c[0].residual, 0.0);
        assert!(table(&c).starts_with("raw_tp REGRESSED +121.0 -> +130.0 (+9.0 ins/ev)"));
    }

    #[test]
    fn build_against_build_in_one_run_names_the_program() {
        let mut e = split(
            "raw_tp",
            96.0,
            &[
                ("bpf_trace_run1", 42.0),
                ("bpf_prog_0123456789abcdef_prog", 54.0),
            ],
        );
        let b = split(
            "raw_tp (B)",
            114.0,
            &[
                ("bpf_trace_run1", 42.0),
                ("bpf_prog_fedcba9876543210_prog", 72.0),
            ],
        );
        e.mechanisms.extend(b.mechanisms);
        let c = in_run(&e);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].mechanism, "raw_tp");
        assert_eq!(c[0].functions.len(), 1);
        assert_eq!(c[0].functions[0].function, "bpf_prog_prog");
        assert_eq!(c[0].functions[0].change, 18.0);
    }

    #[test]
    fn tags_and_keys_are_not_the_code() {
        assert_eq!(
            key("bpf_prog_48238c609ad43634_prog_raw_tp"),
            "bpf_prog_prog_raw_tp"
        );
        assert_eq!(key("bpf_trampoline_6442484580"), "bpf_trampoline");
        assert_eq!(key("bpf_trampoline_31459_0"), "bpf_trampoline");
        assert_eq!(key("bpf_prog_short_x"), "bpf_prog_short_x");
        assert_eq!(key("bpf_trace_run2"), "bpf_trace_run2");
    }
}
