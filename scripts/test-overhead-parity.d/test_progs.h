/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A shim for tools/testing/selftests/bpf/test_progs.h: just what
 * prog_tests/test_overhead.c uses, so that the file builds unchanged as
 * part of a standalone program (scripts/test-overhead-parity). As in
 * test_progs, a failed check prints `<func>:FAIL:<tag> <message>` and marks
 * the test failed; passed checks print nothing (test_progs keeps them in
 * the test's log, shown with -v).
 */
#ifndef TEST_OVERHEAD_SHIM_TEST_PROGS_H
#define TEST_OVERHEAD_SHIM_TEST_PROGS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

void test__fail(void);

#define _CHECK(condition, tag, duration, format...) ({			\
	int __ret = !!(condition);					\
	int __save_errno = errno;					\
	(void)(duration);						\
	if (__ret) {							\
		test__fail();						\
		fprintf(stderr, "%s:FAIL:%s ", __func__, tag);		\
		fprintf(stderr, ##format);				\
		fprintf(stderr, "\n");					\
	}								\
	errno = __save_errno;						\
	__ret;								\
})

#define CHECK_FAIL(condition) ({					\
	int __ret = !!(condition);					\
	int __save_errno = errno;					\
	if (__ret) {							\
		test__fail();						\
		fprintf(stderr, "%s:FAIL:%d\n", __func__, __LINE__);	\
	}								\
	errno = __save_errno;						\
	__ret;								\
})

#define CHECK(condition, tag, format...)				\
	_CHECK(condition, tag, duration, format)

#define ASSERT_OK_PTR(ptr, name) ({					\
	const void *___res = (ptr);					\
	int ___err = libbpf_get_error(___res);				\
	bool ___ok = ___err == 0;					\
	if (!___ok) {							\
		test__fail();						\
		fprintf(stderr, "%s:FAIL:%s unexpected error: %d (errno %d)\n", \
			__func__, name, ___err, errno);			\
	}								\
	___ok;								\
})

#endif
