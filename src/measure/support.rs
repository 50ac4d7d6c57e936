//! The checks a run needs, made once up front and carried as proof: a run
//! ([`with_run`](super::with_run)) takes a [`Ready`], which only
//! [`Support::check`] makes, so it never checks again.

use super::caps::{self, Missing};
use super::catalogue::{Kind, Mechanism};
use super::error::{Error, Result};
use super::sys::{self, Tracefs};

/// Proof that this process may load tracing programs
/// ([`sys::check_privileges`]), with what each of its mechanisms, and the
/// BPF-stats run, still lacks of the capabilities ([`caps`]). Only
/// [`Privileged::check`] makes one.
#[derive(Clone, Debug)]
pub struct Privileged {
    mechanisms: Vec<(Mechanism, Option<Missing>)>,
    stats: Option<Missing>,
}

impl Privileged {
    pub fn check(mechanisms: &[Mechanism]) -> Result<Self> {
        sys::check_privileges()?;
        Ok(Self {
            mechanisms: mechanisms.iter().map(|&m| (m, caps::missing(m))).collect(),
            stats: caps::missing_for_stats(),
        })
    }

    /// The mechanisms that lack a capability, and what they lack.
    pub fn lacking(&self) -> impl Iterator<Item = (Mechanism, &Missing)> {
        self.mechanisms
            .iter()
            .filter_map(|(m, missing)| Some((*m, missing.as_ref()?)))
    }

    /// What the BPF-stats run lacks.
    pub fn stats_lacking(&self) -> Option<&Missing> {
        self.stats.as_ref()
    }
}

/// The mechanisms that passed every check (privileges, capabilities, the
/// kernel's support probe), made once on the measuring thread. Holds
/// tracefs reachable while it lives. Only [`Support::check`] makes one.
pub struct Support {
    passed: Vec<Mechanism>,
    stats: Option<Missing>,
    _tracefs: Vec<Tracefs>,
}

impl Support {
    /// Runs each mechanism's support probe ([`Mechanism::check_support`]),
    /// tp first so that the tracefs it keeps mounted serves the others'
    /// probes instead of each mounting (and announcing) its own. Returns
    /// the mechanisms that did not pass, and why, in `privileged`'s order.
    pub fn check(privileged: &Privileged) -> (Self, Vec<(Mechanism, Error)>) {
        let all = &privileged.mechanisms;
        let mut tracefs = Vec::new();
        let mut problems: Vec<Option<Error>> = all.iter().map(|_| None).collect();
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.sort_by_key(|&i| all[i].0.kind().behaves_like() != Kind::Tracepoint);
        for i in order {
            let (m, missing) = &all[i];
            if let Some(missing) = missing {
                problems[i] = Some(Error::environment(format!("{m} needs {missing}")));
                continue;
            }
            match m.check_support() {
                Ok(guard) => tracefs.extend(guard),
                Err(err) => problems[i] = Some(err),
            }
        }
        let mut passed = Vec::new();
        let mut failed = Vec::new();
        for ((m, _), problem) in all.iter().zip(problems) {
            match problem {
                Some(err) => failed.push((*m, err)),
                None => passed.push(*m),
            }
        }
        let support = Self {
            passed,
            stats: privileged.stats.clone(),
            _tracefs: tracefs,
        };
        (support, failed)
    }

    /// Every check for `mechanism` alone, its problem as the error.
    pub fn one(mechanism: Mechanism) -> Result<Self> {
        let (support, mut problems) = Self::check(&Privileged::check(&[mechanism])?);
        match problems.pop() {
            Some((_, err)) => Err(err),
            None => Ok(support),
        }
    }

    /// The proof that `mechanism` passed.
    pub fn ready(&self, mechanism: Mechanism) -> Result<Ready<'_>> {
        if self.passed.contains(&mechanism) {
            Ok(Ready {
                mechanism,
                support: self,
            })
        } else {
            Err(Error::failed("did not pass its checks before the run").of(mechanism))
        }
    }
}

/// Proof that a mechanism passed the checks of a [`Support`] that still
/// lives (so tracefs is still reachable).
#[derive(Clone, Copy)]
pub struct Ready<'a> {
    mechanism: Mechanism,
    support: &'a Support,
}

impl<'a> Ready<'a> {
    pub fn mechanism(self) -> Mechanism {
        self.mechanism
    }

    /// What the BPF-stats run lacks of the capabilities.
    pub fn stats_lacking(self) -> Option<&'a Missing> {
        self.support.stats.as_ref()
    }
}
