//! The builds of a history: every Debian build of a series, or of a range
//! of series, that the runner's apt lists, each with its package version,
//! the suites that have it and its line (the Debian release whose compiler
//! built it), in version order within a line.

use std::cmp::Ordering;

use anyhow::{bail, ensure, Result};
use serde::Serialize;

use crate::kernels::debian::{series_of, version_cmp, Listed, Release};
use crate::util::BadInput;

/// One Debian build of a kernel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Build {
    /// `uname -r`: 6.12.43+deb12-amd64.
    pub release: String,
    /// Its package's version: 6.12.43-1~bpo12+1.
    pub version: String,
    /// The upstream release it packages: 6.12.43.
    pub upstream: String,
    /// The Debian release whose compiler built it: deb12 (bookworm's gcc)
    /// or deb13 (trixie's). Two lines are two series of builds.
    pub line: String,
    pub suites: Vec<String>,
    #[serde(skip)]
    pub packages: Vec<String>,
    /// Why it cannot boot in the VM, if so.
    pub refused: Option<String>,
}

/// SERIES: `6.12`, or a range of series `6.16..7.3`, as (first, last).
pub fn parse_series(spec: &str) -> Result<(String, String)> {
    let one = |s: &str| -> Result<String> {
        let parts: Vec<&str> = s.split('.').collect();
        ensure!(
            parts.len() == 2
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
            BadInput(format!(
                "'{s}' is not a kernel series: give one such as 6.12, or a range such as 6.16..7.3"
            ))
        );
        Ok(s.to_owned())
    };
    let (lo, hi) = match spec.split_once("..") {
        Some((a, b)) => (one(a)?, one(b)?),
        None => (one(spec)?, one(spec)?),
    };
    ensure!(
        version_cmp(&lo, &hi) != Ordering::Greater,
        BadInput(format!(
            "the range {spec} runs backwards: give the older series first ({hi}..{lo})"
        ))
    );
    Ok((lo, hi))
}

fn in_range(series: &str, (lo, hi): (&str, &str)) -> bool {
    version_cmp(series, lo) != Ordering::Less && version_cmp(series, hi) != Ordering::Greater
}

/// The Debian release a build's compiler comes from: the `+debNN` or
/// `.debNN.` in its name (6.12.43+deb12, 6.1.0-0.deb11.52), else its suite's.
pub fn line(release: &str, suites: &[String]) -> String {
    let tagged = ["+deb", ".deb"].iter().find_map(|t| {
        let rest = &release[release.find(t)? + t.len()..];
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!n.is_empty()).then(|| format!("deb{n}"))
    });
    tagged.unwrap_or_else(|| {
        let codename = suites
            .first()
            .map(|s| s.split('-').next().unwrap_or(s))
            .unwrap_or("");
        match codename {
            "buster" => "deb10",
            "bullseye" => "deb11",
            "bookworm" => "deb12",
            "trixie" => "deb13",
            "forky" | "sid" => "deb14",
            _ => "debian",
        }
        .to_owned()
    })
}

/// The compiler a line names, for the report.
pub fn compiler(line: &str) -> &'static str {
    match line {
        "deb11" => "bullseye's gcc",
        "deb12" => "bookworm's gcc",
        "deb13" => "trixie's gcc",
        "deb14" => "forky's gcc",
        _ => "Debian's gcc",
    }
}

/// The upstream release of a package version: 6.12.43 of 6.12.43-1~bpo12+1.
pub fn upstream(version: &str) -> String {
    version
        .split(['-', '~', '+'])
        .next()
        .unwrap_or(version)
        .to_owned()
}

/// The builds of `range` among the releases apt lists, with what madison
/// said of their packages, in report order: by line, then by version.
pub fn builds(rels: &[Release], listed: &[Listed], range: (&str, &str)) -> Vec<Build> {
    let mut out: Vec<Build> = rels
        .iter()
        .filter(|r| in_range(&r.series(), range))
        .filter_map(|r| {
            let of: Vec<&Listed> = listed
                .iter()
                .filter(|l| l.package == r.packages[0])
                .collect();
            let version = of
                .iter()
                .map(|l| l.version.clone())
                .max_by(|a, b| version_cmp(a, b))?;
            let mut suites: Vec<String> = of.iter().map(|l| l.suite.clone()).collect();
            suites.sort();
            suites.dedup();
            Some(Build {
                line: line(&r.name, &suites),
                upstream: upstream(&version),
                release: r.name.clone(),
                version,
                suites,
                packages: r.packages.clone(),
                refused: (!r.has_modules).then(|| {
                    format!(
                        "Debian ships no linux-modules-{} package: the VM needs its virtio, 9p \
                         and overlay modules",
                        r.name
                    )
                }),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        version_cmp(&a.line, &b.line)
            .then(version_cmp(&a.upstream, &b.upstream))
            .then(version_cmp(&a.version, &b.version))
            .then(version_cmp(&a.release, &b.release))
    });
    out
}

/// The upstream release of the build before `b` on its line (refused
/// ones aside): a step that ends at `b` starts there, so `b`'s kept
/// stable list starts after it. `b`'s own release when it is the first.
pub fn before(all: &[Build], b: &Build) -> String {
    let at = all.iter().position(|x| x == b).unwrap_or(all.len());
    all[..at]
        .iter()
        .rev()
        .find(|x| x.line == b.line && x.refused.is_none())
        .map_or_else(|| b.upstream.clone(), |x| x.upstream.clone())
}

/// `--since`/`--until`: an upstream release (6.12.74) or a build's name.
fn bound(builds: &[Build], s: &str) -> String {
    builds
        .iter()
        .find(|b| b.release == s)
        .map_or_else(|| s.to_owned(), |b| b.upstream.clone())
}

/// The builds from `since` to `until` (each included).
pub fn narrow(builds: Vec<Build>, since: Option<&str>, until: Option<&str>) -> Vec<Build> {
    let since = since.map(|s| bound(&builds, s));
    let until = until.map(|s| bound(&builds, s));
    builds
        .into_iter()
        .filter(|b| {
            since
                .as_deref()
                .is_none_or(|s| version_cmp(&b.upstream, s) != Ordering::Less)
                && until
                    .as_deref()
                    .is_none_or(|u| version_cmp(&b.upstream, u) != Ordering::Greater)
        })
        .collect()
}

/// The upstream releases a step from `a` to `b` may lie in: None when
/// they are the same release or adjacent ones (6.12.73, 6.12.74), else
/// the range after `a` up to `b` and how many releases that is
/// (6.12.75..6.12.85, 11).
pub fn span(a: &str, b: &str) -> Option<(String, u64)> {
    let split = |v: &str| -> Option<(String, u64)> {
        let (head, last) = v.rsplit_once('.')?;
        Some((head.to_owned(), last.parse().ok()?))
    };
    match (split(a), split(b)) {
        (Some((ha, na)), Some((hb, nb))) if ha == hb && series_of(a) == series_of(b) => {
            (nb > na + 1).then(|| (format!("{ha}.{}..{b}", na + 1), nb - na))
        }
        // Across series (6.18.15 to 6.19.6): every release between.
        _ if a != b => Some((format!("{a}..{b}"), 0)),
        _ => None,
    }
}

/// Refuses a history with no builds: one line that says which series apt knows.
pub fn check_any(builds: &[Build], spec: &str, narrowed: bool, known: &str) -> Result<()> {
    if builds.is_empty() {
        if narrowed {
            bail!(BadInput(format!(
                "no build of {spec} between --since and --until: widen them (see --list)"
            )));
        }
        bail!(BadInput(format!(
            "Debian has no build of {spec} in the suites the runner reads (series apt knows: {known})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(name: &str, modules: bool) -> Release {
        Release {
            name: name.into(),
            packages: vec![format!("linux-image-{name}-unsigned")],
            has_modules: modules,
        }
    }

    fn listed(rel: &str, version: &str, suite: &str) -> Listed {
        Listed {
            package: format!("linux-image-{rel}-unsigned"),
            version: version.into(),
            suite: suite.into(),
        }
    }

    #[test]
    fn the_build_before_on_its_line() {
        let b = |rel: &str, up: &str, line: &str, refused: bool| Build {
            release: rel.into(),
            version: format!("{up}-1"),
            upstream: up.into(),
            line: line.into(),
            suites: vec![],
            packages: vec![],
            refused: refused.then(|| "no modules".into()),
        };
        let all = [
            b("6.12.43+deb12", "6.12.43", "deb12", false),
            b("6.12.46+deb12", "6.12.46", "deb12", true),
            b("6.12.44+deb13", "6.12.44", "deb13", false),
            b("6.12.48+deb12", "6.12.48", "deb12", false),
        ];
        assert_eq!(before(&all, &all[0]), "6.12.43", "the first: its own");
        assert_eq!(
            before(&all, &all[3]),
            "6.12.43",
            "refused and other lines aside"
        );
        assert_eq!(before(&all, &all[2]), "6.12.44");
    }

    #[test]
    fn series_and_ranges() {
        assert_eq!(
            parse_series("6.12").unwrap(),
            ("6.12".into(), "6.12".into())
        );
        assert_eq!(
            parse_series("6.16..7.3").unwrap(),
            ("6.16".into(), "7.3".into())
        );
        assert!(parse_series("6.12.43")
            .unwrap_err()
            .to_string()
            .contains("not a kernel series"));
        assert!(parse_series("x").is_err());
        assert!(parse_series("7.3..6.16")
            .unwrap_err()
            .to_string()
            .contains("backwards"));
    }

    #[test]
    fn lines_from_the_name_or_the_suite() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            line("6.12.43+deb12-amd64", &s(&["bookworm-backports"])),
            "deb12"
        );
        assert_eq!(line("6.12.90+deb13.1-amd64", &s(&["trixie"])), "deb13");
        assert_eq!(
            line("6.1.0-0.deb11.52-amd64", &s(&["bullseye-security"])),
            "deb11"
        );
        assert_eq!(line("6.1.0-57-amd64", &s(&["bookworm-security"])), "deb12");
        assert_eq!(line("7.2.13+deb14-amd64", &s(&["sid"])), "deb14");
        assert_eq!(upstream("6.12.43-1~bpo12+1"), "6.12.43");
        assert_eq!(upstream("6.1.172-1"), "6.1.172");
    }

    #[test]
    fn builds_by_line_then_version_and_the_unbootable_refused() {
        let rels = [
            rel("6.12.100+deb13-amd64", true),
            rel("6.12.43+deb12-amd64", true),
            rel("6.12.100+deb12-amd64", true),
            rel("6.12.9+deb13-amd64", true),
            rel("6.1.0-57-amd64", true),
            rel("6.19.6+deb13-amd64", false),
        ];
        let l = [
            listed("6.12.100+deb13-amd64", "6.12.100-1", "trixie-security"),
            listed(
                "6.12.43+deb12-amd64",
                "6.12.43-1~bpo12+1",
                "bookworm-backports",
            ),
            listed(
                "6.12.100+deb12-amd64",
                "6.12.100-1~deb12u1",
                "bookworm-security",
            ),
            listed("6.12.9+deb13-amd64", "6.12.9-1", "trixie"),
            listed("6.12.9+deb13-amd64", "6.12.9-1", "trixie-security"),
            listed("6.1.0-57-amd64", "6.1.192-3", "bookworm-security"),
            listed("6.19.6+deb13-amd64", "6.19.6-2~bpo13+1", "trixie-backports"),
        ];
        let b = builds(&rels, &l, ("6.12", "6.12"));
        let names: Vec<&str> = b.iter().map(|b| b.release.as_str()).collect();
        assert_eq!(
            names,
            [
                "6.12.43+deb12-amd64",
                "6.12.100+deb12-amd64",
                "6.12.9+deb13-amd64",
                "6.12.100+deb13-amd64"
            ]
        );
        assert_eq!(b[2].suites, ["trixie", "trixie-security"]);
        let wide = builds(&rels, &l, ("6.1", "6.19"));
        assert_eq!(wide.len(), 6);
        let refused = wide.iter().find(|b| b.release.starts_with("6.19")).unwrap();
        assert!(refused
            .refused
            .as_deref()
            .unwrap()
            .contains("no linux-modules-6.19.6"));
        let narrowed = narrow(b.clone(), Some("6.12.50"), None);
        assert_eq!(narrowed.len(), 2);
        let narrowed = narrow(b, None, Some("6.12.43+deb12-amd64"));
        assert_eq!(narrowed.len(), 2, "a build's name is its upstream release");
        assert!(check_any(&[], "6.13", false, "6.1 6.12")
            .unwrap_err()
            .to_string()
            .contains("6.1 6.12"));
    }

    #[test]
    fn spans_of_releases() {
        assert_eq!(span("6.12.73", "6.12.74"), None);
        assert_eq!(span("6.12.90", "6.12.90"), None);
        assert_eq!(
            span("6.12.74", "6.12.85"),
            Some(("6.12.75..6.12.85".into(), 11))
        );
        assert_eq!(
            span("6.18.15", "6.19.6"),
            Some(("6.18.15..6.19.6".into(), 0))
        );
    }
}
