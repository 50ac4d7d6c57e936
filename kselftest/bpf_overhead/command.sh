#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A short run of the bpf-overhead command over every mechanism, its own
# KTAP (--format ktap). Its exit status is kselftest's: 0, 4 (nothing
# measured: every mechanism skipped), and KSFT_FAIL for any other (69: a
# mechanism could not run; docs/gate.md lists them).
. "$(dirname "$0")/common.sh"
needs_root command
set_expectations
tmp=$(mktemp -d) || exit $KSFT_FAIL
trap 'rm -rf "$tmp"' EXIT
"$here/bpf-overhead" --iterations 2000 --repeat 1 --no-prog-stats --format ktap 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
case $rc in
0 | 4) exit $rc ;;
*)
	echo "# bpf-overhead exit $rc"
	exit $KSFT_FAIL
	;;
esac
