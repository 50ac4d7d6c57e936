//! The checks of a document read back: figures that make sense, so that a
//! corrupt or doctored file cannot decide the gate, nor print nonsense.

use std::time::{Duration, SystemTime};

use super::Summary;
use super::{Document, MechanismResult, Unit};

/// The most any count (events, hits, runs) may be: 2^53, the largest
/// integer an f64 holds exactly, as the figures made from counts are.
pub const MAX_COUNT: u64 = 1 << 53;

/// The most any figure may be, either way: a run lasts at most a day
/// (8.64e13 ns), so no time per event, rate or ratio of one comes near.
pub const MAX_FIGURE: f64 = 1e15;

/// The longest `--run-secs`/`--budget` may be: a day, as the flags take.
const DAY_SECS: f64 = 86_400.0;

/// The longest a measured wall time (a wait, a run's context, an attach)
/// may be: a week; a run refused past a day may still overrun it.
const WEEK_SECS: f64 = 7.0 * DAY_SECS;

/// How far in the future a document's timestamp may be: the writer's
/// clock may have been ahead of the reader's, by up to a day.
const CLOCK_SKEW: Duration = Duration::from_secs(86_400);

/// The most CPUs a kernel has (NR_CPUS is at most 8192).
const MAX_CPUS: usize = 8192;

impl Document {
    /// Checks that the figures make sense, so that a corrupt or doctored
    /// file cannot decide the gate (under the old ratio rule a stddev of
    /// 1e308 made every drop "noise"): mechanism names unique, each one's
    /// base present; every
    /// number finite, rates and ratios positive; each statistic what its
    /// samples give, one sample per repeat; the hit counts those of an
    /// ok run; and the run's own fields within what a run can have
    /// ([`Document::check_run`]). The error names the field.
    pub fn validate(&self) -> Result<(), String> {
        self.check_run()?;
        for (i, m) in self.mechanisms.iter().enumerate() {
            let at = |field: &str| format!("mechanisms[{i}] ({}): {field}", m.name);
            if self.mechanisms[..i].iter().any(|o| o.name == m.name) {
                return Err(format!(
                    "mechanisms[{i}]: name \"{}\" appears twice",
                    m.name
                ));
            }
            if !m.is_base() && !self.mechanism(&m.base).is_some_and(|b| b.is_base()) {
                return Err(format!(
                    "{} \"{}\" is not a base in the document",
                    at("base"),
                    m.base
                ));
            }
            self.check_figures(m, &at)?;
            if m.is_ok() {
                self.check_complete(m, &at)?;
            }
            self.check_producers(m, &at)?;
            self.check_against(m, &at)?;
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of the run's own fields: counts at
    /// least 1 and at most [`MAX_COUNT`], durations within what the flags
    /// and a run allow, a time that has been (give or take
    /// [`CLOCK_SKEW`]), and one unit for every figure.
    fn check_run(&self) -> Result<(), String> {
        if self.iterations == 0 || self.repeats == 0 {
            return Err(format!(
                "iterations {} and repeats {}: both must be at least 1",
                self.iterations, self.repeats
            ));
        }
        check_count("iterations", self.iterations)?;
        // A round's sample takes a byte or more of the file.
        check_count("repeats", self.repeats as u64)?;
        if self.repeats as u64 > super::MAX_FILE_BYTES {
            return Err(format!(
                "repeats is {}, more rounds than a result file holds",
                self.repeats
            ));
        }
        check_count("warmup_runs", self.warmup_runs as u64)?;
        check_count("retaken_runs", self.retaken_runs)?;
        if self.cpu >= MAX_CPUS {
            return Err(format!(
                "cpu is {}, beyond a kernel's {MAX_CPUS} CPUs",
                self.cpu
            ));
        }
        if self.producers == 0 || self.producers > MAX_CPUS {
            return Err(format!(
                "producers is {}, must be from 1 to {MAX_CPUS}",
                self.producers
            ));
        }
        check_secs("budget_secs", self.budget_secs, DAY_SECS)?;
        if let Some(secs) = self.run_secs {
            check_secs("run_secs", secs, DAY_SECS)?;
            if secs == 0.0 {
                return Err("run_secs is 0, must be positive (or null)".into());
            }
        }
        check_secs("cpu_wait_s", self.cpu_wait_s, WEEK_SECS)?;
        if let Some(c) = &self.context {
            check_secs("context.secs", c.secs, WEEK_SECS)?;
            for (field, pct) in [("steal_pct", c.steal_pct), ("other_pct", c.other_pct)] {
                if !(0.0..=100.0).contains(&pct) {
                    return Err(format!(
                        "context.{field} is {}, must be a share from 0 to 100",
                        num(pct)
                    ));
                }
            }
            check_count("context.involuntary_switches", c.involuntary_switches)?;
            let scalars = [
                ("load_start", Some(c.load_start), Sign::NonNegative),
                ("load_end", Some(c.load_end), Sign::NonNegative),
                ("mhz", c.mhz, Sign::Positive),
            ];
            for (field, value, sign) in scalars {
                if let Some(v) = value {
                    sign.check(v).map_err(|e| format!("context.{field} {e}"))?;
                }
            }
        }
        self.check_time()?;
        self.check_unit()
    }

    /// The timestamp: RFC 3339, and not after now (past [`CLOCK_SKEW`]).
    fn check_time(&self) -> Result<(), String> {
        let t = &self.timestamp;
        let at = humantime::parse_rfc3339(t)
            .map_err(|e| format!("timestamp \"{t}\" is not an RFC 3339 time in UTC: {e}"))?;
        if at > SystemTime::now() + CLOCK_SKEW {
            return Err(format!(
                "timestamp \"{t}\" is in the future: a run saved then has not been run"
            ));
        }
        Ok(())
    }

    /// One unit: instructions only where the emulator counts them
    /// (`tcg-icount`), ns everywhere else (version 1 had no unit: ns by
    /// default, and either under the emulator).
    fn check_unit(&self) -> Result<(), String> {
        let exact = self
            .emulated
            .as_ref()
            .is_some_and(|e| e.counts_instructions());
        let want = if exact && self.schema_version >= 2 {
            Unit::Instructions
        } else if exact {
            return Ok(());
        } else {
            Unit::Ns
        };
        if self.unit != want {
            let emulated = self.emulated.as_ref().map_or("null", |e| e.word());
            return Err(format!(
                "unit is \"{}\", but a run emulated {emulated} counts {want}",
                self.unit
            ));
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of `m`'s B side in an `--against`
    /// run (its figures as A's) and of the pairs B is judged on.
    fn check_against(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        if let Some(b) = &m.side_b {
            let at_b = |field: &str| at(&format!("against.{field}"));
            self.check_figures(b, &at_b)?;
            self.check_producers(b, &at_b)?;
        }
        if let Some(pairs) = &m.pairs_ns {
            // As many pairs as rounds both sides ran: at most the repeats.
            check_summary(pairs, Sign::Any, |n| n <= self.repeats)
                .map_err(|e| format!("{}{e}", at("pairs_ns")))?;
        }
        Ok(())
    }

    /// Whether `n` samples are as many as `m`'s rounds give. Version 1:
    /// one run per repeat (fewer when interrupted). Version 2: a mechanism
    /// sure early stops at fewer rounds, and a base runs around each of
    /// its mechanisms.
    fn rounds<'a>(&'a self, m: &'a MechanismResult) -> impl Fn(usize) -> bool + 'a {
        let own = m.k_events_per_sec.as_ref().map_or(0, |k| k.samples.len());
        move |n: usize| {
            if self.schema_version >= 2 {
                n == own && (m.is_base() || n <= self.repeats)
            } else if self.interrupted.is_some() {
                n <= self.repeats
            } else {
                n == self.repeats
            }
        }
    }

    /// [`Document::validate`]'s checks of `m`'s summaries and figures,
    /// `at` naming the field in the error.
    fn check_figures(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        let rounds = self.rounds(m);
        let series = [
            ("k_events_per_sec", &m.k_events_per_sec, Sign::Positive),
            ("overhead_ns", &m.overhead_ns, Sign::Any),
            ("ratio_to_base", &m.ratio_to_base, Sign::Positive),
            ("speed_ns", &m.speed_ns, Sign::Positive),
            ("overhead_steps", &m.overhead_steps, Sign::Any),
        ];
        for (field, summary, sign) in series {
            let Some(summary) = summary else { continue };
            let checked = if field == "overhead_ns" && self.exact() {
                // Exact: one value, the count, not a statistic of rounds.
                check_summary(summary, sign, |n| n == 1)
            } else {
                check_summary(summary, sign, &rounds)
            };
            checked.map_err(|e| format!("{}{e}", at(field)))?;
        }
        let scalars = [
            ("ns_per_event", m.ns_per_event, Sign::Positive),
            ("prog_ns_per_event", m.prog_ns_per_event, Sign::NonNegative),
            ("detectable_ns", m.detectable_ns, Sign::NonNegative),
            ("detectable", m.detectable, Sign::NonNegative),
        ];
        for (field, value, sign) in scalars {
            if let Some(v) = value {
                sign.check(v).map_err(|e| format!("{} {e}", at(field)))?;
            }
        }
        check_count(&at("events_per_run"), m.events_per_run)?;
        for (j, &h) in m.hits.iter().flatten().enumerate() {
            check_count(&at(&format!("hits[{j}]")), h)?;
        }
        for (j, &n) in m.counted_events.iter().flatten().enumerate() {
            check_count(&at(&format!("counted_events[{j}]")), n)?;
            if n > m.events_per_run.max(self.iterations) {
                return Err(format!(
                    "{} is {n}: more than the run's own events",
                    at(&format!("counted_events[{j}]"))
                ));
            }
        }
        if let Some(a) = &m.attach {
            check_count(&at("attach.functions"), a.functions)?;
            check_secs(&at("attach.seconds"), a.seconds, WEEK_SECS)?;
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of an ok `m`: the figures the gate
    /// compares are there, and the hits those of every event.
    fn check_complete(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        if m.k_events_per_sec.is_none() {
            return Err(format!(
                "{} is null, but the status is ok",
                at("k_events_per_sec")
            ));
        }
        // What the gate compares (and the ratio shown with it).
        for (field, present) in [
            ("overhead_ns", m.overhead_ns.is_some()),
            ("ratio_to_base", m.ratio_to_base.is_some()),
        ] {
            if !m.is_base() && !present {
                return Err(format!("{} is null, but the status is ok", at(field)));
            }
        }
        let runs = m.k_events_per_sec.as_ref().map_or(0, |k| k.samples.len());
        if let Some(hits) = &m.hits {
            // Every event of every producer, once: the run's events
            // (results from before events_per_run: the iterations).
            let events = if m.events_per_run > 0 {
                m.events_per_run
            } else {
                self.iterations
            };
            // Or, where the lead-in alone counted, its events.
            if let Some(counted) = &m.counted_events {
                if hits.len() != runs || hits != counted {
                    return Err(format!(
                        "{} is {hits:?}: an ok run counts, in each of its {runs} runs, the \
                         events of counted_events {counted:?}",
                        at("hits"),
                    ));
                }
            } else if hits.len() != runs || hits.iter().any(|&h| h != events) {
                return Err(format!(
                    "{} is {hits:?}: an ok run counts {events} hits in each of its {runs} runs",
                    at("hits"),
                ));
            }
        }
        Ok(())
    }

    /// [`Document::validate`]'s checks of `m`'s scaling and producers.
    fn check_producers(
        &self,
        m: &MechanismResult,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        let rounds = self.rounds(m);
        if let Some(scaling) = &m.scaling {
            check_summary(scaling, Sign::Positive, &rounds)
                .map_err(|e| format!("{}{e}", at("scaling")))?;
        }
        for (j, p) in m.producers.iter().flatten().enumerate() {
            check_summary(&p.k_events_per_sec, Sign::Positive, &rounds)
                .map_err(|e| format!("{}{e}", at(&format!("producers[{j}].k_events_per_sec"))))?;
            // None where the programs counted nothing (`--counting none`).
            if !p.hits.is_empty() && p.hits.len() != p.k_events_per_sec.samples.len() {
                return Err(format!(
                    "{} has {} values, not one per round",
                    at(&format!("producers[{j}].hits")),
                    p.hits.len()
                ));
            }
        }
        Ok(())
    }
}

/// `field ...` when the count `v` is over [`MAX_COUNT`].
fn check_count(field: &str, v: u64) -> Result<(), String> {
    if v > MAX_COUNT {
        return Err(format!("{field} is {v}, more than any run counts (2^53)"));
    }
    Ok(())
}

/// `field ...` unless `v` is a number of seconds from 0 to `most`.
fn check_secs(field: &str, v: f64, most: f64) -> Result<(), String> {
    if !(0.0..=most).contains(&v) {
        return Err(format!(
            "{field} is {}, must be from 0 to {most} seconds",
            num(v)
        ));
    }
    Ok(())
}

/// A figure for a message: 1e308 as `1e308`, not 309 digits.
fn num(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e7).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// What sign a figure must have.
#[derive(Clone, Copy)]
enum Sign {
    Positive,
    NonNegative,
    /// An overhead can be negative: a mechanism within noise of its base.
    Any,
}

impl Sign {
    fn check(self, v: f64) -> Result<(), String> {
        let ok = v.abs() <= MAX_FIGURE
            && match self {
                Sign::Positive => v > 0.0,
                Sign::NonNegative => v >= 0.0,
                Sign::Any => true,
            };
        if ok {
            Ok(())
        } else {
            let must = match self {
                Sign::Positive => "a positive number",
                Sign::NonNegative => "a number of at least 0",
                Sign::Any => "a finite number",
            };
            Err(format!(
                "is {}, must be {must} within ±{}",
                num(v),
                num(MAX_FIGURE)
            ))
        }
    }
}

/// `.field ...` when `summary` is not what its samples give.
fn check_summary(
    summary: &Summary,
    sign: Sign,
    rounds: impl Fn(usize) -> bool,
) -> Result<(), String> {
    let n = summary.samples.len();
    if n == 0 || !rounds(n) {
        return Err(format!(".samples has {n} values, not one per repeat"));
    }
    for (j, &v) in summary.samples.iter().enumerate() {
        sign.check(v).map_err(|e| format!(".samples[{j}] {e}"))?;
    }
    let expected = Summary::of(&summary.samples).expect("finite, non-empty samples");
    let stats = [
        ("median", summary.median, expected.median),
        ("mean", summary.mean, expected.mean),
        ("stddev", summary.stddev, expected.stddev),
        ("min", summary.min, expected.min),
        ("max", summary.max, expected.max),
    ];
    for (field, got, want) in stats {
        // Relative, for figures from 1e-4 (ratios) to 1e6 (call rates);
        // a little absolute slack for a stddev of 0.
        if !got.is_finite() || (got - want).abs() > 1e-6 * want.abs().max(got.abs()) + 1e-12 {
            return Err(format!(
                ".{field} is {}, but its samples give {}",
                num(got),
                num(want)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fixtures::document;

    /// `doc` with `edit` applied to mechanism `name`, validated.
    fn invalid(name: &str, edit: impl FnOnce(&mut MechanismResult)) -> String {
        let mut doc = document();
        edit(doc.mechanism_mut(name).unwrap());
        doc.validate().unwrap_err()
    }

    #[test]
    fn a_real_document_is_valid() {
        document().validate().unwrap();
        // Round trip through JSON: the statistics survive exactly.
        Document::from_json(&document().to_json())
            .unwrap()
            .validate()
            .unwrap();
    }

    #[test]
    fn nonsense_numbers_are_refused_naming_the_field() {
        // A stddev of 1e308 would make every drop "noise".
        let err = invalid("raw_tp", |m| {
            m.ratio_to_base.as_mut().unwrap().stddev = 1e308
        });
        assert_eq!(
            err,
            "mechanisms[2] (raw_tp): ratio_to_base.stddev is 1e308, but its samples give 0"
        );
        let negative = Summary::of(&[-5.0, -5.0, -5.0]);
        let err = invalid("raw_tp", |m| m.ratio_to_base = negative);
        assert!(
            err.contains("ratio_to_base.samples[0] is -5, must be a positive number"),
            "{err}"
        );
        let zero = Summary::of(&[0.0, 0.0, 0.0]);
        let err = invalid("tp", |m| m.ratio_to_base = zero);
        assert!(err.contains("(tp): ratio_to_base.samples[0] is 0"), "{err}");
        let err = invalid("base", |m| {
            m.k_events_per_sec.as_mut().unwrap().median = 5.0
        });
        assert!(
            err.contains("k_events_per_sec.median is 5, but its samples give 1050"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.prog_ns_per_event = Some(-1.0));
        assert!(err.contains("prog_ns_per_event is -1"), "{err}");
        let err = invalid("raw_tp", |m| m.ns_per_event = Some(f64::INFINITY));
        assert!(err.contains("ns_per_event is inf"), "{err}");
        // An overhead may be negative: within noise of the base.
        let mut doc = document();
        doc.mechanism_mut("raw_tp").unwrap().overhead_ns = Summary::of(&[-1.0, 0.5, -0.2]);
        doc.validate().unwrap();
    }

    #[test]
    fn counts_must_match_the_repeats() {
        let err = invalid("raw_tp", |m| {
            m.ratio_to_base = Summary::of(&[0.9, 0.9]);
        });
        assert!(
            err.contains("ratio_to_base.samples has 2 values, not one per repeat"),
            "{err}"
        );
        // A mechanism has at most one run per round.
        let err = invalid("raw_tp", |m| {
            m.k_events_per_sec = Summary::of(&[900.0; 4]);
        });
        assert!(
            err.contains("k_events_per_sec.samples has 4 values"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.hits = Some(vec![100_000, 99_999, 100_000]));
        assert!(
            err.contains("(raw_tp): hits is [100000, 99999, 100000]"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| m.hits = Some(vec![100_000; 2]));
        assert!(err.contains("(raw_tp): hits"), "{err}");
        // Where the lead-in alone counted, its events, in each run.
        let lead_in = |m: &mut MechanismResult| {
            m.hits = Some(vec![10_000; 3]);
            m.counted_events = Some(vec![10_000; 3]);
        };
        let mut doc = document();
        lead_in(
            doc.mechanisms
                .iter_mut()
                .find(|m| m.name == "raw_tp")
                .unwrap(),
        );
        assert_eq!(doc.validate(), Ok(()));
        let err = invalid("raw_tp", |m| {
            lead_in(m);
            m.hits = Some(vec![10_000, 9_999, 10_000]);
        });
        assert!(
            err.contains("counted_events [10000, 10000, 10000]"),
            "{err}"
        );
        let err = invalid("raw_tp", |m| {
            lead_in(m);
            m.counted_events = Some(vec![1 << 40; 3]);
            m.hits = m.counted_events.clone();
        });
        assert!(err.contains("more than the run's own events"), "{err}");
        // ...but an interrupted run keeps fewer rounds.
        let mut doc = document();
        doc.repeats = 5;
        doc.interrupted = Some("SIGINT".into());
        doc.validate().unwrap();
    }

    #[test]
    fn names_are_unique_and_bases_present() {
        let mut doc = document();
        let dup = doc.mechanisms[2].clone();
        doc.mechanisms.push(dup);
        assert_eq!(
            doc.validate().unwrap_err(),
            "mechanisms[4]: name \"raw_tp\" appears twice"
        );
        let mut doc = document();
        doc.mechanisms.remove(0);
        let err = doc.validate().unwrap_err();
        assert!(
            err.contains("(kprobe): base \"base\" is not a base in the document"),
            "{err}"
        );
    }

    #[test]
    fn ok_needs_its_figures() {
        let err = invalid("tp", |m| m.ratio_to_base = None);
        assert!(
            err.contains("(tp): ratio_to_base is null, but the status is ok"),
            "{err}"
        );
        let err = invalid("tp", |m| m.overhead_ns = None);
        assert!(
            err.contains("(tp): overhead_ns is null, but the status is ok"),
            "{err}"
        );
    }
}
