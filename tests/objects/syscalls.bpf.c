// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A user's object as `--object` takes it: programs on syscall tracepoints,
 * attached by their section as libbpf's auto-attach does, each reached by
 * one of the command's syscall triggers. Built by build.rs as is, and
 * with -DEXTRA_WORK=N: 4000 (syscalls_slow.bpf.o), the "slower build" that
 * `--against object=` must call REGRESSED, and 64 (syscalls_plus64.bpf.o),
 * a slowdown by a fraction for examples/compare_power; and with -DV2
 * (syscalls_v2.bpf.o), a next version that dropped exit_getppid and
 * added enter_read: what `--against object=` lists and does not compare.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#ifndef EXTRA_WORK
#define EXTRA_WORK 0
#endif

/* Rounds of work per run, on top of EXTRA_WORK: `--set rounds=N`. */
const volatile __u32 rounds = 0;
/* Only this process's events count when set (`--set only_tgid=PID`). */
const volatile __u32 only_tgid = 0;

__u64 events;
__u64 sink;

static __always_inline int count(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (only_tgid && tgid != only_tgid)
		return 0;
	__sync_fetch_and_add(&events, 1);
	for (__u32 i = 0; i < EXTRA_WORK + rounds && i < 4096; i++)
		sink = sink * 31 + i;
	return 0;
}

SEC("tp/syscalls/sys_enter_getpid")
int enter_getpid(void *ctx)
{
	return count();
}

#ifndef V2
SEC("tracepoint/syscalls/sys_exit_getppid")
int exit_getppid(void *ctx)
{
	return count();
}
#else
SEC("tp/syscalls/sys_enter_read")
int enter_read(void *ctx)
{
	return count();
}
#endif

SEC("tp/syscalls/sys_enter_openat")
int enter_openat(void *ctx)
{
	return count();
}
