// SPDX-License-Identifier: GPL-2.0
/*
 * NOT upstream: progs/test_overhead.c has no tracepoint program. This is
 * its raw_tp program (prog3: one load from the context, return 0) as a
 * classic tracepoint on the same event, so that scripts/test-overhead-parity
 * can also time tp the way test_overhead times raw_tp. Returning 0 also
 * keeps perf from handling the event further. A tracepoint program may not
 * read the common fields (the first 8 bytes): it reads the event's pid.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("tp/task/task_rename")
int prog3_tp(struct trace_event_raw_task_rename *ctx)
{
	return !ctx->pid;
}

char _license[] SEC("license") = "GPL";
