//! The statically linked programs of the kselftest collection: the suite's
//! test executables and the command, built with the main crate's `static`
//! feature (libbpf, libelf and zlib from their archives) and a static C
//! library (`-C target-feature=+crt-static`), so that a kernel CI root file
//! system without libelf or even a libc runs them. The BPF object stays
//! embedded in each, as in every build. Each program's ELF is checked: no
//! interpreter and no needed library.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::{elf, Endianness};

use crate::build::guest_build::{
    command_executable, messages, static_test_command, test_executables, test_name, GUEST_TESTS,
};
use crate::kernels::arch::Arch;
use crate::util::{secs, shown};

/// The build: [`static_test_command`] of the guest's tests, JSON on stdout.
pub fn build_command(repo: &Path, arch: Arch) -> Command {
    let mut c = static_test_command(repo, arch);
    for t in GUEST_TESTS {
        c.args(["--test", t]);
    }
    c.arg("--message-format=json-render-diagnostics");
    c
}

/// The collection's programs: (name in the collection, built file).
pub struct Programs(pub Vec<(String, PathBuf)>);

/// Builds the programs for `arch` and checks that each is static.
pub fn build(repo: &Path, arch: Arch) -> Result<Programs> {
    if !arch.is_host() {
        for tool in [
            "/usr/bin/cargo",
            "/usr/bin/rustc",
            "/usr/bin/aarch64-linux-gnu-gcc",
        ] {
            ensure!(
                Path::new(tool).exists(),
                "the arm64 cross build needs {tool}: run scripts/setup --arm64"
            );
        }
    }
    let mut cmd = build_command(repo, arch);
    eprintln!("kselftest: building the static programs: {}", shown(&cmd));
    let t = Instant::now();
    let (status, json) = messages(&mut cmd)?;
    ensure!(
        status.success(),
        "{} failed (libelf.a and libz.a: apt-get install -y libelf-dev zlib1g-dev{})",
        shown(&cmd),
        if arch.is_host() { "" } else { ", and :arm64" }
    );
    let mut progs = Vec::new();
    for exe in test_executables(&json) {
        progs.push((format!("suite-{}", test_name(&exe)), PathBuf::from(exe)));
    }
    let command = command_executable(&json).context("cargo built no bpf-overhead command")?;
    progs.push(("bpf-overhead".to_owned(), PathBuf::from(command)));
    ensure!(
        progs.len() == GUEST_TESTS.len() + 1,
        "cargo built {} programs, not the {} tests and the command",
        progs.len(),
        GUEST_TESTS.len()
    );
    for (name, path) in &progs {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        check_static(&data, arch).with_context(|| format!("{name} ({})", path.display()))?;
    }
    eprintln!(
        "kselftest: built {} static programs in {}",
        progs.len(),
        secs(t.elapsed())
    );
    Ok(Programs(progs))
}

/// An executable of `arch` that needs no dynamic loader and no shared
/// library: ET_EXEC (not a static-pie), no PT_INTERP, and no DT_NEEDED in
/// a dynamic section.
pub fn check_static(data: &[u8], arch: Arch) -> Result<()> {
    let hdr = elf::FileHeader64::<Endianness>::parse(data).context("not a 64-bit ELF file")?;
    let e = hdr.endian()?;
    ensure!(
        hdr.e_machine(e) == arch.elf_machine(),
        "an executable of machine {}, not {}",
        hdr.e_machine(e),
        arch.name()
    );
    ensure!(
        hdr.e_type(e) == elf::ET_EXEC,
        "not a position-dependent executable (ET_EXEC): a static-pie or dynamically linked"
    );
    for ph in hdr.program_headers(e, data)? {
        match ph.p_type(e) {
            elf::PT_INTERP => bail!("dynamically linked: it has an interpreter (PT_INTERP)"),
            elf::PT_DYNAMIC => {
                if let Some(dyns) = ph.dynamic(e, data)? {
                    if dyns.iter().any(|d| d.d_tag(e) == u64::from(elf::DT_NEEDED)) {
                        bail!("dynamically linked: it needs shared libraries (DT_NEEDED)");
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_is_static_and_apart() {
        let c = build_command(Path::new("/repo"), Arch::Arm64);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(
            line.contains("--features static --target aarch64-unknown-linux-gnu"),
            "{line}"
        );
        let envs: Vec<(String, String)> = c
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        assert!(envs.contains(&(
            "RUSTFLAGS".into(),
            "-C target-feature=+crt-static -C relocation-model=static".into()
        )));
        assert!(envs.contains(&(
            "CARGO_TARGET_DIR".into(),
            "/repo/target/kselftest-arm64".into()
        )));
        assert!(envs.contains(&(
            "LIBBPF_SYS_LIBRARY_PATH_aarch64_unknown_linux_gnu".into(),
            "/usr/lib/aarch64-linux-gnu".into()
        )));
    }

    /// This very test executable is dynamically linked (a plain build):
    /// the check says so. A static one is checked by the task's own run.
    #[test]
    fn a_dynamic_executable_is_refused() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let host = Arch::host().unwrap();
        let e = check_static(&me, host).unwrap_err().to_string();
        assert!(e.contains("dynamically linked"), "{e}");
        let other = match host {
            Arch::X86_64 => Arch::Arm64,
            Arch::Arm64 => Arch::X86_64,
        };
        assert!(check_static(&me, other).is_err());
        assert!(check_static(b"#!/bin/sh\n", host).is_err());
    }
}
