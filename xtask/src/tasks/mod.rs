//! The tasks, one room each, as the command line's `Task` enum names them:
//! `vmtest` (with its `--against` modes, duet and exact, which share its
//! options), `ci` (with CI's table and actionlint), `kselftest` (with
//! kselftest's own files and rules), `flakes` and `history`. Each owns its
//! options. A task imports the parts (vm,
//! build, kernels, util) and its own room, never another task; only main
//! and the command line import a task.

pub mod ci;
pub mod flakes;
pub mod history;
pub mod kselftest;
pub mod vmtest;
