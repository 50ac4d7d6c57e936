# shellcheck shell=bash
# Upstream's selftests sources, from a Debian linux-source-X.Y package,
# for scripts/upstream-parity and scripts/test-overhead-parity, and
# kselftest's own files for `cargo xtask kselftest` and
# scripts/check-kselftest (kselftest_sources). Sourced; the caller defines
# say() and die(), and may call lock/unlock around CPU-heavy steps
# (PARITY_LOCK). Run as `scripts/lib/linux-source.sh --kselftest`, it
# fetches kselftest's files and prints the tree's directory.
#
# The package is fetched with apt-get download through a private apt
# configuration (sources list, lists and caches under
# ~/.cache/bpf-overhead/upstream-parity/apt; the host's /etc/apt and
# /var/lib/apt are neither read nor written), never installed. Only the
# files below are unpacked, and kept in
# ~/.cache/bpf-overhead/upstream-parity/src/<package>_<version>.

ls_cache=${XDG_CACHE_HOME:-$HOME/.cache}/bpf-overhead/upstream-parity
ls_apt_dir=$ls_cache/apt
ls_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# linux-source-7.x is in trixie-backports and sid.
ls_suites=(trixie-backports sid)

# What both scripts need from the package's tarball (paths relative to
# its top directory): the trigger benchmarks (bench) and test_overhead,
# libbpf (tools/lib/bpf) and tools' headers and build glue.
ls_members=(
	Makefile scripts/bpf_doc.py tools/testing/selftests/bpf/Makefile
	tools/lib/bpf tools/include tools/arch/x86/include tools/build tools/scripts
	tools/testing/selftests/bpf/{bench.c,bench.h,benchs/bench_trigger.c}
	tools/testing/selftests/bpf/progs/{trigger_bench.c,bpf_misc.h}
	tools/testing/selftests/bpf/{bpf_util.h,testing_helpers.c,testing_helpers.h}
	tools/testing/selftests/bpf/{trace_helpers.c,trace_helpers.h,usdt.h,usdt_1.c,usdt_2.c}
	tools/testing/selftests/bpf/{prog_tests/test_overhead.c,progs/test_overhead.c}
)

lock_fd=
lock() { # the PARITY_LOCK, if set, until unlock
	[[ -n ${PARITY_LOCK:-} ]] || return 0
	exec {lock_fd}>>"$PARITY_LOCK"
	flock "$lock_fd"
}
unlock() {
	[[ -n $lock_fd ]] || return 0
	exec {lock_fd}>&-
	lock_fd=
}

# The private apt: configuration, sources list, lists and caches; exports
# APT_CONFIG for the apt-get and apt-cache calls that follow.
apt_setup() {
	local d=$ls_apt_dir s
	[[ -e $ls_keyring ]] || die "needs $ls_keyring: apt-get install -y debian-archive-keyring"
	mkdir -p "$d"/etc/{apt.conf.d,sources.list.d,preferences.d,trusted.gpg.d} \
		"$d"/state/lists/partial "$d"/cache/archives/partial "$d"/log
	[[ -e $d/state/status ]] || : >"$d/state/status"
	cat >"$d/etc/apt.conf" <<-EOF
		Dir::Etc "$d/etc";
		Dir::Etc::main "apt.conf";
		Dir::Etc::Parts "apt.conf.d";
		Dir::Etc::SourceList "sources.list";
		Dir::Etc::SourceParts "sources.list.d";
		Dir::Etc::Preferences "preferences";
		Dir::Etc::PreferencesParts "preferences.d";
		Dir::Etc::Trusted "trusted.gpg";
		Dir::Etc::TrustedParts "trusted.gpg.d";
		Dir::State "$d/state";
		Dir::State::status "$d/state/status";
		Dir::Cache "$d/cache";
		Dir::Cache::srcpkgcache "";
		Dir::Log "$d/log";
		APT::Architecture "amd64";
		APT::Architectures { "amd64"; };
		Acquire::Languages "none";
		Acquire::GzipIndexes "true";
		APT::Sandbox::User "root";
	EOF
	# Valid-Until is not checked: a mirror that lags a few weeks still
	# serves signed packages.
	for s in "${ls_suites[@]}"; do
		echo "deb [signed-by=$ls_keyring check-valid-until=no] http://deb.debian.org/debian $s main"
	done >"$d/etc/sources.list.new"
	if cmp -s "$d/etc/sources.list.new" "$d/etc/sources.list"; then
		rm "$d/etc/sources.list.new"
	else
		mv "$d/etc/sources.list.new" "$d/etc/sources.list"
		rm -f "$d/state/lists/.updated"
	fi
	export APT_CONFIG=$d/etc/apt.conf LC_ALL=C
	# Lists older than a day are refreshed; older lists do if that fails.
	local stamp=$d/state/lists/.updated
	if [[ -z $(find "$stamp" -mmin -1440 2>/dev/null) ]]; then
		say "apt-get update (private lists in $d)"
		if apt-get -qq update 2>"$d/log/update.err" && ! grep -q '^E:' "$d/log/update.err"; then
			touch "$stamp"
		elif [[ -e $stamp ]]; then
			say "apt-get update failed ($(grep -m1 '^[EW]:' "$d/log/update.err" || true)): using older lists"
		else
			die "apt-get update failed: $(grep -m1 '^[EW]:' "$d/log/update.err" || tail -n 1 "$d/log/update.err")"
		fi
	fi
}

# pick_source [linux-source-X.Y]: sets pkg (the given one, else the newest
# linux-source-X.Y apt knows) and version (its candidate).
pick_source() {
	pkg=${1:-}
	if [[ -z $pkg ]]; then
		pkg=$(apt-cache pkgnames linux-source- | grep -E '^linux-source-[0-9]+\.[0-9]+$' | sort -V | tail -n 1 || true)
		[[ -n $pkg ]] || die "apt knows no linux-source-X.Y package in ${ls_suites[*]}"
	fi
	version=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ { print $2 }')
	[[ -n $version && $version != "(none)" ]] || die "apt knows no $pkg in ${ls_suites[*]}"
}

# Unpacks ls_members of $pkg=$version into the cache unless they are
# there (its .complete lists them); sets src. ls_tag names another set of
# members (its own directory), ls_tar_opts are tar's options for them.
ls_tag=
ls_tar_opts=()
fetch_sources() {
	src=$ls_cache/src/${pkg}_$version${ls_tag:+-$ls_tag}
	local want
	want=$(printf '%s\n' "${ls_tar_opts[@]}" "${ls_members[@]}")
	[[ -e $src/.complete && $(cat "$src/.complete") == "$want" ]] && return
	local debs=$ls_cache/debs
	rm -rf "$src" "$debs"
	mkdir -p "$src" "$debs"
	say "fetching $pkg $version (apt-get download, not installed)"
	(cd "$debs" && apt-get -qq download "$pkg=$version" >/dev/null) ||
		die "apt-get download $pkg=$version failed"
	say "unpacking the selftests' sources from it"
	lock
	dpkg-deb --fsys-tarfile "$debs"/"${pkg}"_*.deb |
		tar -xO "./usr/src/$pkg.tar.xz" |
		xz -dc |
		tar -x -C "$src" --strip-components=1 "${ls_tar_opts[@]}" "${ls_members[@]/#/$pkg/}" ||
		die "$pkg $version lacks some of: ${ls_members[*]}"
	unlock
	rm -rf "$debs"
	echo "$want" >"$src/.complete"
}

# The kernel version of the unpacked tree, from its top Makefile: 7.3.1.
source_kernel_version() {
	awk -F' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 } $1 == "SUBLEVEL" { s = $2 }
		END { if (v != "") printf "%s.%s.%s\n", v, p, s }' "$src/Makefile"
}

# build_libbpf DIR: libbpf.a and its headers from $src's tools/lib/bpf, as
# the selftests build it (output elsewhere, -g -O2), into DIR/libbpf/libbpf.a
# and DIR/root/include.
build_libbpf() {
	local b=$1
	mkdir -p "$b/libbpf"
	make -s -j"$(nproc)" -C "$src/tools/lib/bpf" OUTPUT="$b/libbpf/" DESTDIR="$b/root" prefix= \
		EXTRA_CFLAGS="-g -O2" "$b/libbpf/libbpf.a" install_headers >"$b/libbpf.log" 2>&1 ||
		die "libbpf did not build: $(grep -m1 -i 'error' "$b/libbpf.log" || tail -n 1 "$b/libbpf.log")"
}

# bpf_clang DIR SOURCE OBJECT: SOURCE (a selftests progs/ file) to a BPF
# object with the selftests Makefile's BPF_CFLAGS and CLANG_SYS_INCLUDES
# (-g -O2 --target=bpfel -mcpu=v3), against DIR/vmlinux.h (of the running
# kernel, by bpftool) and DIR/root/include (build_libbpf's headers).
bpf_clang() {
	local b=$1 sb=$src/tools/testing/selftests/bpf sys
	[[ -s $b/vmlinux.h ]] || bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$b/vmlinux.h"
	sys=$(clang -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./s| \(/.*\)|-idirafter \1|p')
	# shellcheck disable=SC2086 # $sys is a list of flags
	clang -g -Wall -Werror -D__TARGET_ARCH_x86 -mlittle-endian \
		-I"$b" -I"$b/root/include" -I"$sb" -I"$src/tools/include/uapi" -I"$src/tools/include" \
		-std=gnu11 -fno-strict-aliasing -fms-extensions \
		-Wno-compare-distinct-pointer-types -Wno-initializer-overrides $sys \
		-O2 --target=bpfel -mcpu=v3 -c "$2" -o "$3"
}

# kselftest's own files, as `make -C tools/testing/selftests install` needs
# them: every file at the top of tools/testing/selftests (its Makefile,
# lib.mk, run_kselftest.sh, gen_kselftest_tar.sh, ...) and in its
# kselftest/ (runner.sh, prefix.pl, ktap_helpers.sh, ...), the top Makefile,
# scripts/ and tools/scripts/ build glue, and tools/testing/kunit's parser.
# No test collection. Sets pkg, version and src.
kselftest_sources() {
	apt_setup
	pick_source "${1:-}"
	ls_tag=kselftest
	# Only the members named (a directory's files, not its subdirectories).
	ls_tar_opts=(--wildcards --no-wildcards-match-slash --no-recursion)
	ls_members=(Makefile 'scripts/*' 'tools/scripts/*' 'tools/testing/selftests/*'
		'tools/testing/selftests/kselftest/*' 'tools/testing/kunit/*')
	fetch_sources
	[[ -e $src/tools/testing/selftests/run_kselftest.sh && -e $src/tools/testing/selftests/kselftest/runner.sh ]] ||
		die "$pkg $version has no tools/testing/selftests/run_kselftest.sh"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	say() { echo "linux-source: $*" >&2; }
	die() {
		say "error: $*"
		exit 1
	}
	[[ ${1:-} == --kselftest ]] || die "usage: scripts/lib/linux-source.sh --kselftest [linux-source-X.Y]"
	kselftest_sources "${2:-}"
	echo "$src"
fi
