//! Where a mechanism's BPF program comes from: a [`Program`] is reached
//! through the generated skeleton's typed fields (as bench_trigger.c
//! names `ctx.skel->progs.bench_trigger_kprobe`), never by a string. A
//! misspelt program is a compile error, and a program renamed in
//! bpf/overhead.bpf.c is one too.
//!
//! Or from a user's object (`--object FILE`, object.rs): found by its
//! name in that object, the one place a name is right, since it is the
//! user's. load.rs matches [`Program`] without a catch-all arm: a built-in
//! loads with the skeleton, an object's program with its object. Its entry,
//! kind (the built-in kind its section names), hook, trigger and the rest
//! of the pipeline are the same.

use std::fmt;
use std::path::PathBuf;

use libbpf_rs::{OpenProgramMut, ProgramMut};

use crate::measure::skel::{OpenOverheadSkel, OverheadSkel};

/// A BPF program a mechanism (or a trigger's driver) runs.
#[derive(Clone, Copy)]
pub enum Program {
    /// One of bpf/overhead.bpf.c's programs.
    Builtin(Builtin),
    /// A program of a user's object (`--object`).
    Object(&'static ObjectProgram),
}

impl Program {
    /// The user's object program, if this is one.
    pub const fn object(self) -> Option<&'static ObjectProgram> {
        match self {
            Program::Object(p) => Some(p),
            Program::Builtin(_) => None,
        }
    }
}

/// One program of a user's object, and what loading it takes.
pub struct ObjectProgram {
    /// The file, as given.
    pub path: PathBuf,
    /// The ELF, read once: every run loads this copy, so a file rebuilt
    /// mid-run changes nothing.
    pub(crate) bytes: Vec<u8>,
    pub program: String,
    pub section: String,
    /// `--set`'s writes into the `.rodata` map: offset and bytes.
    pub(crate) rodata: Vec<(usize, Vec<u8>)>,
}

impl ObjectProgram {
    /// The file's bytes, as read.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl PartialEq for ObjectProgram {
    fn eq(&self, other: &Self) -> bool {
        (&self.path, &self.program) == (&other.path, &other.program)
    }
}

impl Eq for ObjectProgram {}

impl fmt::Debug for ObjectProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} ({})",
            self.path.display(),
            self.program,
            self.section
        )
    }
}

/// One of the built-in skeleton's programs, as its two typed fields: the
/// open one (to enable it before load) and the loaded one (its fd, its
/// attach calls). Made by [`builtin!`], which names the field once.
#[derive(Clone, Copy)]
pub struct Builtin {
    pub(crate) open:
        for<'a, 'obj> fn(&'a mut OpenOverheadSkel<'obj>) -> &'a mut OpenProgramMut<'obj>,
    pub(crate) loaded: for<'a, 'obj> fn(&'a OverheadSkel<'obj>) -> &'a ProgramMut<'obj>,
}

/// `builtin!(prog_kprobe)`: the [`Program`] of the skeleton's field
/// `prog_kprobe`, in a const (the catalogue is a static).
macro_rules! builtin {
    ($field:ident) => {{
        fn open<'a, 'obj>(
            skel: &'a mut $crate::measure::skel::OpenOverheadSkel<'obj>,
        ) -> &'a mut ::libbpf_rs::OpenProgramMut<'obj> {
            &mut skel.progs.$field
        }
        fn loaded<'a, 'obj>(
            skel: &'a $crate::measure::skel::OverheadSkel<'obj>,
        ) -> &'a ::libbpf_rs::ProgramMut<'obj> {
            &skel.progs.$field
        }
        $crate::measure::mechanism::program::Program::Builtin(
            $crate::measure::mechanism::program::Builtin { open, loaded },
        )
    }};
}
pub(crate) use builtin;

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Its name is the object's: see load.rs's tests.
            Program::Builtin(_) => f.write_str("Program::Builtin"),
            Program::Object(p) => write!(f, "Program::Object({p:?})"),
        }
    }
}
