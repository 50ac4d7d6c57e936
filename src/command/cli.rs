//! The command line: its arguments, their parsers, and clap's errors as
//! one line.

use std::io::Write as _;
use std::num::{NonZeroU64, NonZeroUsize};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use bpf_overhead::exit_status;
use bpf_overhead::measure::mechanism::syscall::Syscall;
use bpf_overhead::measure::objects::object::{self, Request};
use bpf_overhead::measure::{Batch, Counting, ProgWork, Variant, MAX_BATCH, MAX_PROG_WORK};
use bpf_overhead::pipeline::{Threshold, DEFAULT_REPEATS};
use bpf_overhead::render::formats::{CompareFormat, Format, ReportFormat};
use bpf_overhead::Mechanism;

use crate::note;

/// `--help`'s end: the exit statuses, from their one list
/// ([`exit_status::TABLE`]), and examples, a gate that can pass first.
fn after_help() -> String {
    exit_status::help_text()
        + "The same statuses for report, compare, cargo xtask vmtest and history \
           (docs/gate.md). 2 includes a --save that cannot be written safely (another user's \
           link, the baseline itself); 4 also when every program of the --object files was \
           skipped; with 75 one line on stderr says which run holds the CPU (without \
           --no-wait the run waits for it).\n\n\
           Examples:\n  \
           sudo bpf-overhead\n  \
           sudo bpf-overhead -m raw_tp,uprobe-nop --repeat 10\n  \
           sudo bpf-overhead --against prog-work=20 -m raw_tp-loop,uprobe-nop   # a gate in one run\n  \
           sudo bpf-overhead --object agent.bpf.o --against object=base/agent.bpf.o\n  \
           sudo bpf-overhead --save baselines/    # an hour apart, three times or more: a set\n  \
           sudo bpf-overhead --baseline baselines/\n  \
           sudo bpf-overhead --format json --save run.json\n  \
           bpf-overhead report 6.1.json 6.12.json --svg report.svg"
}

#[derive(Debug, Parser)]
#[command(
    name = "bpf-overhead",
    version,
    about = "Measures what it costs to attach a BPF program, mechanism by mechanism \
             (kprobe, raw_tp, fentry, uprobe...), against the same trigger with nothing \
             attached",
    long_about = "Measures what it costs to attach a BPF program, mechanism by mechanism \
(kprobe, kretprobe, raw_tp, tp, fentry, fexit, fmod_ret, uprobe, uretprobe), as the kernel's \
test_overhead selftest and bench tool do: pinned to one CPU, fire the trigger N times, count \
the BPF program's hits, and compare the rate with the same trigger with nothing attached \
(its base).\n\n\
Each mechanism and its base get one untimed warm-up run, which also sizes its timed runs to \
about 50 ms each (unless --iterations). Then come timed rounds: in each, every base runs \
before and after each of its mechanisms (base, raw_tp, base, tp, base), and a mechanism's \
overhead is its ns per event over the mean of the two base runs around it, so that drift in \
the machine's speed cancels. The measuring CPU never idles between runs (an idle vCPU comes \
back slow on a shared VM), and each timed run starts straight after an untimed lead-in of \
the same events. After --repeat rounds, a mechanism goes on, within --budget, until its \
overhead is known well enough to see a change of the threshold; the table's sees column \
says how well it is known. The program's own run time \
comes from one extra run with the kernel's BPF run-time stats on (BPF_ENABLE_STATS, which \
goes off again when the run ends): the stats add two clock reads per program run, so that \
run is never one of the timed ones.\n\n\
Needs root: CAP_BPF and CAP_PERFMON to load the programs; tp also reads root's tracefs \
(CAP_DAC_READ_SEARCH), uprobes and the prog ns run need CAP_SYS_ADMIN. What is missing is \
named before anything runs. SIGINT or SIGTERM stops after the run in progress and prints \
what was measured, marked INTERRUPTED.",
    after_help = after_help(),
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Mechanisms to measure, comma-separated or repeated [default: all].
    /// Each one's base is measured too. See --list for the names.
    #[arg(short, long = "mechanism", value_name = "NAME", value_delimiter = ',',
          value_parser = parse_mechanism)]
    pub mechanisms: Vec<Mechanism>,

    /// Mechanisms to leave out of the selection (or of all), comma-separated
    /// or repeated: e.g. the two links on every function, whose attach and
    /// detach take most of an emulated run.
    #[arg(long, value_name = "NAME", value_delimiter = ',', value_parser = parse_mechanism)]
    pub skip: Vec<Mechanism>,

    /// Events per timed run (a base's scaled as its trigger says). Without
    /// it, each mechanism's events are scaled so that its timed runs last
    /// about 50 ms, from its warm-up run (100000 under emulation). With
    /// it there is nothing to size, and no warm-up run (each timed run's
    /// lead-in warms the path, as in test_overhead), but for exact counts.
    /// A run that would take more than a day is refused.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_at_least_one::<NonZeroU64>)]
    pub iterations: Option<NonZeroU64>,

    /// The least number of timed rounds (after one warm-up run). Then,
    /// within --budget, more rounds of each mechanism whose overhead is
    /// not yet known well enough to see a change of the threshold.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REPEATS,
          allow_negative_numbers = true, value_parser = parse_at_least_one::<NonZeroUsize>)]
    pub repeat: NonZeroUsize,

    /// Seconds of timed rounds after which no round beyond --repeat
    /// starts; 0: exactly --repeat rounds [default: 45, 75 with --against,
    /// 0 under emulation].
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub budget: Option<Duration>,

    /// CPU to pin every run to [default: 0, or the first CPU this process
    /// may use].
    #[arg(long, value_name = "CPU", allow_negative_numbers = true, value_parser = parse_cpu)]
    pub cpu: Option<usize>,

    /// List the mechanisms, what each attaches to and needs, and whether
    /// this kernel supports it; then exit.
    #[arg(long)]
    pub list: bool,

    /// Output format. kcidb and squad print kernel CI's records of the
    /// result (docs/kernel-ci.md); they take no --against.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Compare with earlier results: a --save or --format json file, or a
    /// directory of them (a baseline set, filled by --save DIR/). Exit 1
    /// if a mechanism's overhead regressed, 3 if the runs could not tell.
    /// Against several runs, only a change beyond their spread between
    /// runs counts; against one, only a change beyond the largest drift
    /// between runs seen on this machine kind (+100%); a run under other
    /// conditions (stolen time, other work, speed) than the baseline's is
    /// not called REGRESSED. For a change under those, use --against.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Compare inside this run: measure each mechanism as A (this run's
    /// settings) and as B (VARIANT) in the same rounds, alternating, each
    /// run bracketed by its base and sized to about 10 ms (not 50: closer
    /// pairs, more of them), and judge B against A from the rounds'
    /// pairs (signed-rank test): exit 1 if B regressed, 3 if the pairs
    /// could not tell. VARIANT: prog-work=N (B's programs do N steps of
    /// extra work per hit; prog-work=0 against the default is A/A) or
    /// bpf-stats (the kernel's BPF run-time stats on during B's runs:
    /// what enabling them costs) or stacktrace (B's programs also take the
    /// kernel stack on each hit, as --stacktrace) or object=FILE (with --object: B is
    /// FILE's build of the same programs, paired by program name; those
    /// only one side has are listed, not compared).
    #[arg(long, value_name = "VARIANT", value_parser = Variant::parse,
          conflicts_with = "baseline")]
    pub against: Option<Variant>,

    /// With --baseline: a regression is an overhead over base (the
    /// mechanism's own cost) higher by more than this many percent, and
    /// beyond the noise of both runs (one-sided Mann-Whitney, p <= 0.05).
    /// Also what the rounds aim to see. Default: 6, and 15 on the comm
    /// and syscall triggers, whose overheads are a small part of a
    /// syscall; with
    /// --against, 5 on every trigger (pairs in one run do not carry the
    /// drift between runs).
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true,
          value_parser = Threshold::parse)]
    pub threshold: Option<Threshold>,

    /// Write the result as JSON to FILE (whatever --format), for later use
    /// as a --baseline. Written whole or not at all (a new file renamed
    /// over FILE), and not when the run is interrupted. A directory is a
    /// baseline set: the run is added to it as a new file named by its
    /// time, never over another. Under sudo the file is the invoking
    /// user's, made only where they may write; another user's link is
    /// not followed.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Let --save replace the --baseline file (refused otherwise).
    #[arg(long, requires = "save")]
    pub overwrite_baseline: bool,

    /// Skip the extra run with BPF run-time stats (no "prog ns" figure).
    #[arg(long)]
    pub no_prog_stats: bool,

    /// Kernel-loop trigger (`*-loop` mechanisms): loop iterations per
    /// BPF_PROG_TEST_RUN of the driver, 1 to 1000.
    #[arg(long, value_name = "N", default_value_t = Batch::default(),
          allow_negative_numbers = true, value_parser = parse_batch)]
    pub batch: Batch,

    /// Steps of extra work every program does per hit (a dependent add
    /// each, about a CPU cycle), 0 to 10000: what a mechanism costs next to
    /// a program that does something.
    #[arg(long, value_name = "N", default_value_t = ProgWork::default(),
          allow_negative_numbers = true, value_parser = parse_prog_work)]
    pub prog_work: ProgWork,

    /// Which events the comm and call triggers' programs count: lead-in
    /// (the untimed lead-in before each timed run, checked exactly; the
    /// timed events run test_overhead's programs), every (every event:
    /// the thread check and a plain add), every-atomic (a lock-prefixed
    /// add, as bench), every-check (the thread check alone, no count) or
    /// none (no count at all). The every* modes measure what counting
    /// costs; every-check and none count no hits, so none are checked.
    #[arg(long, value_name = "MODE", default_value_t = Counting::default(),
          value_parser = Counting::parse)]
    pub counting: Counting,

    /// Every program also takes the kernel stack on each hit
    /// (bpf_get_stack, 128 entries), as upstream's bench --stacktrace:
    /// what the most common thing a tracing program does costs on top.
    #[arg(long)]
    pub stacktrace: bool,

    /// When another measuring run (this command's or the test suite's)
    /// holds a CPU this run needs, fail at once (exit 75) instead of
    /// waiting for it.
    #[arg(long)]
    pub no_wait: bool,

    /// Threads firing each mechanism at once, each pinned to a CPU of its
    /// own and counting into its own slot (bench's -p N -a). With N > 1
    /// each round also runs one producer alone, and the table adds the
    /// total rate, the rate per producer and the scaling.
    #[arg(long, value_name = "N", default_value_t = NonZeroUsize::MIN,
          allow_negative_numbers = true, value_parser = parse_at_least_one::<NonZeroUsize>)]
    pub producers: NonZeroUsize,

    /// A BPF object of your own: each of its programs (or PROGRAM alone)
    /// becomes a mechanism named <file stem>/<program>, attached by its
    /// section as libbpf's auto-attach does, fired by the syscall its
    /// section names (--list-triggers) and checked to be reached by it
    /// (its run count, from the BPF stats, which are on in all its runs);
    /// XDP, tc, socket, flow_dissector and syscall programs are run by
    /// BPF_PROG_TEST_RUN instead.
    /// Repeatable. Without -m, only the objects' programs run.
    #[arg(long = "object", value_name = "FILE[:PROGRAM]", value_parser = Request::parse)]
    pub objects: Vec<Request>,

    /// Write a `const volatile` global of the objects' .rodata before
    /// load (a whole number). Repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = object::parse_set,
          requires = "objects")]
    pub sets: Vec<(String, String)>,

    /// The trigger for --object programs whose section names no event
    /// (raw_tp/sys_enter, tp_btf/sys_enter...).
    #[arg(long, value_name = "NAME", value_parser = Syscall::parse, requires = "objects")]
    pub trigger: Option<Syscall>,

    /// The packet --object's XDP, tc, socket filter and flow dissector
    /// programs run on (BPF_PROG_TEST_RUN): the first of a pcap file
    /// (Ethernet). Default: 64 bytes of UDP over IPv4 over Ethernet.
    #[arg(long, value_name = "FILE", requires = "objects")]
    pub packet: Option<std::path::PathBuf>,

    /// List the triggers of --object programs, and the sections each one
    /// fires; then exit.
    #[arg(long)]
    pub list_triggers: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Puts result files side by side: a table, and an SVG chart with --svg.
    ///
    /// The files come from --save or --format json: several kernels,
    /// machines, or before and after a change. Mechanisms go down and runs
    /// across; each cell is the mechanism's ns per event over the base of
    /// its own run, median ± sample stddev over the rounds. The chart shows
    /// the same figures, one panel per trigger. Emulated runs are marked in
    /// both. --format markdown prints the table as Markdown; json and csv
    /// its figures, one record per mechanism and run (docs/benchmark.md);
    /// kcidb or squad kernel CI's records of the files. Needs no root. Exit status (the list in
    /// bpf-overhead --help): 0 rendered; 2 bad input (no files, an
    /// unreadable file or not a result, counts beside times, no two
    /// results with a mechanism in common for the table, an --against
    /// result as records, --svg into a missing directory or through
    /// another user's link); 69 the output could not be written.
    Report(ReportArgs),

    /// Judges B against A from runs made at the same time, round by round.
    ///
    /// For a duet: the same fixed plan measured at once by two kernels,
    /// each in its own VM on its own host CPU, in one or more sessions
    /// (what `cargo xtask vmtest KERNEL --against KERNEL_B` runs). The i-th
    /// A file and the i-th B file are one session; round r of B is paired
    /// with round r of A, the pairs of all sessions pooled, and each
    /// mechanism judged from them (signed-rank test, Holm-corrected over
    /// the mechanisms) with the gate's verdicts. Needs no root. Exit
    /// status (the list in bpf-overhead --help): 0 no regression and every
    /// comparison decided; 1 B regressed (or lost a mechanism A measured);
    /// 2 bad input; 3 no regression, but some comparison could not tell.
    Compare(CompareArgs),

    /// This host's prices for exact counts, or an exact count priced.
    ///
    /// Fits, over the mechanisms in both files, this host's ns per event
    /// over base (--host: a timed run made here, --save or --format json)
    /// as a price per instruction plus a price per trap, system call,
    /// return from either and barrier, from a guest's counts of the same
    /// mechanisms (--exact: the explain.json of `cargo xtask vmtest KERNEL
    /// --exact --explain`), and prices each mechanism by a fit made
    /// without it. --save keeps the prices with this host's CPU, kernel and
    /// mitigations. With --price CALIBRATION, prints the --exact counts
    /// priced for this host instead, beside the counts. Needs no root.
    /// Exit status: 0 done; 2 bad input (a result of another host, a
    /// calibration of another host or whose fit is off by over 50%).
    Calibrate(CalibrateArgs),
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The guest's counts: an explain.json of `vmtest --exact --explain`.
    #[arg(long, value_name = "FILE", required = true)]
    pub exact: PathBuf,

    /// This host's timed result of the same mechanisms.
    #[arg(long, value_name = "FILE", conflicts_with = "price")]
    pub host: Option<PathBuf>,

    /// Where to keep the calibration.
    #[arg(long, value_name = "FILE", conflicts_with = "price")]
    pub save: Option<PathBuf>,

    /// Price the --exact counts with this saved calibration of this host.
    #[arg(long, value_name = "CALIBRATION")]
    pub price: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A's result files, one per session.
    #[arg(value_name = "A", required = true)]
    pub a: Vec<PathBuf>,

    /// B's result files, one per session, in the same order as A's.
    #[arg(long, value_name = "B", num_args = 1.., required = true)]
    pub against: Vec<PathBuf>,

    /// What B's overhead must exceed A's by, in percent, to be a
    /// regression [default: 6, and 15 on the comm and syscall triggers].
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true,
          value_parser = Threshold::parse)]
    pub threshold: Option<Threshold>,

    /// Output format: the table, or the findings as JSON (the table then
    /// on stderr).
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files, as written by --save or --format json.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Also write the chart, as SVG, to OUT.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,

    /// Output format: the table (also as json, csv or markdown), or kernel
    /// CI's records of the files (printed, never sent: docs/kernel-ci.md).
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
}

fn parse_mechanism(s: &str) -> Result<Mechanism, String> {
    s.trim().parse()
}

fn parse_at_least_one<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let s = s.trim();
    // NonZero's own message ("number would be zero for non-zero type")
    // does not say what to do, nor u64's for "-1" ("invalid digit").
    if s.parse::<i128>().is_ok_and(|v| v < 1) {
        return Err(format!("{s} is out of range: must be at least 1"));
    }
    s.parse().map_err(|e| format!("{e}"))
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("{s} is not a number of seconds from 0 to 86400")),
    }
}

fn parse_cpu(s: &str) -> Result<usize, String> {
    let s = s.trim();
    if s.parse::<i128>().is_ok_and(|v| v < 0) {
        return Err(format!("{s} is out of range: CPUs are numbered from 0"));
    }
    s.parse()
        .map_err(|e| format!("{e}: a CPU number (0, 1, ...) is expected"))
}

fn parse_batch(s: &str) -> Result<Batch, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .and_then(Batch::new)
        .ok_or_else(|| format!("must be a whole number from 1 to {MAX_BATCH}"))
}

fn parse_prog_work(s: &str) -> Result<ProgWork, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .and_then(ProgWork::new)
        .ok_or_else(|| format!("must be a whole number from 0 to {MAX_PROG_WORK}"))
}

/// clap's own errors take three to six lines (error, possible values,
/// tip, usage, "for more information"): this keeps the error and its
/// possible values or tip on one line, then the usage hint.
pub fn parse_args() -> Result<Cli, ExitCode> {
    let err = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(err) => err,
    };
    if !err.use_stderr() {
        // --help, --version: clap prints them to stdout and exits 0.
        err.exit();
    }
    let text = err.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ");
    let mut msg = first.to_string();
    let mut usage = None;
    for line in lines {
        if line.starts_with("Usage:") {
            usage = Some(line.to_string());
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            msg.push_str(&format!(" ({tip})"));
        } else if !line.starts_with("For more information") {
            // "[possible values: ...]", the arguments missing after "...:"
            msg.push(' ');
            msg.push_str(line);
        }
    }
    note(&format!("error: {msg}"));
    let usage = usage.unwrap_or_else(|| "Usage: bpf-overhead [OPTIONS]".into());
    let _ = writeln!(std::io::stderr(), "{usage} (see --help)");
    Err(ExitCode::from(exit_status::INPUT))
}
