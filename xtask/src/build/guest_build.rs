//! The host build of the guest's test binaries (`cargo test --no-run`, or
//! the cross build of another architecture's), and what it built, read from
//! cargo's JSON messages.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use cargo_metadata::camino::Utf8PathBuf;
use cargo_metadata::{Artifact, Message, TargetKind};

use crate::kernels::arch::Arch;
use crate::util::signal::check_signal;
use crate::util::{cargo, say, secs, shown};

/// The test binaries that a guest runs by default: what the kernel decides
/// (every mechanism attaches or skips as declared and counts exactly;
/// nothing is left behind). The others test the command line, signals and
/// pure logic, which no kernel changes, and run on the host.
pub const GUEST_TESTS: &[&str] = &["overhead", "cleanup"];

/// What the kernel decides of a user's object (kprobe, fentry and LSM
/// programs on what a syscall reaches): run by a VM's guest too, but not
/// part of the kselftest collection, which ships no objects.
pub const GUEST_OBJECT_TESTS: &[&str] = &["kernel_hooks"];

/// `cargo test --no-run`'s arguments: a release build of [`GUEST_TESTS`]
/// (under TCG a debug build spends twice as long in user space), or with
/// `all`, every test binary as `cargo test` builds them; then the user's.
pub fn test_build_args(all: bool, user: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    if !all {
        args.push("--release".to_owned());
        if !user
            .iter()
            .any(|a| a == "--test" || a.starts_with("--test="))
        {
            for t in GUEST_TESTS.iter().chain(GUEST_OBJECT_TESTS) {
                args.extend(["--test".to_owned(), (*t).to_owned()]);
            }
        }
    }
    args.extend(user.iter().cloned());
    args
}

/// The build of the guest's test binaries for `arch`: [`static_test_command`]
/// with [`test_build_args`] (for another architecture than the host's a
/// cross build, for which `scripts/setup --arm64` installs what it needs),
/// or with `all` on the host `cargo test --no-run`; JSON on stdout with
/// `json`.
pub fn build_command(repo: &Path, arch: Arch, all: bool, user: &[String], json: bool) -> Command {
    let args = test_build_args(all, user);
    let json = json.then_some("--message-format=json-render-diagnostics");
    let mut c = if arch.is_host() && all {
        let mut c = cargo();
        c.args(["test", "--no-run"]).args(json).args(args);
        c
    } else {
        // Static, as the kselftest collection's (which then builds nothing
        // again): one build of the guest's tests for both, and an arm64
        // guest needs no arm64 libraries.
        let mut c = static_test_command(repo, arch);
        c.args(json)
            .args(args.into_iter().filter(|a| a != "--release"));
        c
    };
    c.current_dir(repo).stdin(Stdio::null());
    c
}

/// Rust's target for `arch`, always given: with `--target`, RUSTFLAGS
/// reach only the target's artifacts, not build scripts and proc macros
/// (which cannot be linked statically).
pub fn rust_target(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64-unknown-linux-gnu",
        Arch::Arm64 => "aarch64-unknown-linux-gnu",
    }
}

/// Where Debian keeps `arch`'s libraries, libelf.a and libz.a among them.
fn multiarch_lib(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "/usr/lib/x86_64-linux-gnu",
        Arch::Arm64 => "/usr/lib/aarch64-linux-gnu",
    }
}

/// The static build: `cargo test --release --no-run --features static`
/// (which builds the command too), in its own target directory
/// (`target/kselftest`, `target/kselftest-arm64`) so that the usual builds
/// stay as they are; the tests to build are the caller's. Another
/// architecture than the host's is a cross build with Debian's Rust and
/// cross gcc. The kselftest collection's programs, and an arm64 guest's:
/// one build serves both.
pub fn static_test_command(repo: &Path, arch: Arch) -> Command {
    let target = rust_target(arch);
    let mut c = if arch.is_host() {
        cargo()
    } else {
        let mut c = Command::new("/usr/bin/cargo");
        c.env("RUSTC", "/usr/bin/rustc")
            .env("RUSTDOC", "/usr/bin/rustdoc")
            .env(
                format!("CC_{}", target.replace('-', "_")),
                "aarch64-linux-gnu-gcc",
            );
        c
    };
    c.args(["test", "--release", "--no-run", "--features", "static"])
        .args(["--target", target])
        .env(
            "CARGO_TARGET_DIR",
            repo.join(arch.tagged("target/kselftest")),
        )
        // Not static-pie: `file` and kernel CI's checks say "statically linked".
        .env(
            "RUSTFLAGS",
            "-C target-feature=+crt-static -C relocation-model=static",
        )
        .current_dir(repo)
        .stdin(Stdio::null());
    // libbpf-sys links libelf.a and libz.a but does not say where they are;
    // the host's copy (libbpf-cargo's, for build.rs) gets the feature too.
    for a in [Arch::host(), Some(arch)].into_iter().flatten() {
        c.env(
            format!(
                "LIBBPF_SYS_LIBRARY_PATH_{}",
                rust_target(a).replace('-', "_")
            ),
            multiarch_lib(a),
        );
    }
    c
}

/// Runs a cargo build of `--message-format json`, its stderr to ours, and
/// returns its exit status and its messages. A signal that stopped it
/// (Ctrl-C) is an error.
pub fn messages(cmd: &mut Command) -> Result<(std::process::ExitStatus, String)> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", shown(cmd)))?;
    check_signal()?;
    Ok((
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

/// The test executables and the command.
pub fn build_tests(
    repo: &Path,
    arch: Arch,
    all: bool,
    user: &[String],
) -> Result<(Vec<String>, Option<String>)> {
    let mut cmd = build_command(repo, arch, all, user, true);
    say!("building tests: {}", shown(&cmd));
    let t = Instant::now();
    let (status, json) = messages(&mut cmd)?;
    ensure!(status.success(), "{} failed", shown(&cmd));
    let exes = test_executables(&json);
    ensure!(!exes.is_empty(), "cargo built no test executables");
    say!(
        "built {} test executable(s) in {}",
        exes.len(),
        secs(t.elapsed())
    );
    Ok((exes, command_executable(&json)))
}

/// The artifacts among cargo's messages (`--message-format=json`); a line
/// that is no message of cargo's is left out.
fn artifacts(json: &str) -> Vec<Artifact> {
    Message::parse_stream(json.as_bytes())
        .filter_map(|m| match m {
            Ok(Message::CompilerArtifact(a)) => Some(a),
            _ => None,
        })
        .collect()
}

/// Test executables from `cargo test --no-run --message-format=json` output,
/// in a stable order (by name, not by build completion).
pub fn test_executables(json: &str) -> Vec<String> {
    let mut exes: Vec<String> = Vec::new();
    for a in artifacts(json).into_iter().filter(|a| a.profile.test) {
        if let Some(exe) = a.executable.map(Utf8PathBuf::into_string) {
            if !exes.contains(&exe) {
                exes.push(exe);
            }
        }
    }
    let key = |p: &String| {
        let base = Path::new(p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        (
            base.rsplit_once('-')
                .map_or(base.clone(), |(n, _)| n.to_owned()),
            p.clone(),
        )
    };
    exes.sort_by_key(key);
    exes
}

/// The `bpf-overhead` command built with the tests (`cargo test` builds the
/// binaries its integration tests run), from the same JSON.
pub fn command_executable(json: &str) -> Option<String> {
    artifacts(json)
        .into_iter()
        .filter(|a| {
            !a.profile.test && a.target.name == "bpf-overhead" && a.target.is_kind(TargetKind::Bin)
        })
        .find_map(|a| a.executable.map(Utf8PathBuf::into_string))
}

/// A test executable's name without cargo's hash: target/release/deps/overhead-1a2b
/// is overhead.
pub fn test_name(exe: &str) -> String {
    let base = Path::new(exe)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match base.rsplit_once('-') {
        Some((n, h)) if h.bytes().all(|b| b.is_ascii_hexdigit()) => n.to_owned(),
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An artifact message as cargo writes it (`cargo test --no-run
    /// --message-format=json`).
    fn artifact(name: &str, kind: &str, test: bool, exe: Option<&str>) -> String {
        let src = if kind == "lib" { "lib" } else { "main" };
        serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": "path+file:///r#bpf-overhead@0.1.0",
            "manifest_path": "/r/Cargo.toml",
            "target": {
                "kind": [kind],
                "crate_types": [if kind == "lib" { "lib" } else { "bin" }],
                "name": name,
                "src_path": format!("/r/src/{src}.rs"),
                "edition": "2021",
                "doc": true,
                "doctest": false,
                "test": true
            },
            "profile": {
                "opt_level": "0",
                "debuginfo": 2,
                "debug_assertions": true,
                "overflow_checks": true,
                "test": test
            },
            "features": [],
            "filenames": [exe.unwrap_or("/r/target/debug/libbpf_overhead.rlib")],
            "executable": exe,
            "fresh": false
        })
        .to_string()
    }

    #[test]
    fn executables_in_a_stable_order() {
        let json = [
            artifact(
                "overhead",
                "test",
                true,
                Some("/r/target/debug/deps/overhead-9f"),
            ),
            artifact(
                "bpf-overhead",
                "bin",
                false,
                Some("/r/target/debug/bpf-overhead"),
            ),
            artifact(
                "bpf_overhead",
                "lib",
                true,
                Some("/r/target/debug/deps/bpf_overhead-11"),
            ),
            artifact("bpf_overhead", "lib", true, None),
            r#"{"reason":"build-finished","success":true}"#.to_owned(),
            "not json".to_owned(),
            artifact(
                "cleanup",
                "test",
                true,
                Some("/r/target/debug/deps/cleanup-02"),
            ),
            // The same executable twice: listed once.
            artifact(
                "cleanup",
                "test",
                true,
                Some("/r/target/debug/deps/cleanup-02"),
            ),
        ]
        .join("\n");
        assert_eq!(
            test_executables(&json),
            [
                "/r/target/debug/deps/bpf_overhead-11",
                "/r/target/debug/deps/cleanup-02",
                "/r/target/debug/deps/overhead-9f"
            ]
        );
    }

    #[test]
    fn the_guest_builds_what_the_kernel_decides() {
        let none: [String; 0] = [];
        assert_eq!(
            test_build_args(false, &none),
            [
                "--release",
                "--test",
                "overhead",
                "--test",
                "cleanup",
                "--test",
                "kernel_hooks"
            ]
        );
        assert!(test_build_args(true, &none).is_empty());
        let user = ["--test".to_owned(), "producers".to_owned()];
        assert_eq!(
            test_build_args(false, &user),
            ["--release", "--test", "producers"]
        );
    }

    #[test]
    fn the_command_among_the_artifacts() {
        let json = [
            artifact(
                "bpf-overhead",
                "bin",
                true,
                Some("/r/target/debug/deps/bpf_overhead-1"),
            ),
            artifact("bpf-overhead", "lib", false, None),
            artifact(
                "suite-helper",
                "bin",
                false,
                Some("/r/target/debug/suite-helper"),
            ),
            artifact(
                "bpf-overhead",
                "bin",
                false,
                Some("/r/target/debug/bpf-overhead"),
            ),
        ]
        .join("\n");
        assert_eq!(
            command_executable(&json).as_deref(),
            Some("/r/target/debug/bpf-overhead")
        );
        assert_eq!(command_executable("{}"), None);
    }

    #[test]
    fn cross_builds_for_another_architecture() {
        let repo = Path::new("/r");
        let host = build_command(repo, Arch::X86_64, false, &[], true);
        assert!(
            shown(&host).ends_with(
                "test --release --no-run --features static --target x86_64-unknown-linux-gnu \
                 --message-format=json-render-diagnostics --test overhead --test cleanup \
                 --test kernel_hooks"
            ),
            "{}",
            shown(&host)
        );
        let all = build_command(repo, Arch::X86_64, true, &[], true);
        assert!(
            shown(&all).ends_with("test --no-run --message-format=json-render-diagnostics"),
            "{}",
            shown(&all)
        );
        let arm = build_command(repo, Arch::Arm64, false, &[], true);
        assert_eq!(arm.get_program(), "/usr/bin/cargo");
        assert_eq!(
            shown(&arm),
            "cargo test --release --no-run --features static --target aarch64-unknown-linux-gnu \
             --message-format=json-render-diagnostics --test overhead --test cleanup \
             --test kernel_hooks",
            "the kselftest collection's build, and the guest's tests"
        );
        let ks = crate::build::static_build::build_command(repo, Arch::Arm64);
        let env = |c: &Command| -> Vec<String> { c.get_envs().map(|e| format!("{e:?}")).collect() };
        assert_eq!(
            env(&arm),
            env(&ks),
            "one build serves both: nothing built twice"
        );
        assert_eq!(arm.get_current_dir(), Some(repo));
    }

    #[test]
    fn test_names_lose_the_hash() {
        assert_eq!(
            test_name("/r/target/release/deps/overhead-9f3a"),
            "overhead"
        );
        assert_eq!(test_name("/r/target/t-1"), "t");
        assert_eq!(test_name("/r/target/suite-helper"), "suite-helper");
    }
}
