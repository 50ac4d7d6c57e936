//! Kernels, the room under every part but util: a kernel ready to boot
//! ([`kernel`]), from Debian's archive through the runner's own apt
//! ([`debian`]) or a path, its image checked ([`image`], [`arm64_image`],
//! [`arm64`] with its busybox), its modules ([`modules`]), and the guest's
//! architecture ([`arch`]). It imports only util; the VM, the builds and
//! the tasks import it.

pub mod arch;
pub mod arm64;
pub mod arm64_image;
pub mod debian;
pub mod image;
pub mod kernel;
pub mod modules;
