//! Whether the guest's kernel mitigates its CPU as this host's does: an
//! exact count leaves out (or adds) what a mitigation costs.

use std::collections::BTreeMap;
use std::path::Path;

use bpf_overhead_common::mitigations;

use crate::util::exact_counts::read_document;
use crate::util::say;

/// One line when the guest's kernel mitigates its CPU otherwise than this
/// host's does: its counts leave out (or add) the return thunks and
/// barriers that make a trap or a return dear here (docs/exact.md).
pub(super) fn said(dir: &Path) {
    let guest = read_document(&dir.join("result.json")).map(|d| d.mitigations);
    let Some(guest) = guest.ok().filter(|g| !g.is_empty()) else {
        return;
    };
    if let Some(line) = mitigations_line(&guest, &mitigations::read()) {
        say!("{line}");
    }
}

/// "the guest mitigates otherwise than this host: ..." naming each flaw
/// whose line differs, guest's then host's; None when they agree.
fn mitigations_line(
    guest: &BTreeMap<String, String>,
    host: &BTreeMap<String, String>,
) -> Option<String> {
    let none = String::from("-");
    let differ: Vec<String> = mitigations::differ(guest, host)
        .into_iter()
        .map(|k| {
            let (g, h) = (guest.get(k).unwrap_or(&none), host.get(k).unwrap_or(&none));
            format!("{k}: guest \"{g}\", host \"{h}\"")
        })
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "the guest's kernel mitigates its CPU otherwise than this host's, so its counts \
             leave out what those cost here ({} of {}): {}",
            differ.len(),
            guest.len().max(host.len()),
            differ.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(l: &[(&str, &str)]) -> BTreeMap<String, String> {
        l.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    #[test]
    fn a_guest_mitigated_otherwise_is_said_in_one_line() {
        let host = lines(&[
            ("spec_rstack_overflow", "Vulnerable: Safe RET, no microcode"),
            ("meltdown", "Not affected"),
        ]);
        let guest = lines(&[
            ("spec_rstack_overflow", "Not affected"),
            ("meltdown", "Not affected"),
        ]);
        let l = mitigations_line(&guest, &host).unwrap();
        assert!(!l.contains('\n'), "{l}");
        assert!(
            l.ends_with(
                "(1 of 2): spec_rstack_overflow: guest \"Not affected\", host \"Vulnerable: Safe RET, no microcode\""
            ),
            "{l}"
        );
        assert_eq!(mitigations_line(&host, &host), None);
    }
}
