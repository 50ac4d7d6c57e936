//! The measurement: pin to one CPU, attach, fire the trigger N times back
//! to back, read the clock and the hit counter. As in the kernel's
//! test_overhead, the rate is N / elapsed.

use std::mem::MaybeUninit;
use std::num::NonZeroU64;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use nix::unistd::gettid;

use super::context;
use super::keeper;
use super::load::{self, Loaded};
use super::producer::{Fired, Producer};
use super::speed;
use super::window;
use crate::measure::cpu::pin::{producer_cpus, CpuPin};
use crate::measure::environment::support::Ready;
use crate::measure::error::{Error, Result};
use crate::measure::kernel::{exe, features};
use crate::measure::mechanism::catalogue::{hit_counter, HitCounter, Mechanism};
use crate::measure::mechanism::target::Site;
use crate::measure::mechanism::trigger::{Armed, Trigger};
use crate::measure::objects::object;
use crate::measure::running::attach_cost::AttachCost;
use crate::measure::settings::options::{Counting, Options};

/// One timed run of one mechanism.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub mechanism: Mechanism,
    /// Events fired by all producers (for a call base, scaled: see
    /// [`Mechanism::events`]).
    pub events: u64,
    /// The longest producer's time.
    pub elapsed: Duration,
    /// What the BPF program counted from the producers, of
    /// `counted_events`; `None` for a base with no program, or where
    /// nothing was counted.
    pub hits: Option<u64>,
    /// The events `hits` are of: the lead-in's (`--counting lead-in`, the
    /// default, for the comm and call triggers), else the timed events'.
    pub counted_events: u64,
    /// Kernel-measured program run time and run count (with `bpf_stats`).
    pub prog_run: Option<(u64, u64)>,
    /// The CPU the run was pinned to (the first producer's).
    pub cpu: usize,
    /// Each producer's events, time and hits; one entry for one producer.
    pub producers: Vec<ProducerSample>,
    /// The machine's speed around this run: ns per step of the user-space
    /// reference work ([`speed::reference_ns`]), the mean of a reference
    /// just before and one just after the events, on the measuring CPU.
    pub speed_ns: f64,
    /// ns per event of the untimed lead-in on the measuring thread: a
    /// second look at the run's speed, for sizing later runs.
    pub lead_in_ns_per_event: f64,
    /// Time during the timed events when the measuring thread did not run
    /// (another task or the hypervisor had the CPU: the thread never
    /// sleeps while it fires), which `elapsed` includes.
    pub lost: Duration,
    /// What attaching took, for a mechanism where that is worth telling.
    pub attach: Option<AttachCost>,
    /// The counting window its events ran in (window.rs), when on.
    pub window: Option<u64>,
    /// What a probe on a function of this executable left at its
    /// instruction after the run, still attached: whether it traps.
    pub site: Option<Site>,
}

/// One producer's share of a [`Sample`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProducerSample {
    pub cpu: usize,
    pub events: u64,
    pub elapsed: Duration,
    /// Its hits, of the events [`Sample::counted_events`] says.
    pub hits: Option<u64>,
}

impl ProducerSample {
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }
}

impl Sample {
    /// The total rate: the sum of the producers' rates (one producer:
    /// events / elapsed).
    pub fn events_per_sec(&self) -> f64 {
        if self.producers.len() > 1 {
            self.producers
                .iter()
                .map(ProducerSample::events_per_sec)
                .sum()
        } else {
            self.events as f64 / self.elapsed.as_secs_f64()
        }
    }

    /// test_overhead's figure: `MAX_CNT * 1000000 / elapsed_ns`, truncated
    /// (the total rate with several producers).
    pub fn k_events_per_sec(&self) -> u64 {
        if self.producers.len() > 1 {
            return (self.events_per_sec() / 1e3) as u64;
        }
        let ns = self.elapsed.as_nanos().max(1);
        (self.events as u128 * 1_000_000 / ns) as u64
    }

    /// Time per event as one producer sees it (the mean over producers).
    pub fn ns_per_event(&self) -> f64 {
        if self.producers.len() > 1 {
            let per: Vec<f64> = self
                .producers
                .iter()
                .map(|p| p.elapsed.as_nanos() as f64 / p.events as f64)
                .collect();
            return per.iter().sum::<f64>() / per.len() as f64;
        }
        self.elapsed.as_nanos() as f64 / self.events as f64
    }

    /// The program's own run time per event, from the kernel's stats.
    pub fn prog_ns_per_event(&self) -> Option<f64> {
        let (ns, cnt) = self.prog_run?;
        (cnt > 0).then(|| ns as f64 / cnt as f64)
    }
}

/// A mechanism attached and its trigger armed on the calling thread, pinned
/// to one CPU, and on any extra producers. Lives only inside [`with_attached`],
/// which undoes everything.
pub struct Attached<'a, 'scope> {
    mechanism: Mechanism,
    loaded: Option<Loaded<'a>>,
    armed: &'a mut Armed,
    producers: Vec<Producer<'scope>>,
    bpf_stats: bool,
    /// How the comm and call programs count, for a mechanism whose
    /// program has the switch ([`switched`]); `None` otherwise: the
    /// program counts every event, the lead-in is a warm-up.
    switch: Option<Counting>,
    /// `--prog-work`: the programs do extra work on every event.
    work: bool,
    /// `--stacktrace`: the programs take the stack on every event.
    stack: bool,
    cpu: usize,
    longest_run: Option<Duration>,
}

impl Attached<'_, '_> {
    /// Fires `events` events from every producer at once (for a loop,
    /// rounded up to whole batches) and times them, after the lead-in.
    pub fn time_run(&mut self, events: NonZeroU64) -> Result<Sample> {
        let m = self.mechanism;
        // A program counts, and so does a loop's driver in a base run; a
        // user's object's program is counted by the BPF stats instead, and
        // a test run by the kernel.
        let counted_by = self.loaded.as_ref().map(|_| hit_counter(m));
        let (lead_in_ns_per_event, lead) = self.lead_in(events, counted_by)?;
        let events = fitted_for(m, events, lead_in_ns_per_event, self.longest_run);
        let start = Arc::new(Barrier::new(1 + self.producers.len()));
        for p in &self.producers {
            p.order(events.get(), start.clone())?;
        }
        let speed_before = speed::reference_ns();
        let before = self.prog_stats();
        let (all, lost, window) = self.fire_timed(events, &start)?;
        let after = self.prog_stats();
        let timed_counted = counted_by == Some(HitCounter::Program)
            && self.switch.is_none_or(Counting::counts_timed);
        let mut producers = self.count(&all, timed_counted)?;
        self.armed.verify().map_err(|e| e.of(m))?;
        let speed_ns = (speed_before + speed::reference_ns()) / 2.0;
        let prog_run = match (before, after) {
            (Some((t0, c0)), Some((t1, c1))) => Some((t1 - t0, c1 - c0)),
            _ => None,
        };
        let events = producers.iter().map(|p| p.events).sum();
        if let Some(n) = window {
            let programs = || self.loaded.as_ref().map(|l| l.jited()).unwrap_or_default();
            window::record(n, m, events, programs)?;
        }
        // The lead-in's hits stand for the run's where only it counted.
        let counted_events =
            lead_in_counted(&mut producers, lead.filter(|_| !timed_counted), events);
        let hits = hits_of(m, counted_by, &producers, prog_run, events)?;
        Ok(Sample {
            mechanism: m,
            events,
            elapsed: producers
                .iter()
                .map(|p| p.elapsed)
                .max()
                .unwrap_or_default(),
            hits,
            counted_events,
            prog_run,
            cpu: self.cpu,
            producers,
            speed_ns,
            lead_in_ns_per_event,
            lost,
            attach: self.loaded.as_ref().and_then(|l| l.attach_cost()),
            window,
            site: site_of(m),
        })
    }

    /// One more run, untimed in effect, with the BPF run-time stats on:
    /// the program's own time per event.
    fn stats_run(&mut self, events: NonZeroU64) -> Result<Sample> {
        let _on = features::enable_run_time_stats().map_err(|e| e.of(self.mechanism))?;
        let was = std::mem::replace(&mut self.bpf_stats, true);
        let sample = self.time_run(events);
        self.bpf_stats = was;
        sample
    }

    /// The program's run-time stats, read only when they are on: no
    /// syscall between the lead-in and the timed events otherwise.
    fn prog_stats(&self) -> Option<(u64, u64)> {
        self.loaded
            .as_ref()
            .filter(|_| self.bpf_stats)
            .and_then(|l| l.prog_stats())
    }

    /// A lead-in, untimed, from every producer, straight into the timed
    /// events: the caches and the probe's path are warm when the clock
    /// starts. Where the program has the switch, its events are counted
    /// and checked exactly (unless `--counting` says otherwise), and the
    /// switch is then set as the timed events want it. Its ns per event on
    /// this thread, and each producer's counted share.
    fn lead_in(
        &mut self,
        events: NonZeroU64,
        counted_by: Option<HitCounter>,
    ) -> Result<(f64, Option<Vec<ProducerSample>>)> {
        let counted = counted_by == Some(HitCounter::Program)
            && self.switch.is_some_and(Counting::counts_lead_in);
        if let Some(l) = self.loaded.as_mut() {
            // Attaching may have hit the probe already (fmod_ret sees every
            // write(2) of this thread, including log output).
            l.reset_hits();
            l.set_extra(counted, self.work, self.stack);
        }
        let n = lead_in(events.get());
        let start = Arc::new(Barrier::new(1 + self.producers.len()));
        for p in &self.producers {
            p.order(n, start.clone())?;
        }
        start.wait();
        let lead = Instant::now();
        let fired = self.armed.fire(n)?;
        let elapsed = lead.elapsed();
        let all = self.with_producers(fired, elapsed)?;
        let ns_per_event = elapsed.as_nanos() as f64 / fired.max(1) as f64;
        let lead = if counted {
            Some(self.count(&all, true)?)
        } else {
            None
        };
        if let Some(l) = self.loaded.as_mut() {
            l.set_extra(
                self.switch.is_some_and(Counting::on_when_timed),
                self.work,
                self.stack,
            );
            l.reset_hits();
        }
        Ok((ns_per_event, lead))
    }

    /// The timed run: `events` fired here once `start` lets every
    /// producer go. What each producer fired, this thread first, and how
    /// long this thread was off the CPU while it ran.
    fn fire_timed(
        &mut self,
        events: NonZeroU64,
        start: &Barrier,
    ) -> Result<(Vec<Fired>, Duration, Option<u64>)> {
        let (fired, elapsed, lost, win) = keeper::timed(|| {
            start.wait();
            let cpu = context::thread_cpu_time();
            let begin = Instant::now();
            let win = window::open();
            let fired = self.armed.fire(events.get());
            if let Ok(w) = win {
                window::close(w);
            }
            let elapsed = begin.elapsed();
            let ran = context::thread_cpu_time().saturating_sub(cpu);
            (fired, elapsed, elapsed.saturating_sub(ran), win)
        });
        let (fired, window) = (fired?, win?);
        Ok((self.with_producers(fired, elapsed)?, lost, window))
    }

    /// What this thread fired, then what each producer did for its
    /// order.
    fn with_producers(&self, fired: u64, elapsed: Duration) -> Result<Vec<Fired>> {
        let mut all = vec![Fired {
            cpu: self.cpu,
            events: fired,
            elapsed,
        }];
        for p in &self.producers {
            all.push(p.result().map_err(|e| e.of(self.mechanism))?);
        }
        Ok(all)
    }

    /// Each producer's hits (when `counting`) and, for a session
    /// mechanism, its exits, checked against the events it fired. Read
    /// before anything else runs on this thread: restoring the thread
    /// name, for one, fires the probe again.
    fn count(&mut self, all: &[Fired], counting: bool) -> Result<Vec<ProducerSample>> {
        let m = self.mechanism;
        let mut producers = Vec::with_capacity(all.len());
        for f in all {
            let hits = self
                .loaded
                .as_mut()
                .filter(|_| counting)
                .map(|l| l.hits(f.cpu));
            let exits = self
                .loaded
                .as_mut()
                .filter(|_| m.kind().is_session())
                .map(|l| l.session_exits(f.cpu));
            check_hits(m, hits, f.events)?;
            if let Some(exits) = exits.filter(|&e| e != f.events) {
                return Err(Error::failed(format!(
                    "{exits} of {} session entries saw their exit run with their cookie",
                    f.events
                ))
                .of(m));
            }
            producers.push(ProducerSample {
                cpu: f.cpu,
                events: f.events,
                elapsed: f.elapsed,
                hits,
            });
        }
        Ok(producers)
    }
}

/// Untimed events fired just before a timed run of `events`: a tenth. It
/// counts for the run where the timed events do not (`--counting
/// lead-in`): 10000 events of 100000, each checked.
pub fn lead_in(events: u64) -> u64 {
    events.div_ceil(10)
}

/// `events`, or as many as fit in `longest` at the lead-in's
/// `ns_per_event`, but never fewer than the lead-in's own tenth: a test
/// that checks counts needs no 100000 events of 10 µs (a uprobe on `ret`,
/// single-stepped under a hypervisor) to check them.
pub fn fitted(events: NonZeroU64, ns_per_event: f64, longest: Option<Duration>) -> NonZeroU64 {
    let Some(longest) = longest else {
        return events;
    };
    let fit = (longest.as_nanos() as f64 / ns_per_event.max(0.01)) as u64;
    NonZeroU64::new(fit.clamp(lead_in(events.get()), events.get())).unwrap_or(events)
}

/// [`fitted`] for `m`, but a base runs every event it was given: its
/// mechanisms are measured against it, and a cold emulated guest's first
/// run can be slow (6.12 on arm64: 32 µs an event, 3513 of 10000 fired).
fn fitted_for(m: Mechanism, events: NonZeroU64, ns: f64, longest: Option<Duration>) -> NonZeroU64 {
    fitted(events, ns, longest.filter(|_| !m.is_base()))
}

/// Whether `mechanism`'s program has the `count_on` switch: the comm and
/// call triggers' programs of our own object, but the sessions', whose
/// exit check needs every entry counted.
pub(super) fn switched(mechanism: Mechanism) -> bool {
    matches!(mechanism.trigger(), Trigger::TaskRename | Trigger::Call(_))
        && mechanism.object().is_none()
        && !mechanism.kind().is_session()
}

/// Each mechanism fires exactly once per event of its trigger, and the
/// program counts only the producers: any other count is a failure. (A
/// base with no program: `None`.)
fn check_hits(mechanism: Mechanism, hits: Option<u64>, events: u64) -> Result<()> {
    match hits {
        Some(hits) if hits != events => {
            let what = format!(
                "the BPF program counted {hits} hits from a producer for its {events} events"
            );
            let what = if load::on_exe(mechanism) {
                exe::explain_replaced_exe(what)
            } else {
                what
            };
            Err(Error::failed(what).of(mechanism))
        }
        _ => Ok(()),
    }
}

/// The events a run's hits are of: where the lead-in alone counted
/// (`lead`, each producer's share), the lead-in's, whose hits then stand
/// for each producer's; else the timed `events`.
fn lead_in_counted(
    producers: &mut [ProducerSample],
    lead: Option<Vec<ProducerSample>>,
    events: u64,
) -> u64 {
    let Some(lead) = lead else {
        return events;
    };
    for (p, l) in producers.iter_mut().zip(&lead) {
        p.hits = l.hits;
    }
    lead.iter().map(|p| p.events).sum()
}

/// A run's hits of `m`, as `counted_by` counts them; `prog_run` is the
/// program's run time and count over the timed `events`.
fn hits_of(
    m: Mechanism,
    counted_by: Option<HitCounter>,
    producers: &[ProducerSample],
    prog_run: Option<(u64, u64)>,
    events: u64,
) -> Result<Option<u64>> {
    Ok(match counted_by {
        None => None,
        // None where nothing was counted (`every-check`, `none`).
        Some(HitCounter::Program) => producers.iter().map(|p| p.hits).sum(),
        // Reached at least once an event: then counted as the events, since
        // a system-wide hook counts other processes' events too.
        Some(HitCounter::Stats) => {
            object::check_reached(m, prog_run.map(|(_, n)| n), events)?;
            Some(events)
        }
        // A base's program is ours; the user's ran as often as asked.
        Some(HitCounter::TestRun) => (!m.is_base()).then_some(events),
    })
}

/// What a probe on a function of this executable left at its instruction
/// after `m`'s run; `None` for any other mechanism.
fn site_of(m: Mechanism) -> Option<Site> {
    match m.trigger() {
        Trigger::Call(target) if load::on_exe(m) => target.site(),
        Trigger::Call(_)
        | Trigger::TaskRename
        | Trigger::Loop(_)
        | Trigger::Syscall(_)
        | Trigger::TestRun(_) => None,
    }
}

/// Sets up `ready`'s mechanism (CPU pin, trigger, load, producers,
/// attach: its checks were made before, once), hands the run to `f`, then
/// undoes all of it, in reverse order, however `f` ends (error or panic
/// included).
pub fn with_attached<R>(
    ready: Ready<'_>,
    opts: &Options,
    f: impl FnOnce(&mut Attached<'_, '_>) -> Result<R>,
) -> Result<R> {
    let mechanism = ready.mechanism();
    crate::measure::kernel::progress::starting(mechanism.name());
    // A user's object's hits are its run count: stats on in all its runs.
    let bpf_stats = opts.bpf_stats || hit_counter(mechanism) == HitCounter::Stats;
    let stats = bpf_stats && !mechanism.is_base();
    if let Some(refused) = stats.then(|| stats_refused(ready)).flatten() {
        return Err(refused);
    }
    let _stats = if stats {
        Some(features::enable_run_time_stats().map_err(|e| e.of(mechanism))?)
    } else {
        None
    };
    let pin = CpuPin::new(opts.cpu)?;
    let cpus = producer_cpus(pin.cpu, &pin.allowed, opts.producers.get())?;
    let mut storage = MaybeUninit::uninit();
    // Load, arm, attach: a loop trigger runs a loaded driver, and a call
    // target's first byte must be checked before a uprobe overwrites it.
    let mut loaded = load::load(mechanism, &mut storage, opts)?;
    // Two syscalls each run: only when someone reads them.
    if let Some(l) = loaded
        .as_ref()
        .filter(|_| log::log_enabled!(log::Level::Debug))
    {
        let (prog, driver) = l.jited_at();
        log::debug!("{mechanism}: program JITed at {prog:x?}, driver at {driver:x?}");
    }
    let trigger = mechanism.trigger();
    let driver = loaded.as_ref().and_then(|l| l.test_run_fd());
    let mut armed = trigger
        .arm(driver, opts.batch.get())
        .map_err(|e| e.of(mechanism))?;
    let driver_copies = cpus[1..]
        .iter()
        .map(|_| {
            driver
                .map(|fd| fd.try_clone_to_owned())
                .transpose()
                .map_err(|e| Error::failed(format!("dup of the driver's fd failed: {e}")))
        })
        .collect::<Result<Vec<Option<OwnedFd>>>>()?;
    std::thread::scope(|scope| {
        let mut producers = Vec::with_capacity(cpus.len() - 1);
        for (&cpu, driver) in cpus[1..].iter().zip(driver_copies) {
            producers.push(
                Producer::spawn(scope, cpu, trigger, driver, opts.batch.get())
                    .map_err(|e| e.of(mechanism))?,
            );
        }
        if let Some(l) = loaded.as_mut() {
            l.count_thread(pin.cpu, gettid().as_raw() as u32);
            for p in &producers {
                l.count_thread(p.cpu, p.tid);
            }
            l.attach(mechanism)?;
        }
        let mut run = Attached {
            mechanism,
            loaded,
            armed: &mut armed,
            producers,
            bpf_stats,
            switch: switched(mechanism).then_some(opts.counting),
            work: opts.prog_work.get() > 0,
            stack: opts.stacktrace,
            cpu: pin.cpu,
            longest_run: opts.longest_run,
        };
        f(&mut run)
    })
}

/// One measurement of `ready`'s mechanism with `opts`: `opts.iterations`
/// events, scaled for a base as its trigger says.
pub fn timed_run(ready: Ready<'_>, opts: &Options) -> Result<Sample> {
    timed_runs(ready, opts, 1).map(|mut s| s.remove(0))
}

/// Why `ready`'s mechanism cannot have the BPF stats on, if it cannot.
fn stats_refused(ready: Ready<'_>) -> Option<Error> {
    let missing = ready.stats_lacking()?;
    Some(Error::unsupported(format!("no prog ns: needs {missing}")).of(ready.mechanism()))
}

/// A warm-up: one measurement of `ready`'s mechanism with `opts`, then,
/// in the same attachment, the stats run: one with the BPF run-time
/// stats on, of the iterations `stats` asks for once it has seen the
/// first (none: no such run). Attached on its own, the stats run paid an
/// attach and a detach more (a perf event's detach waits ~0.1 s for RCU).
pub fn warm_up_run(
    ready: Ready<'_>,
    opts: &Options,
    stats: impl FnOnce(&Sample) -> Option<NonZeroU64>,
) -> Result<(Sample, Option<Result<Sample>>)> {
    let m = ready.mechanism();
    let events = |n: NonZeroU64| {
        NonZeroU64::new(m.events(n.get())).expect("scaling a non-zero count keeps it non-zero")
    };
    let refused = stats_refused(ready);
    with_attached(ready, opts, |run| {
        let warm = run.time_run(events(opts.iterations))?;
        let stats = stats(&warm).map(|n| match refused {
            Some(refused) => Err(refused),
            None => run.stats_run(events(n)),
        });
        Ok((warm, stats))
    })
}

/// `n` (at least one) such measurements in one attachment.
pub fn timed_runs(ready: Ready<'_>, opts: &Options, n: usize) -> Result<Vec<Sample>> {
    let events = NonZeroU64::new(ready.mechanism().events(opts.iterations.get()))
        .expect("scaling a non-zero count keeps it non-zero");
    with_attached(ready, opts, |run| {
        (0..n.max(1)).map(|_| run.time_run(events)).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_events_are_fitted_to_the_longest_run_down_to_a_tenth() {
        let n = NonZeroU64::new(100_000).unwrap();
        let longest = Some(Duration::from_millis(200));
        assert_eq!(fitted(n, 500.0, longest), n);
        assert_eq!(fitted(n, 9_500.0, longest).get(), 21_052);
        assert_eq!(fitted(n, 1e6, longest).get(), 10_000);
        assert_eq!(fitted(n, 1e6, None), n);
        let raw_tp: Mechanism = "raw_tp".parse().unwrap();
        assert_eq!(fitted_for(raw_tp, n, 1e6, longest).get(), 10_000);
        assert_eq!(
            fitted_for(raw_tp.base(), n, 32_367.0, longest),
            n,
            "a base fires all"
        );
    }

    #[test]
    fn wrong_hit_counts_fail() {
        let raw_tp: Mechanism = "raw_tp".parse().unwrap();
        assert!(check_hits(raw_tp, Some(1000), 1000).is_ok());
        assert!(check_hits(raw_tp.base(), None, 1000).is_ok());
        let err = check_hits(raw_tp, Some(999), 1000).unwrap_err().to_string();
        assert!(
            err.starts_with("raw_tp: ") && err.contains("999 hits") && err.contains("1000 events"),
            "{err}"
        );
    }

    #[test]
    fn rates_follow_test_overhead() {
        let s = Sample {
            mechanism: "base".parse().unwrap(),
            events: 100_000,
            elapsed: Duration::from_nanos(36_900_000),
            hits: None,
            counted_events: 100_000,
            prog_run: Some((5_000_000, 100_000)),
            cpu: 0,
            producers: Vec::new(),
            speed_ns: 1.0,
            lead_in_ns_per_event: 1.0,
            lost: Duration::ZERO,
            attach: None,
            window: None,
            site: None,
        };
        assert_eq!(s.k_events_per_sec(), 2710); // 100000 * 1e6 / 36.9e6
        assert!((s.ns_per_event() - 369.0).abs() < 1e-9);
        assert_eq!(s.prog_ns_per_event(), Some(50.0));
    }
}
