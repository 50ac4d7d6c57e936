#!/usr/bin/env python3
"""Host-side helpers for scripts/vmtest (python3 stdlib only, plus the zstd/lz4 CLIs
when a kernel is compressed that way).

Subcommands:
  extract-vmlinux BZIMAGE OUT   decompress the kernel ELF out of a bzImage
  pvh FILE                      exit 0 if FILE is an ELF with a PVH entry note
  kernel-version FILE           print the release of a bzImage or vmlinux
  cargo-executables             read cargo JSON on stdin, print test executables
  mkinitramfs DIR BUSYBOX INIT [MODULE...]
                                write DIR/initramfs-<hash>.cpio (newc) unless it
                                exists, print its path
  tee LOG MARKER MARKFILE       copy stdin to stdout and LOG; write the epoch
                                time at which MARKER first appears to MARKFILE
"""
import bz2
import gzip
import hashlib
import json
import lzma
import os
import struct
import subprocess
import sys
import time
import zlib


def die(msg, code=1):
    print(f"vmtest: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- kernel images

def is_bzimage(data):
    return len(data) > 0x260 and data[0x202:0x206] == b"HdrS"


def decompress(kind, blob):
    """Decompress one stream; trailing bytes after the stream are ignored."""
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(blob)
    if kind == "xz":
        return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(blob)
    if kind == "lzma":
        return lzma.LZMADecompressor(lzma.FORMAT_ALONE).decompress(blob)
    if kind == "bzip2":
        return bz2.BZ2Decompressor().decompress(blob)
    # No stdlib module for these: use the CLI. It complains about trailing data
    # (the size word the kernel build appends), so judge by the output instead.
    cmd = {"zstd": ["zstd", "-dcq"], "lz4": ["lz4", "-dcq"], "lzo": ["lzop", "-dcq"]}[kind]
    try:
        r = subprocess.run(cmd, input=blob, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        raise RuntimeError(f"{cmd[0]} not installed")
    return r.stdout


MAGICS = [  # compression formats the kernel's decompressor supports
    ("gzip", b"\x1f\x8b\x08"),
    ("xz", b"\xfd7zXZ\x00"),
    ("zstd", b"\x28\xb5\x2f\xfd"),
    ("lzma", b"\x5d\x00\x00\x00"),
    ("bzip2", b"BZh"),
    ("lz4", b"\x02\x21\x4c\x18"),
    ("lzo", b"\x89LZO\x00\r\n\x1a\n"),
]


def kind_of(blob):
    for kind, magic in MAGICS:
        if blob.startswith(magic):
            return kind
    return None


def extract_vmlinux(src, out):
    data = open(src, "rb").read()
    if not is_bzimage(data):
        die(f"{src}: not a bzImage")
    tries = []
    # Boot protocol >= 2.08 says exactly where the compressed payload is.
    version = struct.unpack_from("<H", data, 0x206)[0]
    if version >= 0x208:
        setup_sects = data[0x1F1] or 4
        off, length = struct.unpack_from("<II", data, 0x248)
        start = (setup_sects + 1) * 512 + off
        payload = data[start:start + length]
        kind = kind_of(payload)
        if kind:
            # Last 4 bytes: uncompressed size (appended by the kernel build).
            size = struct.unpack("<I", payload[-4:])[0]
            tries.append((kind, start, payload[:-4], size))
    # Otherwise (or if that fails) scan for magics, as scripts/extract-vmlinux does.
    for kind, magic in MAGICS:
        pos = data.find(magic)
        while pos != -1:
            tries.append((kind, pos, data[pos:], None))
            pos = data.find(magic, pos + 1)
            if len(tries) > 64:
                break
    errors = []
    for kind, pos, blob, size in tries:
        try:
            elf = decompress(kind, blob)
        except Exception as e:  # corrupt/false magic: try the next candidate
            errors.append(f"{kind}@{pos}: {e}")
            continue
        if not elf.startswith(b"\x7fELF"):
            continue
        if size is not None and len(elf) != size:
            errors.append(f"{kind}@{pos}: size {len(elf)} != {size}")
            continue
        tmp = out + ".tmp"
        with open(tmp, "wb") as f:
            f.write(elf)
        os.replace(tmp, out)
        print(f"{kind} payload at offset {pos}, {len(elf)} bytes")
        return
    die(f"{src}: no decompressible ELF payload found ({'; '.join(errors[:3]) or 'no known magic'})")


def has_pvh_note(path):
    """True if the ELF has XEN_ELFNOTE_PHYS32_ENTRY (what qemu -kernel needs for PVH)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # ELF64 only (x86_64)
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz]
            if name.rstrip(b"\0") == b"Xen" and ntype == 18:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def kernel_version(path):
    with open(path, "rb") as f:
        data = f.read()
    if is_bzimage(data):
        ptr = struct.unpack_from("<H", data, 0x20E)[0]
        if ptr:
            s = data[ptr + 0x200:ptr + 0x400].split(b"\0")[0].decode(errors="replace")
            if s:
                return s.split()[0]
    pos = data.find(b"Linux version ")
    while pos != -1:
        tok = data[pos + 14:pos + 100].split(b" ")[0]
        if tok and tok[:1].isdigit():  # skip the "%s" format string
            return tok.decode(errors="replace")
        pos = data.find(b"Linux version ", pos + 1)
    return "unknown"


# ---------------------------------------------------------------- cargo

def cargo_executables():
    seen = []
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact":
            continue
        exe = msg.get("executable")
        if exe and msg.get("profile", {}).get("test") and exe not in seen:
            seen.append(exe)
    # Artifacts arrive in build-completion order; run in a stable order instead.
    for exe in sorted(seen, key=lambda p: (os.path.basename(p).rsplit("-", 1)[0], p)):
        print(exe)


# ---------------------------------------------------------------- initramfs

class Cpio:
    """Minimal newc writer: no root needed for device nodes, byte-for-byte reproducible."""

    def __init__(self):
        self.out = bytearray()
        self.ino = 1

    def add(self, name, mode, data=b"", rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0))
        self.ino += 1
        self.out += hdr.encode() + name_b
        self.out += b"\0" * (-len(self.out) % 4)
        self.out += data
        self.out += b"\0" * (-len(self.out) % 4)

    def dir(self, name):
        self.add(name, 0o040755)

    def file(self, name, data, mode=0o644):
        self.add(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        self.add(name, 0o120777, target.encode())

    def chardev(self, name, major, minor):
        self.add(name, 0o020600, rdev=(major, minor))

    def finish(self):
        self.add("TRAILER!!!", 0)
        return bytes(self.out)


def read_module(path):
    data = open(path, "rb").read()
    # busybox insmod cannot decompress: unpack here.
    if path.endswith(".xz"):
        return lzma.decompress(data)
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".zst"):
        return decompress("zstd", data)
    return data


def mkinitramfs(outdir, busybox, init, modules):
    h = hashlib.sha256()
    for p in [busybox, init, __file__] + modules:
        h.update(p.encode() + b"\0" + open(p, "rb").read())
    out = os.path.join(outdir, f"initramfs-{h.hexdigest()[:16]}.cpio")
    if not os.path.exists(out):
        c = Cpio()
        for d in ("bin", "dev", "proc", "sys", "mnt", "mnt/lower", "mnt/rw", "newroot", "modules"):
            c.dir(d)
        c.chardev("dev/console", 5, 1)  # stdio for init before devtmpfs is mounted
        c.file("bin/busybox", open(busybox, "rb").read(), 0o755)
        c.symlink("bin/sh", "busybox")
        c.file("init", open(init, "rb").read(), 0o755)
        order = []
        for i, m in enumerate(modules):
            name = f"{i:02d}-" + os.path.basename(m).split(".ko")[0] + ".ko"
            c.file("modules/" + name, read_module(m))
            order.append(name)
        c.file("modules/order", "".join(n + "\n" for n in order).encode())
        tmp = out + ".tmp"
        with open(tmp, "wb") as f:
            f.write(c.finish())
        os.replace(tmp, out)
        for old in os.listdir(outdir):  # keep the cache to one initramfs
            if old.startswith("initramfs-") and old.endswith(".cpio") and old != os.path.basename(out):
                os.unlink(os.path.join(outdir, old))
    print(out)


# ---------------------------------------------------------------- console tee

def tee(log, marker, markfile):
    marker = marker.encode()
    found = False
    tail = b""
    inp = sys.stdin.buffer.raw
    out = sys.stdout.buffer
    held = b""  # a trailing "\r" that may start a "\r\n" split across reads
    with open(log, "wb") as lf:
        while True:
            data = inp.read(65536)
            # The serial console sends CRLF; plain LF is kinder to logs and parsers.
            chunk = (held + data).replace(b"\r\n", b"\n")
            held = b""
            if data and chunk.endswith(b"\r"):
                chunk, held = chunk[:-1], b"\r"
            if not chunk:
                if not data:
                    break
                continue
            if not found:
                if marker in tail + chunk:
                    found = True
                    with open(markfile, "w") as mf:
                        mf.write(f"{time.time():.3f}\n")
                tail = (tail + chunk)[-len(marker):]
            try:
                out.write(chunk)
                out.flush()
            except BrokenPipeError:
                pass
            lf.write(chunk)
            lf.flush()


def main():
    if len(sys.argv) < 2:
        die("helper: missing subcommand", 2)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "extract-vmlinux":
        extract_vmlinux(*args)
    elif cmd == "pvh":
        sys.exit(0 if has_pvh_note(args[0]) else 1)
    elif cmd == "kernel-version":
        print(kernel_version(args[0]))
    elif cmd == "cargo-executables":
        cargo_executables()
    elif cmd == "mkinitramfs":
        mkinitramfs(args[0], args[1], args[2], args[3:])
    elif cmd == "tee":
        tee(*args)
    else:
        die(f"helper: unknown subcommand {cmd}", 2)


if __name__ == "__main__":
    main()
