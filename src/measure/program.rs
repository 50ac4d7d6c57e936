//! Where a mechanism's BPF program comes from: a [`Program`] is reached
//! through the generated skeleton's typed fields (as bench_trigger.c
//! names `ctx.skel->progs.bench_trigger_kprobe`), never by a string. A
//! misspelt program is a compile error, and a program renamed in
//! bpf/overhead.bpf.c is one too.
//!
//! The seam for programs from elsewhere (issue 24, `--object FILE`):
//! [`Program`] is an enum, and load.rs matches it without a catch-all arm,
//! so a new source of programs (a user's object, its program found by name
//! in that object) is a new variant and a compile error at each place that
//! must decide for it: enabling it before load, finding it after. Its
//! entry, kind, hook, trigger and the rest of the pipeline are the same.

use libbpf_rs::{OpenProgramMut, ProgramMut};

use super::skel::{OpenOverheadSkel, OverheadSkel};

/// A BPF program a mechanism (or a trigger's driver) runs.
#[derive(Clone, Copy)]
pub enum Program {
    /// One of bpf/overhead.bpf.c's programs.
    Builtin(Builtin),
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
        $crate::measure::program::Program::Builtin($crate::measure::program::Builtin {
            open,
            loaded,
        })
    }};
}
pub(crate) use builtin;

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Its name is the object's: see load.rs's tests.
            Program::Builtin(_) => f.write_str("Program::Builtin"),
        }
    }
}
