//! The QEMU side: install, translation and the marks' callbacks.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Mutex;

use qemu_plugin_sys::*;

use crate::kinds::classify;
use crate::marks::{mark_of, OPEN};
use crate::Counters;

#[no_mangle]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

struct Plugin {
    counters: Counters,
    out: BufWriter<File>,
}

static PLUGIN: Mutex<Option<Plugin>> = Mutex::new(None);

fn say(msg: &str) {
    if let Ok(s) = std::ffi::CString::new(format!("bpf-overhead-tcg-plugin: {msg}\n")) {
        unsafe { qemu_plugin_outs(s.as_ptr()) };
    }
}

/// `-plugin FILE,out=PATH`: the windows go to PATH.
///
/// # Safety
/// Called by QEMU with its own arguments.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: qemu_plugin_id_t,
    info: *const qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    let target = CStr::from_ptr((*info).target_name).to_string_lossy();
    if target != "x86_64" {
        say(&format!("marks are x86_64 nops; this guest is {target}"));
        return -1;
    }
    let args: Vec<String> = (0..argc as usize)
        .map(|i| CStr::from_ptr(*argv.add(i)).to_string_lossy().into_owned())
        .collect();
    let Some(path) = args.iter().find_map(|a| a.strip_prefix("out=")) else {
        say("needs out=PATH");
        return -1;
    };
    let out = match File::create(path) {
        Ok(f) => BufWriter::new(f),
        Err(e) => {
            say(&format!("cannot write {path}: {e}"));
            return -1;
        }
    };
    *PLUGIN.lock().unwrap() = Some(Plugin {
        counters: Counters::default(),
        out,
    });
    qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translation));
    qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    0
}

unsafe extern "C" fn on_translation(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    let mut guard = PLUGIN.lock().unwrap();
    let Some(p) = guard.as_mut() else { return };
    for i in 0..qemu_plugin_tb_n_insns(tb) {
        let insn = qemu_plugin_tb_get_insn(tb, i);
        let vaddr = qemu_plugin_insn_vaddr(insn);
        let bytes = std::slice::from_raw_parts(
            qemu_plugin_insn_data(insn).cast::<u8>(),
            qemu_plugin_insn_size(insn),
        );
        let counter = p.counters.counter_of(vaddr, classify(bytes));
        qemu_plugin_register_vcpu_insn_exec_inline(
            insn,
            qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
            counter.cast(),
            1,
        );
        if let Some(mark) = mark_of(bytes) {
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn,
                Some(on_mark),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                mark as usize as *mut c_void,
            );
        }
    }
}

unsafe extern "C" fn on_mark(_vcpu: c_uint, mark: *mut c_void) {
    let mut guard = PLUGIN.lock().unwrap();
    let Some(p) = guard.as_mut() else { return };
    if mark as usize as u32 == OPEN {
        p.counters.open();
    } else if let Err(e) = p.counters.close(&mut p.out) {
        say(&format!("write failed: {e}"));
    }
}

unsafe extern "C" fn on_exit(_id: qemu_plugin_id_t, _: *mut c_void) {
    if let Some(mut p) = PLUGIN.lock().unwrap().take() {
        if let Err(e) = p.out.flush() {
            say(&format!("write failed: {e}"));
        }
    }
}
