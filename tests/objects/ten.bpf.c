// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An object of ten programs, as an agent's may be: the entry and exit
 * tracepoints of five syscalls the triggers make. What a run of it costs
 * in time is what the issue bounds (no more than a default full run, an
 * --against run of it no more than twice that): docs/objects.md.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 events;

#define ON(event, name)              \
	SEC("tp/syscalls/" #event)   \
	int name(void *ctx)          \
	{                            \
		__sync_fetch_and_add(&events, 1); \
		return 0;            \
	}

ON(sys_enter_getpid, in_getpid)
ON(sys_exit_getpid, out_getpid)
ON(sys_enter_getppid, in_getppid)
ON(sys_exit_getppid, out_getppid)
ON(sys_enter_openat, in_openat)
ON(sys_exit_openat, out_openat)
ON(sys_enter_read, in_read)
ON(sys_exit_read, out_read)
ON(sys_enter_close, in_close)
ON(sys_exit_close, out_close)
