//! What every part of xtask shares: the repository and cache directories,
//! whole-file writes and locks, programs on PATH, a content hash, sh quoting,
//! a command shown as one line; and what xtask shares with the command
//! (the shared crate, common/). It imports no other xtask module, so that
//! any module may use it and no module imports another for these.

use std::env;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};

pub mod signal;
pub mod values;

// Shared with the command (xtask does not depend on the main crate: that
// would build its BPF): the environment variables, kernel configs, the
// exact verdict rule, the exit statuses, the result document and its
// verdicts, and where root creates files, and how. Every file xtask
// writes goes through safe_write; the probe before a write is the
// command's alone.
pub use bpf_overhead_common::{
    document, env_vars, exact_rule, exit_status, kconfig, kinds, safe_write, verdict,
};
// Exact counts read from result documents and judged by that rule.
pub mod exact_counts;

use env_vars::CACHE_ENV;

/// The running task's name, `say!`'s prefix: set once by main.
static TASK: OnceLock<String> = OnceLock::new();

/// Names the running task (main, once the command line is parsed).
pub fn set_task(name: &str) {
    let _ = TASK.set(name.to_owned());
}

/// The running task's name: `vmtest` for its three modes, `xtask` before
/// main has named one.
pub fn task() -> &'static str {
    TASK.get().map_or("xtask", String::as_str)
}

/// Prints one line on stderr after the running task's name (`vmtest:`).
macro_rules! say {
    ($($t:tt)*) => { eprintln!("{}: {}", $crate::util::task(), format!($($t)*)) };
}
pub(crate) use say;

/// The repository root: xtask's parent directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository")
        .to_path_buf()
}

/// The cache of kernels, apt's lists and the lint venv: `BPF_OVERHEAD_CACHE`,
/// else ~/.cache/bpf-overhead.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(c) = env::var_os(CACHE_ENV).filter(|c| !c.is_empty()) {
        return Ok(PathBuf::from(c));
    }
    let home =
        env::var_os("HOME").with_context(|| format!("neither {CACHE_ENV} nor HOME is set"))?;
    Ok(PathBuf::from(home).join(".cache/bpf-overhead"))
}

/// Exclusive lock on `path` (created), released when the file is dropped.
pub fn lock(path: &Path) -> Result<File> {
    if let Some(d) = path.parent() {
        create_dir_all(d)?;
    }
    let f = create_file(path)?;
    f.lock()
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(f)
}

/// Writes `data` to `path` whole or not at all (a temporary file beside it,
/// renamed over it), creating its directory: concurrent runs share the cache.
pub fn write_whole(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path.parent().context("a file to write has a directory")?;
    create_dir_all(dir)?;
    write_file(path, data)
}

/// Writes `data` to `path` whole (a temporary file renamed over it), as
/// safe_write says: under sudo as the user, never through another's link.
pub fn write_file(path: impl AsRef<Path>, data: impl AsRef<[u8]>) -> Result<()> {
    let path = path.as_ref();
    safe_write::write(path, data).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `fs::create_dir_all`, as safe_write says.
pub fn create_dir_all(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    safe_write::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(())
}

/// `File::create`, as safe_write says: a log, written as it comes.
pub fn create_file(path: impl AsRef<Path>) -> Result<File> {
    let path = path.as_ref();
    safe_write::create(path).with_context(|| format!("creating {}", path.display()))
}

/// FNV-1a: a stable content hash for cache keys.
pub fn fnv(h: &mut u64, data: &[u8]) {
    for &b in data {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// A program on PATH or in the system's directories (apt's tools are in sbin).
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// A child's exit status as a shell says it: its code, or 128 and the
/// signal that ended it.
pub fn exit_code(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Quotes a word for sh.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A command as one line, the program without its directory.
pub fn shown(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    std::iter::once(prog)
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// This very executable, to run a task of its own as a child: the kernel's
/// `/proc/self/exe`, which still runs when cargo has since replaced the
/// file at its path (a `cargo xtask` of a CI step relinks
/// target/debug/xtask under a running `xtask ci`, and the path then reads
/// "xtask (deleted)").
pub fn own_exe() -> PathBuf {
    let proc = PathBuf::from("/proc/self/exe");
    if proc.exists() {
        return proc;
    }
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"))
}

/// cargo, as cargo itself runs us (`CARGO`) or from PATH.
pub fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Whether we run as root (the effective user).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// Bad input (a kernel or series that names nothing, options that do not
/// go together), found by a task as it runs: exit 2, where any other
/// error is the environment's ([`exit_status::ENVIRONMENT`]).
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// A task's error's exit status: 2 when it is bad input, else the
/// environment's.
pub fn error_status(e: &anyhow::Error) -> i32 {
    let input = e.chain().any(|c| c.is::<BadInput>());
    i32::from(if input {
        exit_status::INPUT
    } else {
        exit_status::ENVIRONMENT
    })
}

/// An error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace('\n', " ")
}

/// Copies a child's lines to the terminal, each after `prefix`, and to
/// `log`; `stdout` keeps two children's lines whole (ci's kernels, the
/// duet's sides).
/// Runs `cmd` with its stdout and stderr [`relay`]ed, and says its exit
/// code ([`exit_code`]).
pub fn run_relayed(
    cmd: &mut std::process::Command,
    prefix: &str,
    log: &Mutex<File>,
    stdout: &Mutex<()>,
) -> std::io::Result<i32> {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (o, e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    std::thread::scope(|s| {
        s.spawn(|| relay(o, prefix, log, stdout));
        s.spawn(|| relay(e, prefix, log, stdout));
    });
    Ok(exit_code(child.wait()?))
}

pub fn relay(from: impl Read, prefix: &str, log: &Mutex<File>, stdout: &Mutex<()>) {
    for line in BufReader::new(from).split(b'\n').map_while(Result::ok) {
        let _ = log.lock().unwrap().write_all(&[&line[..], b"\n"].concat());
        let _g = stdout.lock().unwrap();
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(prefix.as_bytes());
        let _ = so.write_all(&line);
        let _ = so.write_all(b"\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_child_keeps_both_streams_and_its_exit_code() {
        let path = std::env::temp_dir().join(format!("relayed-{}.log", std::process::id()));
        let log = Mutex::new(File::create(&path).unwrap());
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        assert_eq!(
            run_relayed(&mut cmd, "[t] ", &log, &Mutex::new(())).unwrap(),
            3
        );
        let mut lines: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        assert_eq!(lines, ["err", "out"]);
        let _ = std::fs::remove_file(path);
        let mut gone = std::process::Command::new("/no/such/program");
        assert!(run_relayed(&mut gone, "", &log, &Mutex::new(())).is_err());
    }

    /// The child is this test binary, whatever became of its path.
    #[test]
    fn own_exe_runs_this_very_executable() {
        let out = Command::new(own_exe())
            .args(["--list", "own_exe_runs_this_very_executable"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            listed.contains("own_exe_runs_this_very_executable: test"),
            "{listed}"
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("/t/overhead-1a2b"), "/t/overhead-1a2b");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn fnv_is_stable() {
        let mut h = FNV_START;
        fnv(&mut h, b"a");
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
    }
}
