#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bpf-overhead's cleanup tests (tests/cleanup.rs, the static suite-cleanup):
# after every mechanism has run, and after a run that panics while
# attached, no BPF program, link, mount, thread name or affinity is left
# changed. libtest's results as KTAP; exit 0 or 1.
. "$(dirname "$0")/common.sh"
needs_root cleanup
set_expectations
tmp=$(mktemp -d) || exit $KSFT_FAIL
trap 'rm -rf "$tmp"' EXIT
"$here/suite-cleanup" --test-threads=1 >"$tmp/log" 2>&1
rc=$?
awk '
	/^test .* \.\.\. (ok|FAILED|ignored)$/ {
		n++
		if ($NF == "ok") r[n] = "ok " n " " $2
		else if ($NF == "ignored") r[n] = "ok " n " " $2 " # SKIP ignored"
		else r[n] = "not ok " n " " $2
	}
	END {
		print "KTAP version 1"
		print "1.." n
		for (i = 1; i <= n; i++) print r[i]
	}' "$tmp/log" >"$tmp/ktap"
cat "$tmp/ktap"
finish suite-cleanup $rc
