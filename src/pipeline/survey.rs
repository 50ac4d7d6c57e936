//! `--list`'s survey: which mechanisms this kernel runs.

use std::num::NonZeroU64;

use crate::measure::{
    on_measuring_thread, timed_run, AttachCost, Mechanism, Options, Privileged, Site, Support,
};

/// Whether this kernel runs a mechanism, for `--list`.
#[derive(Clone, Debug, PartialEq)]
pub enum Availability {
    /// It runs; what attaching took, where that is a cost of its own, and
    /// what a probe on this executable left at its instruction.
    Yes(Option<AttachCost>, Option<Site>),
    /// The kernel lacks what it needs: why.
    No(String),
    /// It should run and did not: why.
    Broken(String),
    /// Not privileged: cannot tell.
    Unknown,
}

/// Finds out, with a one-event run of each, which of `mechanisms` this
/// kernel runs. Without privileges every answer is [`Availability::Unknown`].
pub fn survey(mechanisms: &[Mechanism], cpu: Option<usize>) -> Vec<(Mechanism, Availability)> {
    let opts = Options {
        iterations: NonZeroU64::MIN,
        cpu,
        ..Options::default()
    };
    let Ok(privileged) = Privileged::check(mechanisms) else {
        // What the architecture lacks needs no privileges to tell.
        let here = |m: Mechanism| {
            m.trigger()
                .absent_here()
                .map_or(Availability::Unknown, Availability::No)
        };
        return mechanisms.iter().map(|&m| (m, here(m))).collect();
    };
    let surveyed = on_measuring_thread(|| {
        let (support, mut problems) = Support::check(&privileged);
        Ok(mechanisms
            .iter()
            .map(|&m| {
                let verdict = match problems.iter().position(|(p, _)| *p == m) {
                    Some(i) => Err(problems.swap_remove(i).1),
                    None => support
                        .ready(m)
                        .and_then(|r| timed_run(r, &opts))
                        .map(|s| (s.attach, s.site)),
                };
                let availability = match verdict {
                    Ok((attach, site)) => Availability::Yes(attach, site),
                    Err(err) if err.is_unsupported() => Availability::No(err.reason().into()),
                    Err(err) => Availability::Broken(err.reason().into()),
                };
                (m, availability)
            })
            .collect())
    });
    surveyed.unwrap_or_else(|err| {
        mechanisms
            .iter()
            .map(|&m| (m, Availability::Broken(err.to_string())))
            .collect()
    })
}
