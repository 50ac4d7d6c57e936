//! Kernel modules for the initramfs: found in a modules tree (`lib/modules/<release>`
//! or Debian 13's `usr/lib/modules/<release>`), with their dependencies read from
//! each module's own `.modinfo`, so neither depmod nor modules.dep is needed.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use object::{Object, ObjectSection};

use crate::kernels::image::{decompress, Compression};

/// What the guest init loads, in this order (dependencies go first): the
/// virtio transport and console, 9p for the host root, overlayfs on top.
pub const WANTED: &[&str] = &[
    "virtio_pci",
    "virtio_console",
    "9pnet_virtio",
    "9p",
    "overlay",
];

/// The `<release>` directories under `root/lib/modules` and `root/usr/lib/modules`.
pub fn trees(root: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for base in ["lib/modules", "usr/lib/modules"] {
        let Ok(entries) = fs::read_dir(root.join(base)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().is_dir() {
                found.push((e.path(), e.file_name().to_string_lossy().into_owned()));
            }
        }
    }
    found.sort();
    found
}

/// Module names as the kernel compares them: `-` and `_` are the same.
fn norm(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name of a file name like `9pnet_virtio.ko.xz`.
fn module_name(file: &str) -> Option<String> {
    let stem = file
        .strip_suffix(".ko")
        .or_else(|| file.strip_suffix(".ko.xz"))
        .or_else(|| file.strip_suffix(".ko.zst"))
        .or_else(|| file.strip_suffix(".ko.gz"))?;
    Some(norm(stem))
}

/// A modules tree: every module file by name, and the built-in names.
pub struct Tree {
    files: BTreeMap<String, PathBuf>,
    builtin: HashSet<String>,
}

impl Tree {
    pub fn open(dir: &Path) -> Result<Tree> {
        let mut files = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))?;
            for e in entries.flatten() {
                let ty = e.file_type()?;
                if ty.is_dir() {
                    stack.push(e.path());
                } else if let Some(name) = module_name(&e.file_name().to_string_lossy()) {
                    files.entry(name).or_insert_with(|| e.path());
                }
            }
        }
        let builtin = fs::read_to_string(dir.join("modules.builtin"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| module_name(l.rsplit('/').next()?))
            .collect();
        Ok(Tree { files, builtin })
    }

    /// The module files to load for `wanted`, dependencies first, each once, as
    /// (name, decompressed contents). Built-in modules and modules the tree
    /// does not have are left out (the init reports what is then missing).
    pub fn resolve(&self, wanted: &[&str]) -> Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for w in wanted {
            self.visit(&norm(w), &mut seen, &mut out, 0)?;
        }
        Ok(out)
    }

    /// The files [`Tree::resolve`] loads for `wanted`: what a cached
    /// kernel keeps of its modules.
    pub fn files_for(&self, wanted: &[&str]) -> Result<Vec<PathBuf>> {
        Ok(self
            .resolve(wanted)?
            .into_iter()
            .filter_map(|(name, _)| self.files.get(&name).cloned())
            .collect())
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut HashSet<String>,
        out: &mut Vec<(String, Vec<u8>)>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32 {
            bail!("module dependencies loop at {name}");
        }
        if self.builtin.contains(name) || !seen.insert(name.to_owned()) {
            return Ok(());
        }
        let Some(path) = self.files.get(name) else {
            return Ok(());
        };
        let data = load(path)?;
        for dep in depends(&data).with_context(|| format!("module {}", path.display()))? {
            self.visit(&norm(&dep), seen, out, depth + 1)?;
        }
        out.push((name.to_owned(), data));
        Ok(())
    }
}

/// A module file's contents, decompressed (busybox insmod cannot decompress).
pub fn load(path: &Path) -> Result<Vec<u8>> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path.to_string_lossy();
    let kind = if name.ends_with(".xz") {
        Compression::Xz
    } else if name.ends_with(".zst") {
        Compression::Zstd
    } else if name.ends_with(".gz") {
        Compression::Gzip
    } else {
        return Ok(data);
    };
    decompress(kind, &data)
        .expect("xz, zstd and gzip are supported")
        .with_context(|| format!("damaged module {}", path.display()))
}

/// The `depends=` list of a module's `.modinfo` section.
pub fn depends(module: &[u8]) -> Result<Vec<String>> {
    let file = object::File::parse(module).map_err(|e| anyhow!("not an ELF module: {e}"))?;
    let Some(section) = file.section_by_name(".modinfo") else {
        return Ok(Vec::new());
    };
    let info = section.data().map_err(|e| anyhow!("bad .modinfo: {e}"))?;
    Ok(info
        .split(|&b| b == 0)
        .filter_map(|kv| kv.strip_prefix(b"depends="))
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|d| !d.is_empty())
        .collect())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::kernels::image::fixtures::compress;

    /// A relocatable x86-64 ELF with only a `.modinfo` section.
    pub fn module(name: &str, deps: &str) -> Vec<u8> {
        let info = format!("license=GPL\0depends={deps}\0name={name}\0vermagic=6.99.0 SMP\0");
        let shstr = b"\0.modinfo\0.shstrtab\0";
        let info_off = 64usize;
        let shstr_off = info_off + info.len();
        let shoff = (shstr_off + shstr.len()).next_multiple_of(8);
        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        out.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
        out.extend_from_slice(&62u16.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // phoff
        out.extend_from_slice(&(shoff as u64).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for v in [64u16, 0, 0, 64, 3, 2] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(info.as_bytes());
        out.extend_from_slice(shstr);
        out.resize(shoff, 0);
        let sh = |out: &mut Vec<u8>, name: u32, ty: u32, off: usize, size: usize| {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes()); // flags
            out.extend_from_slice(&0u64.to_le_bytes()); // addr
            out.extend_from_slice(&(off as u64).to_le_bytes());
            out.extend_from_slice(&(size as u64).to_le_bytes());
            out.extend_from_slice(&[0; 8]); // link, info
            out.extend_from_slice(&1u64.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes());
        };
        sh(&mut out, 0, 0, 0, 0);
        sh(&mut out, 1, 1, info_off, info.len());
        sh(&mut out, 10, 3, shstr_off, shstr.len());
        out
    }

    #[test]
    fn depends_from_modinfo() {
        assert_eq!(
            depends(&module("9p", "9pnet,netfs")).unwrap(),
            ["9pnet", "netfs"]
        );
        assert!(depends(&module("virtio", "")).unwrap().is_empty());
        assert!(depends(b"junk").is_err());
    }

    #[test]
    fn resolves_dependencies_first_across_both_layouts_and_compressions() {
        let root = tempfile::tempdir().unwrap();
        // Debian 13 layout, compressed modules, one built in.
        let dir = root.path().join("usr/lib/modules/6.99.0-test");
        let put = |rel: &str, data: Vec<u8>| {
            let p = dir.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, data).unwrap();
        };
        put(
            "kernel/fs/9p/9p.ko.xz",
            compress(Compression::Xz, &module("9p", "9pnet,netfs")),
        );
        put(
            "kernel/net/9p/9pnet.ko.zst",
            compress(Compression::Zstd, &module("9pnet", "")),
        );
        put(
            "kernel/net/9p/9pnet_virtio.ko.gz",
            compress(
                Compression::Gzip,
                &module("9pnet_virtio", "9pnet,virtio_ring"),
            ),
        );
        put("kernel/fs/netfs/netfs.ko", module("netfs", ""));
        put("kernel/fs/overlayfs/overlay.ko", module("overlay", ""));
        put(
            "modules.builtin",
            b"kernel/drivers/virtio/virtio_ring.ko\nkernel/drivers/virtio/virtio_pci.ko\n".to_vec(),
        );

        let trees = trees(root.path());
        assert_eq!(trees.len(), 1);
        assert_eq!(trees[0].1, "6.99.0-test");
        let tree = Tree::open(&trees[0].0).unwrap();
        let got = tree.resolve(WANTED).unwrap();
        let names: Vec<_> = got.iter().map(|(n, _)| n.as_str()).collect();
        // virtio_pci built in, virtio_console absent: left out.
        assert_eq!(names, ["9pnet", "9pnet_virtio", "netfs", "9p", "overlay"]);
        assert_eq!(got[0].1, module("9pnet", ""), "decompressed");
        let files = tree.files_for(WANTED).unwrap();
        assert_eq!(files.len(), 5);
        assert!(files[0].ends_with("kernel/net/9p/9pnet.ko.zst"));
    }

    #[test]
    fn a_damaged_module_is_named() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("lib/modules/6.99.0");
        fs::create_dir_all(&dir).unwrap();
        let mut bad = compress(Compression::Xz, &module("overlay", ""));
        bad.truncate(bad.len() / 2);
        fs::write(dir.join("overlay.ko.xz"), bad).unwrap();
        let msg = format!(
            "{:#}",
            Tree::open(&dir).unwrap().resolve(&["overlay"]).unwrap_err()
        );
        assert!(msg.starts_with("damaged module "), "{msg}");
    }
}
