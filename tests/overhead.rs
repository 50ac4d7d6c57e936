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
    fsession => "fsession",
    fentry_multi => "fentry.multi",
    fexit_multi => "fexit.multi",
    fsession_multi => "fsession.multi",
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
    uprobe_multi_nop5 => "uprobe.multi-nop5",
    uretprobe_multi_nop5 => "uretprobe.multi-nop5",
    uprobe_base_nop10 => "base-nop10",
    uprobe_nop10 => "uprobe-nop10",
    uretprobe_nop10 => "uretprobe-nop10",
    uprobe_multi_nop10 => "uprobe.multi-nop10",
    uretprobe_multi_nop10 => "uretprobe.multi-nop10",
    usdt_base => "base-usdt",
    usdt => "usdt",
    usdt_base_nop5 => "base-usdt-nop5",
    usdt_nop5 => "usdt-nop5",
    usdt_base_nop10 => "base-usdt-nop10",
    usdt_nop10 => "usdt-nop10",
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
    loop_fsession => "fsession-loop",
    loop_fentry_multi => "fentry.multi-loop",
    loop_fexit_multi => "fexit.multi-loop",
    loop_fsession_multi => "fsession.multi-loop",
    loop_fentry_multi_all => "fentry.multi-all-loop",
    loop_fexit_multi_all => "fexit.multi-all-loop",
    loop_fsession_multi_all => "fsession.multi-all-loop",
    loop_base_kfunc => "base-loop-kfunc",
    loop_raw_tp => "raw_tp-loop",
    loop_tp => "tp-loop",
    loop_tp_btf => "tp_btf-loop",
    loop_fmod_ret => "fmod_ret-loop",
}

/// The KTAP file's appending (tests/common/ktap.rs), tested here rather
/// than beside it: every test crate has `mod common;`, and these run once,
/// with the suite that writes KTAP.
mod ktap {
    use std::fs;
    use std::path::PathBuf;

    use bpf_overhead::render::KtapResult;

    use crate::common::ktap::{append, begin, has_result};

    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("bpf-overhead-{}-{name}.ktap", std::process::id()));
            let _ = fs::remove_file(&path);
            Self(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = fs::remove_file(&self.0);
        }
    }

    // Serial too: the mechanisms' tests count this process's open files.
    #[test]
    #[serial_test::serial]
    fn results_follow_one_header_numbered_in_order() {
        let file = TempFile::new("order");
        let lines = ["task_rename raw_tp\t5994K events per sec".to_string()];
        for (name, result, diagnostics) in [
            ("base", KtapResult::Pass, &[][..]),
            ("kprobe", KtapResult::Skip("kernel has no\nkprobes"), &[]),
            ("raw_tp", KtapResult::Pass, &lines[..]),
            (
                "tp",
                KtapResult::Fail,
                &["tp: attach failed".to_string()][..],
            ),
        ] {
            append(&file.0, 5, "suite", name, result, diagnostics).unwrap();
        }
        assert_eq!(
            fs::read_to_string(&file.0).unwrap(),
            "KTAP version 1\n\
             1..5\n\
             # suite\n\
             ok 1 base\n\
             ok 2 kprobe # SKIP kernel has no kprobes\n\
             # task_rename raw_tp 5994K events per sec\n\
             ok 3 raw_tp\n\
             # tp: attach failed\n\
             not ok 4 tp\n"
        );
    }

    /// A boot after a crash: the file, started before the first mechanism,
    /// has the results of what ran, the crash's `not ok` (vmtest's) too.
    #[test]
    #[serial_test::serial]
    fn a_resumed_suite_sees_what_ran_before() {
        let file = TempFile::new("resumed");
        assert_eq!(begin(&file.0, 3, "suite").unwrap(), "");
        append(&file.0, 3, "suite", "base", KtapResult::Pass, &[]).unwrap();
        fs::write(
            &file.0,
            fs::read_to_string(&file.0).unwrap() + "# kprobe crashed the kernel\nnot ok 2 kprobe\n",
        )
        .unwrap();
        let text = begin(&file.0, 3, "suite").unwrap();
        assert!(text.starts_with("KTAP version 1\n1..3\n# suite\nok 1 base\n"));
        assert!(has_result(&text, "base") && has_result(&text, "kprobe"));
        assert!(!has_result(&text, "kprobe.multi") && !has_result(&text, "raw_tp"));
        assert!(has_result("ok 4 tp # SKIP no tracefs\n", "tp"));
        assert_eq!(begin(&file.0, 3, "suite").unwrap(), text, "started once");
    }

    #[test]
    #[serial_test::serial]
    fn concurrent_writers_neither_interleave_nor_share_a_number() {
        const THREADS: usize = 8;
        const EACH: usize = 50;
        let file = TempFile::new("concurrent");
        let path = file.0.clone();
        let start = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    let name = format!("t{t}");
                    let lines = vec![format!("{name} first"), format!("{name} second")];
                    start.wait();
                    for _ in 0..EACH {
                        append(
                            &path,
                            THREADS * EACH,
                            "suite",
                            &name,
                            KtapResult::Pass,
                            &lines,
                        )
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(&lines[..3], ["KTAP version 1", "1..400", "# suite"]);
        let body = &lines[3..];
        assert_eq!(body.len(), THREADS * EACH * 3, "{text}");
        for (i, block) in body.chunks(3).enumerate() {
            let name = block[2].rsplit(' ').next().unwrap();
            assert_eq!(block[0], format!("# {name} first"), "{text}");
            assert_eq!(block[1], format!("# {name} second"), "{text}");
            assert_eq!(block[2], format!("ok {} {name}", i + 1), "{text}");
        }
    }
}
