//! The trigger of program types the kernel runs itself on a given input
//! (`BPF_PROG_TEST_RUN`), for a user's object (`--object`): one event is
//! one pass of the kernel's own repeat loop over the program, on a
//! built-in packet or `--packet FILE`'s; or, for a `syscall` program,
//! whose test run takes no repeat, one BPF_PROG_TEST_RUN call from user
//! space. Nothing is attached. The base is a built-in program of the same
//! type that returns the default verdict (bpf/overhead.bpf.c's
//! `prog_xdp_pass`, `prog_tc_ok`, `prog_socket_all`,
//! `prog_flow_dissector_ok`, `prog_syscall_zero`), run the same way, so
//! that the overhead is what the user's program costs beyond the least one.

use std::os::fd::{AsRawFd, OwnedFd};

use libbpf_rs::libbpf_sys as sys;

use super::program::{builtin, Program};
use crate::measure::error::{Error, Result};

/// A program type `BPF_PROG_TEST_RUN` runs, and its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TestRun {
    pub prog_type: ProgType,
    /// The packet each run sees: [`PACKET`] or `--packet FILE`'s.
    pub packet: &'static [u8],
}

/// The program types it runs: each on one packet, but syscall programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgType {
    /// XDP (`SEC("xdp")`).
    Xdp,
    /// A tc classifier (`SEC("tc")`, `tc/ingress`, `tcx/egress`...):
    /// BPF_PROG_TYPE_SCHED_CLS, run on an skb made of the packet.
    Tc,
    /// A socket filter (`SEC("socket")`), on an skb likewise.
    Socket,
    /// A flow dissector (`SEC("flow_dissector")`), on the packet from its
    /// Ethernet header on; the kernel writes back the `struct
    /// bpf_flow_keys` it filled, not the packet.
    FlowDissector,
    /// A `SEC("syscall")` program (BPF_PROG_TYPE_SYSCALL, sleepable,
    /// 5.14+): its test run takes no packet and no repeat, so each run is
    /// one BPF_PROG_TEST_RUN call.
    Syscall,
}

impl ProgType {
    pub const ALL: [ProgType; 5] = [
        ProgType::Xdp,
        ProgType::Tc,
        ProgType::Socket,
        ProgType::FlowDissector,
        ProgType::Syscall,
    ];

    /// The `SEC()` names of its programs, whole: what `--object` runs as
    /// this type, and what `--list-triggers` says it fires.
    pub const fn sections(self) -> &'static [&'static str] {
        match self {
            ProgType::Xdp => &["xdp", "xdp.frags"],
            ProgType::Tc => &[
                "tc",
                "tc/ingress",
                "tc/egress",
                "tcx/ingress",
                "tcx/egress",
                "classifier",
            ],
            ProgType::Socket => &["socket"],
            ProgType::FlowDissector => &["flow_dissector"],
            ProgType::Syscall => &["syscall"],
        }
    }

    /// Each type's plain section (the first of its [`sections`](Self::sections)),
    /// as the test-run kind's own programs are written.
    pub const PLAIN_SECTIONS: [&'static str; ProgType::ALL.len()] = {
        let mut plain = [""; ProgType::ALL.len()];
        let mut i = 0;
        while i < plain.len() {
            plain[i] = ProgType::ALL[i].sections()[0];
            i += 1;
        }
        plain
    };

    /// The type whose programs have `section`.
    pub fn of_section(section: &str) -> Option<ProgType> {
        Self::ALL
            .into_iter()
            .find(|t| t.sections().contains(&section))
    }

    /// Loading it needs CAP_NET_ADMIN (the kernel's
    /// is_net_admin_prog_type); socket filters and syscall programs do
    /// not (CAP_BPF will do).
    pub const fn needs_net_admin(self) -> bool {
        match self {
            ProgType::Xdp | ProgType::Tc | ProgType::FlowDissector => true,
            ProgType::Socket | ProgType::Syscall => false,
        }
    }

    /// Whether the kernel runs it on a packet, in its own repeat loop; a
    /// syscall program's test run rejects both (net/bpf/test_run.c's
    /// bpf_prog_test_run_syscall).
    pub const fn on_packet(self) -> bool {
        match self {
            ProgType::Xdp | ProgType::Tc | ProgType::Socket | ProgType::FlowDissector => true,
            ProgType::Syscall => false,
        }
    }

    /// What one event is, for `--list-triggers`.
    pub const fn one_event(self) -> &'static str {
        if self.on_packet() {
            "one BPF_PROG_TEST_RUN repeat on a packet (--packet FILE)"
        } else {
            "one BPF_PROG_TEST_RUN call (no packet, no repeat)"
        }
    }

    /// The kernel's `enum bpf_prog_type` value, its name, and the release
    /// that added the type.
    const fn kernel_type(self) -> (sys::bpf_prog_type, &'static str, &'static str) {
        match self {
            ProgType::Xdp => (sys::BPF_PROG_TYPE_XDP, "BPF_PROG_TYPE_XDP", "4.8"),
            ProgType::Tc => (
                sys::BPF_PROG_TYPE_SCHED_CLS,
                "BPF_PROG_TYPE_SCHED_CLS",
                "4.1",
            ),
            ProgType::Socket => (
                sys::BPF_PROG_TYPE_SOCKET_FILTER,
                "BPF_PROG_TYPE_SOCKET_FILTER",
                "3.19",
            ),
            ProgType::FlowDissector => (
                sys::BPF_PROG_TYPE_FLOW_DISSECTOR,
                "BPF_PROG_TYPE_FLOW_DISSECTOR",
                "4.20",
            ),
            ProgType::Syscall => (sys::BPF_PROG_TYPE_SYSCALL, "BPF_PROG_TYPE_SYSCALL", "5.14"),
        }
    }

    /// Whether this kernel has the program type: libbpf's feature probe,
    /// which loads the least program of the type (for a syscall program,
    /// sleepable, as libbpf loads `SEC("syscall")`). Run with the
    /// privileges to load it (checked first, caps.rs): without them the
    /// probe would read as the kernel lacking the type.
    pub fn check_support(self) -> Result<()> {
        let (value, name, added) = self.kernel_type();
        // SAFETY: the probe takes no pointers but `opts`, which must be NULL.
        let ret = unsafe { sys::libbpf_probe_bpf_prog_type(value, std::ptr::null()) };
        match ret {
            1 => Ok(()),
            0 => Err(Error::unsupported(unsupported(name, added))),
            err => Err(Error::failed(format!(
                "probing the kernel for {name} programs failed: {}",
                std::io::Error::from_raw_os_error(-err)
            ))),
        }
    }
}

/// Why a kernel without the program type `name` skips its programs.
fn unsupported(name: &str, added: &str) -> String {
    format!(
        "kernel has no {name} programs (added in {added}): libbpf's probe could not load \
         the least one"
    )
}

/// 64 bytes of UDP over IPv4 over Ethernet, from 10.0.0.1:4242 to
/// 10.0.0.2:4242, its IPv4 checksum right: what an XDP filter parses.
pub const PACKET: [u8; 64] = {
    let mut p = [0u8; 64];
    // Ethernet: destination, source, EtherType IPv4.
    let head: [u8; 42] = [
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, //
        // IPv4: version 4, IHL 5, total length 50, TTL 64, UDP, checksum.
        0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0x26, 0xb9, //
        10, 0, 0, 1, 10, 0, 0, 2, //
        // UDP: ports 4242, length 30, no checksum.
        0x10, 0x92, 0x10, 0x92, 0, 30, 0, 0,
    ];
    let mut i = 0;
    while i < head.len() {
        p[i] = head[i];
        i += 1;
    }
    p
};

impl TestRun {
    /// As its section starts (`SEC("xdp")`), and its base's name
    /// (`base-xdp`).
    pub const fn name(self) -> &'static str {
        match self.prog_type {
            ProgType::Xdp => "xdp",
            ProgType::Tc => "tc",
            ProgType::Socket => "socket",
            ProgType::FlowDissector => "flow_dissector",
            ProgType::Syscall => "syscall",
        }
    }

    /// The first word of its selftest lines.
    pub const fn label(self) -> &'static str {
        match self.prog_type {
            ProgType::Xdp => "test_run_xdp",
            ProgType::Tc => "test_run_tc",
            ProgType::Socket => "test_run_socket",
            ProgType::FlowDissector => "test_run_flow_dissector",
            ProgType::Syscall => "test_run_syscall",
        }
    }

    pub const fn describe(self) -> &'static str {
        match self.prog_type {
            ProgType::Xdp => "one BPF_PROG_TEST_RUN repeat of an XDP program on a packet",
            ProgType::Tc => "one BPF_PROG_TEST_RUN repeat of a tc classifier on a packet",
            ProgType::Socket => "one BPF_PROG_TEST_RUN repeat of a socket filter on a packet",
            ProgType::FlowDissector => {
                "one BPF_PROG_TEST_RUN repeat of a flow dissector on a packet"
            }
            ProgType::Syscall => "one BPF_PROG_TEST_RUN call of a syscall program",
        }
    }

    /// The base's program: the least program of this type.
    pub const fn base_program(self) -> Program {
        match self.prog_type {
            ProgType::Xdp => builtin!(prog_xdp_pass),
            ProgType::Tc => builtin!(prog_tc_ok),
            ProgType::Socket => builtin!(prog_socket_all),
            ProgType::FlowDissector => builtin!(prog_flow_dissector_ok),
            ProgType::Syscall => builtin!(prog_syscall_zero),
        }
    }

    /// Ready to fire `prog` (the user's program, or the base's).
    pub fn arm(self, prog: OwnedFd) -> ArmedTestRun {
        let input = if self.prog_type.on_packet() {
            // The packet back (XDP, tc, socket filters), or the flow keys
            // a flow dissector filled: the kernel fails with ENOSPC where
            // they do not fit.
            let out = (self.packet.len() + 256).max(std::mem::size_of::<sys::bpf_flow_keys>());
            Input::Packet {
                packet: self.packet.to_vec(),
                out: vec![0; out],
            }
        } else {
            Input::Nothing
        };
        ArmedTestRun { prog, input }
    }
}

/// A test-run trigger ready to fire: the program and its input.
pub struct ArmedTestRun {
    prog: OwnedFd,
    input: Input,
}

/// What each BPF_PROG_TEST_RUN gives the program.
enum Input {
    /// The packet, run on `repeat` times by the kernel, and where it
    /// writes its output: made once, outside the timed runs.
    Packet { packet: Vec<u8>, out: Vec<u8> },
    /// Nothing, once a call: a syscall program's test run rejects data
    /// in and out, `repeat`, `duration` and flags, and takes a context
    /// only if the program reads one.
    Nothing,
}

impl ArmedTestRun {
    /// Runs the program `n` times: on a packet, in the kernel's repeat
    /// loop, which returns once it has run it that many times, so the
    /// count needs no program of ours; a syscall program by `n` calls,
    /// each of which runs it once.
    pub fn fire(&mut self, n: u64) -> Result<()> {
        if matches!(self.input, Input::Nothing) {
            for _ in 0..n {
                self.run(0)?;
            }
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            let repeat = left.min(u64::from(u32::MAX)) as u32;
            self.run(repeat)?;
            left -= u64::from(repeat);
        }
        Ok(())
    }

    fn run(&mut self, repeat: u32) -> Result<()> {
        let mut opts = sys::bpf_test_run_opts {
            sz: std::mem::size_of::<sys::bpf_test_run_opts>() as _,
            repeat: repeat as _,
            ..Default::default()
        };
        if let Input::Packet { packet, out } = &mut self.input {
            opts.data_in = packet.as_ptr().cast();
            opts.data_size_in = packet.len() as u32;
            opts.data_out = out.as_mut_ptr().cast();
            opts.data_size_out = out.len() as u32;
        }
        // SAFETY: opts is a valid, sized bpf_test_run_opts whose buffers
        // (if any) outlive the call; the fd is open.
        let ret = unsafe { sys::bpf_prog_test_run_opts(self.prog.as_raw_fd(), &mut opts) };
        if ret != 0 {
            let err = std::io::Error::from_raw_os_error(-ret);
            // The kernel's one EINVAL for a syscall program given nothing:
            // it reads a context (ctx_size_in < its max_ctx_offset).
            let hint = match self.input {
                Input::Nothing if -ret == libc::EINVAL => {
                    " (a syscall program that reads its context needs one, which this \
                     command does not give)"
                }
                Input::Nothing | Input::Packet { .. } => "",
            };
            return Err(
                Error::failed(format!("BPF_PROG_TEST_RUN failed: {err}{hint}"))
                    .with_errno(Some(-ret)),
            );
        }
        Ok(())
    }
}

/// The first packet of a pcap file (`--packet FILE`): the classic format,
/// either byte order, microsecond or nanosecond timestamps.
pub fn first_packet(bytes: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let magic = bytes
        .get(..4)
        .ok_or("shorter than a pcap file header (24 bytes)")?;
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        [0x0a, 0x0d, 0x0d, 0x0a] => {
            return Err("a pcapng file; give a classic pcap (editcap -F pcap IN OUT)".into())
        }
        _ => return Err("not a pcap file (no pcap magic)".into()),
    };
    let u32_at = |at: usize| -> std::result::Result<u32, String> {
        let b: [u8; 4] = bytes
            .get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .ok_or("it ends before its first packet")?;
        Ok(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    // LINKTYPE_ETHERNET: what the packet test runs take.
    let link = u32_at(20)?;
    if link != 1 {
        return Err(format!(
            "its link type is {link}, not Ethernet (1): the test runs take Ethernet frames"
        ));
    }
    let captured = u32_at(24 + 8)? as usize;
    let data = bytes
        .get(24 + 16..24 + 16 + captured)
        .ok_or("its first packet is cut short")?;
    if data.len() < 14 {
        return Err(format!(
            "its first packet has {} bytes, less than an Ethernet header",
            data.len()
        ));
    }
    Ok(data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packets_ipv4_checksum_is_right() {
        let header = &PACKET[14..34];
        let sum: u32 = header
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        let folded = (sum & 0xffff) + (sum >> 16);
        assert_eq!(folded, 0xffff, "{sum:#x}");
    }

    fn pcap(link: u32, packet: &[u8]) -> Vec<u8> {
        let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        f.extend([0u8; 8]);
        f.extend(65535u32.to_le_bytes());
        f.extend(link.to_le_bytes());
        f.extend([0u8; 8]);
        f.extend((packet.len() as u32).to_le_bytes());
        f.extend((packet.len() as u32).to_le_bytes());
        f.extend(packet);
        f
    }

    /// A type's base is `base-<its first section>`, its selftest label
    /// `test_run_<that>`, and each of its sections is its alone.
    #[test]
    fn each_type_is_named_by_its_first_section() {
        for t in ProgType::ALL {
            let run = TestRun {
                prog_type: t,
                packet: &[],
            };
            assert_eq!(t.sections()[0], run.name());
            assert_eq!(run.label(), format!("test_run_{}", run.name()));
            for s in t.sections() {
                assert_eq!(ProgType::of_section(s), Some(t), "{s}");
            }
        }
    }

    /// A kernel older than the type is told which release added it.
    #[test]
    fn a_missing_type_names_the_release_that_added_it() {
        let (_, name, added) = ProgType::Syscall.kernel_type();
        assert!(
            unsupported(name, added)
                .starts_with("kernel has no BPF_PROG_TYPE_SYSCALL programs (added in 5.14)"),
            "{}",
            unsupported(name, added)
        );
    }

    #[test]
    fn a_pcaps_first_packet_is_read_and_bad_files_are_named() {
        assert_eq!(first_packet(&pcap(1, &PACKET)).unwrap(), PACKET);
        assert!(first_packet(&pcap(113, &PACKET))
            .unwrap_err()
            .contains("not Ethernet"));
        assert!(first_packet(b"hello world, this is not a pcap")
            .unwrap_err()
            .contains("not a pcap"));
        let cut = pcap(1, &PACKET);
        assert!(first_packet(&cut[..50]).unwrap_err().contains("cut short"));
    }
}
