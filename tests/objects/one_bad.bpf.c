// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Two programs, one the verifier rejects: the refusal names the other,
 * to be measured alone as FILE:PROGRAM.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp/syscalls/sys_enter_getpid")
int good_one(void *ctx)
{
	return 0;
}

SEC("tp/syscalls/sys_enter_getpid")
int bad_one(void *ctx)
{
	return *(volatile __u64 *)(ctx + 65536) != 0;
}
