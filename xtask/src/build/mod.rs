//! Builds on the host: the guest's test binaries and the command, from
//! cargo's JSON messages, for this architecture or cross-built
//! ([`guest_build`]), and the kselftest collection's static programs
//! ([`static_build`]). It imports kernels (the architecture) and util;
//! the VM and the tasks import it.

pub mod guest_build;
pub mod static_build;
pub mod tcg_plugin;
