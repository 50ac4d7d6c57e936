// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A program the verifier rejects: it reads its context out of bounds. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp/syscalls/sys_enter_getpid")
int out_of_bounds(void *ctx)
{
	return *(volatile __u64 *)(ctx + 65536) != 0;
}
