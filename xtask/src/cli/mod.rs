//! The command line: clap's tree of tasks ([`args`]) and their long help
//! ([`help`]). Only main imports it; it imports the tasks' own options,
//! the VM's types and util's value parsers, and nothing imports it back.

pub mod args;
#[cfg(test)]
mod documented;
pub mod help;
