//! `shmcast-bench`: how much better is shmcast than what one would use instead, on this machine?
//!
//! Every comparison runs shmcast and its alternatives in the same run, on real processes,
//! interleaved repetition by repetition, and reports medians with min..max and per-repetition
//! ratios to every alternative. Scenarios (one module each):
//!
//! | module | scenario |
//! |---|---|
//! | [`limits`] | the machine's ceilings: bandwidth, eventfd and cache-line ping-pong |
//! | [`throughput`] | 1 MiB messages to N subscribers against memcpy and unix-stream |
//! | [`latency`] | paced 8-byte timestamps to blocked listeners against socket transports |
//! | [`small`] | 64-byte messages against unix-stream fan-out |
//!
//! [`fanout`] runs one stream trial for `throughput` and `small`; [`process`] spawns, watches and
//! reaps the child processes (the binary re-executes itself with a hidden `__child` role);
//! [`sys`] holds the syscalls; [`payload`] the message formats and their checks; [`rng`] the
//! seeded random numbers.
//!
//! `cargo run --release -p shmcast-bench` runs everything in about a minute; `--quick` in a few
//! seconds; `--json FILE` and `--svg DIR` write the figures and charts.
//!
//! `shmcast-bench soak --seconds N` measures nothing: [`soak`] churns subscriber processes
//! (joins, leaves, stops, kills) under a publisher for N seconds and fails on any lost, corrupted
//! or miscounted message and on descriptor or memory growth.
#![deny(unsafe_code)]

mod error;
mod fanout;
#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod latency;
mod limits;
mod options;
mod payload;
mod process;
mod report;
mod rng;
mod small;
mod soak;
mod stats;
mod svg;
mod sys;
mod table;
mod throughput;

use std::process::ExitCode;
use std::time::Instant;

use error::{BenchError, Result, sys as sys_err};
use options::{Options, Scenario};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (outcome, who) = if args.first().map(String::as_str) == Some(process::CHILD_ARG) {
        (child_main(&args[1..]), "shmcast-bench child")
    } else {
        (run(&args), "shmcast-bench")
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{who}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The parent: runs the scenarios, prints the tables, writes the JSON and the charts.
fn run(args: &[String]) -> Result<()> {
    let o = Options::parse(args)?;
    if let Some(soak) = &o.soak {
        return soak::run(soak);
    }
    let started = Instant::now();
    if let Some(dir) = &o.svg {
        std::fs::create_dir_all(dir).map_err(sys_err(format!("creating {}", dir.display())))?;
    }
    let idle_check = report::Load::now();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let before = report::Load::now();
    let others_before = idle_check.others_since(&before);
    if others_before > 0.1 {
        eprintln!(
            "shmcast-bench: WARNING: other processes keep {others_before:.2} of {} cores busy; \
             figures will be noisy",
            report::cores()
        );
    }
    let mut sections = Vec::new();
    let mut limits = None;
    for &scenario in &o.scenarios {
        let section = match scenario {
            Scenario::Limits => {
                let (section, l) = limits::run(&o)?;
                limits = Some(l);
                section
            }
            Scenario::Throughput => throughput::run(&o, limits.as_ref())?,
            Scenario::Latency => latency::run(&o, limits.as_ref())?,
            Scenario::Small => small::run(&o)?,
        };
        println!("{}", section.text);
        if let Some(dir) = &o.svg {
            for (name, content) in &section.charts {
                let path = dir.join(name);
                std::fs::write(&path, content)
                    .map_err(sys_err(format!("writing {}", path.display())))?;
            }
        }
        sections.push(section);
    }
    let others_during = before.others_since(&report::Load::now());
    println!(
        "other processes used {others_during:.2} of {} cores on average during the run \
         ({others_before:.2} just before it)",
        report::cores()
    );
    if let Some(path) = &o.json {
        let all: Vec<serde_json::Value> = sections
            .into_iter()
            .map(|s| {
                let mut json = s.json;
                if let Some(machine) = json
                    .get_mut("params")
                    .and_then(|p| p.get_mut("machine"))
                    .and_then(|m| m.as_object_mut())
                {
                    machine.insert("other_load_cores_before".into(), others_before.into());
                    machine.insert("other_load_cores_during".into(), others_during.into());
                }
                json
            })
            .collect();
        let text = serde_json::to_string_pretty(&all).map_err(|e| BenchError::Sys {
            what: "encoding the JSON".into(),
            err: std::io::Error::other(e),
        })?;
        std::fs::write(path, text + "\n")
            .map_err(sys_err(format!("writing {}", path.display())))?;
    }
    eprintln!(
        "shmcast-bench: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A child: `__child PARENT_PID ROLE ARGS...`.
fn child_main(args: &[String]) -> Result<()> {
    let [parent, role, rest @ ..] = args else {
        return Err(BenchError::Usage(
            "a child needs a parent pid and a role".into(),
        ));
    };
    // The death signal was armed before exec; a parent that died before that left this child
    // re-parented, and it must not carry on alone.
    if std::os::unix::process::parent_id().to_string() != *parent {
        return Err(BenchError::Usage("the parent is gone".into()));
    }
    match role.as_str() {
        fanout::ROLE => fanout::child(rest),
        latency::LISTENER => latency::listener(rest),
        latency::RELAY => latency::relay(rest),
        limits::ROLE => limits::child(rest),
        soak::ROLE => soak::child(rest),
        other => Err(BenchError::Usage(format!("unknown child role {other:?}"))),
    }
}
