#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bpf-overhead's suite (tests/overhead.rs, the static suite-overhead): one
# test per mechanism, each attaching its BPF program, counting exactly one
# hit per event and detaching. Prints the suite's KTAP (one result per
# mechanism, skips with their reason); exit 0, 1 (a failure or results
# missing) or 4 (every mechanism skipped).
. "$(dirname "$0")/common.sh"
needs_root overhead
set_expectations
tmp=$(mktemp -d) || exit $KSFT_FAIL
trap 'rm -rf "$tmp"' EXIT
BPF_OVERHEAD_KTAP=$tmp/ktap "$here/suite-overhead" --test-threads=1 >"$tmp/log" 2>&1
rc=$?
if [ -s "$tmp/ktap" ]; then
	cat "$tmp/ktap"
else
	printf 'KTAP version 1\n1..1\nnot ok 1 overhead # no result written\n'
fi
finish suite-overhead $rc
