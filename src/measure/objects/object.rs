//! A user's BPF object (`--object FILE[:PROG]`): each of its programs a
//! mechanism named `<file stem>/<program>`, measured as the built-ins are.
//! Opened with libbpf (its maps and global data are libbpf's), `--set
//! NAME=VALUE` written into its `.rodata` before load, attached by its
//! section as libbpf's auto-attach does (its kind is the built-in one the
//! section names), and fired by
//! the syscall trigger its section names ([`Syscall`]) or `--trigger`
//! names. Its hits are the program's `run_cnt` from the kernel's BPF
//! stats, on in every run of it: a program its trigger never reached
//! fails. The types the kernel runs itself (XDP, tc, socket filters, flow
//! dissectors, syscall programs) are run by BPF_PROG_TEST_RUN instead
//! (test_run.rs), which counts their runs.
//!
//! The programs become catalogue entries at run time: [`register`] adds
//! them, with a base per trigger, to what [`Mechanism::all`] lists.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use libbpf_rs::btf::types::{DataSec, Var};
use libbpf_rs::btf::Btf;
use libbpf_rs::{AsRawLibbpf, Link, Object, ObjectBuilder, OpenObject};

use super::section::hook;
pub use super::section::list_triggers;
use crate::measure::error::{Error, Result};
use crate::measure::mechanism::catalogue::{self, Entry, Kind, Mechanism};
pub use crate::measure::mechanism::program::ObjectProgram;
use crate::measure::mechanism::program::Program;
use crate::measure::mechanism::syscall::Syscall;
use crate::measure::mechanism::test_run::{first_packet, PACKET};
use crate::measure::mechanism::trigger::Trigger;

/// `FILE[:PROG]`, as `--object` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub path: PathBuf,
    pub program: Option<String>,
}

impl Request {
    /// `FILE:PROG` when what follows the last `:` names no directory,
    /// else all of it is the file.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        // A file whose name has a `:` in it is that file.
        if Path::new(s).is_file() {
            return Ok(Self {
                path: s.into(),
                program: None,
            });
        }
        let (path, program) = match s.rsplit_once(':') {
            Some((path, prog)) if !prog.contains('/') && !path.is_empty() => {
                (path, Some(prog.to_string()))
            }
            _ => (s, None),
        };
        if path.is_empty() || program.as_deref() == Some("") {
            return Err(format!("{s:?}: expected FILE or FILE:PROGRAM"));
        }
        Ok(Self {
            path: path.into(),
            program,
        })
    }
}

/// What the command line sets for every object.
#[derive(Clone, Debug)]
pub struct ObjectFlags {
    /// `--set NAME=VALUE`: `const volatile` globals in `.rodata`.
    pub sets: Vec<(String, String)>,
    /// `--trigger NAME`, for the programs whose section names no event.
    pub trigger: Option<Syscall>,
    /// The packet test runs run on (`--packet FILE`'s, or [`PACKET`]).
    pub packet: &'static [u8],
}

impl Default for ObjectFlags {
    fn default() -> Self {
        Self {
            sets: Vec::new(),
            trigger: None,
            packet: &PACKET,
        }
    }
}

/// `--packet FILE`: its first packet, for every test run of the process.
pub fn read_packet(path: &Path) -> std::result::Result<&'static [u8], String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("--packet {}: cannot read it: {e}", path.display()))?;
    let packet =
        first_packet(&bytes).map_err(|why| format!("--packet {}: {why}", path.display()))?;
    let _ = PACKET_FILE.set(path.to_path_buf());
    Ok(Box::leak(packet.into_boxed_slice()))
}

/// The file of the process's `--packet`, for the result to name.
static PACKET_FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// `--packet`'s file, if one was read.
pub fn packet_file() -> Option<&'static Path> {
    PACKET_FILE.get().map(PathBuf::as_path)
}

/// `--set`'s parser.
pub fn parse_set(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("{s:?}: expected NAME=VALUE")),
    }
}

/// A program, or why it cannot be measured (bad input).
pub(crate) type Found = std::result::Result<(ObjectProgram, Kind, Trigger), String>;

/// Opens `path` and resolves each program (all, or `only`): its section's
/// hook and trigger. The outer error is the file's (not an ELF, no
/// programs, an unknown `only`, a `--set` value that does not fit).
/// `flag` is what named the file (`--object`, `--against object=`).
pub(crate) fn inspect(
    flag: &str,
    path: &Path,
    only: Option<&str>,
    settings: &ObjectFlags,
) -> std::result::Result<(Vec<Found>, Vec<String>), String> {
    let shown = format!("{flag}{}", path.display());
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: cannot read it: {e}"))?;
    check_elf(&shown, &bytes)?;
    let open = open_object(&shown, path, &bytes)?;
    let rodata = rodata_vars(&open);
    let pinned = pinned_maps(&open);
    if !pinned.is_empty() {
        log::warn!(
            "{shown}: {} pinned by name (LIBBPF_PIN_BY_NAME): measured with maps of \
             the run's own, neither pinned nor taken from a BPF filesystem",
            names_of_maps(&pinned)
        );
    }
    let names: Vec<String> = open.progs().map(|p| lossy(p.name())).collect();
    if names.is_empty() {
        return Err(format!(
            "{shown}: no BPF programs in it (no SEC(\"...\") function)"
        ));
    }
    if let Some(only) = only.filter(|o| !names.iter().any(|n| n == o)) {
        return Err(format!(
            "{shown}:{only}: no program {only} in it; it has {}",
            names.join(", ")
        ));
    }
    let writes = rodata_writes(&settings.sets, &rodata)?;
    let mut found = Vec::new();
    for prog in open.progs() {
        let program = lossy(prog.name());
        if only.is_some_and(|o| o != program) {
            continue;
        }
        let section = lossy(prog.section()).trim_start_matches('?').to_string();
        found.push(
            hook(&section, settings.trigger, settings.packet)
                .map(|(kind, trigger)| {
                    let p = ObjectProgram {
                        path: path.to_path_buf(),
                        bytes: bytes.clone(),
                        program: program.clone(),
                        section: section.clone(),
                        rodata: writes.clone(),
                    };
                    (p, kind, trigger)
                })
                .map_err(|why| format!("{shown}: program {program} (SEC(\"{section}\")): {why}")),
        );
    }
    Ok((found, rodata.into_iter().map(|v| v.0).collect()))
}

/// That `bytes` (of the file `shown`) are a BPF object of this kernel's
/// byte order, or what they are instead.
fn check_elf(shown: &str, bytes: &[u8]) -> std::result::Result<(), String> {
    // ELF magic, and e_machine EM_BPF (247) at offset 18.
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Err(format!(
            "{shown}: not an ELF file; give a BPF object built by clang -target bpf"
        ));
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != 247 && u16::from_be_bytes([bytes[18], bytes[19]]) != 247 {
        return Err(format!(
            "{shown}: an ELF file, but not a BPF object (e_machine {machine}); \
             give one built by clang -target bpf"
        ));
    }
    // EI_DATA: 1 little-endian, 2 big-endian. The kernel runs only its own.
    let little = bytes[5] == 1;
    if little != cfg!(target_endian = "little") {
        let (it, here, target) = if little {
            ("little", "big", "bpfeb")
        } else {
            ("big", "little", "bpfel")
        };
        return Err(format!(
            "{shown}: a {it}-endian BPF object, and this kernel runs {here}-endian ones only; \
             build it with clang -target {target} (or -target bpf on this machine)"
        ));
    }
    Ok(())
}

/// The object in `bytes` opened by libbpf, or libbpf's reason why not.
fn open_object(shown: &str, path: &Path, bytes: &[u8]) -> std::result::Result<OpenObject, String> {
    crate::measure::kernel::libbpf_log::capture_libbpf_log();
    crate::measure::kernel::libbpf_log::clear_libbpf_log();
    builder(path)
        .and_then(|mut b| b.open_memory(bytes))
        .map_err(|e| {
            let why = crate::measure::kernel::libbpf_log::libbpf_reason()
                .unwrap_or_else(|| format!("{e:#}"));
            format!("{shown}: libbpf cannot open it (truncated or not built for BPF?): {why}")
        })
}

/// `--set`'s values as bytes to write at their globals' offsets in
/// `.rodata`; a name the object has no global of is not written.
fn rodata_writes(
    sets: &[(String, String)],
    rodata: &[(String, (usize, usize))],
) -> std::result::Result<Vec<(usize, Vec<u8>)>, String> {
    let mut writes = Vec::new();
    for (name, value) in sets {
        if let Some(&(offset, size)) = rodata.iter().find(|v| &v.0 == name).map(|v| &v.1) {
            writes.push((offset, encode(name, value, size)?));
        }
    }
    Ok(writes)
}

/// libbpf's builder, the object named by its file (libbpf names one
/// opened from memory by its address, which its messages then quote).
fn builder(path: &Path) -> libbpf_rs::Result<ObjectBuilder> {
    let mut builder = ObjectBuilder::default();
    builder.name(stem(path))?;
    Ok(builder)
}

/// A name from the object file, as it can be shown in one line: bytes
/// that are not UTF-8 as U+FFFD, control characters escaped (a damaged
/// file's section name can hold a newline).
fn lossy(s: &OsStr) -> String {
    let mut shown = String::new();
    for c in s.to_string_lossy().chars() {
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The maps libbpf would pin at load (or reuse from a BPF filesystem
/// where one of that name is pinned): those with a pin path.
fn pinned_maps(open: &OpenObject) -> Vec<String> {
    open.maps()
        .filter(|m| {
            // SAFETY: the map is the open object's, valid while `open` lives.
            !unsafe { libbpf_rs::libbpf_sys::bpf_map__pin_path(m.as_libbpf_object().as_ptr()) }
                .is_null()
        })
        .map(|m| lossy(m.name()))
        .collect()
}

/// `map a` or `maps a, b`.
fn names_of_maps(names: &[String]) -> String {
    match names {
        [one] => format!("map {one} is"),
        _ => format!("maps {} are", names.join(", ")),
    }
}

/// The `.rodata` globals: name, offset and size, from the object's BTF.
fn rodata_vars(open: &OpenObject) -> Vec<(String, (usize, usize))> {
    // SAFETY: the pointer is the open object's, valid while `open` lives.
    let obj = unsafe { open.as_libbpf_object().as_ref() };
    let Ok(Some(btf)) = Btf::from_bpf_object(obj) else {
        return Vec::new();
    };
    let Some(sec) = btf.type_by_name::<DataSec<'_>>(".rodata") else {
        return Vec::new();
    };
    sec.iter()
        .filter_map(|v| {
            let var = btf.type_by_id::<Var<'_>>(v.ty)?;
            Some((lossy(var.name()?), (v.offset as usize, v.size)))
        })
        .collect()
}

/// `value` as `size` native-endian bytes: a whole number that fits.
fn encode(name: &str, value: &str, size: usize) -> std::result::Result<Vec<u8>, String> {
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16),
        None => value.parse::<i128>(),
    };
    let bits = (size * 8) as u32;
    let fits = |v: i128| size <= 8 && v >= -(1i128 << (bits - 1)) && v < (1i128 << bits);
    match parsed {
        Ok(v) if fits(v) => Ok(v.to_ne_bytes()[..size].to_vec()),
        _ => Err(format!(
            "--set {name}={value}: {name} is a {size}-byte const volatile; give a whole number that fits"
        )),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// `path`'s name without its extension (`.o`, `.elf`...) and `.bpf`.
fn stem(path: &Path) -> String {
    let name = path
        .file_stem()
        .map(lossy)
        .unwrap_or_else(|| path.display().to_string());
    name.strip_suffix(".bpf").unwrap_or(&name).to_string()
}

pub(crate) fn entry(
    name: String,
    p: ObjectProgram,
    kind: Kind,
    trigger: Trigger,
) -> &'static Entry {
    let p: &'static ObjectProgram = Box::leak(Box::new(p));
    Box::leak(Box::new(Entry {
        name: leak(name),
        trigger,
        kind,
        program: Some(Program::Object(p)),
        hook: leak(p.section.clone()),
        needs: leak(format!(
            "{}, and what {} needs",
            kind.spec().needs,
            p.path.display()
        )),
    }))
}

/// Opens every `--object`, checks `--set` and `--trigger` against them,
/// and adds their programs to the catalogue, each trigger's base first.
/// Returns the programs' mechanisms. Bad input: one line saying what to
/// do. Once a process: its bases are `base-<trigger>`.
pub fn register(
    requests: &[Request],
    settings: &ObjectFlags,
) -> std::result::Result<Vec<Mechanism>, String> {
    let mut programs: Vec<(String, ObjectProgram, Kind, Trigger)> = Vec::new();
    let mut globals = Vec::new();
    for r in requests {
        let (found, vars) = inspect("--object ", &r.path, r.program.as_deref(), settings)?;
        globals.extend(vars);
        for f in found {
            let (p, kind, trigger) = f?;
            let name = format!("{}/{}", stem(&r.path), p.program);
            if programs.iter().any(|(n, ..)| *n == name) || Mechanism::by_name(&name).is_some() {
                return Err(format!(
                    "--object {}: {name} is named twice; give each object once, or \
                     objects of different file names",
                    r.path.display()
                ));
            }
            programs.push((name, p, kind, trigger));
        }
    }
    check_sets(settings, &globals, requests)?;
    let mut registry: Vec<&'static Entry> = Vec::new();
    let mut triggers: Vec<Trigger> = Vec::new();
    for (_, _, _, t) in &programs {
        if !triggers.contains(t) {
            triggers.push(*t);
        }
    }
    let mut mechanisms = Vec::new();
    for t in triggers {
        let base = match t {
            Trigger::Syscall(s) => s.name(),
            Trigger::TestRun(r) => r.name(),
            Trigger::TaskRename | Trigger::Call(_) | Trigger::Loop(_) => continue,
        };
        registry.push(Box::leak(Box::new(Entry {
            name: leak(format!("base-{base}")),
            trigger: t,
            kind: Kind::Base,
            program: None,
            hook: "nothing attached",
            needs: "nothing",
        })));
        let (now, rest): (Vec<_>, Vec<_>) =
            programs.into_iter().partition(|(_, _, _, pt)| *pt == t);
        programs = rest;
        for (name, p, kind, _) in now {
            let e = entry(name, p, kind, t);
            registry.push(e);
            mechanisms.push(Mechanism::from_entry(e));
        }
    }
    catalogue::extend(registry);
    Ok(mechanisms)
}

/// Whether `m`, an object's program, runs on `--packet`'s packet.
pub fn uses_packet(m: Mechanism) -> bool {
    m.object().is_some() && matches!(m.trigger(), Trigger::TestRun(t) if t.prog_type.on_packet())
}

/// Whether `m`, an object's program, is fired by `--trigger`'s syscall:
/// its section names no event of its own.
pub fn uses_trigger_flag(m: Mechanism) -> bool {
    m.object().is_some_and(|p| {
        matches!(m.trigger(), Trigger::Syscall(_)) && hook(&p.section, None, &[]).is_err()
    })
}

/// Every `--set` names a global of some object; `--trigger` is for
/// programs that need it.
fn check_sets(
    settings: &ObjectFlags,
    globals: &[String],
    requests: &[Request],
) -> std::result::Result<(), String> {
    for (name, _) in &settings.sets {
        if !globals.contains(name) {
            let files: Vec<String> = requests
                .iter()
                .map(|r| r.path.display().to_string())
                .collect();
            let has = if globals.is_empty() {
                "none".to_string()
            } else {
                globals.join(", ")
            };
            return Err(format!(
                "--set {name}: no const volatile {name} in the .rodata of {} (it has: {has})",
                files.join(", ")
            ));
        }
    }
    Ok(())
}

/// Loads `p` alone from its object, with `--set`'s values in `.rodata`.
/// Every map is the run's own: a map the object pins by name is neither
/// pinned nor reused from a BPF filesystem, so that nothing of the host's
/// (a live agent's counters and settings) is read or written, nothing is
/// left behind, and no BPF filesystem is needed.
pub(crate) fn load(p: &ObjectProgram) -> libbpf_rs::Result<Object> {
    let mut open = builder(&p.path)?.open_memory(&p.bytes)?;
    for map in open.maps_mut() {
        // SAFETY: the map is the open object's; a null path unpins it
        // (libbpf frees the old one).
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_map__set_pin_path(
                map.as_libbpf_object().as_ptr(),
                std::ptr::null(),
            )
        };
        if ret != 0 {
            return Err(std::io::Error::from_raw_os_error(-ret).into());
        }
    }
    for mut prog in open.progs_mut() {
        let wanted = lossy(prog.name()) == p.program;
        prog.set_autoload(wanted);
    }
    if !p.rodata.is_empty() {
        let mut map = open
            .maps_mut()
            .find(|m| m.name().to_string_lossy().ends_with(".rodata"))
            .ok_or_else(|| {
                libbpf_rs::Error::from(std::io::Error::other("the object has no .rodata map"))
            })?;
        let data = map
            .initial_value_mut()
            .ok_or_else(|| libbpf_rs::Error::from(std::io::Error::other(".rodata has no data")))?;
        for (offset, bytes) in &p.rodata {
            data[*offset..*offset + bytes.len()].copy_from_slice(bytes);
        }
    }
    open.load()
}

/// Attaches `p`, loaded in `obj`, by its section (libbpf's auto-attach).
pub(crate) fn attach(obj: &Object, p: &ObjectProgram) -> libbpf_rs::Result<Link> {
    obj.progs_mut()
        .find(|prog| lossy(prog.name()) == p.program)
        .ok_or_else(|| {
            libbpf_rs::Error::from(std::io::Error::other(
                "the program is not in the loaded object",
            ))
        })?
        .attach()
}

/// `p`'s program fd in `obj`.
pub(crate) fn program_fd(obj: &Object, p: &ObjectProgram) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    let prog = obj
        .progs()
        .find(|prog| lossy(prog.name()) == p.program)
        .ok_or_else(|| Error::failed("the program is not in the loaded object"))?;
    prog.as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::failed(format!("dup of a program fd failed: {e}")))
}

/// A program is reached by its trigger at least once an event: fewer of
/// its runs (`run_cnt`, counted over the whole system: other processes'
/// events on the hook count too) than `events` fails, naming the hook
/// and the trigger.
pub(crate) fn check_reached(m: Mechanism, runs: Option<u64>, events: u64) -> Result<u64> {
    let Some(runs) = runs else {
        return Err(Error::failed(
            "no run count: the kernel's BPF stats did not count the program's runs",
        )
        .of(m));
    };
    if runs >= events {
        return Ok(runs);
    }
    let what = if runs == 0 {
        "never reached it".to_string()
    } else {
        format!("reached it {runs} times in {events} events")
    };
    Err(Error::failed(format!(
        "{}: the trigger ({}) {what}; attach it where the trigger goes, or pick another \
         with --trigger (--list-triggers)",
        m.hook(),
        m.trigger()
    ))
    .of(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged file's names reach one line: a newline and other control
    /// characters escaped, bytes that are not UTF-8 replaced.
    #[test]
    fn names_from_the_file_stay_on_one_line() {
        use std::os::unix::ffi::OsStrExt;
        let name = OsStr::from_bytes(b"sys_\nenter\x1b[1m\xff");
        assert_eq!(lossy(name), "sys_\\nenter\\u{1b}[1m\u{fffd}");
    }

    #[test]
    fn requests_split_at_the_program() {
        assert_eq!(
            Request::parse("a/b.bpf.o:prog").unwrap(),
            Request {
                path: "a/b.bpf.o".into(),
                program: Some("prog".into())
            }
        );
        assert_eq!(Request::parse("x:y/z.o").unwrap().program, None);
        assert!(Request::parse("x.o:").is_err());
    }

    #[test]
    fn set_values_fit_their_global() {
        assert_eq!(encode("n", "7", 4), Ok(7u32.to_ne_bytes().to_vec()));
        assert_eq!(encode("n", "0xff", 1), Ok(vec![0xff]));
        assert!(encode("n", "256", 1).is_err());
        assert!(encode("n", "seven", 4).is_err());
    }

    #[test]
    fn stems_drop_the_object_suffixes() {
        assert_eq!(stem(Path::new("/x/agent.bpf.o")), "agent");
        assert_eq!(stem(Path::new("agent.o")), "agent");
        assert_eq!(stem(Path::new("x.elf")), "x");
        assert_eq!(stem(Path::new("x.bpf.elf")), "x");
    }
}
