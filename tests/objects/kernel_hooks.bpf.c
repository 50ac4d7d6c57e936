// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A user's programs on syscall functions rather than tracepoints: a
 * ksyscall (a kprobe on the architecture's __<arch>_sys_getpid, found by
 * libbpf), a kprobe and an fentry on __<arch>_sys_getppid, named as the
 * architecture spells them. Each counts its hits. The host this suite is
 * developed on has neither kprobes nor trampolines; the VMs have both.
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

SEC("fentry/" SYS(getppid))
int fe_getppid(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}
