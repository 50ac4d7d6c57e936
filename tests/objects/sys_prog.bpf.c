// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A syscall program (BPF_PROG_TYPE_SYSCALL, sleepable, 5.14+), run by
 * BPF_PROG_TEST_RUN with no context, one call a run: it counts its calls
 * and keeps the time of the last, as a loader's helper program might keep
 * state for user space.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 calls;
__u64 last_ns;

SEC("syscall")
int count_call(void *ctx)
{
	__sync_fetch_and_add(&calls, 1);
	last_ns = bpf_ktime_get_ns();
	return 0;
}
