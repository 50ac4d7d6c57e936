//! What a test needs of the machine before it starts: root.

/// Whether the tests run as root (euid 0), as loading BPF programs and
/// mounting need.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether a test that needs root may go on. If not, it prints
/// `SKIP: <why>`, the test's own reason, and the test returns (a skip
/// passes: the suite needs root, like the kernel's selftests).
pub fn root_or_skip(why: &str) -> bool {
    let root = is_root();
    if !root {
        println!("SKIP: {why}");
    }
    root
}
