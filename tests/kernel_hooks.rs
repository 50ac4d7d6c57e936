//! What the kernel decides of a user's object (`--object`): programs on
//! functions a syscall reaches, each judged in strict mode as the
//! built-in mechanism of its kind is. The VMs run this as they run the
//! suite (`cargo xtask vmtest`); this host skips them.

mod common;

use common::cli::{mechanism, run};
use common::objects::{hits_are_events, object, ours_loaded, short, NEEDS_ROOT};
use common::system::root_or_skip;
use serde_json::Value;
use serial_test::serial;

/// The built-in mechanism whose kernel support an object program on a
/// syscall function needs: strict mode judges the program as it judges
/// that one (its declared absence, in ci/absent/, covers both).
const KERNEL_HOOKS: &[(&str, &str)] = &[
    ("ks_getpid", "kprobe"),
    ("kp_getppid", "kprobe"),
    ("fe_read", "fentry"),
    ("lsm_file_open", "lsm"),
];

#[test]
#[serial]
fn kprobes_fentries_and_lsm_programs_on_what_a_syscall_reaches_are_measured_where_the_kernel_has_them(
) {
    if !root_or_skip(NEEDS_ROOT) {
        return;
    }
    let expect = bpf_overhead::expect::Expectations::from_env().unwrap();
    let file = object("kernel_hooks");
    let out = run(&short(&["--object", &file, "--format", "json"]));
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    for (program, peer) in KERNEL_HOOKS {
        let m = mechanism(&doc, &format!("kernel_hooks/{program}"));
        let status: bpf_overhead::document::Status =
            serde_json::from_value(m["status"].clone()).unwrap();
        let reason = m["reason"].as_str();
        match expect.judge(peer, status, reason) {
            bpf_overhead::expect::Conclusion::Pass => hits_are_events(m),
            bpf_overhead::expect::Conclusion::Skip(why) => {
                eprintln!("SKIP: kernel_hooks/{program}: {why}")
            }
            bpf_overhead::expect::Conclusion::Fail(why) => panic!("kernel_hooks/{program}: {why}"),
        }
    }
    assert!(ours_loaded().is_empty(), "{:?}", ours_loaded());
}
