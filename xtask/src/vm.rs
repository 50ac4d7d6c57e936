//! Running the VM: the accelerator, the job directory, qemu's command line,
//! the console stream with its watchdogs, and the verdict.
//!
//! The room of the guest VM: this file runs qemu; its folder holds the
//! initramfs ([`initramfs`], [`cpio`], `init.sh`), the guest's job
//! ([`job`]), the output directory ([`out`]) and `vmtest.json`
//! ([`summary`]). It imports kernels, build and util, and no task: the
//! tasks and the command line import it.

pub mod accel;
pub mod cpio;
pub mod crash;
pub mod initramfs;
pub mod job;
pub mod out;
pub mod summary;

use std::env;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

use crate::kernels::arch::Arch;
use crate::util::say;
use crate::util::signal::{catch_signals, signalled};

pub use accel::{choose_accel, Accel, Clock};

/// What the guest init prints when it is about to run the command.
pub const MARKER: &str = "vmtest: guest up";

/// Where the guest mounts the output share (9p tag `out`), read-write.
pub const GUEST_OUT: &str = "/run/vmtest-out";

/// A VM task's exit status from its `run`: its own code, 128 + the signal
/// that stopped it, or with the error in one line: 2 for bad input, else
/// the environment's status.
pub fn task_main(run: impl FnOnce() -> Result<i32>) -> i32 {
    catch_signals();
    match run() {
        Ok(rc) => rc,
        Err(e) => {
            if let Some(sig) = signalled() {
                say!("interrupted (signal {sig})");
                return 128 + sig;
            }
            // One line, whatever the error chain holds.
            say!("{}", crate::util::one_line(&e));
            crate::util::error_status(&e)
        }
    }
}

/// The job directory: visible in the guest under the same path (the host
/// root is its root), and short enough for the kernel command line.
pub fn job_dir() -> Result<(tempfile::TempDir, PathBuf)> {
    let base = env::temp_dir();
    let base = if base.to_string_lossy().contains(char::is_whitespace) {
        PathBuf::from("/tmp")
    } else {
        base
    };
    let dir = tempfile::Builder::new()
        .prefix("vmtest.")
        .tempdir_in(&base)?;
    let path = dir.path().canonicalize()?;
    Ok((dir, path))
}

pub struct Vm<'a> {
    pub arch: Arch,
    pub accel: Accel,
    pub smp: u32,
    pub memory: &'a str,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub cmdline: String,
    pub rundir: &'a Path,
    /// The host directory shared read-write as 9p tag `out`.
    pub out: Option<&'a Path>,
    /// What the guest's clock counts (instructions: TCG only).
    pub clock: Clock,
    /// A TCG plugin and its arguments (`-plugin FILE,ARG=VALUE...`).
    pub plugin: Option<(&'a Path, Vec<(&'static str, PathBuf)>)>,
}

/// A value inside a qemu `-opt a=b,c=d` list: a comma is written twice.
fn qemu_value(p: &Path) -> String {
    p.display().to_string().replace(',', ",,")
}

/// The kernel command line: early serial output (the watchdog's sign of life),
/// any oops panics, a panic powers off, and where the job is. no_timer_check:
/// under TCG on a loaded host the IO-APIC timer check can fail and panic the
/// boot ("IO-APIC + timer doesn't work!", seen with Debian 6.1).
/// `vmtest.out=` tells the init to mount the output share there. arm64:
/// the PL011 console, early output through `earlycon` (the device tree's
/// stdout-path).
/// `foreign`: the host root's programs cannot run in the guest, its init's
/// busybox stands in (`vmtest.tools=busybox`). `lsm=`: Debian builds the
/// BPF LSM in, but 5.10's CONFIG_LSM leaves it out of the active LSMs,
/// where an lsm program attaches and never runs; the list is Debian's
/// with `bpf` (names a kernel lacks, as landlock before 5.13, are ignored).
const LSM: &str = "lsm=landlock,lockdown,yama,integrity,apparmor,bpf";

pub fn cmdline(arch: Arch, foreign: bool, rundir: &Path, out: bool, append: &str) -> String {
    let early = match arch {
        Arch::X86_64 => "earlyprintk=serial,ttyS0,115200",
        Arch::Arm64 => "earlycon",
    };
    let quirks = match arch {
        Arch::X86_64 => " no_timer_check",
        Arch::Arm64 => "",
    };
    let mut c = format!(
        "console={} {early} panic=-1 oops=panic{quirks} {LSM} vmtest.rundir={}",
        arch.console(),
        rundir.display()
    );
    if foreign {
        c.push_str(" vmtest.tools=busybox");
    }
    if out {
        c.push_str(" vmtest.out=");
        c.push_str(GUEST_OUT);
    }
    if !append.is_empty() {
        c.push(' ');
        c.push_str(append);
    }
    c
}

impl Vm<'_> {
    pub fn qemu_args(&self) -> Vec<String> {
        let mut a: Vec<String> = machine_args(self.arch, self.accel)
            .iter()
            .map(|s| s.to_string())
            .collect();
        if self.clock == Clock::Instructions {
            a.extend(ICOUNT.iter().map(|s| s.to_string()));
        }
        if let Some((file, args)) = &self.plugin {
            let mut p = format!("file={}", qemu_value(file));
            for (k, v) in args {
                p.push_str(&format!(",{k}={}", qemu_value(v)));
            }
            a.extend(["-plugin".into(), p]);
        }
        let rest = [
            "-smp".to_owned(),
            self.smp.to_string(),
            "-m".into(),
            self.memory.into(),
            "-nodefaults".into(),
            "-no-user-config".into(),
            "-display".into(),
            "none".into(),
            "-no-reboot".into(),
            "-net".into(),
            "none".into(),
            "-kernel".into(),
            self.kernel.display().to_string(),
            "-initrd".into(),
            self.initrd.display().to_string(),
            "-append".into(),
            self.cmdline.clone(),
            "-serial".into(),
            "stdio".into(),
            "-fsdev".into(),
            "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap".into(),
            "-device".into(),
            "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot".into(),
            "-device".into(),
            "virtio-serial-pci,id=vser".into(),
            "-chardev".into(),
            format!("file,id=status,path={}", qemu_value(&self.status_path())),
            "-device".into(),
            "virtserialport,bus=vser.0,chardev=status,name=vmtest.status".into(),
        ];
        a.extend(rest);
        if let Some(out) = self.out {
            // security_model=none: files are created as qemu's user and, when
            // that is root, given the guest's owner (root), as passthrough
            // would; as another user the chown fails and is ignored. No
            // xattrs or metadata files as with the mapped models.
            a.extend([
                "-fsdev".into(),
                format!("local,id=out,path={},security_model=none", qemu_value(out)),
                "-device".into(),
                "virtio-9p-pci,fsdev=out,mount_tag=out".into(),
            ]);
        }
        a
    }

    pub fn status_path(&self) -> PathBuf {
        self.rundir.join("status")
    }
}

/// Exact mode: the guest's clock advances 1 ns per guest instruction
/// (shift=0), idle time passes at once (sleep=off), and the emulation is
/// not slowed to keep up with the host's clock (align=off).
pub const ICOUNT: &[&str] = &["-icount", "shift=0,sleep=off,align=off"];

/// The first line of `qemu-system-ARCH --version`: an instruction count
/// depends on it (how QEMU translates and counts), so results record it.
pub fn qemu_version(arch: Arch) -> Result<String> {
    let out = Command::new(arch.qemu())
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", arch.qemu()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or_default().trim().to_owned();
    ensure!(
        out.status.success() && !line.is_empty(),
        "{} --version said nothing",
        arch.qemu()
    );
    Ok(line)
}

/// The guest CPU of a TCG machine (`-cpu`): part of what an exact count
/// depends on.
pub fn tcg_cpu(arch: Arch) -> &'static str {
    let args = machine_args(arch, Accel::Tcg);
    args.iter()
        .position(|a| *a == "-cpu")
        .and_then(|i| args.get(i + 1))
        .copied()
        .unwrap_or("")
}

/// The machine, the accelerator and the CPU.
fn machine_args(arch: Arch, accel: Accel) -> &'static [&'static str] {
    match (arch, accel) {
        (Arch::X86_64, Accel::Kvm) => &["-M", "q35", "-accel", "kvm", "-cpu", "host"],
        // Multi-threaded TCG oopses the guest when kprobes or trampolines
        // patch live kernel text: one host thread for all vCPUs.
        (Arch::X86_64, Accel::Tcg) => &["-M", "q35", "-accel", "tcg,thread=single", "-cpu", "max"],
        (Arch::Arm64, Accel::Kvm) => &["-M", "virt", "-accel", "kvm", "-cpu", "host"],
        // virt: PCI for the same virtio devices, a PL011 console.
        // pauth-impdef: QEMU's own pointer-authentication hash instead of
        // the architected QARMA5, which costs Debian's kernel (built with
        // pointer authentication) much time under TCG.
        (Arch::Arm64, Accel::Tcg) => &[
            "-M",
            "virt",
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max,pauth-impdef=on",
        ],
    }
}

/// The console stream: CRLF to LF, the log, the marker, and what to show live.
/// Before the marker only the init's `vmtest:` lines are shown (unless verbose):
/// the kernel's boot messages stay in the log and are shown on a failure.
pub struct Console {
    verbose: bool,
    held_cr: bool,
    line: Vec<u8>,
    pub first_output: Option<Instant>,
    pub up: Option<Instant>,
}

impl Console {
    pub fn new(verbose: bool) -> Console {
        Console {
            verbose,
            held_cr: false,
            line: Vec::new(),
            first_output: None,
            up: None,
        }
    }

    /// Feeds raw console bytes; returns (bytes for the log, bytes to show now).
    pub fn feed(&mut self, data: &[u8], now: Instant) -> (Vec<u8>, Vec<u8>) {
        if !data.is_empty() && self.first_output.is_none() {
            self.first_output = Some(now);
        }
        let mut log = Vec::with_capacity(data.len());
        for &b in data {
            if self.held_cr {
                self.held_cr = false;
                if b != b'\n' {
                    log.push(b'\r');
                }
            }
            if b == b'\r' {
                self.held_cr = true;
            } else {
                log.push(b);
            }
        }
        let mut show = Vec::new();
        for &b in &log {
            if self.up.is_some() {
                show.push(b);
                continue;
            }
            self.line.push(b);
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                if line.starts_with(MARKER.as_bytes()) {
                    self.up = Some(now);
                }
                if self.verbose || line.starts_with(b"vmtest:") {
                    show.extend_from_slice(&line);
                }
            }
        }
        (log, show)
    }
}

/// How qemu ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum End {
    Exited(i32),
    TimedOut,
    /// No console output within the alive timeout.
    NoLife,
    /// Output, but the init did not reach the command within the boot timeout.
    NoBoot,
    Signalled(i32),
}

/// One boot of the VM, qemu start to exit: how it ended, when it showed
/// life and reached the command, and its console log.
pub struct Boot {
    pub end: End,
    pub started: Instant,
    pub finished: Instant,
    pub first_output: Option<Instant>,
    pub up: Option<Instant>,
    pub log: Vec<u8>,
}

pub struct Timeouts {
    pub total: Duration,
    pub alive: Duration,
    pub boot: Duration,
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs qemu, streaming its console, until it exits or a watchdog fires.
pub fn run(vm: &Vm, verbose: bool, t: &Timeouts) -> Result<Boot> {
    let mut child = Command::new(vm.arch.qemu())
        .args(vm.qemu_args())
        // stdin: qemu would put a terminal into raw mode.
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "starting {} (apt-get install -y {})",
                vm.arch.qemu(),
                vm.arch.qemu_package()
            )
        })?;
    let started = Instant::now();
    let console = Arc::new(Mutex::new(Console::new(verbose)));
    let log = Arc::new(Mutex::new(Vec::<u8>::new()));
    let mut out = child.stdout.take().expect("piped");
    let reader = {
        let (console, log) = (console.clone(), log.clone());
        thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let stdout = std::io::stdout();
            loop {
                let n = match out.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let (l, show) = console.lock().unwrap().feed(&buf[..n], Instant::now());
                log.lock().unwrap().extend_from_slice(&l);
                let mut so = stdout.lock();
                let _ = so.write_all(&show);
                let _ = so.flush();
            }
        })
    };
    let end = loop {
        if let Some(status) = child.try_wait()? {
            break End::Exited(status.code().unwrap_or(128));
        }
        let elapsed = started.elapsed();
        let (first, up) = {
            let c = console.lock().unwrap();
            (c.first_output, c.up)
        };
        if let Some(sig) = signalled() {
            kill(&mut child);
            break End::Signalled(sig);
        }
        if elapsed >= t.total {
            kill(&mut child);
            break End::TimedOut;
        }
        if first.is_none() && elapsed >= t.alive {
            kill(&mut child);
            break End::NoLife;
        }
        if up.is_none() && elapsed >= t.boot {
            kill(&mut child);
            break End::NoBoot;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let finished = Instant::now();
    let _ = reader.join();
    let c = console.lock().unwrap();
    let log = std::mem::take(&mut *log.lock().unwrap());
    Ok(Boot {
        end,
        started,
        finished,
        first_output: c.first_output,
        up: c.up,
        log,
    })
}

/// What decides the exit status, besides the boot.
pub struct Rules {
    /// Default mode: a cargo `test result:` line must appear (not with --list).
    pub need_test_result: bool,
    pub timeouts_secs: (u64, u64, u64),
}

/// The exit status and the `vmtest:` lines that explain it.
pub fn verdict(o: &Boot, status: Option<&str>, rules: &Rules) -> (i32, Vec<String>) {
    // A VM that did not boot or finish: the environment's failure.
    const FAILED: i32 = crate::util::exit_status::ENVIRONMENT as i32;
    let text = String::from_utf8_lossy(&o.log);
    let panic = text
        .lines()
        .find(|l| l.contains("Kernel panic - not syncing"))
        .map(|l| l.split_once("] ").map_or(l, |(_, r)| r).trim().to_owned());
    let status = status
        .map(|s| s.chars().filter(char::is_ascii_digit).collect::<String>())
        .filter(|s| !s.is_empty())
        .and_then(|s| s.parse::<i32>().ok());
    let mut why = Vec::new();
    let (total, alive, boot) = rules.timeouts_secs;
    let rc = match o.end {
        End::Signalled(sig) => {
            why.push(format!("interrupted (signal {sig})"));
            128 + sig
        }
        End::TimedOut => {
            why.push(format!("timed out after {total}s"));
            i32::from(crate::util::exit_status::TIMED_OUT)
        }
        End::NoLife => {
            why.push(format!(
                "no sign of life: the guest printed nothing within {alive}s (the kernel did not start)"
            ));
            FAILED
        }
        _ if panic.is_some() => {
            why.push(format!("guest panicked: {}", panic.unwrap_or_default()));
            FAILED
        }
        End::NoBoot => {
            why.push(format!(
                "the guest did not reach the command within {boot}s"
            ));
            FAILED
        }
        End::Exited(code) if code != 0 => {
            why.push(format!("qemu failed with status {code}"));
            FAILED
        }
        End::Exited(_) => match status {
            None => {
                why.push("guest gave no exit status".into());
                if o.up.is_none() {
                    why.push("the guest never reached the command (see the console output)".into());
                }
                FAILED
            }
            Some(0)
                if rules.need_test_result
                    && !text.lines().any(|l| l.starts_with("test result: ")) =>
            {
                why.push("no cargo 'test result:' line in the guest output".into());
                FAILED
            }
            Some(rc) => rc,
        },
    };
    if text
        .lines()
        .any(|l| l.starts_with("vmtest: guest kernel warnings"))
    {
        why.push("note: the guest kernel logged a WARNING (see above)".into());
    }
    (rc, why)
}

/// The last `n` lines of the log, for a failure before the command ran.
pub fn tail(log: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub fn write_log(path: &Path, log: &[u8]) -> Result<()> {
    crate::util::write_file(path, log)
        .with_context(|| format!("writing the console log to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A boot that ended as `end` with `log`, up if `up`: at one instant.
    pub(super) fn boot(end: End, log: &str, up: bool) -> Boot {
        let t = Instant::now();
        Boot {
            end,
            started: t,
            finished: t,
            first_output: Some(t),
            up: up.then_some(t),
            log: log.as_bytes().to_vec(),
        }
    }

    const RULES: Rules = Rules {
        need_test_result: true,
        timeouts_secs: (1800, 30, 300),
    };
    const OK_LOG: &str = "vmtest: guest up 1.2s\ntest result: ok. 17 passed\n";

    #[test]
    fn verdicts() {
        let v = |end, log, up, status| verdict(&boot(end, log, up), status, &RULES);
        assert_eq!(v(End::Exited(0), OK_LOG, true, Some("0\n")), (0, vec![]));
        assert_eq!(v(End::Exited(0), OK_LOG, true, Some("101\n")).0, 101);
        let (rc, why) = v(End::Exited(0), "vmtest: guest up\n", true, Some("0"));
        assert_eq!(
            (rc, why[0].as_str()),
            (69, "no cargo 'test result:' line in the guest output")
        );
        let (rc, why) = v(End::Exited(0), "", false, None);
        assert_eq!(rc, 69);
        assert_eq!(why[0], "guest gave no exit status");
        assert!(why[1].contains("never reached the command"));
        let panic = "[    1.5] Kernel panic - not syncing: Fatal exception\n";
        assert_eq!(
            v(End::Exited(0), panic, true, None),
            (
                69,
                vec!["guest panicked: Kernel panic - not syncing: Fatal exception".into()]
            )
        );
        assert_eq!(v(End::TimedOut, panic, true, None).0, 124);
        let (rc, why) = v(End::NoLife, "", false, None);
        assert_eq!(rc, 69);
        assert!(why[0].starts_with("no sign of life: the guest printed nothing within 30s"));
        assert!(v(End::NoBoot, "[0.1] Linux version\n", false, None).1[0].contains("within 300s"));
        assert_eq!(
            v(End::Exited(1), "", false, None).1[0],
            "qemu failed with status 1"
        );
        assert_eq!(v(End::Signalled(2), OK_LOG, true, Some("0")).0, 130);
        let warned = format!("{OK_LOG}vmtest: guest kernel warnings:\n");
        assert_eq!(v(End::Exited(0), &warned, true, Some("0")).1.len(), 1);
        let cmd = Rules {
            need_test_result: false,
            ..RULES
        };
        assert_eq!(
            verdict(&boot(End::Exited(0), "", true), Some("0"), &cmd).0,
            0
        );
    }

    #[test]
    fn console_filters_boot_messages_until_the_marker() {
        let t = Instant::now();
        let mut c = Console::new(false);
        let (log, show) = c.feed(
            b"[    0.0] Linux version 6.1\r\nvmtest: init: insmod x failed\r",
            t,
        );
        assert_eq!(
            log,
            b"[    0.0] Linux version 6.1\nvmtest: init: insmod x failed"
        );
        assert!(show.is_empty());
        assert!(c.first_output.is_some() && c.up.is_none());
        // A CRLF split across reads.
        let (log, show) = c.feed(
            b"\nvmtest: guest up 2.1s (uptime)\r\n[  3.0] boot\r\nrunning",
            t,
        );
        assert_eq!(
            log,
            b"\nvmtest: guest up 2.1s (uptime)\n[  3.0] boot\nrunning"
        );
        assert_eq!(
            show,
            b"vmtest: init: insmod x failed\nvmtest: guest up 2.1s (uptime)\n[  3.0] boot\nrunning"
        );
        assert!(c.up.is_some());
        let mut v = Console::new(true);
        assert_eq!(v.feed(b"[0] boot\n", t).1, b"[0] boot\n");
        let (log, _) = Console::new(false).feed(b"a\rb\r\n", t);
        assert_eq!(log, b"a\rb\n");
    }

    #[test]
    fn qemu_command_line() {
        let vm = Vm {
            arch: Arch::X86_64,
            accel: Accel::Tcg,
            smp: 2,
            memory: "2G",
            kernel: Path::new("/k/vmlinux"),
            initrd: Path::new("/k/initramfs.cpio"),
            cmdline: cmdline(
                Arch::X86_64,
                false,
                Path::new("/tmp/vmtest.x"),
                false,
                "nokaslr",
            ),
            rundir: Path::new("/tmp/vmtest.x"),
            out: None,
            clock: Clock::Time,
            plugin: None,
        };
        let a = vm.qemu_args().join(" ");
        assert!(
            a.starts_with("-M q35 -accel tcg,thread=single -cpu max -smp 2 -m 2G"),
            "{a}"
        );
        assert_eq!(tcg_cpu(Arch::X86_64), "max");
        assert_eq!(tcg_cpu(Arch::Arm64), "max,pauth-impdef=on");
        assert!(a.contains("-kernel /k/vmlinux -initrd /k/initramfs.cpio"));
        assert!(a.contains("file,id=status,path=/tmp/vmtest.x/status"));
        assert_eq!(
            vm.cmdline,
            "console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 oops=panic no_timer_check \
             lsm=landlock,lockdown,yama,integrity,apparmor,bpf vmtest.rundir=/tmp/vmtest.x nokaslr"
        );
        assert!(!a.contains("mount_tag=out"));
        let vm = Vm {
            out: Some(Path::new("/r/target/vmtest/6.1,x/.vmtest-run.1")),
            cmdline: cmdline(Arch::X86_64, false, Path::new("/tmp/vmtest.x"), true, ""),
            ..vm
        };
        let a = vm.qemu_args().join(" ");
        assert!(
            a.ends_with(
                "-fsdev local,id=out,path=/r/target/vmtest/6.1,,x/.vmtest-run.1,security_model=none \
                 -device virtio-9p-pci,fsdev=out,mount_tag=out"
            ),
            "{a}"
        );
        assert!(
            a.contains("path=/,security_model=none,readonly=on"),
            "the root stays read-only"
        );
        assert!(vm
            .cmdline
            .ends_with(" vmtest.rundir=/tmp/vmtest.x vmtest.out=/run/vmtest-out"));
    }

    #[test]
    fn arm64_command_line() {
        let vm = Vm {
            arch: Arch::Arm64,
            accel: Accel::Tcg,
            smp: 2,
            memory: "2G",
            kernel: Path::new("/k/vmlinuz"),
            initrd: Path::new("/k/initramfs.cpio"),
            cmdline: cmdline(Arch::Arm64, true, Path::new("/tmp/vmtest.x"), true, ""),
            rundir: Path::new("/tmp/vmtest.x"),
            out: Some(Path::new("/o")),
            clock: Clock::Time,
            plugin: None,
        };
        let a = vm.qemu_args().join(" ");
        assert!(
            a.starts_with("-M virt -accel tcg,thread=single -cpu max,pauth-impdef=on -smp 2 -m 2G"),
            "{a}"
        );
        // The same virtio devices, over the virt machine's PCI.
        for want in [
            "-kernel /k/vmlinuz -initrd /k/initramfs.cpio",
            "-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
            "-device virtio-serial-pci,id=vser",
            "-device virtio-9p-pci,fsdev=out,mount_tag=out",
            "-serial stdio",
        ] {
            assert!(a.contains(want), "{want} in {a}");
        }
        assert_eq!(
            vm.cmdline,
            "console=ttyAMA0 earlycon panic=-1 oops=panic \
             lsm=landlock,lockdown,yama,integrity,apparmor,bpf vmtest.rundir=/tmp/vmtest.x \
             vmtest.tools=busybox vmtest.out=/run/vmtest-out"
        );
        assert_eq!(
            machine_args(Arch::Arm64, Accel::Kvm),
            ["-M", "virt", "-accel", "kvm", "-cpu", "host"]
        );
    }
}
