//! `--against object=FILE`: another build of a user's object, its
//! programs paired with A's by program name, as B of an in-run comparison.

use std::path::PathBuf;

use super::object::{entry, inspect, Found, ObjectFlags};
use crate::measure::mechanism::catalogue::Mechanism;

/// `--against object=FILE`: B's programs, paired with A's by program
/// name. Unresolved (no pairs) until [`Against::resolve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Against {
    pub path: PathBuf,
    /// B's mechanism for each A program it pairs with, named as A's.
    pub pairs: Vec<Mechanism>,
    /// Programs only A has, only B has, or on another hook in B: listed,
    /// not compared.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub moved: Vec<String>,
}

impl Against {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            pairs: Vec::new(),
            only_a: Vec::new(),
            only_b: Vec::new(),
            moved: Vec::new(),
        }
    }

    /// Opens B and pairs its programs with `a`'s object programs (`a_whole`:
    /// all of A's objects' programs, so that those only B has are new).
    pub fn resolve(
        &mut self,
        a: &[Mechanism],
        a_whole: bool,
        settings: &ObjectFlags,
    ) -> std::result::Result<(), String> {
        let (found, _) = inspect("--against object=", &self.path, None, settings)?;
        let mut b: Vec<Found> = found;
        for m in a {
            let Some(pa) = m.object() else { continue };
            let at = b.iter().position(|f| match f {
                Ok((p, ..)) => p.program == pa.program,
                Err(e) => e.contains(&format!("program {} ", pa.program)),
            });
            let Some(at) = at else {
                self.only_a.push(m.name().to_string());
                continue;
            };
            let (pb, kind, trigger) = b.remove(at)?;
            if trigger != m.trigger() || kind != m.kind() || pb.section != pa.section {
                self.moved
                    .push(format!("{} ({} in B)", m.name(), pb.section));
                continue;
            }
            self.pairs.push(Mechanism::from_entry(entry(
                m.name().to_string(),
                pb,
                kind,
                trigger,
            )));
        }
        // A program chosen from A (FILE:PROG) is all A has to compare.
        self.only_b = b
            .iter()
            .filter(|_| a_whole)
            .map(|f| match f {
                Ok((p, ..)) => p.program.clone(),
                Err(e) => e
                    .split("program ")
                    .nth(1)
                    .unwrap_or(e)
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .to_string(),
            })
            .collect();
        if self.pairs.is_empty() {
            return Err(format!(
                "--against object={}: none of its programs is one of A's by name; \
                 pair builds of the same object",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// B's side of `a`, if it has one.
    pub fn b_of(&self, a: Mechanism) -> Option<Mechanism> {
        self.pairs.iter().copied().find(|b| *b == a)
    }

    /// One line: what was not compared, or nothing.
    pub fn unpaired(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (what, names) in [
            ("only in A", &self.only_a),
            ("only in B", &self.only_b),
            ("on another hook in B", &self.moved),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what}: {}", names.join(", ")));
            }
        }
        (!parts.is_empty()).then(|| format!("not compared ({})", parts.join("; ")))
    }
}
