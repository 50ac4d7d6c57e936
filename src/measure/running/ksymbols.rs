//! The code the kernel makes and frees at run time (BPF programs,
//! trampolines, ftrace trampolines, kprobe pages), as perf sees it: a
//! dummy software event per CPU with `ksymbol` set gets a
//! `PERF_RECORD_KSYMBOL` (start, length, name) for each (5.1; ftrace and
//! kprobe pages 5.9). For `--explain`'s windows (window.rs): exact
//! extents, and nothing to read but memory, where /proc/kallsyms costs
//! about a second under TCG.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

/// Ring buffer pages per CPU (a power of two), beside the header page.
const PAGES: usize = 16;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `perf_event_attr`'s `ksymbol` bit in its flags word.
const KSYMBOL: u64 = 1 << 29;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_KSYMBOL: u32 = 17;
const UNREGISTER: u16 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// One CPU's event and its ring buffer.
struct Ring {
    _fd: OwnedFd,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by the ring and only read through &mut.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: mapped in `open` with this length.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The run-time code perf told of: start -> each registration there
/// still in force, in order (see `record`).
pub struct Ksymbols {
    rings: Vec<Ring>,
    made: BTreeMap<u64, Vec<(u32, String)>>,
    /// Records the kernel dropped for want of room: the live set is not
    /// to be trusted.
    pub lost: u64,
}

fn open(cpu: usize) -> io::Result<Ring> {
    // perf_event_attr, version 0 (64 bytes): type, size, config, then
    // the flags word at byte 40.
    let mut attr = [0u64; 8];
    attr[0] = u64::from(PERF_TYPE_SOFTWARE) | (64u64 << 32);
    attr[1] = PERF_COUNT_SW_DUMMY;
    attr[5] = KSYMBOL;
    // SAFETY: attr is a valid version-0 perf_event_attr.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd of ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let page = page_size();
    let len = page * (PAGES + 1);
    // SAFETY: a shared read-write mapping of the event's ring buffer.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Ring {
        _fd: fd,
        base: base.cast(),
        len,
    })
}

fn page_size() -> usize {
    // SAFETY: no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

impl Ksymbols {
    /// An event on each of `cpus`.
    pub fn open(cpus: &[usize]) -> io::Result<Ksymbols> {
        Ok(Ksymbols {
            rings: cpus.iter().map(|&c| open(c)).collect::<io::Result<_>>()?,
            made: BTreeMap::new(),
            lost: 0,
        })
    }

    /// Reads what was made and freed since the last call; the live code:
    /// start -> (length, name).
    pub fn live(&mut self) -> BTreeMap<u64, (u32, String)> {
        let page = page_size();
        let mut records = Vec::new();
        for r in &self.rings {
            // The header page: data_head at byte 1024, data_tail at 1032.
            // SAFETY: inside the mapping; the kernel writes the head, we the tail.
            let (head_p, tail_p) = unsafe {
                (
                    r.base.add(1024).cast::<u64>(),
                    r.base.add(1032).cast::<u64>(),
                )
            };
            let head = unsafe { std::ptr::read_volatile(head_p) };
            fence(Ordering::Acquire);
            let mut tail = unsafe { std::ptr::read_volatile(tail_p) };
            let size = (PAGES * page) as u64;
            let data = unsafe { std::slice::from_raw_parts(r.base.add(page), size as usize) };
            let byte = |at: u64| data[(at % size) as usize];
            while tail + 8 <= head {
                let hdr: Vec<u8> = (0..8).map(|i| byte(tail + i)).collect();
                let kind = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
                let len = u64::from(u16::from_ne_bytes([hdr[6], hdr[7]]));
                if len < 8 || tail + len > head {
                    break;
                }
                records.push((kind, (8..len).map(|i| byte(tail + i)).collect::<Vec<u8>>()));
                tail += len;
            }
            fence(Ordering::Release);
            unsafe { std::ptr::write_volatile(tail_p, tail) };
        }
        for (kind, rec) in records {
            self.record(kind, &rec);
        }
        self.newest()
    }

    /// The newest registration at each start.
    fn newest(&self) -> BTreeMap<u64, (u32, String)> {
        self.made
            .iter()
            .filter_map(|(a, v)| Some((*a, v.last()?.clone())))
            .collect()
    }

    fn record(&mut self, kind: u32, rec: &[u8]) {
        let u64_at = |i: usize| {
            rec.get(i..i + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
        };
        match kind {
            PERF_RECORD_KSYMBOL if rec.len() >= 16 => {
                let addr = u64_at(0).unwrap_or(0);
                let len = u32::from_ne_bytes(rec[8..12].try_into().unwrap());
                let flags = u16::from_ne_bytes(rec[14..16].try_into().unwrap());
                let name: Vec<u8> = rec[16..].iter().take_while(|&&c| c != 0).copied().collect();
                let entry = (len, String::from_utf8_lossy(&name).into_owned());
                // Code is freed after an RCU grace period, so its unregister
                // may come after what took its place registered: it
                // removes its own registration, never the newer one.
                if flags & UNREGISTER != 0 {
                    if let Some(v) = self.made.get_mut(&addr) {
                        if let Some(i) = v.iter().position(|e| *e == entry) {
                            v.remove(i);
                        }
                        if v.is_empty() {
                            self.made.remove(&addr);
                        }
                    }
                } else {
                    // Overlaps stay: a trampoline's record says a page, and
                    // programs share its page (bpf_prog_pack); an address
                    // is named by the nearest start below it.
                    self.made.entry(addr).or_default().push(entry);
                }
            }
            PERF_RECORD_LOST => self.lost += u64_at(8).unwrap_or(1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ksymbol(addr: u64, len: u32, flags: u16, name: &str) -> Vec<u8> {
        let mut r = addr.to_ne_bytes().to_vec();
        r.extend(len.to_ne_bytes());
        r.extend(1u16.to_ne_bytes());
        r.extend(flags.to_ne_bytes());
        r.extend(name.as_bytes());
        r.push(0);
        r
    }

    #[test]
    fn made_then_freed() {
        let mut k = Ksymbols {
            rings: Vec::new(),
            made: BTreeMap::new(),
            lost: 0,
        };
        let (prog, tramp) = (0xffff_ffff_c000_1000, 0xffff_ffff_c000_2000);
        let at = |k: &mut Ksymbols, a, len, flags, name| {
            k.record(PERF_RECORD_KSYMBOL, &ksymbol(a, len, flags, name));
            k.newest()
        };
        at(&mut k, prog, 96, 0, "bpf_prog_a");
        at(&mut k, tramp, 4096, 0, "bpf_trampoline_1");
        // B's program where A's was, before A's late unregister: B stays.
        at(&mut k, prog, 128, 0, "bpf_prog_b");
        let live = at(&mut k, prog, 96, UNREGISTER, "bpf_prog_a");
        assert_eq!(live[&prog], (128, "bpf_prog_b".into()));
        assert_eq!(live.len(), 2);
        // A program inside the trampoline's page: both stay.
        let live = at(&mut k, tramp + 0x40, 64, 0, "bpf_prog_c");
        assert_eq!(live.len(), 3);
        let live = at(&mut k, prog, 128, UNREGISTER, "bpf_prog_b");
        assert_eq!(live.len(), 2);
        let mut lost = 0u64.to_ne_bytes().to_vec();
        lost.extend(3u64.to_ne_bytes());
        k.record(PERF_RECORD_LOST, &lost);
        assert_eq!(k.lost, 3);
    }
}
