//! How a kernel mitigates its CPU's flaws, as
//! /sys/devices/system/cpu/vulnerabilities says: recorded with a result
//! and a calibration, and compared between a guest and its host, since an
//! exact count leaves out what the host's mitigations cost.

use std::collections::BTreeMap;
use std::fs;

/// Each flaw's file and its line, as this kernel mitigates this CPU
/// (empty where it does not say). A guest's differ from its host's when
/// its CPU model does.
pub fn read() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
        for e in dir.flatten() {
            if let Ok(text) = fs::read_to_string(e.path()) {
                let name = e.file_name().to_string_lossy().into_owned();
                out.insert(name, text.trim().to_owned());
            }
        }
    }
    out
}

/// The flaws `a` and `b` mitigate differently (or one does not name),
/// sorted.
pub fn differ<'a>(
    a: &'a BTreeMap<String, String>,
    b: &'a BTreeMap<String, String>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(String::as_str)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flaws_named_on_one_side_only_differ_too() {
        let lines = |l: &[(&str, &str)]| -> BTreeMap<String, String> {
            l.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
        };
        let a = lines(&[
            ("meltdown", "Not affected"),
            ("retbleed", "Mitigation: IBRS"),
        ]);
        let b = lines(&[("meltdown", "Not affected"), ("tsa", "Vulnerable")]);
        assert_eq!(differ(&a, &b), ["retbleed", "tsa"]);
        assert!(differ(&a, &a).is_empty());
    }
}
