//! `backpressure`: gating streams whose consumers are the bottleneck, through small buffers, so
//! that the publisher waits for space all the time. Each transport holds [`IN_FLIGHT`] messages
//! per subscriber (shmcast: the power-of-two ring closest to that many frames), except iceoryx2
//! (with `--features iceoryx2`: a lossless service, `RetryUntilDelivered`), whose subscriber
//! buffer holds half as many ([`ICEORYX2_BUFFER`]: 8, the reference configuration the targets
//! name); `unix-stream` keeps its socket buffers. In the configurations with several
//! subscribers the last one spends extra time on each message, slower than the publisher.
//! One configuration repeats 1 MiB to 2 subscribers with a ring four times larger, to show
//! whether a ring that stays in the cache is as fast as a large one.
//!
//! Reports messages per second and subscriber, the publisher's sleeps for space and delivery
//! syscalls per message, and CPU per message of all processes together. Every configuration
//! also measures its ceiling ([`ceiling::fill_rate`]): the rate at which the publishing thread
//! alone writes the messages, which no transport can exceed, and each transport's share of it.

use serde_json::json;

use crate::ceiling;
use crate::error::Result;
use crate::fanout::{self, Outcome, Transport, Trial, Wait};
use crate::harness::{frame_bytes, ring_holding};
use crate::options::Options;
use crate::pin;
use crate::report::{Progress, Section, rotated};
use crate::stats::Summary;
use crate::table::Table;

/// Messages in flight per subscriber, as in a user's memory-bounded configuration.
pub const IN_FLIGHT: usize = 16;

/// iceoryx2's subscriber buffer in the shapes of [`IN_FLIGHT`] messages (twice as many for the
/// shape with a ring four times larger): the lossless configuration the targets are stated
/// against (buffer 8).
pub const ICEORYX2_BUFFER: usize = 8;

/// Messages in flight that `t` gets in `shape`.
fn in_flight_of(t: Transport, shape: &Shape) -> usize {
    match t {
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 => shape.in_flight * ICEORYX2_BUFFER / IN_FLIGHT,
        _ => shape.in_flight,
    }
}

/// One configuration: message size, subscribers, extra work of the last one (ns per message),
/// messages in flight.
#[derive(Clone, Copy, Debug)]
struct Shape {
    size: usize,
    subs: usize,
    slow_ns: u64,
    in_flight: usize,
}

const SMALL: usize = 64;
const LARGE: usize = 1 << 20;

const SHAPES: [Shape; 6] = [
    Shape {
        size: SMALL,
        subs: 1,
        slow_ns: 0,
        in_flight: IN_FLIGHT,
    },
    Shape {
        size: SMALL,
        subs: 3,
        slow_ns: 1_000,
        in_flight: IN_FLIGHT,
    },
    Shape {
        size: LARGE,
        subs: 1,
        slow_ns: 0,
        in_flight: IN_FLIGHT,
    },
    Shape {
        size: LARGE,
        subs: 2,
        slow_ns: 0,
        in_flight: IN_FLIGHT,
    },
    Shape {
        size: LARGE,
        subs: 2,
        slow_ns: 0,
        in_flight: 4 * IN_FLIGHT,
    },
    Shape {
        size: LARGE,
        subs: 3,
        slow_ns: 200_000,
        in_flight: IN_FLIGHT,
    },
];

impl Shape {
    fn label(&self) -> String {
        let size = if self.size >= 1 << 20 {
            format!("{} MiB", self.size >> 20)
        } else {
            format!("{} B", self.size)
        };
        let slow = if self.slow_ns > 0 {
            format!(", 1 slow (+{} µs)", self.slow_ns as f64 / 1000.0)
        } else {
            String::new()
        };
        format!("{size} x{} in {}{slow}", self.subs, self.buffer())
    }

    /// What holds the messages in flight, as the label says it.
    fn buffer(&self) -> String {
        let ring = ring_holding(self.size, self.in_flight);
        let frames = ring / frame_bytes(self.size);
        if ring >= 1 << 20 {
            format!("{} MiB ({frames} frames)", ring >> 20)
        } else {
            format!("{} KiB ({frames} frames)", ring >> 10)
        }
    }
}

fn transports() -> Vec<Transport> {
    vec![
        Transport::UnixStream,
        Transport::ShmcastGating,
        Transport::ShmcastSleep,
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2,
    ]
}

/// Runs the scenario.
pub fn run(o: &Options) -> Result<Section> {
    let progress = Progress::new("backpressure");
    let transports: Vec<Transport> = transports()
        .into_iter()
        .filter(|&t| o.runs(t.name(), t == Transport::UnixStream))
        .collect();
    let mut outcomes: Vec<Vec<Vec<Outcome>>> =
        vec![vec![Vec::new(); transports.len()]; SHAPES.len()];
    let mut ceilings: Vec<Vec<f64>> = vec![Vec::new(); SHAPES.len()];
    for rep in 0..o.reps {
        for (k, shape) in SHAPES.iter().enumerate() {
            let ceiling = ceiling::fill_rate(shape.size, shape.in_flight, o.duration, o.pin)?;
            progress.say(&format!(
                "rep {}/{}, {}, {:<14} {:9.1} k msgs/s",
                rep + 1,
                o.reps,
                shape.label(),
                CEILING,
                ceiling / 1e3
            ));
            ceilings[k].push(ceiling);
            for t in rotated(&transports, rep + k) {
                let outcome = fanout::run(Trial {
                    in_flight: Some(in_flight_of(t, shape)),
                    slow_ns: shape.slow_ns,
                    pin: o.pin,
                    ..Trial::new(t, shape.subs, shape.size, o.duration, Wait::Event)
                })?;
                progress.say(&format!(
                    "rep {}/{}, {}, {:<14} {:9.1} k msgs/s",
                    rep + 1,
                    o.reps,
                    shape.label(),
                    t.name(),
                    outcome.msgs_per_s(shape.subs) / 1e3
                ));
                let slot = transports.iter().position(|&x| x == t).expect("listed");
                outcomes[k][slot].push(outcome);
            }
        }
    }
    Ok(report(o, &transports, &outcomes, &ceilings))
}

/// Per-message means over the repetitions of one transport: (publisher sleeps for space,
/// publisher syscalls, CPU ns of every process).
fn per_message(outcomes: &[Outcome]) -> (f64, f64, f64) {
    let published = outcomes.iter().map(|x| x.published).sum::<u64>().max(1) as f64;
    let sum = |f: fn(&Outcome) -> u64| outcomes.iter().map(f).sum::<u64>() as f64 / published;
    (
        sum(|x| x.publisher_waits),
        sum(|x| x.publisher_syscalls),
        sum(|x| x.cpu_ns),
    )
}

/// The name of the ceiling's row: the publishing thread filling the messages alone.
const CEILING: &str = "fill alone";

fn report(
    o: &Options,
    transports: &[Transport],
    outcomes: &[Vec<Vec<Outcome>>],
    ceilings: &[Vec<f64>],
) -> Section {
    let mut text = format!(
        "== backpressure: gating subscribers through {IN_FLIGHT} messages in flight (iceoryx2: a \
         buffer of {ICEORYX2_BUFFER}), {} ms per trial, median (min..max) of {} repetition(s){}\n\n",
        o.duration.as_millis(),
        o.reps,
        pin::heading(o.pin)
    );
    let mut header = vec![
        "configuration",
        "transport",
        "k msgs/s per sub",
        "vs unix-stream",
    ];
    #[cfg(feature = "iceoryx2")]
    header.push("vs iceoryx2");
    header.extend([
        "of ceiling",
        "pub waits/msg",
        "pub syscalls/msg",
        "cpu ns/msg",
    ]);
    let mut table = Table::new(&header);
    let mut results = Vec::new();
    for ((shape, by_transport), ceiling) in SHAPES.iter().zip(outcomes).zip(ceilings) {
        let rates = |i: usize| -> Vec<f64> {
            by_transport[i]
                .iter()
                .map(|x| x.msgs_per_s(shape.subs))
                .collect()
        };
        let index = |t: Transport| transports.iter().position(|&x| x == t);
        let base = index(Transport::UnixStream).map(rates).unwrap_or_default();
        #[cfg(feature = "iceoryx2")]
        let peer = index(Transport::Iceoryx2).map(rates).unwrap_or_default();
        #[cfg(not(feature = "iceoryx2"))]
        let peer: Vec<f64> = Vec::new();
        let (row, result) = ceiling_row(shape, ceiling, &base, &peer);
        table.row(row);
        results.push(result);
        for (i, &t) in transports.iter().enumerate() {
            let r = rates(i);
            let s = Summary::of(&r);
            let vs_unix = Summary::ratio(&r, &base);
            let (waits, syscalls, cpu) = per_message(&by_transport[i]);
            let mut row = vec![
                shape.label(),
                t.name().into(),
                s.show(1e-3, 1),
                vs_unix.show(1.0, 2),
            ];
            #[cfg(feature = "iceoryx2")]
            let vs_peer = Summary::ratio(&r, &peer);
            #[cfg(feature = "iceoryx2")]
            row.push(vs_peer.show(1.0, 2));
            let of_ceiling = Summary::ratio(&r, ceiling);
            row.extend([
                of_ceiling.show(1.0, 2),
                format!("{waits:.3}"),
                format!("{syscalls:.3}"),
                format!("{cpu:.0}"),
            ]);
            table.row(row);
            let raw =
                |f: fn(&Outcome) -> u64| json!(by_transport[i].iter().map(f).collect::<Vec<_>>());
            let mut result = rate_json(shape, t.name(), &r, &base);
            for (key, value) in [
                ("share_of_ceiling", of_ceiling.json(1.0)),
                ("publisher_waits_per_msg", waits.into()),
                ("publisher_syscalls_per_msg", syscalls.into()),
                ("cpu_ns_per_msg", cpu.into()),
                ("raw_publisher_waits", raw(|x| x.publisher_waits)),
                ("raw_published", raw(|x| x.published)),
            ] {
                result[key] = value;
            }
            #[cfg(feature = "iceoryx2")]
            if !peer.is_empty() {
                result["ratio_vs_iceoryx2"] = vs_peer.json(1.0);
            }
            results.push(result);
        }
    }
    text.push_str(&table.render());
    text.push_str(
        "  msgs/s per sub = messages each subscriber checked per second (the slowest sets the \
         pace); pub waits = sleeps for space (shmcast); cpu = all processes together\n  \
         fill alone = the publishing thread writing the messages with no transport, where the \
         publisher runs: the ceiling of every transport's rate; its ratios are the most any \
         transport could reach in the same run\n",
    );
    Section {
        text,
        json: json!({
            "scenario": "backpressure",
            "params": {
                "pin": pin::json(o.pin),
                "in_flight": IN_FLIGHT,
                "iceoryx2_buffer": ICEORYX2_BUFFER,
                "configs": SHAPES.iter().map(|s| json!({
                    "message_bytes": s.size,
                    "subscribers": s.subs,
                    "slow_subscriber_extra_ns": s.slow_ns,
                    "in_flight": s.in_flight,
                })).collect::<Vec<_>>(),
                "duration_ms": o.duration.as_millis() as u64,
                "reps": o.reps,
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts: Vec::new(),
    }
}

/// The ceiling's row and JSON entry: its rate, and how far above unix-stream's and the peer's
/// (`peer`, empty without one) rates it is, paired by repetition.
fn ceiling_row(
    shape: &Shape,
    ceiling: &[f64],
    base: &[f64],
    peer: &[f64],
) -> (Vec<String>, serde_json::Value) {
    let s = Summary::of(ceiling);
    let vs_unix = Summary::ratio(ceiling, base);
    let mut row = vec![
        shape.label(),
        CEILING.into(),
        s.show(1e-3, 1),
        vs_unix.show(1.0, 2),
    ];
    #[cfg(feature = "iceoryx2")]
    row.push(Summary::ratio(ceiling, peer).show(1.0, 2));
    row.extend(["1.00".into(), "-".into(), "-".into(), "-".into()]);
    let mut result = rate_json(shape, CEILING, ceiling, base);
    if !peer.is_empty() {
        result["ratio_vs_iceoryx2"] = Summary::ratio(ceiling, peer).json(1.0);
    }
    (row, result)
}

/// The JSON entry of one row of `shape`: its configuration, and the rates `rates` of `name` with
/// their ratio to unix-stream's (`base`).
fn rate_json(shape: &Shape, name: &str, rates: &[f64], base: &[f64]) -> serde_json::Value {
    let s = Summary::of(rates);
    json!({
        "transport": name,
        "message_bytes": shape.size,
        "subscribers": shape.subs,
        "slow_subscriber_extra_ns": shape.slow_ns,
        "in_flight": shape.in_flight,
        "shmcast_ring_bytes": ring_holding(shape.size, shape.in_flight),
        "msgs_per_s": s.median,
        "msgs_per_s_range": [s.min, s.max],
        "ratio_vs_unix_stream": Summary::ratio(rates, base).json(1.0),
        "raw_msgs_per_s": rates,
    })
}
