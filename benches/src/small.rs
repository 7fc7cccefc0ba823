//! `small`: 64-byte messages as fast as they go, to 1 and 3 event-driven subscribers and to 1
//! busy-polling subscriber. Reports messages per second against `unix-stream` fan-out (one
//! `send` per message and subscriber; the receivers read whatever has queued up). The
//! event-driven configurations also run the tokio transports: `shmcast-tokio` against
//! `tokio-unix` (the same fan-out through tokio's `UnixStream`), and `tokio-broadcast` inside
//! one process as the anchor.

use serde_json::json;

use crate::error::Result;
use crate::fanout::{self, Outcome, Transport, Trial, Wait};
use crate::harness::ring_capacity;
use crate::options::Options;
use crate::pin;
use crate::report::{Progress, Section, millions, rotated};
use crate::stats::Summary;
use crate::svg;
use crate::table::Table;

/// Message size of the scenario.
pub const SIZE: usize = 64;

/// The subscriber configurations: (count, how they wait).
const CONFIGS: [(usize, Wait); 3] = [(1, Wait::Event), (3, Wait::Event), (1, Wait::Busy)];

fn transports() -> Vec<Transport> {
    vec![
        Transport::UnixStream,
        Transport::ShmcastGating,
        Transport::ShmcastTokio,
        Transport::TokioUnix,
        Transport::TokioBroadcast,
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2,
    ]
}

/// Whether `t` runs with subscribers that wait as `wait` says (tokio's only wait in a runtime).
fn applies(t: Transport, wait: Wait) -> bool {
    !t.tokio() || wait == Wait::Event
}

struct Config {
    subs: usize,
    wait: Wait,
    by_transport: Vec<(Transport, Vec<Outcome>)>,
}

impl Config {
    fn outcomes(&self, t: Transport) -> &[Outcome] {
        self.by_transport
            .iter()
            .find(|(x, _)| *x == t)
            .map_or(&[], |(_, o)| o.as_slice())
    }

    fn rates(&self, t: Transport) -> Vec<f64> {
        self.outcomes(t)
            .iter()
            .map(|x| x.msgs_per_s(self.subs))
            .collect()
    }

    fn label(&self) -> String {
        format!("{} {}", self.subs, self.wait.name())
    }
}

/// Runs the scenario.
pub fn run(o: &Options) -> Result<Section> {
    let progress = Progress::new("small");
    let transports: Vec<Transport> = transports()
        .into_iter()
        .filter(|&t| {
            o.runs(
                t.name(),
                t == Transport::UnixStream
                    || (t == Transport::TokioUnix && o.runs(Transport::ShmcastTokio.name(), false)),
            )
        })
        .collect();
    let mut configs: Vec<Config> = CONFIGS
        .iter()
        .map(|&(subs, wait)| Config {
            subs,
            wait,
            by_transport: transports
                .iter()
                .filter(|&&t| applies(t, wait))
                .map(|&t| (t, Vec::new()))
                .collect(),
        })
        .collect();
    for rep in 0..o.reps {
        for (k, c) in configs.iter_mut().enumerate() {
            for t in rotated(&transports, rep + k) {
                if !applies(t, c.wait) {
                    continue;
                }
                let outcome = fanout::run(Trial {
                    pin: o.pin,
                    ..Trial::new(t, c.subs, SIZE, o.duration, c.wait)
                })?;
                progress.say(&format!(
                    "rep {}/{}, {} subscriber(s) {}, {:<14} {:8.2} M msgs/s",
                    rep + 1,
                    o.reps,
                    c.subs,
                    c.wait.name(),
                    t.name(),
                    millions(outcome.msgs_per_s(c.subs))
                ));
                let slot = c
                    .by_transport
                    .iter_mut()
                    .find(|(x, _)| *x == t)
                    .expect("every transport has a slot");
                slot.1.push(outcome);
            }
        }
    }
    Ok(report(o, &transports, &configs))
}

fn report(o: &Options, transports: &[Transport], configs: &[Config]) -> Section {
    let mut text = format!(
        "== small: {SIZE}-byte messages, {} ms per trial, median (min..max) of {} repetition(s){}\n\n",
        o.duration.as_millis(),
        o.reps,
        pin::heading(o.pin)
    );
    let mut table = Table::new(&[
        "subscribers",
        "transport",
        "M msgs/s per sub",
        "vs unix-stream",
        "cpu ns/msg",
        "pub syscalls/msg",
    ]);
    let mut results = Vec::new();
    for c in configs {
        let base = c.rates(Transport::UnixStream);
        for &t in transports.iter().filter(|&&t| applies(t, c.wait)) {
            let outcomes = c.outcomes(t);
            let rates = c.rates(t);
            let s = Summary::of(&rates);
            let ratio = Summary::ratio(&rates, &base);
            let published: u64 = outcomes.iter().map(|x| x.published).sum::<u64>().max(1);
            let cpu_ns = outcomes.iter().map(|x| x.cpu_ns).sum::<u64>() as f64 / published as f64;
            let cpu_life_ns =
                outcomes.iter().map(|x| x.cpu_lifetime_ns).sum::<u64>() as f64 / published as f64;
            let syscalls = outcomes.iter().map(|x| x.publisher_syscalls).sum::<u64>() as f64
                / published as f64;
            table.row(vec![
                c.label(),
                t.name().into(),
                s.show(1e-6, 2),
                ratio.show(1.0, 1),
                format!("{cpu_ns:.0}"),
                format!("{syscalls:.3}"),
            ]);
            results.push(json!({
                "transport": t.name(),
                "subscribers": c.subs,
                "subscriber_mode": c.wait.name(),
                "msgs_per_s": s.median,
                "bytes_per_s": s.median * (SIZE * c.subs) as f64,
                "msgs_per_s_range": [s.min, s.max],
                "ratio_vs_unix_stream": ratio.json(1.0),
                "ratio_vs_tokio_unix": (!c.outcomes(Transport::TokioUnix).is_empty())
                    .then(|| Summary::ratio(&rates, &c.rates(Transport::TokioUnix)).json(1.0)),
                "cpu_us_per_msg": cpu_ns / 1000.0,
                "cpu_us_per_msg_lifetime": cpu_life_ns / 1000.0,
                "publisher_syscalls_per_msg": syscalls,
                "reps": outcomes.iter().map(|x| json!({
                    "published": x.published,
                    "delivered": x.delivered,
                    "elapsed_s": x.elapsed,
                    "cpu_ns": x.cpu_ns,
                    "publisher_syscalls": x.publisher_syscalls,
                })).collect::<Vec<_>>(),
            }));
        }
    }
    text.push_str(&table.render());
    text.push_str(
        "  msgs/s per sub = messages each subscriber checked per second; ratios: median \
         (min..max) of per-repetition ratios\n  event = blocks in the kernel when idle; busy = \
         polls without blocking\n",
    );
    if let Some(c) = configs
        .iter()
        .find(|c| c.subs == 3 && c.wait == Wait::Event)
    {
        let r = Summary::ratio(
            &c.rates(Transport::ShmcastGating),
            &c.rates(Transport::UnixStream),
        );
        text.push_str(&format!(
            "  target: 3 event-driven gating subscribers: shmcast-gating = {}x unix-stream \
             msgs/s (target >= 20x: {})\n",
            r.show(1.0, 1),
            if r.median >= 20.0 { "met" } else { "NOT met" }
        ));
    }
    for c in configs.iter().filter(|c| c.wait == Wait::Event) {
        let tokio = c.rates(Transport::ShmcastTokio);
        let unix = c.rates(Transport::TokioUnix);
        if tokio.is_empty() || unix.is_empty() {
            continue;
        }
        let r = Summary::ratio(&tokio, &unix);
        let verdict = if c.subs != 3 {
            String::new()
        } else if r.median >= 5.0 {
            " (target >= 5x: met)".into()
        } else {
            " (target >= 5x: NOT met)".into()
        };
        text.push_str(&format!(
            "  {}: {} event-driven subscriber(s): shmcast-tokio = {}x tokio-unix msgs/s{verdict}\n",
            if c.subs == 3 { "target" } else { "note" },
            c.subs,
            r.show(1.0, 1),
        ));
    }
    let groups: Vec<String> = configs.iter().map(Config::label).collect();
    let series: Vec<svg::Series<Option<svg::Bar>>> = transports
        .iter()
        .map(|&t| svg::Series {
            name: t.name().into(),
            values: configs
                .iter()
                .map(|c| {
                    let s = Summary::of(&c.rates(t));
                    Some(svg::Bar {
                        value: s.median / 1e6,
                        lo: s.min / 1e6,
                        hi: s.max / 1e6,
                    })
                })
                .collect(),
        })
        .collect();
    let chart = svg::bar_chart(
        &format!("small: {SIZE}-byte messages per second and subscriber"),
        "million messages/s (log scale)",
        true,
        &groups,
        &series,
    );
    Section {
        text,
        json: json!({
            "scenario": "small",
            "params": {
                "pin": pin::json(o.pin),
                "message_bytes": SIZE,
                "configs": CONFIGS.iter().map(|(n, w)| json!({"subscribers": n, "mode": w.name()})).collect::<Vec<_>>(),
                "duration_ms": o.duration.as_millis() as u64,
                "reps": o.reps,
                "shmcast_ring_bytes": ring_capacity(SIZE),
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts: vec![("small.svg".into(), chart)],
    }
}
