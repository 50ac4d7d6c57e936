// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A BPF ELF with a map and no program. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 nothing_runs_here;
