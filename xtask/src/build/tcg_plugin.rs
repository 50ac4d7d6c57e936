//! The TCG plugin (tcg-plugin/) built for the host's QEMU, for
//! `vmtest --exact --explain`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use cargo_metadata::camino::Utf8PathBuf;
use cargo_metadata::{Message, TargetKind};

use crate::build::guest_build::messages;
use crate::util::{cargo, say};

/// The crate's name in the workspace.
const PACKAGE: &str = "bpf-overhead-tcg-plugin";

/// Builds the plugin (release) and returns its shared object.
pub fn build(repo: &Path) -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args([
        "build",
        "--release",
        "-p",
        PACKAGE,
        "--message-format=json-render-diagnostics",
    ])
    .current_dir(repo)
    .stdin(Stdio::null());
    say!("building the TCG plugin: cargo build --release -p {PACKAGE}");
    let (status, json) = messages(&mut cmd)?;
    anyhow::ensure!(status.success(), "building {PACKAGE} failed (above)");
    shared_object(&json).with_context(|| format!("cargo built no shared object of {PACKAGE}"))
}

/// The cdylib among cargo's messages.
fn shared_object(json: &str) -> Option<PathBuf> {
    Message::parse_stream(json.as_bytes())
        .filter_map(|m| match m {
            Ok(Message::CompilerArtifact(a)) => Some(a),
            _ => None,
        })
        .filter(|a| a.target.is_kind(TargetKind::CDyLib))
        .flat_map(|a| a.filenames)
        .find(|f: &Utf8PathBuf| f.extension() == Some("so"))
        .map(PathBuf::from)
}
