//! Tracing programs on many functions at once (7.3's
//! `BPF_TRACE_FENTRY_MULTI`, `BPF_TRACE_FEXIT_MULTI`,
//! `BPF_TRACE_FSESSION_MULTI`: one `BPF_LINK_TYPE_TRACING_MULTI` link on
//! the functions' BTF ids). No released libbpf has them, so neither has
//! libbpf-sys: the link is the kernel's `BPF_LINK_CREATE` by the system
//! call, its attach type's value read from the kernel's BTF, and its
//! functions chosen by the rules of 7.3's libbpf (`btf_type_is_traceable_func`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::btf::types::{Func, FuncProto, Struct, Union};
use libbpf_rs::btf::{Btf, BtfKind, BtfType, HasSize};

use crate::measure::error::{Error, Result};

/// `bpf_attr.link_create` as far as the tracing_multi member (7.3's uapi
/// bpf.h): the kernel zero-checks the rest of the union.
#[repr(C)]
struct LinkCreate {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    ids: u64,
    cookies: u64,
    cnt: u32,
    _pad: u32,
}

const BPF_LINK_CREATE: libc::c_long = 28;
/// As 7.3's libbpf caps a function's arguments (MAX_BPF_FUNC_ARGS).
const MAX_ARGS: usize = 12;

/// A tracing_multi link of `prog` (loaded with `attach_type`) on the
/// functions `ids`; closing the fd detaches it.
pub fn link(prog: BorrowedFd<'_>, attach_type: u32, ids: &[u32]) -> io::Result<OwnedFd> {
    let attr = LinkCreate {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: 0,
        attach_type,
        flags: 0,
        ids: ids.as_ptr() as u64,
        cookies: 0,
        cnt: ids.len() as u32,
        _pad: 0,
    };
    // SAFETY: attr is a valid bpf_attr prefix of its own size; ids outlives
    // the call, which only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_LINK_CREATE,
            &attr as *const LinkCreate,
            std::mem::size_of::<LinkCreate>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The value of `name` in the kernel's `enum bpf_attach_type`.
pub fn attach_type(name: &str) -> Result<u32> {
    let btf = vmlinux()?;
    let types = btf
        .type_by_name::<libbpf_rs::btf::types::Enum<'_>>("bpf_attach_type")
        .ok_or_else(|| Error::unsupported("no enum bpf_attach_type in the kernel's BTF"))?;
    let value = types
        .iter()
        .find(|m| m.name.is_some_and(|n| n == name))
        .map(|m| m.value as u32);
    value.ok_or_else(|| Error::unsupported(format!("its enum bpf_attach_type has no {name}")))
}

fn vmlinux() -> Result<Btf<'static>> {
    Btf::from_vmlinux()
        .map_err(|e| Error::unsupported(format!("cannot read the kernel's BTF: {e}")))
}

/// Functions the kernel refuses an exit program on (7.3's verifier's
/// `noreturn_deny`): a link with one of them fails whole, with EINVAL.
const NORETURN: &[&str] = &[
    "__ia32_sys_exit",
    "__ia32_sys_exit_group",
    "__kunit_abort",
    "kunit_try_catch_throw",
    "__module_put_and_kthread_exit",
    "__x64_sys_exit",
    "__x64_sys_exit_group",
    "do_exit",
    "do_group_exit",
    "kthread_complete_and_exit",
    "make_task_dead",
];

/// The BTF ids of `names` that a tracing program may attach to, in their
/// order; those the BTF lacks, or whose prototype a trampoline cannot
/// take, are left out, and with `exits` the functions that never return.
pub fn btf_ids(names: &[String], exits: bool) -> Result<Vec<u32>> {
    let btf = vmlinux()?;
    Ok(names
        .iter()
        .filter(|name| !(exits && NORETURN.contains(&name.as_str())))
        .filter_map(|name| {
            let func = btf.type_by_name::<Func<'_>>(name)?;
            traceable(&btf, &func).then(|| u32::from(func.type_id()))
        })
        .collect())
}

/// `names` less those /proc/kallsyms has more than once: the kernel finds a
/// BTF id's address by its name (`kallsyms_lookup_name`), the first of
/// them, which may not be the traceable one (ENOENT), as upstream's
/// `tracing_multi_bench_attach` leaves them out.
pub fn unique_in_kallsyms(names: Vec<String>) -> Result<Vec<String>> {
    let text = std::fs::read_to_string("/proc/kallsyms")
        .map_err(|e| Error::failed(format!("reading /proc/kallsyms failed: {e}")))?;
    let mut count: HashMap<&str, u32> = HashMap::new();
    for name in text.lines().filter_map(|l| l.split_whitespace().nth(2)) {
        *count.entry(name).or_default() += 1;
    }
    Ok(names
        .into_iter()
        .filter(|n| count.get(n.as_str()).is_none_or(|&c| c == 1))
        .collect())
}

/// 7.3's libbpf's `btf_type_is_traceable_func`: at most 12 arguments, no
/// variable ones, none void or a struct over 16 bytes, no struct returned.
fn traceable(btf: &Btf<'_>, func: &Func<'_>) -> bool {
    let Some(proto) = func.next_type().and_then(|t| FuncProto::try_from(t).ok()) else {
        return false;
    };
    let size = |t: BtfType<'_>| -> Option<usize> {
        let t = t.skip_mods_and_typedefs();
        match t.kind() {
            BtfKind::Void => Some(0),
            BtfKind::Int | BtfKind::Enum | BtfKind::Enum64 | BtfKind::Ptr => Some(1),
            BtfKind::Struct => Struct::try_from(t).ok().map(|s| s.size()),
            BtfKind::Union => Union::try_from(t).ok().map(|s| s.size()),
            _ => None,
        }
    };
    let ret = proto.next_type();
    let ret_ok = match ret.map(|t| t.skip_mods_and_typedefs().kind()) {
        None => true,
        Some(BtfKind::Struct | BtfKind::Union) => false,
        Some(_) => ret.and_then(size).is_some(),
    };
    let args_ok = proto.len() <= MAX_ARGS
        && proto.iter().enumerate().all(|(i, p)| {
            let vararg = i + 1 == proto.len() && u32::from(p.ty) == 0;
            !vararg
                && btf
                    .type_by_id::<BtfType<'_>>(p.ty)
                    .and_then(size)
                    .is_some_and(|n| n > 0 && n <= 16)
        });
    ret_ok && args_ok
}
