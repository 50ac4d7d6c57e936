//! Compiles bpf/overhead.bpf.c with clang and generates its libbpf-rs
//! skeleton into OUT_DIR. The constants the program shares with Rust
//! come from src/measure/bpf_consts.rs, written into a header the program
//! includes.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

#[path = "src/measure/bpf_consts.rs"]
mod bpf_consts;

const SRC: &str = "bpf/overhead.bpf.c";
const CONSTS: &str = "src/measure/bpf_consts.rs";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
    // Debian puts <asm/types.h> under the multiarch directory, which clang
    // does not search when targeting bpf.
    let multiarch = format!("-I/usr/include/{arch}-linux-gnu");
    // libbpf's usdt.bpf.h reads registers through bpf_tracing.h, which
    // needs the target arch in the kernel's spelling.
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    let target_arch = format!("-D__TARGET_ARCH_{target_arch}");
    let header = out.join(bpf_consts::C_HEADER);
    std::fs::write(&header, bpf_consts::c_header())
        .unwrap_or_else(|e| panic!("writing {}: {e}", header.display()));
    let include_out = format!("-I{}", out.display());

    if let Err(err) = SkeletonBuilder::new()
        .source(SRC)
        .clang_args([
            multiarch.as_str(),
            target_arch.as_str(),
            include_out.as_str(),
            // As upstream's selftests Makefile: ALU32 and JMP32 (kernel 5.1+).
            "-mcpu=v3",
            "-Wall",
            "-O2",
        ])
        .build_and_generate(out.join("overhead.skel.rs"))
    {
        // One line that says what to install beats a wall of cargo output.
        panic!(
            "building {SRC} failed: {err:#}\n\
             hint: install clang, libelf-dev, zlib1g-dev, pkg-config and make \
             (Debian/Ubuntu: sudo apt-get install clang libelf-dev zlib1g-dev pkg-config make)"
        );
    }
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed={CONSTS}");
}
