//! bpf-overhead: what it costs to attach a BPF program to a kernel or user
//! function, mechanism by mechanism — the kernel's test_overhead selftest
//! and bench rename/trigger benchmarks, in Rust with libbpf-rs.
//!
//! Layers, each using only those before it:
//!
//! 1. [`mod@measure`], the core: the catalogue of mechanisms, the triggers,
//!    loading and attaching, one timed run, the environment checks;
//! 2. [`pipeline`]: a validated plan, run as a warm-up and bracketed
//!    rounds, turned into a result [`document`] (with [`stats`]);
//! 3. [`render`] (pure functions of a document), [`gate`] (a document
//!    against a baseline document), [`expect`] (strict mode and a kernel's
//!    declared absences) and [`report`] (several documents side by side);
//! 4. the tests and the `bpf-overhead` command, which both go through the
//!    pipeline.

pub mod document;
pub mod env_vars;
pub mod expect;
pub mod gate;
pub mod measure;
pub mod pipeline;
pub mod render;
pub mod report;
pub mod stats;

mod skel {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/overhead.skel.rs"));
}

pub use measure::{Error, Mechanism, Result, Target, Trigger};

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The core knows nothing of the layers above it.
    #[test]
    fn the_core_imports_nothing_from_above() {
        let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
        let mut checked = 0;
        for entry in std::fs::read_dir(&core).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for upper in [
                "pipeline", "document", "render", "gate", "report", "stats", "expect",
            ] {
                for pattern in [format!("crate::{upper}"), format!("super::super::{upper}")] {
                    assert!(
                        !text.contains(&pattern),
                        "{} uses {pattern}: the core must not depend on the layers above it",
                        path.display()
                    );
                }
            }
            checked += 1;
        }
        assert!(checked >= 6, "only {checked} files in {}", core.display());
    }
}
