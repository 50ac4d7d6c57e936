//! The environment variables the suite, the command and xtask read or set,
//! written only here.

/// What every one of them starts with: xtask passes the host's into the
/// guest (but [`CACHE_ENV`]).
pub const ENV_PREFIX: &str = "BPF_OVERHEAD_";

/// Set to 1 by CI jobs that expect every mechanism: a skip becomes a failure.
pub const STRICT_ENV: &str = "BPF_OVERHEAD_STRICT";

/// The file that lists what this kernel lacks by age (ci/absent/<series>).
pub const ABSENT_ENV: &str = "BPF_OVERHEAD_ABSENT";

/// The emulator in use (`tcg`), set by `cargo xtask vmtest`: rates
/// measured there are not performance figures.
pub const EMULATED_ENV: &str = "BPF_OVERHEAD_EMULATED";

/// The emulator's version line (`QEMU emulator version 7.2.22 ...`), set
/// by `cargo xtask vmtest --exact`: a count of instructions depends on it.
pub const EMULATOR_ENV: &str = "BPF_OVERHEAD_EMULATOR";

/// A file holding the kernel's config, set by `cargo xtask vmtest`, which
/// knows it (from the package, the image or `--config`): the command
/// records it with its result where the kernel has no /proc/config.gz.
pub const KCONFIG_ENV: &str = "BPF_OVERHEAD_KCONFIG";

/// A folder: the command marks each timed run's events for the TCG
/// plugin and writes there what names the plugin's addresses
/// (src/measure/running/window.rs). Set by `cargo xtask vmtest --exact
/// --explain`.
pub const WINDOWS_ENV: &str = "BPF_OVERHEAD_WINDOWS";

/// The file the suite appends its KTAP results to.
pub const KTAP_ENV: &str = "BPF_OVERHEAD_KTAP";

/// A file each mechanism's name is appended to before it is set up, set
/// by `cargo xtask vmtest`: when the guest kernel crashes, its last line
/// names the mechanism that crashed it (src/measure/kernel/progress.rs).
pub const PROGRESS_ENV: &str = "BPF_OVERHEAD_PROGRESS";

/// A Python with `kcidb-io` (`cargo xtask ci` sets it to its venv's):
/// tests/cli_kernel_ci.rs validates the command's KCIDB records with it,
/// and fails without it when `CI` is set.
pub const KCIDB_PYTHON_ENV: &str = "BPF_OVERHEAD_KCIDB_PYTHON";

/// xtask's download and build cache on the host (default
/// ~/.cache/bpf-overhead); not passed into the guest.
pub const CACHE_ENV: &str = "BPF_OVERHEAD_CACHE";

/// tests/mutated_objects.rs's: how many damaged objects it tries, from
/// which seed, and the folder it copies the failing ones to
/// (scripts/mutate-objects sets them for long runs).
pub mod mutants {
    pub const COUNT_ENV: &str = "BPF_OVERHEAD_MUTANTS";
    pub const SEED_ENV: &str = "BPF_OVERHEAD_MUTANTS_SEED";
    pub const KEEP_ENV: &str = "BPF_OVERHEAD_MUTANTS_KEEP";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xtask forwards the host's variables by prefix: each name has it.
    #[test]
    fn every_name_has_the_prefix() {
        for name in [
            STRICT_ENV,
            ABSENT_ENV,
            EMULATED_ENV,
            EMULATOR_ENV,
            KCONFIG_ENV,
            KTAP_ENV,
            PROGRESS_ENV,
            KCIDB_PYTHON_ENV,
            WINDOWS_ENV,
            CACHE_ENV,
            mutants::COUNT_ENV,
            mutants::SEED_ENV,
            mutants::KEEP_ENV,
        ] {
            assert!(name.starts_with(ENV_PREFIX), "{name}");
            assert!(name.len() > ENV_PREFIX.len(), "{name}");
        }
    }
}
