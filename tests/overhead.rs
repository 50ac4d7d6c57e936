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
            fn $test() -> common::TestResult {
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
    kprobe_multi => "kprobe.multi",
    kretprobe_multi => "kretprobe.multi",
    kprobe_session => "kprobe.session",
    raw_tp => "raw_tp",
    tp => "tp",
    tp_btf => "tp_btf",
    fentry => "fentry",
    fexit => "fexit",
    fmod_ret => "fmod_ret",
    lsm => "lsm",
    uprobe_base_nop => "base-nop",
    uprobe_base_push => "base-push",
    uprobe_base_ret => "base-ret",
    uprobe_nop => "uprobe-nop",
    uprobe_push => "uprobe-push",
    uprobe_ret => "uprobe-ret",
    uretprobe_nop => "uretprobe-nop",
    uretprobe_push => "uretprobe-push",
    uretprobe_ret => "uretprobe-ret",
    uprobe_multi_nop => "uprobe.multi-nop",
    uprobe_multi_push => "uprobe.multi-push",
    uprobe_multi_ret => "uprobe.multi-ret",
    uretprobe_multi_nop => "uretprobe.multi-nop",
    uretprobe_multi_push => "uretprobe.multi-push",
    uretprobe_multi_ret => "uretprobe.multi-ret",
    uprobe_session_nop => "uprobe.session-nop",
    uprobe_session_push => "uprobe.session-push",
    uprobe_session_ret => "uprobe.session-ret",
    uprobe_base_nop5 => "base-nop5",
    uprobe_nop5 => "uprobe-nop5",
    uretprobe_nop5 => "uretprobe-nop5",
    usdt_base => "base-usdt",
    usdt => "usdt",
    usdt_base_nop5 => "base-usdt-nop5",
    usdt_nop5 => "usdt-nop5",
    loop_base => "base-loop",
    loop_kprobe => "kprobe-loop",
    loop_kretprobe => "kretprobe-loop",
    loop_kprobe_multi => "kprobe.multi-loop",
    loop_kretprobe_multi => "kretprobe.multi-loop",
    loop_kprobe_multi_all => "kprobe.multi-all-loop",
    loop_kretprobe_multi_all => "kretprobe.multi-all-loop",
    loop_kprobe_session => "kprobe.session-loop",
    loop_fentry => "fentry-loop",
    loop_fexit => "fexit-loop",
    loop_base_kfunc => "base-loop-kfunc",
    loop_raw_tp => "raw_tp-loop",
    loop_tp => "tp-loop",
    loop_tp_btf => "tp_btf-loop",
    loop_fmod_ret => "fmod_ret-loop",
}
