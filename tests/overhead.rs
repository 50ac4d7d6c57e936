//! One test per attach mechanism, as in the kernel's
//! prog_tests/test_overhead.c: attach, fire 100000 events on one CPU,
//! check the program saw each one exactly once, print the rate.
//!
//! Serial: every test pins to the same CPU, renames its thread and
//! attaches to the same kernel functions.

mod common;

use serial_test::serial;

macro_rules! overhead_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test_log::test]
            #[serial]
            fn $test() -> common::Outcome {
                common::check($name)
            }
        )*

        #[test]
        fn every_mechanism_has_a_test() {
            common::check_coverage(&[$($name),*]);
        }
    };
}

overhead_tests! {
    base => "base",
    kprobe => "kprobe",
    kretprobe => "kretprobe",
    raw_tp => "raw_tp",
    tp => "tp",
    tp_btf => "tp_btf",
    fentry => "fentry",
    fexit => "fexit",
    fmod_ret => "fmod_ret",
    uprobe_base_nop => "base-nop",
    uprobe_base_push => "base-push",
    uprobe_base_ret => "base-ret",
    uprobe_nop => "uprobe-nop",
    uprobe_push => "uprobe-push",
    uprobe_ret => "uprobe-ret",
    uretprobe_nop => "uretprobe-nop",
    uretprobe_push => "uretprobe-push",
    uretprobe_ret => "uretprobe-ret",
    loop_base => "base-loop",
    loop_kprobe => "kprobe-loop",
    loop_kretprobe => "kretprobe-loop",
    loop_fentry => "fentry-loop",
    loop_fexit => "fexit-loop",
    loop_base_kfunc => "base-loop-kfunc",
    loop_raw_tp => "raw_tp-loop",
    loop_tp => "tp-loop",
    loop_tp_btf => "tp_btf-loop",
    loop_fmod_ret => "fmod_ret-loop",
}
