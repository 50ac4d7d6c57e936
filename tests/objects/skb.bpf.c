// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A tc classifier and a socket filter, run by BPF_PROG_TEST_RUN on the
 * command's built-in packet (64 bytes of UDP over IPv4 over Ethernet) as
 * an skb: each reads the IPv4 header as a real one would, counts UDP, and
 * lets the packet through. And a flow dissector, run on the same packet,
 * which fills the flow keys from its IPv4 and UDP headers.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
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

/*
 * The kernel starts the dissection at keys->nhoff (past the Ethernet
 * header, whose EtherType is keys->n_proto); the program fills the rest.
 */
SEC("flow_dissector")
int dissect(struct __sk_buff *skb)
{
	struct bpf_flow_keys *keys = skb->flow_keys;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u16 nhoff = keys->nhoff;
	struct iphdr *ip;
	struct udphdr *udp;

	/* Bounded, so that the verifier knows ip + 1 cannot wrap. */
	if (keys->n_proto != bpf_htons(ETH_P_IP) || nhoff > 256)
		return BPF_DROP;
	ip = data + nhoff;
	if ((void *)(ip + 1) > end || ip->ihl != 5)
		return BPF_DROP;
	keys->addr_proto = ETH_P_IP;
	keys->ipv4_src = ip->saddr;
	keys->ipv4_dst = ip->daddr;
	keys->ip_proto = ip->protocol;
	keys->thoff = nhoff + sizeof(*ip);
	if (ip->protocol != IPPROTO_UDP)
		return BPF_OK;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return BPF_DROP;
	keys->sport = udp->source;
	keys->dport = udp->dest;
	__sync_fetch_and_add(&udp_packets, 1);
	return BPF_OK;
}
