//! `throughput`: the classic "memcpy against a unix socket" benchmark, generalised to fan-out.
//! Messages of `--size` bytes (1 MiB) from one publisher to N subscribers (1, 2, 3, 4), every
//! byte written by the publisher and read by every subscriber. Reports messages per second per
//! subscriber and aggregate delivered bytes per second, and their ratios to every alternative,
//! per repetition. Lossy shmcast subscribers run once per resume policy (`shmcast-lossy`: half
//! a ring behind the publisher after a lag, the default; `shmcast-lossy-newest`: the newest
//! message; `shmcast-lossy-oldest`: the oldest) and once with
//! latest reads (`shmcast-latest`), and report the fraction delivered and how many messages
//! behind the newest each delivered one was when received.

use serde_json::json;

use crate::error::Result;
use crate::fanout::{self, Outcome, Transport, Trial, Wait};
use crate::harness::ring_capacity;
use crate::limits::Limits;
use crate::options::Options;
use crate::pin;
use crate::report::{Progress, Section, gbps, rotated};
use crate::stats::Summary;
use crate::svg;
use crate::table::Table;

/// The transports compared, the alternatives first.
fn transports() -> Vec<Transport> {
    vec![
        Transport::Memcpy,
        Transport::UnixStream,
        Transport::ShmcastGating,
        Transport::ShmcastLossy,
        Transport::ShmcastLossyNewest,
        Transport::ShmcastLossyOldest,
        Transport::ShmcastLatest,
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2,
    ]
}

/// The alternatives every transport is compared with.
const ALTERNATIVES: [Transport; 2] = [Transport::UnixStream, Transport::Memcpy];

/// Per subscriber count, per transport, one outcome per repetition.
struct Measured {
    subs: usize,
    by_transport: Vec<(Transport, Vec<Outcome>)>,
}

impl Measured {
    fn outcomes(&self, t: Transport) -> &[Outcome] {
        self.by_transport
            .iter()
            .find(|(x, _)| *x == t)
            .map_or(&[], |(_, o)| o.as_slice())
    }
}

/// Runs the scenario.
pub fn run(o: &Options, limits: Option<&Limits>) -> Result<Section> {
    let progress = Progress::new("throughput");
    let transports: Vec<Transport> = transports()
        .into_iter()
        .filter(|t| o.runs(t.name(), ALTERNATIVES.contains(t)))
        .collect();
    let mut measured: Vec<Measured> = o
        .subs
        .iter()
        .map(|&subs| Measured {
            subs,
            by_transport: transports.iter().map(|&t| (t, Vec::new())).collect(),
        })
        .collect();
    for rep in 0..o.reps {
        for (k, m) in measured.iter_mut().enumerate() {
            for t in rotated(&transports, rep + k) {
                let outcome = fanout::run(Trial {
                    pin: o.pin,
                    ..Trial::new(t, m.subs, o.size, o.duration, Wait::Event)
                })?;
                progress.say(&format!(
                    "rep {}/{}, {} subscriber(s), {:<14} {:8.2} GB/s",
                    rep + 1,
                    o.reps,
                    m.subs,
                    t.name(),
                    gbps(outcome.bytes_per_s(o.size))
                ));
                let slot = m
                    .by_transport
                    .iter_mut()
                    .find(|(x, _)| *x == t)
                    .expect("every transport has a slot");
                slot.1.push(outcome);
            }
        }
    }
    Ok(report(o, &transports, &measured, limits))
}

/// The ceiling for aggregate delivered bytes/s with zero copies: every byte written once by the
/// publisher and read once by each of `n` subscribers, spread perfectly over every core.
fn ceiling(limits: &Limits, n: usize) -> f64 {
    let cores = limits.cores as f64;
    cores * n as f64 / (1.0 / limits.write_bps + n as f64 / limits.read_bps)
}

fn report(
    o: &Options,
    transports: &[Transport],
    measured: &[Measured],
    limits: Option<&Limits>,
) -> Section {
    let size = o.size;
    let mut text = format!(
        "== throughput: {size}-byte messages, {} ms per trial, median (min..max) of {} \
         repetition(s){}\n\n",
        o.duration.as_millis(),
        o.reps,
        pin::heading(o.pin)
    );
    let mut header = vec![
        "transport",
        "subs",
        "msgs/s per sub",
        "aggregate GB/s",
        "vs unix-stream",
        "vs memcpy",
    ];
    if limits.is_some() {
        header.push("of ceiling");
    }
    header.extend(["cpu µs/msg", "pub syscalls/msg", "delivered", "behind"]);
    let mut table = Table::new(&header);
    let mut results = Vec::new();
    for m in measured {
        for &t in transports {
            let outcomes = m.outcomes(t);
            let bytes: Vec<f64> = outcomes.iter().map(|x| x.bytes_per_s(size)).collect();
            let msgs: Vec<f64> = outcomes.iter().map(|x| x.msgs_per_s(m.subs)).collect();
            let bytes_s = Summary::of(&bytes);
            let msgs_s = Summary::of(&msgs);
            let published: u64 = outcomes.iter().map(|x| x.published).sum();
            let delivered: u64 = outcomes.iter().map(|x| x.delivered).sum();
            let per_msg = |f: fn(&Outcome) -> u64| {
                outcomes.iter().map(f).sum::<u64>() as f64 / published.max(1) as f64
            };
            let cpu_us = per_msg(|x| x.cpu_ns) / 1000.0;
            let cpu_life_us = per_msg(|x| x.cpu_lifetime_ns) / 1000.0;
            let syscalls = per_msg(|x| x.publisher_syscalls);
            let fraction = delivered as f64 / (published * m.subs as u64).max(1) as f64;
            let ratios: Vec<(Transport, Summary)> = ALTERNATIVES
                .iter()
                .map(|&a| {
                    let den: Vec<f64> = m.outcomes(a).iter().map(|x| x.bytes_per_s(size)).collect();
                    (a, Summary::ratio(&bytes, &den))
                })
                .collect();
            let mut row = vec![
                t.name().to_owned(),
                m.subs.to_string(),
                msgs_s.show(1.0, 0),
                bytes_s.show(1e-9, 2),
            ];
            for (_, r) in &ratios {
                row.push(r.show(1.0, 2));
            }
            let of_ceiling = limits.map(|l| bytes_s.median / ceiling(l, m.subs));
            if let Some(f) = of_ceiling {
                row.push(format!("{:.0}%", f * 100.0));
            }
            row.push(format!("{cpu_us:.1}"));
            row.push(format!("{syscalls:.2}"));
            row.push(format!("{:.1}%", fraction * 100.0));
            let behind = Summary::of(
                &outcomes
                    .iter()
                    .map(Outcome::mean_behind)
                    .collect::<Vec<_>>(),
            );
            row.push(if t.lossy() {
                behind.show(1.0, 2)
            } else {
                "-".into()
            });
            table.row(row);
            results.push(json!({
                "transport": t.name(),
                "subscribers": m.subs,
                "msgs_per_s": msgs_s.median,
                "bytes_per_s": bytes_s.median,
                "msgs_per_s_range": [msgs_s.min, msgs_s.max],
                "bytes_per_s_range": [bytes_s.min, bytes_s.max],
                "ratios_bytes_per_s": ratios.iter().map(|(a, r)| (a.name().to_owned(), r.json(1.0))).collect::<serde_json::Map<_, _>>(),
                "of_ceiling": of_ceiling,
                "delivered_fraction": fraction,
                "mean_behind": t.lossy().then_some(behind.median),
                "cpu_us_per_msg": cpu_us,
                "cpu_us_per_msg_lifetime": cpu_life_us,
                "publisher_syscalls_per_msg": syscalls,
                "reps": outcomes.iter().map(|x| json!({
                    "published": x.published,
                    "delivered": x.delivered,
                    "elapsed_s": x.elapsed,
                    "cpu_ns": x.cpu_ns,
                    "cpu_lifetime_ns": x.cpu_lifetime_ns,
                    "publisher_syscalls": x.publisher_syscalls,
                    "behind_sum": x.behind,
                })).collect::<Vec<_>>(),
            }));
        }
    }
    text.push_str(&table.render());
    text.push_str(
        "  msgs/s per sub = messages each subscriber checked per second; aggregate = bytes \
         checked by all subscribers per second\n  ratios: median (min..max) of per-repetition \
         ratios of aggregate bytes/s; cpu = publisher + subscribers, per published message\n  \
         delivered = messages checked / (published x subscribers); behind (lossy only) = how many \
         newer messages were committed when each delivered one was received, mean per repetition\n",
    );
    if let Some(l) = limits {
        text.push_str(&format!(
            "  ceiling = cores x N / (1/write + N/read bandwidth) from `limits`: every byte written \
             once and read once per subscriber\n  ({} cores, write {:.1} GB/s, read {:.1} GB/s)\n",
            l.cores,
            gbps(l.write_bps),
            gbps(l.read_bps)
        ));
    }
    text.push_str(&targets(o, measured));
    let chart = svg::line_chart(
        &format!("throughput: {size}-byte messages, aggregate delivered bytes/s"),
        "subscribers",
        "GB/s (median, min..max)",
        false,
        &transports
            .iter()
            .map(|&t| svg::Series {
                name: t.name().to_owned(),
                values: measured
                    .iter()
                    .map(|m| {
                        let s = Summary::of(
                            &m.outcomes(t)
                                .iter()
                                .map(|x| x.bytes_per_s(size))
                                .collect::<Vec<_>>(),
                        );
                        svg::Point {
                            x: m.subs as f64,
                            y: s.median / 1e9,
                            lo: s.min / 1e9,
                            hi: s.max / 1e9,
                        }
                    })
                    .collect(),
            })
            .collect::<Vec<_>>(),
    );
    Section {
        text,
        json: json!({
            "scenario": "throughput",
            "params": {
                "pin": pin::json(o.pin),
                "message_bytes": size,
                "subscribers": o.subs,
                "duration_ms": o.duration.as_millis() as u64,
                "reps": o.reps,
                "shmcast_ring_bytes": ring_capacity(size),
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts: vec![("throughput.svg".into(), chart)],
    }
}

/// Where the run stands against the target: 1 MiB to 3 gating subscribers, at least 5×
/// unix-stream aggregate bytes/s, heading for 8×.
fn targets(o: &Options, measured: &[Measured]) -> String {
    let Some(m) = measured.iter().find(|m| m.subs == 3) else {
        return String::new();
    };
    let bytes = |t: Transport| -> Vec<f64> {
        m.outcomes(t)
            .iter()
            .map(|x| x.bytes_per_s(o.size))
            .collect()
    };
    let r = Summary::ratio(
        &bytes(Transport::ShmcastGating),
        &bytes(Transport::UnixStream),
    );
    let verdict = if r.median >= 8.0 {
        "meets the 8x aim"
    } else if r.median >= 5.0 {
        "meets the 5x target"
    } else {
        "BELOW the 5x target"
    };
    format!(
        "  target: {}-byte messages to 3 gating subscribers: shmcast-gating = {}x unix-stream \
         aggregate bytes/s ({verdict}; target >= 5x, aim 8x{})\n",
        o.size,
        r.show(1.0, 2),
        if o.size == 1 << 20 {
            ""
        } else {
            "; the target is stated for 1 MiB"
        }
    )
}
