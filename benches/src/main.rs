//! `shmcast-bench`: how much better is shmcast than what one would use instead, on this machine?
//!
//! Every comparison runs shmcast and its alternatives in the same run, on real processes,
//! interleaved repetition by repetition, and reports medians with min..max and per-repetition
//! ratios to every alternative. Scenarios (one module of the `shmcast_bench` library each):
//!
//! | module | scenario |
//! |---|---|
//! | [`limits`] | the machine's ceilings: bandwidth, eventfd and cache-line ping-pong |
//! | [`throughput`](shmcast_bench::throughput) | 1 MiB messages to N subscribers against memcpy and unix-stream |
//! | [`latency`] | paced 8-byte timestamps to blocked listeners against socket transports |
//! | [`small`](shmcast_bench::small) | 64-byte messages against unix-stream fan-out |
//! | [`backpressure`](shmcast_bench::backpressure) | gating streams through 16 messages in flight |
//! | [`bridge`] | a topic through two Zenoh bridges against plain Zenoh |
//!
//! [`comparison`] runs them in order and writes the output; the binary re-executes itself with
//! a hidden `__child` role for every subscriber, listener or relay, dispatched here.
//!
//! `cargo run --release -p shmcast-bench` runs everything in about a minute; `--quick` in a few
//! seconds; `--json FILE` and `--svg DIR` write the figures and charts.
//!
//! The soak, which measures nothing and checks delivery under subscriber churn, is its own
//! binary: `cargo run --release -p shmcast-bench --bin shmcast-soak -- --seconds 600`.
#![deny(unsafe_code)]

use std::process::ExitCode;

use shmcast_bench::error::{BenchError, Result, exit_code};
use shmcast_bench::options::{Options, USAGE};
use shmcast_bench::{bridge, comparison, fanout, latency, limits, pin, process};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (outcome, who) = match process::child_args(&args) {
        Some(child) => (
            child.and_then(|(role, rest)| {
                pin::child_from_env()?;
                child_main(role, rest)
            }),
            "shmcast-bench child",
        ),
        None => match Options::parse(&args) {
            // Asked for: the usage on standard output, and success.
            Err(BenchError::Usage(what)) if what == "help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            parsed => (parsed.and_then(|o| comparison::run(&o)), "shmcast-bench"),
        },
    };
    exit_code(outcome, who, USAGE)
}

/// A child: runs `role` with its arguments.
fn child_main(role: &str, args: &[String]) -> Result<()> {
    match role {
        fanout::ROLE => fanout::child(args),
        latency::LISTENER => latency::listener(args),
        latency::RELAY => latency::relay(args),
        limits::ROLE => limits::child(args),
        bridge::ROLE => bridge::child(args),
        other => Err(BenchError::Usage(format!("unknown child role {other:?}"))),
    }
}
