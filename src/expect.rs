//! What a run on a given kernel is expected to measure, for kernel CI:
//! strict mode (`BPF_OVERHEAD_STRICT=1`: a skip is a failure) and the
//! kernel's declared absences (`BPF_OVERHEAD_ABSENT=FILE`), after BPF CI's
//! per-kernel denylists. A declared mechanism may skip in strict mode; a
//! declared one that runs fails strict mode, so the list cannot rot.
//!
//! A list is one mechanism a line, `#` starting a comment, the reason
//! after it: `raw_tp-loop  # bpf_modify_return_test_tp() is 6.10+`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::document::Status;
use crate::measure::Mechanism;

pub use crate::env_vars::{ABSENT_ENV, STRICT_ENV};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    pub strict: bool,
    /// Declared absent: mechanism name → why.
    pub absent: BTreeMap<String, String>,
    /// Where the list came from, for messages.
    pub source: Option<PathBuf>,
}

/// What a test makes of a mechanism's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conclusion {
    Pass,
    Skip(String),
    Fail(String),
}

impl Expectations {
    /// From the environment. An unreadable or malformed list is an error:
    /// a CI job that names one means it.
    pub fn from_env() -> Result<Self, String> {
        let strict = std::env::var(STRICT_ENV).is_ok_and(|v| v == "1");
        let Some(path) = std::env::var_os(ABSENT_ENV).filter(|p| !p.is_empty()) else {
            return Ok(Self {
                strict,
                ..Self::default()
            });
        };
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{ABSENT_ENV}={}: cannot read it: {e}", path.display()))?;
        let absent = parse(&text).map_err(|e| format!("{ABSENT_ENV}={}: {e}", path.display()))?;
        Ok(Self {
            strict,
            absent,
            source: Some(path),
        })
    }

    fn source(&self) -> String {
        self.source
            .as_deref()
            .map_or_else(|| "the list".into(), |p| Path::display(p).to_string())
    }

    /// The verdict on one mechanism's status and reason.
    pub fn judge(&self, name: &str, status: Status, reason: Option<&str>) -> Conclusion {
        let reason = reason.unwrap_or("no reason given");
        let declared = self.absent.get(name);
        match (status, declared) {
            (Status::Failed, _) => Conclusion::Fail(reason.to_string()),
            (Status::Ok, Some(why)) if self.strict => Conclusion::Fail(format!(
                "{name}: ran, but {} declares it absent on this kernel ({why}): remove it from the list",
                self.source()
            )),
            (Status::Ok, _) => Conclusion::Pass,
            (Status::Skipped, _) if !self.strict => Conclusion::Skip(reason.to_string()),
            (Status::Skipped, Some(_)) => Conclusion::Skip(format!(
                "{reason} (declared absent in {})",
                self.source()
            )),
            (Status::Skipped, None) => Conclusion::Fail(format!(
                "{name}: {reason} (a skip, failed because {STRICT_ENV}=1{})",
                match &self.source {
                    Some(p) => format!(" and {} does not declare it absent", p.display()),
                    None => String::new(),
                }
            )),
        }
    }
}

/// Parses a list of declared absences. Every name must be a mechanism.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut absent = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let (name, why) = line.split_once('#').unwrap_or((line, ""));
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        if Mechanism::by_name(name).is_none() {
            return Err(format!("line {}: unknown mechanism '{name}'", n + 1));
        }
        let why = match why.trim() {
            "" => "declared absent".to_string(),
            why => why.to_string(),
        };
        if absent.insert(name.to_string(), why).is_some() {
            return Err(format!("line {}: '{name}' listed twice", n + 1));
        }
    }
    Ok(absent)
}

impl fmt::Display for Conclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conclusion::Pass => f.write_str("pass"),
            Conclusion::Skip(why) => write!(f, "skip: {why}"),
            Conclusion::Fail(why) => write!(f, "fail: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Expectations {
        Expectations {
            strict: true,
            absent: parse("# Debian 6.1\nraw_tp-loop  # kfunc is 6.10+\n\ntp-loop\n").unwrap(),
            source: Some("ci/absent/6.1".into()),
        }
    }

    #[test]
    fn lists_parse_with_reasons() {
        let absent = list().absent;
        assert_eq!(absent["raw_tp-loop"], "kfunc is 6.10+");
        assert_eq!(absent["tp-loop"], "declared absent");
        assert_eq!(absent.len(), 2);
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(parse("kprobes\n")
            .unwrap_err()
            .contains("unknown mechanism 'kprobes'"));
        assert!(parse("tp\ntp # again\n")
            .unwrap_err()
            .contains("line 2: 'tp' listed twice"));
    }

    #[test]
    fn strict_fails_an_undeclared_skip_only() {
        let e = list();
        let skip = e.judge("raw_tp-loop", Status::Skipped, Some("no kfunc"));
        assert_eq!(
            skip,
            Conclusion::Skip("no kfunc (declared absent in ci/absent/6.1)".into())
        );
        let Conclusion::Fail(why) = e.judge("fentry", Status::Skipped, Some("EPERM")) else {
            panic!("an undeclared skip passed strict mode");
        };
        assert!(
            why.contains("failed because BPF_OVERHEAD_STRICT=1"),
            "{why}"
        );
        assert!(
            why.contains("ci/absent/6.1 does not declare it absent"),
            "{why}"
        );
    }

    #[test]
    fn a_declared_absence_that_runs_fails_strict_mode() {
        let Conclusion::Fail(why) = list().judge("tp-loop", Status::Ok, None) else {
            panic!("a stale declaration went unnoticed");
        };
        assert!(why.contains("remove it from the list"), "{why}");
        let lenient = Expectations {
            strict: false,
            ..list()
        };
        assert_eq!(lenient.judge("tp-loop", Status::Ok, None), Conclusion::Pass);
    }

    #[test]
    fn without_strict_a_skip_is_a_skip_and_a_failure_fails() {
        let e = Expectations::default();
        assert_eq!(
            e.judge("fentry", Status::Skipped, Some("EPERM")),
            Conclusion::Skip("EPERM".into())
        );
        assert_eq!(
            e.judge("tp", Status::Failed, Some("tp: attach failed")),
            Conclusion::Fail("tp: attach failed".into())
        );
    }
}
