// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_overhead as a standalone program (scripts/test-overhead-parity).
 *
 * The kernel's tools/testing/selftests/bpf/prog_tests/test_overhead.c is
 * included unchanged (as prog_test_overhead.c), against test_progs.h (a
 * shim), so its time_get_ns(), test_task_rename() (the measuring loop:
 * 100000 writes of "test_overhead" to /proc/self/comm, and the line
 * `task_rename %s\t%lluK events per sec`), test_run() and setaffinity()
 * are upstream's own.
 *
 * main() replaces test_test_overhead() (compiled, never called): the same
 * steps in the same order, for the mechanisms this host has. Its kprobe and
 * kretprobe need CONFIG_KPROBES and its fentry and fexit BPF trampolines,
 * which the kernel may refuse; such programs are not loaded (autoload off)
 * and their runs are left out, where test_test_overhead would fail. With
 * --tp, one run NOT in upstream's test follows raw_tp's: tp, the same
 * program on the task_rename tracepoint (test_overhead_tp.c), timed by the
 * same test_run().
 *
 * Usage: test_overhead [--tp] [--all], from the directory that holds
 * test_overhead.bpf.o (and test_overhead_tp.bpf.o). --all keeps every
 * upstream mechanism, in upstream's order (for kernels that have them).
 */
#include "prog_test_overhead.c"

static int failed;

void test__fail(void)
{
	failed = 1;
}

static struct bpf_link *attach(const char *name, struct bpf_program *prog)
{
	if (!strcmp(name, "kprobe"))
		return bpf_program__attach_kprobe(prog, false, "__set_task_comm");
	if (!strcmp(name, "kretprobe"))
		return bpf_program__attach_kprobe(prog, true, "__set_task_comm");
	if (!strcmp(name, "raw_tp"))
		return bpf_program__attach_raw_tracepoint(prog, "task_rename");
	if (!strcmp(name, "tp"))
		return bpf_program__attach_tracepoint(prog, "task", "task_rename");
	return bpf_program__attach_trace(prog);
}

int main(int argc, char **argv)
{
	/* upstream's mechanisms in upstream's order, and their programs */
	static const char *const names[] = { "kprobe", "kretprobe", "raw_tp", "fentry", "fexit" };
	static const char *const progs[] = { "prog1", "prog2", "prog3", "prog4", "prog5" };
	struct bpf_program *prog[5], *tp_prog = NULL;
	struct bpf_object *obj, *tp_obj = NULL;
	bool with_tp = false, all = false;
	int i, err, duration = 0;
	char comm[16] = {};
	char tag[32];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tp"))
			with_tp = true;
		else if (!strcmp(argv[i], "--all"))
			all = true;
		else {
			fprintf(stderr, "usage: test_overhead [--tp] [--all]\n");
			return 2;
		}
	}

	if (CHECK_FAIL(prctl(PR_GET_NAME, comm, 0L, 0L, 0L)))
		return 1;

	obj = bpf_object__open_file("./test_overhead.bpf.o", NULL);
	if (!ASSERT_OK_PTR(obj, "obj_open_file"))
		return 1;
	for (i = 0; i < 5; i++) {
		prog[i] = bpf_object__find_program_by_name(obj, progs[i]);
		if (CHECK(!prog[i], "find_probe", "prog '%s' not found\n", progs[i]))
			goto cleanup;
		/* raw_tp alone unless --all */
		if (!all && strcmp(names[i], "raw_tp"))
			bpf_program__set_autoload(prog[i], false);
	}
	if (with_tp) {
		tp_obj = bpf_object__open_file("./test_overhead_tp.bpf.o", NULL);
		if (!ASSERT_OK_PTR(tp_obj, "obj_open_file tp")) {
			tp_obj = NULL;
			goto cleanup;
		}
		tp_prog = bpf_object__find_program_by_name(tp_obj, "prog3_tp");
		if (CHECK(!tp_prog, "find_probe", "prog 'prog3_tp' not found\n"))
			goto cleanup;
	}
	err = bpf_object__load(obj);
	if (CHECK(err, "obj_load", "err %d\n", err))
		goto cleanup;
	if (tp_obj) {
		err = bpf_object__load(tp_obj);
		if (CHECK(err, "obj_load", "tp: err %d\n", err))
			goto cleanup;
	}

	setaffinity();

	/* base line run */
	test_run("base");

	for (i = 0; i < 5; i++) {
		struct bpf_link *link;

		if (!all && strcmp(names[i], "raw_tp"))
			continue;
		link = attach(names[i], prog[i]);
		snprintf(tag, sizeof(tag), "attach_%s", names[i]);
		if (!ASSERT_OK_PTR(link, tag))
			goto cleanup;
		test_run(names[i]);
		bpf_link__destroy(link);

		if (tp_prog && !strcmp(names[i], "raw_tp")) {
			/* not upstream: tp, after raw_tp */
			link = attach("tp", tp_prog);
			if (!ASSERT_OK_PTR(link, "attach_tp"))
				goto cleanup;
			test_run("tp");
			bpf_link__destroy(link);
		}
	}

cleanup:
	prctl(PR_SET_NAME, comm, 0L, 0L, 0L);
	bpf_object__close(tp_obj);
	bpf_object__close(obj);
	return failed;
}
