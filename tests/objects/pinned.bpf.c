// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Maps pinned by name, as packaged XDP filters declare theirs: libbpf
 * would pin them under /sys/fs/bpf at load, or reuse a live map pinned
 * there by that name. `--object` loads them as the run's own maps instead
 * (tests/cli_objects.rs checks the host's pin and its contents stay as
 * they were, and that the object loads where no BPF filesystem is).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bpfo_pin_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bpfo_verdict SEC(".maps");

/* Counts each packet, and returns the verdict the map holds. */
SEC("xdp")
int count_pinned(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *count = bpf_map_lookup_elem(&bpfo_pin_count, &key);
	__u32 *verdict = bpf_map_lookup_elem(&bpfo_verdict, &key);

	if (count)
		__sync_fetch_and_add(count, 1);
	return verdict && *verdict ? *verdict : XDP_PASS;
}
