//! Compiles bpf/overhead.bpf.c with clang and generates its libbpf-rs
//! skeleton into OUT_DIR. The constants the program shares with Rust
//! come from common/src/bpf_consts.rs, written into a header the program
//! includes.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

use bpf_overhead_common::bpf_consts;

const SRC: &str = "bpf/overhead.bpf.c";
const CONSTS: &str = "common/src/bpf_consts.rs";

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
    test_objects(&out, &[multiarch.as_str(), target_arch.as_str()]);
}

/// The suite's own objects for `--object` (tests/cli_objects.rs): each
/// tests/objects/NAME.bpf.c into OUT_DIR/objects/NAME.bpf.o, and the
/// syscall programs with a loop in them: `syscalls_slow` (4000 steps a hit,
/// some 15 times the cost), the slower build an `--against object=` run
/// must call REGRESSED on any host, and `syscalls_plus64`; and a
/// next version with one program dropped and one added (`syscalls_v2`). The
/// tests find them through TEST_OBJECTS_DIR.
fn test_objects(out: &std::path::Path, args: &[&str]) {
    const DIR: &str = "tests/objects";
    let dir = out.join("objects");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let mut builds: Vec<(String, String, Vec<&str>)> = Vec::new();
    for entry in std::fs::read_dir(DIR).unwrap_or_else(|e| panic!("reading {DIR}: {e}")) {
        let path = entry.expect("a directory entry").path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".bpf.c"))
        else {
            continue;
        };
        builds.push((path.display().to_string(), stem.to_string(), Vec::new()));
    }
    builds.push((
        format!("{DIR}/syscalls.bpf.c"),
        "syscalls_slow".into(),
        vec!["-DEXTRA_WORK=4000"],
    ));
    // A slower build by a fraction (~+70% on getpid): what
    // research/compare_power's statistics are measured on.
    builds.push((
        format!("{DIR}/syscalls.bpf.c"),
        "syscalls_plus64".into(),
        vec!["-DEXTRA_WORK=64"],
    ));
    builds.push((
        format!("{DIR}/syscalls.bpf.c"),
        "syscalls_v2".into(),
        vec!["-DV2"],
    ));
    // The example agent (examples/agent/), and the same without its ring
    // buffer: what the buffer costs.
    const AGENT: &str = "examples/agent/agent.bpf.c";
    builds.push((AGENT.into(), "agent".into(), Vec::new()));
    builds.push((AGENT.into(), "agent_bare".into(), vec!["-DBARE"]));
    for (src, name, extra) in builds {
        let obj = dir.join(format!("{name}.bpf.o"));
        let mut clang_args = args.to_vec();
        clang_args.extend(["-mcpu=v3", "-Wall", "-O2"]);
        clang_args.extend(extra);
        if let Err(err) = SkeletonBuilder::new()
            .source(&src)
            .obj(&obj)
            .clang_args(clang_args)
            .build()
        {
            panic!("building {src} failed: {err:#}");
        }
    }
    println!("cargo:rerun-if-changed={DIR}");
    println!("cargo:rerun-if-changed={AGENT}");
    println!("cargo:rustc-env=TEST_OBJECTS_DIR={}", dir.display());
}
