// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A program the verifier rejects: a loop that may never end. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

volatile __u32 stop;

SEC("tp/syscalls/sys_enter_getpid")
int spin(void *ctx)
{
	while (!stop) {
	}
	return 0;
}
