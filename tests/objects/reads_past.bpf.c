// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Programs that read past the end of their tracepoint's context. The
 * verifier takes them (it checks against the largest context of the
 * program type); the kernel refuses them at attach, when it knows the
 * event: EACCES for tp (getpid's record ends at byte 16 + its args),
 * EINVAL for raw_tp (sys_enter has two arguments).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp/syscalls/sys_enter_getpid")
int past_record(void *ctx)
{
	return *(volatile __u64 *)(ctx + 1024) != 0;
}

SEC("raw_tp/sys_enter")
int past_args(__u64 *ctx)
{
	return ((volatile __u64 *)ctx)[8] != 0;
}
