// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A tc classifier and a socket filter, run by BPF_PROG_TEST_RUN on the
 * command's built-in packet (64 bytes of UDP over IPv4 over Ethernet) as
 * an skb: each reads the IPv4 header as a real one would, counts UDP, and
 * lets the packet through.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

__u64 udp_packets;

SEC("tc")
int classify(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP) && ip->protocol == IPPROTO_UDP)
		__sync_fetch_and_add(&udp_packets, 1);
	return TC_ACT_OK;
}

/* A socket filter cannot read skb->data directly: it loads the bytes. */
SEC("socket")
int keep_udp(struct __sk_buff *skb)
{
	__u8 protocol;

	if (bpf_skb_load_bytes(skb, ETH_HLEN + 9, &protocol, 1) == 0 &&
	    protocol == IPPROTO_UDP)
		__sync_fetch_and_add(&udp_packets, 1);
	return skb->len;
}
