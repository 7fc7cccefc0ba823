//! Command-line options.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{BenchError, Result};

/// Printed with every usage error.
pub const USAGE: &str = "\
usage: shmcast-bench [SCENARIO...] [OPTIONS]
       shmcast-bench soak [--seconds N] [--seed S] [--max-size BYTES]

scenarios (default: all four, in this order):
  limits       the machine's ceilings: copy/read/write bandwidth, eventfd and cache-line ping-pong
  throughput   large messages to N subscribers: memcpy, unix-stream, shmcast-gating, shmcast-lossy
  latency      paced 8-byte timestamps to blocked listeners: unix-relay, unix-dgram,
               udp-multicast, shmcast, shmcast-spin, shmcast-poll
  small        64-byte messages to 1 and 3 event-driven and 1 busy subscriber: unix-stream, shmcast

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

soak (runs alone): one publisher, gating and lossy subscriber processes that join, leave, stop
and are killed at random; checks every byte, every gap and lag count, and that the publisher's
descriptors and memory do not grow
  --seconds N        length of the soak (default 60)
  --seed S           seed of the schedule and the message sizes (default: from the clock, printed)
  --max-size BYTES   largest soak message (default 65536)";

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
}

impl Scenario {
    /// Every scenario, in the order a default run takes them (limits first, so the others can be
    /// read against them).
    pub const ALL: [Scenario; 4] = [
        Scenario::Limits,
        Scenario::Throughput,
        Scenario::Latency,
        Scenario::Small,
    ];

    /// The scenario's name on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Limits => "limits",
            Scenario::Throughput => "throughput",
            Scenario::Latency => "latency",
            Scenario::Small => "small",
        }
    }
}

/// What a soak runs.
#[derive(Clone, Copy, Debug)]
pub struct SoakOptions {
    /// How long the publisher publishes.
    pub duration: Duration,
    /// Seed of the schedule and of the message sizes.
    pub seed: u64,
    /// Largest message in bytes.
    pub max_size: usize,
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Scenarios to run, in order (none for a soak).
    pub scenarios: Vec<Scenario>,
    /// A soak instead of the scenarios.
    pub soak: Option<SoakOptions>,
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
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Options> {
        let quick = args.iter().any(|a| a == "--quick");
        let mut o = Options {
            scenarios: Vec::new(),
            soak: None,
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
        };
        let mut soak = false;
        let mut soak_options = SoakOptions {
            duration: Duration::from_secs(60),
            seed: crate::sys::now_ns() ^ u64::from(std::process::id()).rotate_left(32),
            max_size: 64 * 1024,
        };
        let mut soak_option_given = None;
        let mut measuring_option_given = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if arg.starts_with("--")
                && !["--seconds", "--seed", "--max-size", "--help"].contains(&arg.as_str())
            {
                measuring_option_given = Some(arg.clone());
            }
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
                "--only" => {
                    o.only = value("--only")?.split(',').map(str::to_owned).collect();
                }
                "soak" => soak = true,
                "--seconds" => {
                    soak_options.duration =
                        Duration::from_secs(positive("--seconds", &value("--seconds")?)? as u64);
                    soak_option_given = Some("--seconds");
                }
                "--seed" => {
                    let text = value("--seed")?;
                    soak_options.seed = text.parse().map_err(|_| {
                        BenchError::Usage(format!("--seed takes a number, got {text:?}"))
                    })?;
                    soak_option_given = Some("--seed");
                }
                "--max-size" => {
                    soak_options.max_size = positive("--max-size", &value("--max-size")?)?;
                    soak_option_given = Some("--max-size");
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
        if soak {
            if !o.scenarios.is_empty() {
                return Err(BenchError::Usage(
                    "soak runs alone, without other scenarios".into(),
                ));
            }
            if let Some(name) = measuring_option_given {
                return Err(BenchError::Usage(format!("{name} does not apply to soak")));
            }
            o.soak = Some(soak_options);
        } else if let Some(name) = soak_option_given {
            return Err(BenchError::Usage(format!("{name} is a soak option")));
        } else if o.scenarios.is_empty() {
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

fn positive(name: &str, value: &str) -> Result<usize> {
    value
        .parse()
        .ok()
        .filter(|&n: &usize| n > 0)
        .ok_or_else(|| BenchError::Usage(format!("{name} takes a positive number, got {value:?}")))
}
