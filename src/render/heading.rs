//! The heading's lines that say what a run measured and how: the users'
//! objects and packet, and whether its figures are timed, emulated or
//! counted in guest instructions.

use crate::document::Document;

pub(super) fn provenance(doc: &Document) -> Vec<String> {
    let mut lines = Vec::new();
    if !doc.objects.is_empty() {
        let files: Vec<String> = doc.objects.iter().map(|f| f.short()).collect();
        let packet = doc
            .packet
            .as_ref()
            .map_or(String::new(), |p| format!("; packet {}", p.short()));
        lines.push(format!("objects {}{packet}", files.join(", ")));
    }
    if doc.exact() {
        lines.push(format!(
            "EXACT ({}): counted in guest instructions (the guest's clock advances a \
             nanosecond per instruction); each figure is a mechanism's fewest per event in any \
             round{}",
            doc.emulated.as_ref().map_or("?", |e| e.word()),
            doc.emulator
                .as_ref()
                .map_or(String::new(), |e| format!(" ({e})"))
        ));
    } else if let Some(how) = &doc.emulated {
        lines.push(format!(
            "EMULATED ({how}): these rates are not performance figures"
        ));
    }
    lines
}
