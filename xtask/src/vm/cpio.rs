//! A minimal writer of "newc" cpio archives, the format the kernel unpacks as
//! an initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
//! Device nodes need no root, and the output is byte for byte reproducible.

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

#[derive(Default)]
pub struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

impl Cpio {
    pub fn new() -> Cpio {
        Cpio {
            out: Vec::new(),
            ino: 1,
        }
    }

    fn add(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        let namesize = name.len() + 1;
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            u32::try_from(data.len()).expect("initramfs member under 4 GiB"),
            0, // dev major
            0, // dev minor
            rdev.0,
            rdev.1,
            u32::try_from(namesize).expect("short name"),
            0, // check
        ];
        self.ino += 1;
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        let n = self.out.len().next_multiple_of(4);
        self.out.resize(n, 0);
    }

    pub fn dir(&mut self, name: &str) {
        self.add(name, S_IFDIR | 0o755, &[], (0, 0));
    }

    pub fn file(&mut self, name: &str, data: &[u8], perm: u32) {
        self.add(name, S_IFREG | perm, data, (0, 0));
    }

    pub fn symlink(&mut self, name: &str, target: &str) {
        self.add(name, S_IFLNK | 0o777, target.as_bytes(), (0, 0));
    }

    pub fn chardev(&mut self, name: &str, major: u32, minor: u32) {
        self.add(name, S_IFCHR | 0o600, &[], (major, minor));
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.add("TRAILER!!!", 0, &[], (0, 0));
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Member = (String, u32, Vec<u8>, (u32, u32));

    /// An independent reader: (name, mode, data, rdev) per member, checking
    /// magic, alignment and the trailer.
    fn read(mut a: &[u8]) -> Vec<Member> {
        let mut members = Vec::new();
        let total = a.len();
        loop {
            assert_eq!((total - a.len()) % 4, 0, "header alignment");
            assert_eq!(&a[..6], b"070701");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&a[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let (mode, filesize, rdev) = (field(1), field(6) as usize, (field(9), field(10)));
            let namesize = field(11) as usize;
            let name = std::str::from_utf8(&a[110..110 + namesize - 1])
                .unwrap()
                .to_owned();
            assert_eq!(a[110 + namesize - 1], 0);
            let data_at = (110 + namesize).next_multiple_of(4);
            let data = a[data_at..data_at + filesize].to_vec();
            a = &a[(data_at + filesize).next_multiple_of(4)..];
            if name == "TRAILER!!!" {
                assert!(a.is_empty());
                return members;
            }
            members.push((name, mode, data, rdev));
        }
    }

    #[test]
    fn newc_round_trip() {
        let mut c = Cpio::new();
        c.dir("bin");
        c.chardev("dev/console", 5, 1);
        c.file("bin/busybox", b"\x7fELF...", 0o755);
        c.symlink("bin/sh", "busybox");
        c.file("init", b"#!/bin/sh\n", 0o755);
        c.file("empty", b"", 0o644);
        let a = c.finish();
        assert_eq!(a.len() % 4, 0);
        let m = read(&a);
        let names: Vec<_> = m.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "bin",
                "dev/console",
                "bin/busybox",
                "bin/sh",
                "init",
                "empty"
            ]
        );
        assert_eq!(m[0].1, 0o040755);
        assert_eq!((m[1].1, m[1].3), (0o020600, (5, 1)));
        assert_eq!((m[2].1, m[2].2.as_slice()), (0o100755, &b"\x7fELF..."[..]));
        assert_eq!((m[3].1, m[3].2.as_slice()), (0o120777, &b"busybox"[..]));
        assert_eq!(m[5].2, b"");
    }

    #[test]
    fn first_header_is_what_the_kernel_expects() {
        let mut c = Cpio::new();
        c.file("a", b"xyz", 0o644);
        let a = c.finish();
        // magic, ino 1, mode 0100644, uid, gid, nlink 1, mtime, filesize 3,
        // dev major/minor, rdev major/minor, namesize 2, check; then "a\0".
        let want = "070701\
            00000001000081a40000000000000000000000010000000000000003\
            00000000000000000000000000000000000000020000000\
            0a\0";
        assert_eq!(std::str::from_utf8(&a[..112]).unwrap(), want);
        // name "a\0" ends at 112, data at 112, padded to 116
        assert_eq!(&a[112..116], b"xyz\0");
    }
}
