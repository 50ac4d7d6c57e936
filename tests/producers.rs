//! Multi-producer runs (`--producers`): every producer, each on its own
//! CPU, counts exactly its own events, in the suite's pipeline.

use std::num::NonZeroUsize;
use std::time::Duration;

use bpf_overhead::document::Status;
use bpf_overhead::expect::{Conclusion, Expectations};
use bpf_overhead::measure::kernel::host::{emulated, Host};
use bpf_overhead::measure::{allowed_cpus, Options, Privileged};
use bpf_overhead::pipeline::{self, Plan};
use bpf_overhead::Mechanism;
use serial_test::serial;

mod common;

const ITERATIONS: std::num::NonZeroU64 = std::num::NonZeroU64::new(10_000).unwrap();

/// Runs `name` with 1 and with 2 producers; each producer's program must
/// count exactly the events it fired, in every round.
fn exact_per_producer(name: &str) {
    // A cpuset (taskset, a CI runner's cgroup) may allow fewer CPUs than
    // are online.
    if allowed_cpus().unwrap().len() < 2 {
        println!("SKIP {name} with 2 producers: this process may use one CPU");
        return;
    }
    let m: Mechanism = name.parse().unwrap();
    let plan = Plan {
        repeats: NonZeroUsize::new(2).unwrap(),
        budget: Duration::ZERO,
        run_time: None,
        stats_run: false,
        // What is checked is each producer's exact count: a tenth of the
        // default events proves it as well, in a tenth of the time.
        options: Options {
            iterations: ITERATIONS,
            producers: NonZeroUsize::new(2).unwrap(),
            ..Options::default()
        },
        ..Plan::new(&[m], emulated())
    };
    let privileged = Privileged::check(&plan.mechanisms).unwrap();
    let doc = pipeline::execute(&plan, &privileged, Host::current, |_| {}).unwrap();
    let result = doc.mechanism(name).unwrap();
    let expect = Expectations::from_env().unwrap();
    match expect.judge(name, result.status, result.reason.as_deref()) {
        Conclusion::Pass => assert_eq!(result.status, Status::Ok),
        Conclusion::Skip(why) => {
            println!("SKIP {name}: {why}");
            return;
        }
        Conclusion::Fail(why) => panic!("{why}"),
    }
    let producers = result.producers.as_ref().expect("per-producer figures");
    assert_eq!(producers.len(), 2);
    assert_ne!(producers[0].cpu, producers[1].cpu, "one CPU each");
    // Each producer's share of what was counted: the lead-in's events
    // (comm and call triggers) or the timed run's.
    let events = match &result.counted_events {
        Some(counted) => counted[0] / 2,
        None => m.events(ITERATIONS.get()),
    };
    for p in producers {
        assert_eq!(p.hits, vec![events; 2], "{name} on CPU {}", p.cpu);
        println!(
            "{name}: producer on CPU {}: {:.0}K events per sec, hits {:?}",
            p.cpu, p.k_events_per_sec.median, p.hits
        );
    }
    let scaling = result.scaling.as_ref().expect("a scaling figure");
    println!("{name}: scaling {:.2}x over one producer", scaling.median);
}

#[test_log::test]
#[serial]
fn raw_tp_loop_two_producers() {
    exact_per_producer("raw_tp-loop");
}

#[test_log::test]
#[serial]
fn uprobe_nop_two_producers() {
    exact_per_producer("uprobe-nop");
}

#[test_log::test]
#[serial]
fn raw_tp_two_producers() {
    exact_per_producer("raw_tp");
}
