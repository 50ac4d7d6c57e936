// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A program type the command has no trigger for: cgroup_skb. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup_skb/ingress")
int ingress(struct __sk_buff *skb)
{
	return 1;
}
