# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Sourced by the bpf_overhead collection's tests (POSIX sh: a kernel CI root
# file system may have only busybox). Sets the suite's strict mode from the
# kernel's config and the collection's declared absences, and says so.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

here=$(cd "$(dirname "$0")" && pwd)

# needs_root TEST: a KTAP document of one skipped result unless root.
needs_root() {
	[ "$(id -u)" = 0 ] && return 0
	printf 'KTAP version 1\n1..1\nok 1 %s # SKIP needs root (BPF programs, tracefs)\n' "$1"
	exit $KSFT_SKIP
}

# The running kernel's config, if it can be read: /proc/config.gz, else
# /boot/config-$(uname -r).
kernel_config() {
	if [ -r /proc/config.gz ]; then
		gzip -dc /proc/config.gz
	elif [ -r "/boot/config-$(uname -r)" ]; then
		cat "/boot/config-$(uname -r)"
	else
		return 1
	fi
}

# Strict mode (BPF_OVERHEAD_STRICT=1: a skip fails unless declared absent)
# when the job asks for it, or when the kernel's config has every option of
# the collection's config fragment; the declared absences for this
# kernel's series from absent/ (copied from the project's ci/absent) unless
# the job names its own list.
set_expectations() {
	if [ -z "${BPF_OVERHEAD_STRICT:-}" ]; then
		if cfg=$(kernel_config 2>/dev/null); then
			missing=$(grep '^CONFIG_' "$here/config" | while read -r opt; do
				echo "$cfg" | grep -qx "$opt" || echo "${opt%%=*}"
			done)
			if [ -z "$missing" ]; then
				export BPF_OVERHEAD_STRICT=1
				echo "# strict: the kernel's config has every option of config"
			else
				echo "# not strict: the kernel's config lacks" $missing
			fi
		else
			echo "# not strict: the kernel's config cannot be read (/proc/config.gz, /boot/config-$(uname -r))"
		fi
	fi
	if [ "${BPF_OVERHEAD_STRICT:-}" = 1 ] && [ -z "${BPF_OVERHEAD_ABSENT:-}" ]; then
		series=$(uname -r | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
		case $(uname -m) in
		x86_64) lists="absent/$series" ;;
		aarch64) lists="absent/arm64/$series absent/arm64/default" ;;
		*) lists= ;;
		esac
		for f in $lists; do
			if [ -f "$here/$f" ]; then
				export BPF_OVERHEAD_ABSENT="$here/$f"
				break
			fi
		done
	fi
	echo "# BPF_OVERHEAD_STRICT=${BPF_OVERHEAD_STRICT:-} BPF_OVERHEAD_ABSENT=${BPF_OVERHEAD_ABSENT:-}"
}

# The verdict on a KTAP document: 1 unless it has as many results as its
# plan and none failed; 4 when every result is a skip; else 0.
ktap_verdict() {
	awk '
		/^1\.\.[0-9]+$/ && !plan { plan = substr($0, 4) + 0 }
		/^not ok [0-9]+ / { n++; fail++; next }
		/^ok [0-9]+ / { n++; if ($0 ~ / # SKIP/) skip++ }
		END {
			if (!plan || n != plan || fail) exit 1
			if (skip == n) exit 4
			exit 0
		}' "$1"
}

# finish TEST RC: after a suite test's KTAP, its `test result:` lines as
# comments and, when it exited non-zero, the end of its log ($tmp/log);
# then the exit status its KTAP ($tmp/ktap) says.
finish() {
	grep '^test result:' "$tmp/log" | sed 's/^/# /'
	if [ "$2" -ne 0 ]; then
		echo "# $1 exit $2:"
		sed 's/^/# /' "$tmp/log" | tail -n 60
		exit $KSFT_FAIL
	fi
	ktap_verdict "$tmp/ktap"
}
