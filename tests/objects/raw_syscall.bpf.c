// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Programs whose section names no event the command can fire by itself,
 * so they need `--trigger NAME`: raw_tp/sys_enter runs on every syscall;
 * sched_process_fork on none the triggers make (the run must fail).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 events;

SEC("raw_tp/sys_enter")
int any_syscall(void *ctx)
{
	__sync_fetch_and_add(&events, 1);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int on_fork(void *ctx)
{
	__sync_fetch_and_add(&events, 1);
	return 0;
}
