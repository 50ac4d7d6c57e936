// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A program the verifier rejects: a GPL-only helper, and no GPL license. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Proprietary";

SEC("tp/syscalls/sys_enter_getpid")
int gpl_helper(void *ctx)
{
	__u64 value = 0;

	bpf_probe_read_kernel(&value, sizeof(value), ctx);
	return value != 0;
}
