// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * One tiny program per attach mechanism, in the spirit of the kernel's
 * tools/testing/selftests/bpf/progs/test_overhead.c. During the timed
 * events the comm and call triggers' programs do what test_overhead's do:
 * read their context and return, after one test of a switch (extra).
 * User space turns the switch on for the untimed lead-in before each
 * timed run, whose hits are counted (a thread-id compare and an add) and
 * checked exactly, and off for the timed events: the figure is the cost
 * of the mechanism, not of our counting. The kernel loop's programs count
 * every event with an atomic add, as bench's do.
 *
 * Every program is declared with "?" (not auto-loaded): the loader enables
 * exactly one per run, so a mechanism this kernel refuses (e.g. trampolines)
 * cannot stop the others from loading.
 *
 * Built from uapi and libbpf headers only: no vmlinux.h, no dependence on
 * the build host's BTF. The context reads are of uapi layouts (pt_regs,
 * bpf_raw_tracepoint_args), so no CO-RE either.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
/* For libbpf's USDT maps (attach_usdt needs them in the object); it
 * reads registers, so it needs the user-space struct pt_regs. */
#include <linux/ptrace.h>
#include <bpf/usdt.bpf.h>
#include <bpf/bpf_tracing.h>
/* MAX_SLOTS and MAX_PROG_WORK, shared with Rust: build.rs writes them from
 * common/src/bpf_consts.rs. */
#include "bpf_consts.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Hits are counted per CPU, in the slot of the CPU the event ran on, and
 * only when the event is one of ours:
 * - comm and call triggers: the thread must be the producer user space
 *   registered for that CPU, since other processes and other threads of
 *   ours rename themselves and call functions too;
 * - the kernel loop: the CPU's driver must be running (its `driving`
 *   flag), which only our own BPF_PROG_TEST_RUN sets. No thread check, so
 *   the program does what upstream's bench programs do, and costs the same.
 * Each producer is pinned to its own CPU, so each counts into its own
 * cache-line-aligned slot, and producers never share a counter (upstream's
 * bench counts the same way). User space fills producer_tids after load,
 * and reads and resets the counters through the mmapped .bss.
 */
struct counter {
	__u64 hits;
	/* Session exits that found their entry's mark. */
	__u64 exits;
	/* --prog-work's result, kept so the work cannot be optimised out. */
	__u64 sink;
	/* Set while this CPU's kernel-loop driver runs. */
	__u32 driving;
} __attribute__((aligned(128)));

struct counter counters[MAX_SLOTS];
__u32 producer_tids[MAX_SLOTS];

/*
 * The slot to count in, or -1 when the event is not a producer's. An int
 * rather than a pointer that may be NULL: clang turns the latter into a
 * select the verifier cannot follow.
 */
static __always_inline int producer_slot(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAX_SLOTS - 1);

	if (producer_tids[cpu] != (__u32)bpf_get_current_pid_tgid())
		return -1;
	return cpu;
}

/* The same for the kernel loop: -1 unless this CPU's driver is running. */
static __always_inline int driver_slot(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAX_SLOTS - 1);

	if (!counters[cpu].driving)
		return -1;
	return cpu;
}

/*
 * Extra work per hit (--prog-work N): N steps of a dependent add chain
 * that the compiler may not fold (the empty asm hides x's value), about a
 * CPU cycle each, so the knob can add a few percent of even the cheapest
 * mechanism's cost. 0 keeps the program minimal; more answers "what does
 * this mechanism cost next to a program that does something?".
 *
 * The steps cost the same from the first: N % WORK_BLOCK of them are
 * unrolled copies behind branches on N, which the verifier knows (frozen
 * .rodata) and so hard-wires away for a privileged load, leaving straight
 * code; whole blocks run in a loop, whose exit branch (a mispredict, some
 * 4 ns, measured) is only there from WORK_BLOCK steps on. A plain loop of
 * N steps cost that mispredict at every N, 30% of raw_tp-loop's cost at
 * N = 5. x starts from a constant, not a load, for the same reason.
 */
const volatile __u32 prog_work = 0;

#define WORK_BLOCK 32
#define WORK_STEP(x)                      \
	do {                              \
		(x) += 1;                 \
		asm volatile("" : "+r"(x)); \
	} while (0)

/*
 * How the comm and call triggers' programs count a hit while the switch
 * says EXTRA_COUNT (src/measure/settings/options.rs, --counting): COUNT_PLAIN, the
 * least an exact count needs: their slot has one writer, the producer
 * thread, in its own context (producer_slot()), so a plain add cannot
 * lose a hit. COUNT_ATOMIC adds as upstream's bench does; COUNT_FILTER
 * only checks the thread. Frozen .rodata: the verifier knows the mode at
 * load (see count_hit()).
 */
const volatile __u32 counting = COUNT_PLAIN;

/*
 * The switch: what a comm or call program does beyond test_overhead's,
 * in the writable .bss that user space maps. EXTRA_COUNT for the lead-in
 * (and, under --counting every*, for the timed events too), EXTRA_WORK
 * under --prog-work, EXTRA_STACK under --stacktrace, 0 for the plain
 * timed events. Set between the lead-in and the timed events with no
 * syscall: same program, same link. Not .rodata: the verifier must not
 * know it.
 */
__u32 extra;

static __always_inline void add_one(__u64 *n, bool atomic)
{
	/*
	 * Upstream's inc_counter() uses __sync_add_and_fetch, a fetching
	 * atomic that kernels before 5.12 refuse ("BPF_STX uses reserved
	 * fields"); an add whose result is unused is the plain BPF_XADD every
	 * kernel takes.
	 */
	if (atomic)
		__sync_fetch_and_add(n, 1);
	else
		*n += 1;
}

/* --prog-work's steps; the result goes to *sink, when given. */
static __always_inline void work(__u64 *sink)
{
	__u32 n = prog_work < MAX_PROG_WORK ? prog_work : MAX_PROG_WORK;
	__u32 blocks = n / WORK_BLOCK, rest = n % WORK_BLOCK;
	__u64 x = 0;

	for (__u32 b = 0; b < blocks && b < MAX_PROG_WORK / WORK_BLOCK; b++) {
#pragma unroll
		for (int j = 0; j < WORK_BLOCK; j++)
			WORK_STEP(x);
	}
#pragma unroll
	for (__u32 j = 0; j < WORK_BLOCK - 1; j++)
		if (j < rest)
			WORK_STEP(x);
	if (sink)
		*sink = x;
}

static __always_inline void count_in(struct counter *c, bool atomic)
{
	add_one(&c->hits, atomic);
	if (prog_work)
		work(&c->sink);
}

static __always_inline void count_hit(void)
{
	int slot = producer_slot();

	/* The mode is known at load: the verifier keeps one way. */
	if (slot >= 0 && counting != COUNT_FILTER)
		count_in(&counters[slot & (MAX_SLOTS - 1)], counting == COUNT_ATOMIC);
}

/*
 * --stacktrace, as upstream's bench option: every hit also takes the
 * kernel stack (bpf_get_stack, 128 entries, into a per-CPU buffer), the
 * most common thing a real tracing program does. Frozen .rodata: off, the
 * verifier drops the call, but not the load of the flag: so a comm or call
 * program takes it in extras(), which the plain timed events never run,
 * and the loop's before its count, where ctx need not outlive a call.
 */
const volatile __u32 stacktrace = 0;

typedef __u64 stack_trace_t[128];

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, stack_trace_t);
} stack_heap SEC(".maps");

/* Its own subprogram: its stack slot and the ctx it keeps stay out of the
 * caller's frame, which would pay for them on every hit. */
static __attribute__((noinline)) int stack_now(void *ctx)
{
	__u32 zero = 0;
	__u64 *buf;

	buf = bpf_map_lookup_elem(&stack_heap, &zero);
	if (buf)
		bpf_get_stack(ctx, buf, sizeof(stack_trace_t), 0);
	return 0;
}

static __always_inline void take_stack(void *ctx)
{
	if (stacktrace)
		stack_now(ctx);
}

/*
 * What the switch asks for, as a subprogram of its own: its registers are
 * saved in its own prologue, where they cost only the events that run
 * it, not in the program's, where they would cost every event. It
 * returns `ret`, so the caller can end on the call and keep nothing
 * across it, and takes ctx first, in the register the program got it in.
 */
static __attribute__((noinline)) int extras(void *ctx, int ret)
{
	take_stack(ctx);
	if (extra & EXTRA_COUNT)
		count_hit();
	else if (prog_work)
		/* No sink: the steps' empty asm keeps them (a store would
		 * bounce one cache line between producers). */
		work(0);
	/* Opaque, or clang keeps ret across the call in a saved register. */
	asm volatile("" : "+r"(ret));
	return ret;
}

/*
 * What every comm and call program ends with: `ret`, its value as
 * test_overhead's program computes it, after the extras the switch asks
 * for (the stack under --stacktrace among them). With none, one load of
 * the switch and one branch: all it adds (3 BPF instructions).
 */
#define RETURN_AFTER_EXTRAS(ret)                                                         \
	do {                                                                     \
		int ret_ = (ret);                                                \
		if (extra)                                                       \
			return extras(ctx, ret_);                                \
		return ret_;                                                     \
	} while (0)

/*
 * The kernel loop counts as upstream's bench does, whatever --counting,
 * and takes the stack (first: see take_stack()).
 */
static __always_inline void count_loop_hit(void *ctx)
{
	int slot;

	take_stack(ctx);
	slot = driver_slot();
	if (slot >= 0)
		count_in(&counters[slot & (MAX_SLOTS - 1)], true);
}

/*
 * Session programs (kprobe.session, uprobe.session) run on entry and, when
 * the entry returns 0, on exit too. The entry counts the hit and leaves a
 * mark in the session cookie; the exit counts the marks it finds, so user
 * space can check that every entry had its exit, and its own cookie.
 */
extern bool bpf_session_is_return___noctx(void) __ksym __weak;
extern __u64 *bpf_session_cookie___noctx(void) __ksym __weak;
/*
 * Newer kernels (7.x here) take the program's context. libbpf resolves the
 * flavour whose prototype matches this kernel (a ___suffix is dropped for
 * the lookup) and leaves the other unresolved.
 */
extern bool bpf_session_is_return___ctx(void *ctx) __ksym __weak;
extern __u64 *bpf_session_cookie___ctx(void *ctx) __ksym __weak;

#define SESSION_MARK 0x5e55104eULL

/* Sessions count under every --counting, filter and none too: their check needs it. */
static __always_inline int session_hit(void *ctx, int slot, bool atomic)
{
	struct counter *c;
	__u64 *cookie;
	bool is_return;

	if (slot < 0)
		return 0;
	c = &counters[slot & (MAX_SLOTS - 1)];
	if (bpf_ksym_exists(bpf_session_cookie___ctx)) {
		cookie = bpf_session_cookie___ctx(ctx);
		is_return = bpf_session_is_return___ctx(ctx);
	} else {
		cookie = bpf_session_cookie___noctx();
		is_return = bpf_session_is_return___noctx();
	}
	if (!is_return) {
		*cookie = SESSION_MARK;
		count_in(c, atomic);
		take_stack(ctx);
		return 0;
	}
	if (*cookie == SESSION_MARK)
		add_one(&c->exits, atomic);
	return 0;
}

/*
 * Comm-write trigger: write(/proc/self/comm) -> __set_task_comm(). Where
 * test_overhead has the mechanism, what RETURN_AFTER_EXTRAS() returns is its
 * program's: kprobe returns !tsk, kretprobe the return value, raw_tp
 * !ctx->args[0], fentry and fexit 0. The others return 0, tp after the
 * same one load from its event as raw_tp (its first field past the
 * common ones: a tracepoint program may not read those).
 */

SEC("?kprobe/__set_task_comm")
int prog_kprobe(struct pt_regs *ctx)
{
	RETURN_AFTER_EXTRAS(!PT_REGS_PARM1(ctx));
}

SEC("?kretprobe/__set_task_comm")
int prog_kretprobe(struct pt_regs *ctx)
{
	RETURN_AFTER_EXTRAS(PT_REGS_RC(ctx));
}

SEC("?kprobe.multi/__set_task_comm")
int prog_kprobe_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?kretprobe.multi/__set_task_comm")
int prog_kretprobe_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?kprobe.session/__set_task_comm")
int prog_kprobe_session(void *ctx)
{
	return session_hit(ctx, producer_slot(), counting == COUNT_ATOMIC);
}

SEC("?raw_tp/task_rename")
int prog_raw_tp(struct bpf_raw_tracepoint_args *ctx)
{
	RETURN_AFTER_EXTRAS(!ctx->args[0]);
}

SEC("?tp/task/task_rename")
int prog_tp(void *ctx)
{
	RETURN_AFTER_EXTRAS(!*(volatile __u32 *)(ctx + 8));
}

SEC("?tp_btf/task_rename")
int prog_tp_btf(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?fentry/__set_task_comm")
int prog_fentry(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?fexit/__set_task_comm")
int prog_fexit(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

/* fsession (7.3): one trampoline program on entry and exit, counted as
 * the kprobe sessions are. */
SEC("?fsession/__set_task_comm")
int prog_fsession(void *ctx)
{
	return session_hit(ctx, producer_slot(), counting == COUNT_ATOMIC);
}

/*
 * Tracing programs on many functions (7.3), here on __set_task_comm
 * alone: libbpf 1.7 knows no such section, so user space sets their type
 * and attach type before load and makes their link itself
 * (src/measure/kernel/tracing_multi.rs); the hook is given then.
 */
SEC("?fentry.multi")
int prog_fentry_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?fexit.multi")
int prog_fexit_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?fsession.multi")
int prog_fsession_multi(void *ctx)
{
	return session_hit(ctx, producer_slot(), counting == COUNT_ATOMIC);
}

/*
 * fmod_ret cannot target __set_task_comm (upstream dropped that test in
 * 2020): the verifier lets BPF_MODIFY_RETURN attach only to functions on the
 * error-injection list and to security_* LSM hooks, else "... is not
 * modifiable". security_file_permission() is an LSM hook that the same comm
 * write reaches once per write() (vfs_write -> rw_verify_area). Returning 0
 * keeps the hook's own verdict, so behaviour is unchanged.
 */
SEC("?fmod_ret/security_file_permission")
int prog_fmod_ret(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

/*
 * The BPF LSM's own hook in that security_file_permission(): reached by
 * the same write once, where the kernel boots with bpf among its LSMs
 * (lsm=...,bpf). Returning 0 allows, as the hook would.
 */
SEC("?lsm/file_permission")
int prog_lsm(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

/* User-function trigger: attached by symbol to the uprobe targets. */

SEC("?uprobe")
int prog_uprobe(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?uretprobe")
int prog_uretprobe(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?uprobe.multi")
int prog_uprobe_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?uretprobe.multi")
int prog_uretprobe_multi(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

SEC("?uprobe.session")
int prog_uprobe_session(void *ctx)
{
	return session_hit(ctx, producer_slot(), counting == COUNT_ATOMIC);
}

/* Attached to the binary's USDT note (USDT_PROVIDER and the target's USDT name in
 * src/measure/mechanism/trigger.rs). */
SEC("?usdt")
int prog_usdt(void *ctx)
{
	RETURN_AFTER_EXTRAS(0);
}

/*
 * The batched in-kernel trigger, after upstream's progs/trigger_bench.c:
 * a driver run by BPF_PROG_TEST_RUN loops batch_iters times over a kernel
 * function, so one syscall fires batch_iters events and the syscall's own
 * cost and noise nearly vanish from the figure. raw_tp test runs refuse
 * `repeat`, hence the loop in BPF. Each driver returns its iteration
 * count, so user space can tell that it really ran.
 */
const volatile __u32 batch_iters = 100;


/*
 * A driver runs only inside our own BPF_PROG_TEST_RUN, on its producer's
 * CPU: no thread check needed. A count only, as upstream's inc_counter()
 * but fetch-less (see count_in(); --prog-work is the attached programs'
 * extra work).
 */
static __always_inline void count_driver(void)
{
	__sync_fetch_and_add(&counters[bpf_get_smp_processor_id() & (MAX_SLOTS - 1)].hits, 1);
}

/* Marks this CPU's driver as running, for driver_slot(). */
static __always_inline void set_driving(__u32 on)
{
	counters[bpf_get_smp_processor_id() & (MAX_SLOTS - 1)].driving = on;
}

/* Fires bpf_get_numa_node_id(): kprobe, kretprobe, fentry, fexit. */
SEC("?raw_tp")
int prog_driver_helper(void *ctx)
{
	__u32 i;

	set_driving(1);
	for (i = 0; i < batch_iters; i++) {
		(void)bpf_get_numa_node_id();
	}
	set_driving(0);
	return i;
}

/*
 * Fires the kernel's own kfunc bpf_modify_return_test_tp() (net/bpf/
 * test_run.c, 6.10+), which fires the bpf_test_run:bpf_trigger_tp
 * tracepoint: raw_tp, tp, tp_btf and fmod_ret. Weak, so the object still
 * loads where the kfunc does not exist.
 */
extern int bpf_modify_return_test_tp(int nonce) __ksym __weak;

SEC("?raw_tp")
int prog_driver_kfunc(void *ctx)
{
	__u32 i;

	set_driving(1);
	for (i = 0; i < batch_iters; i++) {
		(void)bpf_modify_return_test_tp(0);
	}
	set_driving(0);
	return i;
}

/*
 * The bases: each driver counting its own iterations, with nothing
 * attached. The helper's is upstream's trigger_kernel_count (its
 * trig-kernel-count) but for the fetch-less add; the same loop for the
 * kfunc.
 */
SEC("?raw_tp")
int prog_count_helper(void *ctx)
{
	__u32 i;

	for (i = 0; i < batch_iters; i++) {
		count_driver();
		(void)bpf_get_numa_node_id();
	}
	return i;
}

SEC("?raw_tp")
int prog_count_kfunc(void *ctx)
{
	__u32 i;

	for (i = 0; i < batch_iters; i++) {
		count_driver();
		(void)bpf_modify_return_test_tp(0);
	}
	return i;
}

SEC("?kprobe/bpf_get_numa_node_id")
int prog_loop_kprobe(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?kretprobe/bpf_get_numa_node_id")
int prog_loop_kretprobe(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?kprobe.multi/bpf_get_numa_node_id")
int prog_loop_kprobe_multi(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?kretprobe.multi/bpf_get_numa_node_id")
int prog_loop_kretprobe_multi(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

/*
 * kprobe.multi on every function the kernel lets fprobe attach to
 * (upstream's kprobe-multi-all), attached by name from user space: the
 * program runs on each of them, wherever it is called, and counts only
 * the loop's function, known by its address (from /proc/kallsyms). What
 * it adds to kprobe.multi-loop is the kernel finding, on that function's
 * entry or exit, its probe among those of tens of thousands of functions.
 */
const volatile __u64 loop_fn_ip;

static __always_inline void count_loop_hit_at(void *ctx)
{
	if (bpf_get_func_ip(ctx) == loop_fn_ip)
		count_loop_hit(ctx);
}

SEC("?kprobe.multi")
int prog_loop_kprobe_multi_all(void *ctx)
{
	count_loop_hit_at(ctx);
	return 0;
}

SEC("?kretprobe.multi")
int prog_loop_kretprobe_multi_all(void *ctx)
{
	count_loop_hit_at(ctx);
	return 0;
}

SEC("?kprobe.session/bpf_get_numa_node_id")
int prog_loop_kprobe_session(void *ctx)
{
	return session_hit(ctx, driver_slot(), true);
}

SEC("?fentry/bpf_get_numa_node_id")
int prog_loop_fentry(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?fexit/bpf_get_numa_node_id")
int prog_loop_fexit(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?fsession/bpf_get_numa_node_id")
int prog_loop_fsession(void *ctx)
{
	return session_hit(ctx, driver_slot(), true);
}

SEC("?fentry.multi")
int prog_loop_fentry_multi(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?fexit.multi")
int prog_loop_fexit_multi(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?fsession.multi")
int prog_loop_fsession_multi(void *ctx)
{
	return session_hit(ctx, driver_slot(), true);
}

/* The same on every function, as kprobe.multi-all-loop: counted on the
 * loop's function only. */
SEC("?fentry.multi")
int prog_loop_fentry_multi_all(void *ctx)
{
	count_loop_hit_at(ctx);
	return 0;
}

SEC("?fexit.multi")
int prog_loop_fexit_multi_all(void *ctx)
{
	count_loop_hit_at(ctx);
	return 0;
}

SEC("?fsession.multi")
int prog_loop_fsession_multi_all(void *ctx)
{
	if (bpf_get_func_ip(ctx) != loop_fn_ip)
		return 0;
	return session_hit(ctx, driver_slot(), true);
}

SEC("?raw_tp/bpf_trigger_tp")
int prog_loop_raw_tp(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?tp/bpf_test_run/bpf_trigger_tp")
int prog_loop_tp(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

SEC("?tp_btf/bpf_trigger_tp")
int prog_loop_tp_btf(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

/* bpf_modify_return_test_tp is on the error-injection list: modifiable. */
SEC("?fmod_ret/bpf_modify_return_test_tp")
int prog_loop_fmod_ret(void *ctx)
{
	count_loop_hit(ctx);
	return 0;
}

/*
 * The base of a user's XDP programs (--object), run by BPF_PROG_TEST_RUN
 * as theirs are: the least XDP program, the default verdict. Not counted:
 * the test run itself says it ran the program as often as asked.
 */
SEC("?xdp")
int prog_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* The same for tc classifiers: TC_ACT_OK. */
SEC("?tc")
int prog_tc_ok(struct __sk_buff *skb)
{
	return 0;
}

/* And for socket filters: keep the whole packet. */
SEC("?socket")
int prog_socket_all(struct __sk_buff *skb)
{
	return -1;
}

/* And for flow dissectors: the dissection done, no flow keys filled. */
SEC("?flow_dissector")
int prog_flow_dissector_ok(struct __sk_buff *skb)
{
	return BPF_OK;
}

/*
 * And for syscall programs (sleepable, 5.14+), run by one BPF_PROG_TEST_RUN
 * call each, with no context: nothing to do.
 */
SEC("?syscall")
int prog_syscall_zero(void *ctx)
{
	return 0;
}
