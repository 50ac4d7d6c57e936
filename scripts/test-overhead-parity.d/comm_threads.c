// SPDX-License-Identifier: GPL-2.0-only
/*
 * NOT upstream: the comm-write base timed from two threads, for
 * scripts/test-overhead-parity. test_overhead writes its comm from the
 * main thread of a single-threaded process; bpf-overhead from a thread of
 * its own (as cargo test's tests run), with a file table of its own. Each
 * writes test_overhead's buffer 100000 times untimed, then 100000 timed,
 * pinned to CPU 0, and prints test_overhead's line for it:
 *   task_rename base-leader	NK events per sec
 *   task_rename base-thread	NK events per sec
 * and a third, the thread renaming the main thread (/proc/self/comm):
 * whose task is renamed, or who writes, makes the difference:
 *   task_rename base-thread-renames-leader	NK events per sec
 * The name written is restored after each.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CNT 100000

static unsigned long long time_get_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static const char *path = "/proc/thread-self/comm";

static void *writes(void *label)
{
	char buf[] = "test_overhead";
	char comm[16] = {};
	unsigned long long start;
	cpu_set_t cpus;
	int fd, i, round;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
		perror("comm_threads: setup");
		exit(1);
	}
	fd = open(path, O_RDWR | O_TRUNC);
	if (fd < 0 || read(fd, comm, sizeof(comm) - 1) < 0) {
		perror("comm_threads: open or read the comm");
		exit(1);
	}
	for (round = 0; round < 2; round++) {
		start = time_get_ns();
		for (i = 0; i < MAX_CNT; i++) {
			if (write(fd, buf, sizeof(buf)) < 0) {
				perror("comm_threads: write");
				exit(1);
			}
		}
	}
	printf("task_rename %s\t%lluK events per sec\n", (const char *)label,
	       MAX_CNT * 1000000ull / (time_get_ns() - start));
	close(fd);
	/* the name as it was (read ends it with a newline) */
	comm[strcspn(comm, "\n")] = 0;
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, comm, strlen(comm)) < 0)
		perror("comm_threads: restoring the name");
	close(fd);
	return NULL;
}

static void *from_thread(void *label)
{
	/* bpf-overhead's measuring thread leaves the shared file table too */
	if (unshare(CLONE_FILES)) {
		perror("comm_threads: unshare(CLONE_FILES)");
		exit(1);
	}
	return writes(label);
}

int main(void)
{
	pthread_t thread;

	/* the leader first, while the process has one thread */
	writes("base-leader");
	fflush(stdout);
	if (pthread_create(&thread, NULL, from_thread, "base-thread") || pthread_join(thread, NULL)) {
		fprintf(stderr, "comm_threads: no thread\n");
		return 1;
	}
	fflush(stdout);
	path = "/proc/self/comm";
	if (pthread_create(&thread, NULL, from_thread, "base-thread-renames-leader") ||
	    pthread_join(thread, NULL)) {
		fprintf(stderr, "comm_threads: no thread\n");
		return 1;
	}
	return 0;
}
