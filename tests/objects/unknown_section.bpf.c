// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A socket filter under a section libbpf does not know (it knows plain
 * `socket`): what `--object` says is the section, not a missing trigger.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("socket/filter")
int sock_named(struct __sk_buff *skb)
{
	return skb->len;
}
