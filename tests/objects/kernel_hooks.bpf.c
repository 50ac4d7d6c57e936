// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A user's programs on syscall functions rather than tracepoints: a
 * ksyscall (a kprobe on the architecture's __<arch>_sys_getpid, found by
 * libbpf), a kprobe on __<arch>_sys_getppid and an fentry on
 * __<arch>_sys_read, named as the architecture spells them, and an LSM program on file_open, which openat
 * reaches. Each counts its hits. The host this suite is developed on has
 * neither kprobes nor trampolines; the VMs have both, and boot with bpf
 * among the active LSMs.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#if defined(__TARGET_ARCH_x86)
#define SYS(name) "__x64_sys_" #name
#elif defined(__TARGET_ARCH_arm64)
#define SYS(name) "__arm64_sys_" #name
#else
#error "an architecture with known syscall function names"
#endif

__u64 hits;

SEC("ksyscall/getpid")
int ks_getpid(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("kprobe/" SYS(getppid))
int kp_getppid(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

/*
 * fentry needs the function in the kernel's BTF, where syscalls without
 * arguments (SYSCALL_DEFINE0: getpid, getppid) have no wrapper's entry
 * (Debian 6.12): read(2) has one.
 */
SEC("fentry/" SYS(read))
int fe_read(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("lsm/file_open")
int lsm_file_open(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}
