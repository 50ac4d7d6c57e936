//! The boots of one vmtest run: a guest kernel that crashes during a
//! mechanism is a result, not the end of the run. The crash is named
//! (vm/crash.rs), the suite's KTAP gets its `not ok`, and the VM boots
//! again for what was not yet run; the run exits 1.

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::util::say;
use crate::vm;
use crate::vm::crash::{self, Crash};
use crate::vm::job::Resume;

/// At most this many boots: a kernel where every mechanism crashes still
/// ends its run.
pub const MAX_BOOTS: u32 = 20;

/// What the boots came to.
pub struct Boots {
    /// The last boot, and the guest's exit status in it.
    pub last: vm::Boot,
    pub status: Option<String>,
    /// The crashes, and the steps done before the last boot.
    pub resume: Resume,
    /// qemu start to the guest's command, in the first boot.
    pub first_up: Option<Duration>,
    /// Every boot's time, qemu start to exit.
    pub vm_time: Duration,
    pub count: u32,
}

/// How to boot: the job's script for what is left, the boot itself, and
/// where the guest's files and the console log go.
pub struct Booting<'a, S, B> {
    /// The script of a boot that leaves out what the [`Resume`] says.
    pub script: S,
    /// One boot: how it ended, and the guest's exit status.
    pub boot: B,
    /// The job directory, where job.sh goes.
    pub rundir: &'a Path,
    /// The output share's staging directory.
    pub staging: &'a Path,
    /// `--log FILE`.
    pub log: Option<&'a str>,
    /// Default mode (the suite and the command): only it boots again.
    pub tests: bool,
}

/// Boots the VM, and again after each crash during a mechanism, each time
/// with the script of what is left.
pub fn run<S, B>(mut b: Booting<'_, S, B>) -> Result<Boots>
where
    S: Fn(&Resume) -> String,
    B: FnMut() -> Result<(vm::Boot, Option<String>)>,
{
    let mut resume = Resume::default();
    let mut log = Vec::new();
    let (mut vm_time, mut first_up, mut n) = (Duration::ZERO, None, 1);
    let staging = b.staging;
    loop {
        crate::util::write_file(b.rundir.join("job.sh"), (b.script)(&resume))?;
        let (o, status) = (b.boot)()?;
        vm_time += o.finished - o.started;
        if n == 1 {
            first_up = o.up.map(|u| u - o.started);
        } else {
            log.extend_from_slice(format!("vmtest: boot {n}\n").as_bytes());
        }
        log.extend_from_slice(&o.log);
        let progress = fs::read_to_string(staging.join(crash::PROGRESS_FILE)).unwrap_or_default();
        let again = crash::find(&o, status.as_deref(), &progress, n)
            .is_some_and(|c| crashed(b.tests, c, &mut resume, &progress, staging, n));
        if !again {
            if let Some(f) = b.log {
                vm::write_log(Path::new(f), &log)?;
            }
            return Ok(Boots {
                last: o,
                status,
                resume,
                first_up,
                vm_time,
                count: n,
            });
        }
        n += 1;
    }
}

/// Says the crash, records it (in `resume`, and the suite's as a KTAP
/// `not ok`); whether to boot again.
fn crashed(
    tests: bool,
    c: Crash,
    resume: &mut Resume,
    progress: &str,
    staging: &Path,
    n: u32,
) -> bool {
    say!(
        "{} crashed the kernel (boot {n}, in {}):",
        c.mechanism,
        c.step
    );
    for l in &c.oops {
        eprintln!("    {l}");
    }
    let again = resume
        .crashed
        .iter()
        .any(|p| p.step == c.step && p.mechanism == c.mechanism);
    if again {
        say!(
            "{} crashed the kernel again: not booting again",
            c.mechanism
        );
        return false;
    }
    if c.step == crash::SUITE {
        let ktap = staging.join("suite.ktap");
        if let Err(e) = crash::append_ktap(&ktap, &c) {
            say!("{}", crate::util::one_line(&e));
        }
    }
    resume.crashed.push(c);
    resume.done = crash::done(progress);
    if !tests {
        say!("--cmd and --exec run what they are given: not booting again");
        return false;
    }
    if n >= MAX_BOOTS {
        say!("{n} boots: not booting again");
        return false;
    }
    say!(
        "booting again for the mechanisms not yet run (boot {})",
        n + 1
    );
    true
}
