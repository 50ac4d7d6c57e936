// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A program the verifier rejects as too large: a bounded loop of more
 * rounds than it will walk (a million instructions processed).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

volatile __u64 sink;

SEC("tp/syscalls/sys_enter_getpid")
int too_large(void *ctx)
{
	for (__u32 i = 0; i < 10000000; i++)
		sink += i;
	return 0;
}
