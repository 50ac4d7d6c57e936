//! The `bpf-overhead` command without the privileges it needs: not root,
//! or capabilities missing, named up front in one line.

use std::os::unix::process::CommandExt;
use std::process::Command;

use serial_test::serial;

mod common;
use common::cli::*;
use common::system::{is_root, root_or_skip};

#[test]
fn not_root_is_one_line_and_the_environment_status() {
    let mut cmd = command(&["-m", "raw_tp", "--iterations", "10"]);
    if is_root() {
        // As nobody. Where nobody may not run the binary (a restrictive
        // mount), there is nothing to test.
        cmd.uid(65534).gid(65534);
        if let Err(err) = Command::new(BIN)
            .arg("--version")
            .uid(65534)
            .gid(65534)
            .output()
        {
            println!("SKIP: uid 65534 cannot run {BIN}: {err}");
            return;
        }
    }
    let out = output(cmd);
    assert_eq!(out.code, 69, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("must run as root"), "{}", out.stderr);
}

/// With CAP_BPF and CAP_PERFMON only (what the README once said was
/// enough) tp and uprobes failed with EACCES from deep inside libbpf. Now
/// what is missing is named up front, in one line, per mechanism.
#[test]
#[serial]
fn missing_capabilities_are_named_up_front() {
    if !root_or_skip("needs root to drop to other capabilities") {
        return;
    }
    let Some(out) = as_nobody_with("bpf,perfmon", &["-m", "tp,uprobe-nop", "--repeat", "1"]) else {
        println!("SKIP: setpriv cannot run {BIN} as nobody here");
        return;
    };
    assert_eq!(out.code, 69, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for needed in [
        "tp needs ",
        "CAP_DAC_READ_SEARCH",
        "uprobe-nop needs CAP_SYS_ADMIN to create uprobes",
        "the prog ns run needs CAP_SYS_ADMIN",
        "leave those out (-m, --no-prog-stats)",
    ] {
        assert!(
            out.stderr.contains(needed),
            "{needed:?} not in {}",
            out.stderr
        );
    }
    assert!(!out.stderr.contains("raw_tp"), "{}", out.stderr);
    // An XDP program, as a user's object: its type needs CAP_NET_ADMIN.
    let xdp = readable_copy("xdp_pass.bpf.o");
    let out = as_nobody_with("bpf,perfmon", &["--object", xdp.path(), "--repeat", "1"]).unwrap();
    assert_eq!(out.code, 69, "{}", out.stderr);
    for needed in [
        "xdp_pass/parse_udp need",
        "CAP_NET_ADMIN or CAP_SYS_ADMIN to load XDP, tc and flow dissector programs",
    ] {
        assert!(
            out.stderr.contains(needed),
            "{needed:?} not in {}",
            out.stderr
        );
    }
    // A flow dissector likewise (the kernel's is_net_admin_prog_type).
    let skb = readable_copy("skb.bpf.o");
    let out = as_nobody_with("bpf,perfmon", &["--object", skb.path(), "--repeat", "1"]).unwrap();
    assert_eq!(out.code, 69, "{}", out.stderr);
    assert!(out.stderr.contains("skb/dissect"), "{}", out.stderr);
    assert!(!out.stderr.contains("skb/keep_udp"), "{}", out.stderr);
}

/// What the check lets through does run, with the capabilities the
/// README names.
#[test]
#[serial]
fn what_the_check_lets_through_runs() {
    if !root_or_skip("needs root to drop to other capabilities") {
        return;
    }
    if as_nobody_with("bpf,perfmon", &["--version"]).is_none() {
        println!("SKIP: setpriv cannot run {BIN} as nobody here");
        return;
    }
    // What the check lets through does run: raw_tp with these two...
    let raw_tp = [
        "-m",
        "raw_tp",
        "--repeat",
        "1",
        "--iterations",
        "1000",
        "--no-prog-stats",
    ];
    let out = with_memlock("bpf,perfmon", &raw_tp);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // ...and a syscall program, which needs CAP_BPF alone to load and run
    // (skipped, exit 0, where the kernel has no such programs).
    let sys_prog = readable_copy("sys_prog.bpf.o");
    let out = with_memlock(
        "bpf,perfmon",
        &[
            "--object",
            sys_prog.path(),
            "--repeat",
            "1",
            "--iterations",
            "1000",
            "--no-prog-stats",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let ran = mechanism(&doc, "sys_prog/count_call");
    println!("sys_prog/count_call with CAP_BPF: {}", ran["status"]);
    // Not skipped for the privileges, which would read as the kernel
    // lacking the type (libbpf's probe loads one).
    assert!(
        ran["status"] == "ok"
            || ran["reason"]
                .as_str()
                .is_some_and(|r| r.contains("added in 5.14")),
        "{ran:#}"
    );
    // ...and tp and uprobes with what the README says they need (here;
    // before 5.11 CAP_SYS_RESOURCE too, as above).
    let out = with_memlock(
        "bpf,perfmon,sys_admin,dac_read_search",
        &[
            "-m",
            "tp,uprobe-nop",
            "--repeat",
            "1",
            "--iterations",
            "1000",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// The command as nobody with only `caps` (comma-separated, setpriv's
/// names), or `None` where setpriv cannot run it so.
fn as_nobody_with(caps: &str, args: &[&str]) -> Option<Output> {
    let caps = caps
        .split(',')
        .map(|c| format!("+{c}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        &format!("--inh-caps={caps}"),
        &format!("--ambient-caps={caps}"),
        BIN,
    ])
    .args(args)
    // Exactly --repeat rounds: these check what may run, not figures.
    .args(["--budget", "0"])
    .env_remove(EMULATED_ENV);
    match cmd.output() {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("setpriv:") => Some(Output {
            code: out.status.code().expect("bpf-overhead exits, not killed"),
            stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
        }),
        // No setpriv, or nobody may not run the binary here.
        _ => None,
    }
}

/// [`as_nobody_with`], retried with CAP_SYS_RESOURCE where the run needs
/// it: before 5.11 the kernel charges BPF memory to RLIMIT_MEMLOCK, which
/// only CAP_SYS_RESOURCE may raise (seen on Debian 5.10): there, each
/// run needs it too.
fn with_memlock(caps: &str, args: &[&str]) -> Output {
    let out = as_nobody_with(caps, args).unwrap();
    // The reason is in the table (stdout); stderr names the mechanism.
    if out.code != 0 && out.stdout.contains("RLIMIT_MEMLOCK") {
        println!(
            "this kernel charges BPF memory to RLIMIT_MEMLOCK: {}",
            out.stderr.trim()
        );
        return as_nobody_with(&format!("{caps},sys_resource"), args).unwrap();
    }
    out
}

/// A test object copied, under its own name (which names its programs),
/// to a folder of the temp dir, where nobody may read it: the checkout may
/// be in a folder only root can enter (a `mktemp -d`), which setpriv's
/// exec gets through as root but the dropped process does not.
struct ReadableCopy(std::path::PathBuf);

impl ReadableCopy {
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for ReadableCopy {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn readable_copy(name: &str) -> ReadableCopy {
    let dir = std::env::temp_dir().join(format!(
        "bpf-overhead-{}-{}",
        std::process::id(),
        name.replace('.', "-")
    ));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let copy = ReadableCopy(dir.join(name));
    std::fs::copy(format!("{}/{name}", env!("TEST_OBJECTS_DIR")), &copy.0)
        .unwrap_or_else(|e| panic!("copying {name} to {}: {e}", copy.path()));
    copy
}
