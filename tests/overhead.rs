//! One test per attach mechanism, as in the kernel's
//! prog_tests/test_overhead.c: attach, fire 100000 events on one CPU,
//! check the program saw each one exactly once, print the rate.
//!
//! Serial: every test pins to the same CPU, renames its thread and
//! attaches to the same kernel functions.

mod common;

use bpf_overhead::{Mechanism, Target, Trigger};
use serial_test::serial;

macro_rules! overhead_tests {
    ($($name:ident => $mechanism:expr,)*) => {$(
        #[test_log::test]
        #[serial]
        fn $name() -> common::Outcome {
            common::check($mechanism)
        }
    )*};
}

overhead_tests! {
    base => Mechanism::Base(Trigger::TaskRename),
    kprobe => Mechanism::Kprobe,
    kretprobe => Mechanism::Kretprobe,
    raw_tp => Mechanism::RawTp,
    tp => Mechanism::Tp,
    fentry => Mechanism::Fentry,
    fexit => Mechanism::Fexit,
    fmod_ret => Mechanism::FmodRet,
    uprobe_base_nop => Mechanism::Base(Trigger::Call(Target::Nop)),
    uprobe_base_push => Mechanism::Base(Trigger::Call(Target::Push)),
    uprobe_base_ret => Mechanism::Base(Trigger::Call(Target::Ret)),
    uprobe_nop => Mechanism::Uprobe(Target::Nop),
    uprobe_push => Mechanism::Uprobe(Target::Push),
    uprobe_ret => Mechanism::Uprobe(Target::Ret),
    uretprobe_nop => Mechanism::Uretprobe(Target::Nop),
    uretprobe_push => Mechanism::Uretprobe(Target::Push),
    uretprobe_ret => Mechanism::Uretprobe(Target::Ret),
}
