//! Command-line options.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{BenchError, Result};
use crate::pin::Pin;

/// Printed with every usage error.
pub const USAGE: &str = "\
usage: shmcast-bench [SCENARIO...] [OPTIONS]

scenarios (default: all six, in this order):
  limits       the machine's ceilings: copy/read/write bandwidth, eventfd and cache-line ping-pong
  throughput   large messages to N subscribers: memcpy, unix-stream, shmcast-gating, shmcast-lossy
  latency      paced 8-byte timestamps to blocked listeners: unix-relay, unix-dgram,
               udp-multicast, shmcast, shmcast-spin, shmcast-poll, shmcast-tokio,
               tokio-unix, tokio-broadcast
  small        64-byte messages to 1 and 3 event-driven and 1 busy subscriber: unix-stream,
               shmcast, shmcast-tokio, tokio-unix, tokio-broadcast
  backpressure gating streams through 16 messages in flight (64 B and 1 MiB, 1-3 subscribers, one
               slow): unix-stream, shmcast-gating
  bridge       64-byte messages A -> bridge -> Zenoh TCP -> bridge -> B, rate and latency p50/p99:
               shmcast-zenoh-bridge against plain zenoh between two processes

options:
  --quick            smoke run: every scenario in a few seconds
  --json FILE        write every figure as JSON
  --svg DIR          draw the charts as SVG files into DIR
  --reps N           repetitions of every trial (default 5, quick 1)
  --size BYTES       throughput message size (default 1048576; a multiple of 8, at least 16)
  --subs N,N,...     throughput subscriber counts (default 1,2,3,4)
  --listeners N      latency listeners (default 3)
  --interval-us N    latency publishing period in µs (default 100)
  --messages N       latency messages per trial (default 3000, quick 300)
  --duration-ms N    length of each throughput and small trial (default 250, quick 40)
  --only NAME,...    run only these transports (the alternatives a ratio needs are kept)
  --pin CPU,CPU,...  stream scenarios (throughput, small, backpressure): the publisher on the
                     first CPU, subscriber i on CPU i+1, the same for every transport";

/// One scenario of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The machine's ceilings.
    Limits,
    /// Large messages, fan-out.
    Throughput,
    /// Paced timestamps to blocked listeners.
    Latency,
    /// 64-byte messages.
    Small,
    /// Gating streams through small buffers.
    Backpressure,
    /// A topic through two Zenoh bridges against plain Zenoh.
    Bridge,
}

impl Scenario {
    /// Every scenario, in the order a default run takes them (limits first, so the others can be
    /// read against them).
    pub const ALL: [Scenario; 6] = [
        Scenario::Limits,
        Scenario::Throughput,
        Scenario::Latency,
        Scenario::Small,
        Scenario::Backpressure,
        Scenario::Bridge,
    ];

    /// The scenario's name on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Limits => "limits",
            Scenario::Throughput => "throughput",
            Scenario::Latency => "latency",
            Scenario::Small => "small",
            Scenario::Backpressure => "backpressure",
            Scenario::Bridge => "bridge",
        }
    }
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Scenarios to run, in order.
    pub scenarios: Vec<Scenario>,
    /// Smoke run.
    pub quick: bool,
    /// Where to write the JSON figures.
    pub json: Option<PathBuf>,
    /// Where to write the SVG charts.
    pub svg: Option<PathBuf>,
    /// Repetitions of every trial.
    pub reps: usize,
    /// Throughput message size in bytes.
    pub size: usize,
    /// Throughput subscriber counts.
    pub subs: Vec<usize>,
    /// Latency listeners.
    pub listeners: usize,
    /// Latency publishing period.
    pub interval: Duration,
    /// Latency messages per trial.
    pub messages: usize,
    /// Length of a throughput or small trial.
    pub duration: Duration,
    /// Transports to run (empty: all).
    pub only: Vec<String>,
    /// `--pin`: the CPUs of a stream trial's processes (`None`: the scheduler's choice).
    pub pin: Option<Pin>,
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Options> {
        let quick = args.iter().any(|a| a == "--quick");
        let mut o = Options {
            scenarios: Vec::new(),
            quick,
            json: None,
            svg: None,
            reps: if quick { 1 } else { 5 },
            size: 1 << 20,
            subs: vec![1, 2, 3, 4],
            listeners: 3,
            interval: Duration::from_micros(100),
            messages: if quick { 300 } else { 3000 },
            duration: Duration::from_millis(if quick { 40 } else { 250 }),
            only: Vec::new(),
            pin: None,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| BenchError::Usage(format!("{name} needs a value")))
            };
            match arg.as_str() {
                "--quick" => {}
                "--json" => o.json = Some(value("--json")?.into()),
                "--svg" => o.svg = Some(value("--svg")?.into()),
                "--reps" => o.reps = positive("--reps", &value("--reps")?)?,
                "--size" => o.size = positive("--size", &value("--size")?)?,
                "--subs" => {
                    o.subs = value("--subs")?
                        .split(',')
                        .map(|n| positive("--subs", n))
                        .collect::<Result<_>>()?;
                }
                "--listeners" => o.listeners = positive("--listeners", &value("--listeners")?)?,
                "--interval-us" => {
                    o.interval = Duration::from_micros(positive(
                        "--interval-us",
                        &value("--interval-us")?,
                    )? as u64);
                }
                "--messages" => o.messages = positive("--messages", &value("--messages")?)?,
                "--duration-ms" => {
                    o.duration = Duration::from_millis(positive(
                        "--duration-ms",
                        &value("--duration-ms")?,
                    )? as u64);
                }
                "--pin" => o.pin = Some(Pin::parse(&value("--pin")?)?),
                "--only" => {
                    o.only = value("--only")?.split(',').map(str::to_owned).collect();
                }
                "-h" | "--help" => return Err(BenchError::Usage("help".into())),
                name => {
                    let Some(scenario) = Scenario::ALL.into_iter().find(|s| s.name() == name)
                    else {
                        return Err(BenchError::Usage(format!("unknown argument {name:?}")));
                    };
                    if !o.scenarios.contains(&scenario) {
                        o.scenarios.push(scenario);
                    }
                }
            }
        }
        if o.scenarios.is_empty() {
            o.scenarios = Scenario::ALL.to_vec();
        }
        if o.size % 8 != 0 || o.size < crate::payload::MIN_LEN {
            return Err(BenchError::Usage(format!(
                "--size {} is not a multiple of 8 of at least {}",
                o.size,
                crate::payload::MIN_LEN
            )));
        }
        Ok(o)
    }
}

impl Options {
    /// Whether `--only` lets transport `name` run; `keep` (the baseline of a scenario's ratios)
    /// always runs.
    pub fn runs(&self, name: &str, keep: bool) -> bool {
        keep || self.only.is_empty() || self.only.iter().any(|n| n == name)
    }
}

/// `value` of option `name` as a positive number.
pub fn positive(name: &str, value: &str) -> Result<usize> {
    value
        .parse()
        .ok()
        .filter(|&n: &usize| n > 0)
        .ok_or_else(|| BenchError::Usage(format!("{name} takes a positive number, got {value:?}")))
}
