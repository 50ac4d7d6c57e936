//! `bpf-overhead [OPTIONS]`: the plan from the command line, checked
//! before anything needs root or takes time, run through the pipeline,
//! judged against a baseline or B, and the result in the chosen format.

use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use signal_hook::consts::{SIGINT, SIGTERM};

use bpf_overhead::document::{self, Document, Status};
use bpf_overhead::env_vars::KCONFIG_ENV;
use bpf_overhead::gate::{self, against, Threshold};
use bpf_overhead::measure::kernel::host::{self, Host};
use bpf_overhead::measure::{
    allowed_cpus, cpu, cpu::cpulock::Wait, objects::object, Options, Privileged, Variant,
};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::{kconfig, render, Error, Mechanism};

use super::cli::Cli;
use super::object_args;
use super::save::{save_target, SaveTarget};
use crate::{exit, note, print, Failure};

/// Measures what the command line asks for (see --help).
pub fn main(cli: &Cli) -> Result<ExitCode, Failure> {
    if cli.list_triggers {
        return print(&object::list_triggers()).map(|()| ExitCode::SUCCESS);
    }
    check_format(cli)?;
    let (selection, against) = object_args::open(cli)?;
    // Bad input first, before anything needs root or takes time.
    if let Some(cpu) = cli.cpu {
        cpu::pin::choose(Some(cpu)).map_err(|e| Failure::Input(e.to_string()))?;
    }
    if cli.list {
        return list(cli, &selection);
    }
    check_producers(cli)?;
    let mut plan = plan(cli, &selection, against);
    let baseline = load_baseline(cli, &plan)?;
    let save = match &cli.save {
        Some(path) => Some(save_target(
            path,
            cli.baseline.as_deref(),
            cli.overwrite_baseline,
        )?),
        None => None,
    };
    check_duration(&plan)?;
    let privileged = pipeline::check_privileges(&plan)?;
    object_args::try_load(&plan)?;
    plan.wait = if cli.no_wait { Wait::No } else { Wait::Yes };
    plan.stop = Some(stop_on_signal());
    let doc = match execute(&plan, &privileged) {
        Err(Error::Busy(msg)) => {
            note(&format!("error: {msg}"));
            return Ok(ExitCode::from(exit::BUSY));
        }
        Err(Error::Stopped) => {
            let signal = plan.stopped_by().unwrap_or(SIGINT);
            note(&format!(
                "interrupted by {} while waiting for the CPU: nothing measured",
                pipeline::signal_name(signal)
            ));
            return Ok(ExitCode::from((128 + signal) as u8));
        }
        doc => doc?,
    };
    conclude(cli, &plan, &doc, baseline, save.as_ref())
}

/// A completed run's result saved, judged and printed, and its exit status.
fn conclude(
    cli: &Cli,
    plan: &Plan,
    doc: &Document,
    baseline: Option<(&Path, Vec<Document>)>,
    save: Option<&SaveTarget>,
) -> Result<ExitCode, Failure> {
    let interrupted = plan.stopped_by();

    // The result file first: whatever happens to stdout, it is written.
    let saved = match (save, interrupted) {
        (Some(SaveTarget::File(path)), None) => Some(doc.save(path).map(|()| path.clone())),
        (Some(SaveTarget::Set(dir)), None) => Some(doc.save_into_set(dir)),
        _ => None,
    };
    // An interrupted run is not judged: it has fewer rounds.
    let gate = baseline
        .as_ref()
        .filter(|_| interrupted.is_none())
        .map(|(path, old)| judge(cli, path, old, doc))
        .or_else(|| {
            plan.against
                .as_ref()
                .filter(|_| interrupted.is_none())
                .map(|variant| judge_against(cli, variant, doc))
        });
    let printed = output(cli, doc, gate.as_ref());

    if let Some(signal) = interrupted {
        let unsaved = if save.is_some() {
            "; nothing saved"
        } else {
            ""
        };
        note(&format!(
            "interrupted by {}: the result holds only the rounds every mechanism completed{unsaved}",
            pipeline::signal_name(signal)
        ));
        return Ok(ExitCode::from((128 + signal) as u8));
    }
    match saved {
        Some(Ok(path)) => note(&format!("result saved to {}", path.display())),
        Some(Err(e)) => return Err(Failure::Environment(e)),
        None => {}
    }
    printed?;
    Ok(exit_code(cli, doc, gate.as_ref().map(|g| &g.findings)))
}

/// A format that cannot carry an in-run comparison's two sides is bad
/// input beside --against.
fn check_format(cli: &Cli) -> Result<(), Failure> {
    if cli.format.carries_two_sides() || cli.against.is_none() {
        return Ok(());
    }
    Err(Failure::Input(format!(
        "--format {} takes no --against: its records carry one run's figures per \
         mechanism; judge B against A in the table or json, or save each side's run",
        cli.format.name()
    )))
}

/// Each producer needs a CPU of its own, among those this process may use.
fn check_producers(cli: &Cli) -> Result<(), Failure> {
    // Counted from the affinity: nothing here needs the thread pinned.
    let usable = allowed_cpus()
        .map(|cpus| cpus.len())
        .map_err(|e| Failure::Input(e.to_string()))?;
    if cli.producers.get() > usable {
        return Err(Failure::Input(format!(
            "--producers {}: each producer needs a CPU of its own, and this process may use {usable}",
            cli.producers
        )));
    }
    Ok(())
}

/// The run the command line asks for.
fn plan(cli: &Cli, selection: &[Mechanism], against: Option<Variant>) -> Plan {
    let defaults = Plan::new(selection, host::emulated());
    let defaults = match against {
        Some(variant) => defaults.against(variant),
        None => defaults,
    };
    Plan {
        options: Options {
            iterations: cli.iterations.unwrap_or(defaults.options.iterations),
            cpu: cli.cpu,
            bpf_stats: false,
            batch: cli.batch,
            prog_work: cli.prog_work,
            counting: cli.counting,
            stacktrace: cli.stacktrace,
            producers: cli.producers,
            longest_run: None,
        },
        // A count asked for is a count: no sizing to a run time.
        run_time: defaults.run_time.filter(|_| cli.iterations.is_none()),
        // Then nothing to size either: no warm-up, as test_overhead (each
        // timed run's lead-in warms the path), but for exact counts, where
        // it takes a first run's faults out of the count. Its attach and
        // detach were half of a one-round run's time.
        warmup: defaults.warmup && (cli.iterations.is_none() || defaults.exact()),
        repeats: cli.repeat,
        stats_run: !cli.no_prog_stats,
        budget: cli.budget.unwrap_or(defaults.budget),
        threshold: threshold(cli),
        emulator: host::emulator(),
        kernel_config: kernel_config(),
        ..defaults
    }
}

/// The running kernel's config, recorded with the result: its own
/// (/proc/config.gz, CONFIG_IKCONFIG_PROC), else the file its runner gave
/// ($BPF_OVERHEAD_KCONFIG, `cargo xtask vmtest`), else
/// /boot/config-<release>; none where none can be read.
fn kernel_config() -> Option<kconfig::KernelConfig> {
    use std::io::Read as _;
    let proc_config = || {
        let gz = std::fs::read("/proc/config.gz").ok()?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut text)
            .ok()?;
        Some(("/proc/config.gz".to_owned(), text))
    };
    let file = |path: String| Some((path.clone(), std::fs::read_to_string(path).ok()?));
    let given = || file(std::env::var(KCONFIG_ENV).ok().filter(|p| !p.is_empty())?);
    let boot = || file(format!("/boot/config-{}", host::kernel_release()));
    let (mut source, text) = proc_config().or_else(given).or_else(boot)?;
    // vmtest's file says where vmtest read it.
    if let Some(said) = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# vmtest: "))
    {
        source = format!("vmtest: {said}");
    }
    let config = kconfig::Config::parse(&text);
    (!config.is_empty()).then(|| config.record(&source))
}

/// `--threshold`, or the defaults by trigger.
fn threshold(cli: &Cli) -> Threshold {
    match (cli.threshold, &cli.against) {
        (Some(t), _) => t,
        (None, Some(_)) => Threshold::Fixed(against::IN_RUN_THRESHOLD),
        (None, None) => Threshold::ByTrigger,
    }
}

/// `--baseline`'s runs, checked before the run: a result file, or a
/// directory of them (a baseline set, as `--save DIR/` fills it), each
/// readable, a result, and with a mechanism in common with the plan.
fn load_baseline<'a>(
    cli: &'a Cli,
    plan: &Plan,
) -> Result<Option<(&'a Path, Vec<Document>)>, Failure> {
    let Some(path) = &cli.baseline else {
        return Ok(None);
    };
    let names: Vec<&str> = plan
        .mechanisms
        .iter()
        .filter(|m| !m.is_base())
        .map(|m| m.name())
        .collect();
    let files = if path.is_dir() {
        let files = document::set_files(path).map_err(Failure::Input)?;
        if files.is_empty() {
            return Err(Failure::Input(format!(
                "baseline {}: no result files (*.json) in this directory; fill it with --save {}/",
                path.display(),
                path.display()
            )));
        }
        files
    } else {
        vec![path.clone()]
    };
    let mut docs = Vec::new();
    for file in files {
        let doc = Document::load(&file).map_err(Failure::Input)?;
        gate::check_overlap(&doc, &names)
            .map_err(|e| Failure::Input(format!("baseline {}: {e}", file.display())))?;
        let unit = if plan.exact() {
            document::Unit::Instructions
        } else {
            document::Unit::Ns
        };
        if doc.unit != unit {
            return Err(Failure::Input(format!(
                "baseline {}: it counts {} per event and this run would count {unit}: exact \
                 counts and timed runs do not compare",
                file.display(),
                doc.unit
            )));
        }
        docs.push(doc);
    }
    Ok(Some((path, docs)))
}

/// SIGINT or SIGTERM: stop after the run in progress, undo everything,
/// print what was measured, exit 128 + the signal. A second one ends the
/// process at once (leaving nothing either: BPF programs and links go with
/// their fds, tracefs with its namespace). Returns [`Plan::stop`]'s flag.
fn stop_on_signal() -> &'static AtomicUsize {
    static STOP: AtomicUsize = AtomicUsize::new(0);
    static ASKED: AtomicBool = AtomicBool::new(false);
    for signal in [SIGINT, SIGTERM] {
        // The shutdown first: it looks at ASKED before the second sets it.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, &ASKED);
        let _ = signal_hook::flag::register(signal, &ASKED);
        let _ = signal_hook::flag::register_usize(signal, &STOP, signal as usize);
    }
    &STOP
}

/// Runs the plan, with a progress bar on a terminal.
fn execute(plan: &Plan, privileged: &Privileged) -> Result<Document, Error> {
    let bar = progress_bar();
    let doc = pipeline::execute(plan, privileged, Host::current, |step| {
        if bar.length() != Some(step.total) {
            bar.set_length(step.total);
        }
        bar.set_message(step.what.clone());
        bar.set_position(step.done);
    });
    bar.finish_and_clear();
    doc
}

/// The gate's verdict on a run against its baseline, and its text.
struct Gate {
    findings: gate::Findings,
    text: String,
}

/// Compares `doc` with the baseline `old`, read from `path`.
fn judge(cli: &Cli, path: &Path, old: &[Document], doc: &Document) -> Gate {
    let findings = gate::set::compare_set(old, doc, threshold(cli));
    let newest = old.iter().max_by(|a, b| a.timestamp.cmp(&b.timestamp));
    let label = match (old.len(), newest) {
        (1, Some(one)) => format!(
            "baseline {} ({}, kernel {})",
            path.display(),
            one.timestamp,
            one.kernel_release
        ),
        (n, _) => format!("baseline set {} ({n} runs)", path.display()),
    };
    let text = render::gate_report(&findings, &label);
    Gate { findings, text }
}

/// B against A inside `doc`, a run made with `--against variant`.
fn judge_against(cli: &Cli, variant: &Variant, doc: &Document) -> Gate {
    let t = match threshold(cli) {
        // Counts do not drift: a change of 1% is one.
        _ if cli.threshold.is_none() && doc.exact() => against::EXACT_THRESHOLD,
        Threshold::Fixed(t) => t,
        Threshold::ByTrigger => unreachable!("--against has one threshold on every trigger"),
    };
    let findings = against::compare(doc, t);
    let text = render::against_report(doc, &findings, &variant.to_string())
        + &object_args::unpaired(variant);
    Gate { findings, text }
}

/// The result in the chosen format on stdout, and what goes beside it on
/// stderr. Stderr is written even when stdout fails, whose error is
/// returned.
fn output(cli: &Cli, doc: &Document, gate: Option<&Gate>) -> Result<(), Failure> {
    let page = cli
        .format
        .page(doc, gate.map(|g| (&g.findings, g.text.as_str())));
    let printed = print(&page.stdout);
    for line in &page.notes {
        note(line);
    }
    let _ = std::io::stderr().write_all(page.stderr.as_bytes());
    printed
}

/// The exit status of a completed run (see --help), with the failed
/// mechanisms named on stderr: a regression first (it blocks a change
/// whatever else happened), then a mechanism that could not run, an
/// undecided gate, and nothing measured.
fn exit_code(cli: &Cli, doc: &Document, findings: Option<&gate::Findings>) -> ExitCode {
    let failed: Vec<&str> = doc
        .mechanisms
        .iter()
        .filter(|m| m.status == Status::Failed)
        .map(|m| m.name.as_str())
        .collect();
    if !failed.is_empty() {
        note(&format!("failed: {}", failed.join(", ")));
    }
    let regressed = findings.is_some_and(|r| !r.passed());
    let unsure = findings.is_some_and(|r| !r.conclusive_pass());
    let code = if regressed {
        exit::REGRESSED
    } else if !failed.is_empty() {
        exit::ENVIRONMENT
    } else if unsure {
        exit::UNDECIDED
    } else if objects_unmeasured(cli, doc) {
        note(
            "--object: nothing of it was measured: every program was skipped (the result says why)",
        );
        exit::NOTHING_MEASURED
    } else if doc.all_skipped() {
        note("nothing measured: every selected mechanism was skipped (the result says why)");
        exit::NOTHING_MEASURED
    } else {
        exit::OK
    };
    ExitCode::from(code)
}

/// With `--object`: whether none of the objects' programs was measured,
/// every one skipped.
fn objects_unmeasured(cli: &Cli, doc: &Document) -> bool {
    let mut programs = doc
        .mechanisms
        .iter()
        .filter(|m| Mechanism::by_name(&m.name).is_some_and(|m| m.object().is_some()))
        .peekable();
    !cli.objects.is_empty()
        && programs.peek().is_some()
        && programs.all(|m| m.status == Status::Skipped)
}

/// Refuses, before the run, a run that cannot finish within a day: the
/// triggers alone, timed for a moment, give a lower bound of its length.
fn check_duration(plan: &Plan) -> Result<(), Failure> {
    const DAY: f64 = 86_400.0;
    let secs = pipeline::estimate_secs(plan);
    if secs <= DAY {
        return Ok(());
    }
    let days = secs / DAY;
    let days = if days < 1e4 {
        format!("{days:.1} days")
    } else {
        format!("{days:.1e} days")
    };
    let fit = (plan.options.iterations.get() as f64 * DAY / secs)
        .floor()
        .max(1.0);
    Err(Failure::Input(format!(
        "--iterations {} with --repeat {}: this run would take at least {days}; \
         at most about {fit:.0} iterations finish in a day",
        plan.options.iterations, plan.repeats
    )))
}

/// A progress bar on stderr when it is a terminal; nothing otherwise.
/// Drawn only between runs (no ticker thread to disturb the timed ones).
fn progress_bar() -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}").expect("a valid template"),
    );
    bar
}

/// `--list`: every mechanism (or the selection and its bases), its hook
/// and needs, and whether this kernel runs it — found by a one-event run
/// when privileged.
fn list(cli: &Cli, selection: &[Mechanism]) -> Result<ExitCode, Failure> {
    let mechanisms = pipeline::expand(selection);
    print(&render::list(&pipeline::survey(&mechanisms, cli.cpu)))?;
    Ok(ExitCode::SUCCESS)
}
