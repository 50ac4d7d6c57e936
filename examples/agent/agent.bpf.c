// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An example of what `--object` is for: a program shaped like an
 * observability agent's file-open tracer. On every openat(2) it reads the
 * syscall's arguments (the path from user memory, the flags), the task's
 * identity and name, and submits an event to a ring buffer, which the
 * command's consumer drains from another CPU while it runs, as an agent's
 * reader would. Built twice by build.rs: as is (agent.bpf.o), and with
 * -DBARE (agent_bare.bpf.o), the same reads kept in a global instead of
 * submitted: the difference between the two is what the ring buffer costs.
 *
 *     sudo bpf-overhead --object agent.bpf.o --object agent_bare.bpf.o
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* Only this process's opens are reported when set (`--set only_tgid=PID`). */
const volatile __u32 only_tgid = 0;

struct open_event {
	__u32 tgid;
	__u32 pid;
	__u32 uid;
	__s32 flags;
	char comm[16];
	char path[256];
};

/* The tracepoint's context, as its format file gives it. */
struct sys_enter {
	__u64 common;
	long id;
	unsigned long args[6];
};

#ifndef BARE
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");
#else
struct open_event last;
#endif

__u64 dropped;

SEC("tp/syscalls/sys_enter_openat")
int trace_openat(struct sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct open_event *e;

	if (only_tgid && (id >> 32) != only_tgid)
		return 0;
#ifndef BARE
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
#else
	e = &last;
#endif
	e->tgid = id >> 32;
	e->pid = (__u32)id;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->flags = (__s32)ctx->args[2];
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_probe_read_user_str(e->path, sizeof(e->path), (const void *)ctx->args[1]);
#ifndef BARE
	bpf_ringbuf_submit(e, 0);
#endif
	return 0;
}
