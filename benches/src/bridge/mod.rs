//! `bridge`: a topic carried to another "host" (its own topic directory) through two bridges,
//! A → exporter → Zenoh TCP → importer → B, against a plain Zenoh publisher and subscriber
//! between two processes doing the same work (64-byte messages, blocking congestion control,
//! batching on, the subscriber reading every byte). Reports messages/s flat out and one-way
//! latency p50/p99 of paced messages, and the ratios the bridge aims to keep within 1.5×.
//!
//! The plain Zenoh subscriber reads in Zenoh's callback, on Zenoh's receiving thread: the
//! fastest a Zenoh program can take a message, and the baseline of the target. A second plain
//! path, `zenoh-channel`, receives as Zenoh's own examples do, through the subscriber's default
//! channel in the program's thread, which costs one local hop more; its ratio is reported
//! beside, for programs written that way.
//! Every process of both paths is a child of its own; the bridges run `shmcast_zenoh::Bridge`.

mod roles;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

pub use roles::{ROLE, SIZE, child};

use crate::error::{Result, sys};
use crate::harness::{STALL, STARTUP};
use crate::options::Options;
use crate::process::{Fleet, Report, Spec};
use crate::report::{Progress, Section, machine, millions, rotated};
use crate::stats::Summary;
use crate::table::Table;
use roles::Pace;

/// The three paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Bridge,
    /// Plain Zenoh, the subscriber reading in Zenoh's callback.
    Zenoh,
    /// Plain Zenoh, the subscriber reading from its default channel in its own thread.
    ZenohChannel,
}

impl Path {
    const ALL: [Path; 3] = [Path::Bridge, Path::Zenoh, Path::ZenohChannel];

    fn name(self) -> &'static str {
        match self {
            Path::Bridge => "shmcast-zenoh-bridge",
            Path::Zenoh => "zenoh",
            Path::ZenohChannel => "zenoh-channel",
        }
    }
}

/// Runs the scenario.
pub fn run(o: &Options) -> Result<Section> {
    let progress = Progress::new("bridge");
    let rate = Pace::Rate(if o.quick {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    });
    let interval = Duration::from_micros(500);
    let latency = Pace::Latency(o.messages, interval);
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut p50: [Vec<f64>; 3] = Default::default();
    let mut p99: [Vec<f64>; 3] = Default::default();
    for rep in 0..o.reps {
        for path in rotated(&Path::ALL, rep) {
            let k = path as usize;
            progress.say(&format!("{} rate, repetition {}", path.name(), rep + 1));
            let r = trial(path, rate, false)?;
            rates[k].push(r.get::<f64>("count")? / (r.get::<f64>("ns")? / 1e9));
            progress.say(&format!("{} latency, repetition {}", path.name(), rep + 1));
            let r = trial(path, latency, true)?;
            p50[k].push(r.get("p50_us")?);
            p99[k].push(r.get("p99_us")?);
        }
    }
    let (b, z, c) = (
        Path::Bridge as usize,
        Path::Zenoh as usize,
        Path::ZenohChannel as usize,
    );
    // Each ratio is "how many times worse the bridge is": above 1 is slower.
    let rate_ratio = Summary::ratio(&rates[z], &rates[b]);
    let p50_ratio = Summary::ratio(&p50[b], &p50[z]);
    let p99_ratio = Summary::ratio(&p99[b], &p99[z]);
    let [channel_rate, channel_p50, channel_p99] = [
        Summary::ratio(&rates[c], &rates[b]),
        Summary::ratio(&p50[b], &p50[c]),
        Summary::ratio(&p99[b], &p99[c]),
    ];
    let mut table = Table::new(&["path", "Mmsg/s", "p50 µs", "p99 µs"]);
    for path in Path::ALL {
        let k = path as usize;
        table.row(vec![
            path.name().into(),
            Summary::of(&rates[k]).show(millions(1.0), 3),
            Summary::of(&p50[k]).show(1.0, 1),
            Summary::of(&p99[k]).show(1.0, 1),
        ]);
    }
    table.row(vec![
        "bridge vs zenoh (×)".into(),
        rate_ratio.show(1.0, 2),
        p50_ratio.show(1.0, 2),
        p99_ratio.show(1.0, 2),
    ]);
    table.row(vec![
        "bridge vs zenoh-channel (×)".into(),
        channel_rate.show(1.0, 2),
        channel_p50.show(1.0, 2),
        channel_p99.show(1.0, 2),
    ]);
    let within = |s: &Summary| if s.median <= 1.5 { "within" } else { "MISSES" };
    let text = format!(
        "== bridge: {SIZE}-byte messages, A -> bridge -> Zenoh TCP -> bridge -> B against plain \
         Zenoh between two processes\n{}ratios are bridge / zenoh (throughput: zenoh / bridge), \
         median (min..max) over {} repetitions; target 1.5 against zenoh (its subscriber reads \
         in Zenoh's callback): throughput {}, p50 {}, p99 {}; zenoh-channel reads from the \
         subscriber's default channel in its own thread, as Zenoh's examples do\n",
        table.render(),
        o.reps,
        within(&rate_ratio),
        within(&p50_ratio),
        within(&p99_ratio),
    );
    let results = Path::ALL
        .iter()
        .map(|&path| {
            let k = path as usize;
            json!({
                "transport": path.name(),
                "msgs_per_s": Summary::of(&rates[k]).json(1.0),
                "p50_us": Summary::of(&p50[k]).json(1.0),
                "p99_us": Summary::of(&p99[k]).json(1.0),
            })
        })
        .collect::<Vec<_>>();
    let json = json!({
        "scenario": "bridge",
        "params": {
            "machine": machine(),
            "size": SIZE,
            "reps": o.reps,
            "rate_pace": format!("{rate:?}"),
            "latency_messages": o.messages,
            "latency_interval_us": interval.as_micros() as u64,
        },
        "results": results,
        "ratios": {
            "throughput_zenoh_over_bridge": rate_ratio.json(1.0),
            "p50_bridge_over_zenoh": p50_ratio.json(1.0),
            "p99_bridge_over_zenoh": p99_ratio.json(1.0),
            "throughput_zenoh_channel_over_bridge": channel_rate.json(1.0),
            "p50_bridge_over_zenoh_channel": channel_p50.json(1.0),
            "p99_bridge_over_zenoh_channel": channel_p99.json(1.0),
        },
    });
    Ok(Section {
        text,
        json,
        charts: Vec::new(),
    })
}

/// A TCP port of the loopback interface that was free a moment ago.
fn free_port() -> Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(sys("finding a free port"))
}

/// A private topic directory for one side of one trial, removed when dropped.
struct Host(PathBuf);

impl Host {
    fn new(name: &str) -> Result<Host> {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(crate::harness::unique_topic(name));
        std::fs::create_dir_all(&dir).map_err(sys(format!("creating {}", dir.display())))?;
        std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o700))
            .map_err(sys(format!("securing {}", dir.display())))?;
        Ok(Host(dir))
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spec(name: &str, args: Vec<String>) -> Spec {
    Spec {
        name: name.into(),
        role: ROLE,
        args,
        fds: Vec::new(),
    }
}

/// One trial of `path`: starts its processes, waits for the subscriber's result.
fn trial(path: Path, pace: Pace, latency: bool) -> Result<Report> {
    let port = free_port()?;
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let mode = if latency { "latency" } else { "rate" };
    let mut fleet = Fleet::new();
    let start = |fleet: &mut Fleet, s: Spec| -> Result<usize> {
        let i = fleet.spawn(s)?;
        fleet.expect(i, "ready", Instant::now() + STARTUP)?;
        Ok(i)
    };
    let (_hosts, sub) = match path {
        Path::Bridge => {
            let (a, b) = (Host::new("bridge-a")?, Host::new("bridge-b")?);
            let topic = "bench";
            let importer = json!({"directory": b.path(), "listen": [endpoint],
                "topics": [{"topic": topic, "direction": "import", "bytes": true,
                            "max_message": 4096}]});
            start(
                &mut fleet,
                spec("importer", vec!["node".into(), importer.to_string()]),
            )?;
            let sub = start(
                &mut fleet,
                spec(
                    "subscriber on B",
                    vec!["shm-sub".into(), b.path(), topic.into(), mode.into()],
                ),
            )?;
            let exporter = json!({"directory": a.path(), "connect": [endpoint],
                "topics": [{"topic": topic, "direction": "export"}]});
            start(
                &mut fleet,
                spec("exporter", vec!["node".into(), exporter.to_string()]),
            )?;
            let mut args = vec!["shm-pub".into(), a.path(), topic.into()];
            args.extend(pace.args());
            start(&mut fleet, spec("publisher on A", args))?;
            (Some((a, b)), sub)
        }
        Path::Zenoh | Path::ZenohChannel => {
            let reader = if path == Path::Zenoh {
                "callback"
            } else {
                "channel"
            };
            let sub = start(
                &mut fleet,
                spec(
                    "zenoh subscriber",
                    vec!["z-sub".into(), endpoint.clone(), mode.into(), reader.into()],
                ),
            )?;
            let mut args = vec!["z-pub".into(), endpoint.clone()];
            args.extend(pace.args());
            start(&mut fleet, spec("zenoh publisher", args))?;
            (None, sub)
        }
    };
    let span = match pace {
        Pace::Rate(d) => d,
        Pace::Latency(n, i) => i * n as u32,
    };
    fleet.expect(sub, "result", Instant::now() + span + STALL)
}
