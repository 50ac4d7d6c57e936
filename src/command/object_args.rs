//! The command's user objects (`--object`, `--set`, `--trigger`,
//! `--against object=`): opened and checked before the run, so that bad
//! input is one line and exit 2 with nothing loaded.

use bpf_overhead::measure::objects::object::{self, ObjectFlags};
use bpf_overhead::measure::objects::preflight;
use bpf_overhead::measure::Variant;
use bpf_overhead::pipeline::Plan;
use bpf_overhead::Mechanism;

use super::cli::Cli;
use crate::Failure;

/// Opens the objects and adds their programs to the catalogue; pairs
/// `--against object=`'s programs with theirs. Returns the selection (the
/// `-m` mechanisms and the objects' programs) and the in-run variant.
pub fn open(cli: &Cli) -> Result<(Vec<Mechanism>, Option<Variant>), Failure> {
    let mut against = cli.against.clone();
    if cli.objects.is_empty() {
        if let Some(Variant::Object(_)) = against {
            return Err(Failure::Input(
                "--against object=FILE compares builds of an --object: give A's build with \
                 --object FILE"
                    .into(),
            ));
        }
        return Ok((selected(cli)?, against));
    }
    let packet = match &cli.packet {
        Some(path) => object::read_packet(path).map_err(Failure::Input)?,
        None => ObjectFlags::default().packet,
    };
    let settings = ObjectFlags {
        sets: cli.sets.clone(),
        trigger: cli.trigger,
        packet,
    };
    let programs = object::register(&cli.objects, &settings).map_err(Failure::Input)?;
    if let Some(Variant::Object(b)) = against.as_mut() {
        let whole = cli.objects.iter().all(|r| r.program.is_none());
        b.resolve(&programs, whole, &settings)
            .map_err(Failure::Input)?;
    }
    // Flags no program uses would be silently ignored: say so.
    let b = match &against {
        Some(Variant::Object(b)) => b.pairs.clone(),
        _ => Vec::new(),
    };
    let all = || programs.iter().chain(&b).copied();
    if let Some(path) = cli
        .packet
        .as_ref()
        .filter(|_| !all().any(object::uses_packet))
    {
        crate::note(&format!(
            "--packet {}: not used: no program of the objects runs on a packet (xdp, tc, \
             socket filter and flow dissector programs do)",
            path.display()
        ));
    }
    if let Some(t) = cli
        .trigger
        .filter(|_| !all().any(object::uses_trigger_flag))
    {
        crate::note(&format!(
            "--trigger {}: not used: every program's section names the event that fires it",
            t.name()
        ));
    }
    let mut selection = cli.mechanisms.clone();
    selection.extend(programs);
    Ok((selection, against))
}

/// `-m` less `--skip`: what is left of the selection, or of every
/// mechanism when `-m` is not given.
fn selected(cli: &Cli) -> Result<Vec<Mechanism>, Failure> {
    if cli.skip.is_empty() {
        return Ok(cli.mechanisms.clone());
    }
    let from: Vec<Mechanism> = match cli.mechanisms.is_empty() {
        true => Mechanism::all().filter(|m| !m.is_base()).collect(),
        false => cli.mechanisms.clone(),
    };
    let left: Vec<Mechanism> = from.into_iter().filter(|m| !cli.skip.contains(m)).collect();
    if left.is_empty() {
        return Err(Failure::Input(
            "--skip leaves no mechanism to measure: skip fewer".into(),
        ));
    }
    Ok(left)
}

/// Each object program of the plan, A's and B's, loaded once and dropped
/// before the run: what the kernel refuses is bad input.
pub fn try_load(plan: &Plan) -> Result<(), Failure> {
    let b_sides = plan
        .mechanisms
        .iter()
        .filter_map(|&m| plan.against.as_ref()?.b_of(m).filter(|&b| !same(b, m)));
    for m in plan.mechanisms.iter().copied() {
        preflight::try_load(m, "--object ")
            .map_err(|e| Failure::Input(e + &the_others(plan, m)))?;
    }
    for b in b_sides {
        preflight::try_load(b, "--against object=").map_err(Failure::Input)?;
    }
    Ok(())
}

/// When `m`'s object has other programs in the plan: how to measure them
/// without `m` (one bad program refuses its object).
fn the_others(plan: &Plan, m: Mechanism) -> String {
    let Some(p) = m.object() else {
        return String::new();
    };
    let others: Vec<&str> = plan
        .mechanisms
        .iter()
        .filter_map(|o| o.object())
        .filter(|o| o.path == p.path && o.program != p.program)
        .map(|o| o.program.as_str())
        .collect();
    match others.first() {
        Some(other) => format!(
            "; to measure its other programs ({}), name each: --object {}:{other}",
            others.join(", "),
            p.path.display()
        ),
        None => String::new(),
    }
}

/// The same program (mechanisms compare by name, and a B side is named
/// as its A).
fn same(a: Mechanism, b: Mechanism) -> bool {
    a.object() == b.object()
}

/// The programs an `--against object=` run did not compare, as a line of
/// its report (empty otherwise).
pub fn unpaired(variant: &Variant) -> String {
    match variant {
        Variant::Object(b) => b.unpaired().map(|l| format!("{l}\n")).unwrap_or_default(),
        Variant::ProgWork(_) | Variant::BpfStats | Variant::Counting(_) | Variant::Stacktrace => {
            String::new()
        }
    }
}
