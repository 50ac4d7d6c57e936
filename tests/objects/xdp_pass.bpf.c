// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An XDP program, run by BPF_PROG_TEST_RUN on the command's built-in
 * packet (64 bytes of UDP over IPv4 over Ethernet): it parses the headers
 * as a real filter would and passes the packet.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

__u64 udp_packets;

SEC("xdp")
int parse_udp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP) && ip->protocol == IPPROTO_UDP)
		__sync_fetch_and_add(&udp_packets, 1);
	return XDP_PASS;
}
