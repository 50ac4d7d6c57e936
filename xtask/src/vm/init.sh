#!/bin/sh
# PID 1 of the vmtest initramfs (busybox sh), built by `cargo xtask vmtest`.
# Mounts the host root read-only over 9p under a tmpfs overlay (without overlayfs:
# read-only, tmpfs on /tmp, /var/tmp, /root), chroots into it,
# mounts the output share (9p tag "out") read-write when asked, runs $RUNDIR/job.sh, reports its exit status on the virtio-serial port
# "vmtest.status", powers off. It never exits: PID 1 exiting panics the kernel.
# On any setup error it powers off without a status, which the host reports as
# a failure.
/bin/busybox --install -s /bin
export PATH=/bin HOME=/
umask 022
# The kernel's boot messages went to the console (early output is the host's
# sign of life); from here on only errors, as with `quiet`.
dmesg -n 4

say() { echo "vmtest: $*"; }

halt_now() {
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger # in case poweroff failed
	sleep 10
}

die() {
	say "init: $*"
	halt_now
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# vmtest.rundir=... on the kernel command line: host dir holding job.sh;
# vmtest.out=...: where to mount the output share, if any.
rundir=
out=
tools=
for w in $(cat /proc/cmdline); do
	case $w in
	vmtest.rundir=*) rundir=${w#*=} ;;
	vmtest.out=*) out=${w#*=} ;;
	vmtest.tools=*) tools=${w#*=} ;;
	esac
done
[ -n "$rundir" ] || die "no vmtest.rundir= on the kernel command line"

# Modules the host resolved (dependency order, decompressed); built-ins are absent.
for m in $(cat /modules/order); do
	insmod "/modules/$m" || say "init: insmod $m failed"
done

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /mnt/lower ||
	die "cannot mount the host root over 9p (kernel needs 9P_FS, NET_9P_VIRTIO, VIRTIO_PCI)"
# Whole-root overlay: everything (target dir, /tmp, /root...) is writable in RAM,
# nothing reaches the host.
mount -t tmpfs -o mode=0755 tmpfs /mnt/rw
mkdir -p /mnt/rw/upper /mnt/rw/work
r=/newroot
if ! mount -t overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work overlay $r 2>/dev/null; then
	# No overlayfs (a kernel without OVERLAY_FS): the host root stays read-only,
	# with RAM where the job writes: /tmp, /var/tmp, /root (and /run, /dev/shm
	# below). The job's directory, under /tmp, is bound back from the host.
	say "init: no overlayfs (kernel lacks OVERLAY_FS): root read-only, tmpfs on /tmp /var/tmp /root"
	mount --bind /mnt/lower $r || die "cannot bind the host root to $r"
	mount -t tmpfs -o mode=1777 tmpfs $r/tmp || die "cannot mount tmpfs on /tmp"
	mount -t tmpfs -o mode=1777 tmpfs $r/var/tmp || die "cannot mount tmpfs on /var/tmp"
	mount -t tmpfs -o mode=0700 tmpfs $r/root || die "cannot mount tmpfs on /root"
	mkdir -p "$r$rundir" && mount --bind "/mnt/lower$rundir" "$r$rundir" ||
		die "cannot bind the job's directory $rundir"
fi

mount -t proc proc $r/proc
mount -t sysfs sysfs $r/sys
mount -t devtmpfs devtmpfs $r/dev
mkdir -p $r/dev/pts $r/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $r/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $r/dev/shm
mount -t tmpfs -o mode=0755 tmpfs $r/run
mount -t tracefs tracefs $r/sys/kernel/tracing || say "init: no tracefs"
mount -t debugfs debugfs $r/sys/kernel/debug || say "init: no debugfs"
mount -t bpf -o mode=0700 bpf $r/sys/fs/bpf || say "init: no bpffs"
mount -t cgroup2 cgroup2 $r/sys/fs/cgroup 2>/dev/null || true
if [ -n "$out" ]; then
	# Read-write, uncached: each write reaches the host before write(2) returns.
	mkdir -p "$r$out"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out "$r$out" ||
		die "cannot mount the output directory (9p tag out) read-write at $out"
	probe="$r$out/.vmtest-probe"
	{ : >"$probe" && rm -f "$probe"; } 2>/dev/null ||
		die "the output directory (9p tag out, at $out) is not writable in the guest"
fi

[ -f "$r$rundir/job.sh" ] || die "$rundir/job.sh not visible in the guest"

port=
for d in /sys/class/virtio-ports/*; do
	[ "$(cat "$d/name" 2>/dev/null)" = vmtest.status ] && port=/dev/${d##*/}
done
[ -n "$port" ] || die "no virtio-serial port vmtest.status (kernel needs VIRTIO_CONSOLE)"

# vmtest.tools=busybox: the host root's programs are of another architecture
# (an arm64 guest on an x86-64 host): job.sh runs with this busybox's sh and
# applets, from the overlay's RAM, first in its PATH.
shell="/bin/bash --noprofile --norc"
envs=
if [ "$tools" = busybox ]; then
	mkdir -p $r/run/vmtest-bin
	cp /bin/busybox $r/run/vmtest-bin/busybox
	chroot $r /run/vmtest-bin/busybox --install -s /run/vmtest-bin ||
		die "cannot install busybox's applets in /run/vmtest-bin"
	shell=/run/vmtest-bin/sh
	envs=VMTEST_TOOLS=/run/vmtest-bin
fi

say "guest up $(cut -d' ' -f1 /proc/uptime)s (uptime)"
# Clean environment: job.sh exports what the test needs.
env -i $envs /bin/chroot $r $shell "$rundir/job.sh" </dev/console >/dev/console 2>&1
rc=$?
# A WARN() is not fatal (an oops is: oops=panic) but worth showing; quiet hid it.
if dmesg | grep -q 'WARNING: CPU:'; then
	say "guest kernel warnings:"
	dmesg | sed -n '/cut here/,$p' | head -n 80
fi
say "guest exit status $rc"
[ -z "$out" ] || umount "$r$out" 2>/dev/null
# Let the UART drain what was written before powering off (tcsetattr TCSADRAIN).
stty -F /dev/console "$(stty -F /dev/console -g)" 2>/dev/null
echo "$rc" >"$port"
halt_now
