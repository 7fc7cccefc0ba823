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
//!
//! The two halves of the bridge path are measured as well, latency only, to show what each end
//! of the bridge adds to plain Zenoh: the *export half* (A → exporter → Zenoh TCP → a plain
//! subscriber reading the exporter's puts in its callback) and the *import half* (a plain
//! publisher of the bridge's wire format → Zenoh TCP → importer → B). Each is plain Zenoh plus
//! one local hop; their p50 over zenoh's, paired by repetition, is that end's cost.
//!
//! Every process of every path is a child of its own; the bridges run `shmcast_zenoh::Bridge`.

mod roles;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use roles::{Format, MAX_MESSAGE, TOPIC};
pub use roles::{ROLE, SIZE, child};

use crate::error::{Result, sys};
use crate::harness::{STALL, STARTUP};
use crate::options::Options;
use crate::process::{Fleet, Report, Spec};
use crate::report::{Progress, Section, machine, millions, rotated};
use crate::stats::Summary;
use crate::table::Table;
use roles::Pace;

/// The paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Bridge,
    /// Plain Zenoh, the subscriber reading in Zenoh's callback.
    Zenoh,
    /// Plain Zenoh, the subscriber reading from its default channel in its own thread.
    ZenohChannel,
    /// A → exporter → Zenoh → a plain subscriber (callback) of the exporter's puts.
    ExportHalf,
    /// A plain publisher standing in for a remote exporter → Zenoh → importer → B.
    ImportHalf,
}

impl Path {
    const ALL: [Path; 5] = [
        Path::Bridge,
        Path::Zenoh,
        Path::ZenohChannel,
        Path::ExportHalf,
        Path::ImportHalf,
    ];

    fn name(self) -> &'static str {
        match self {
            Path::Bridge => "shmcast-zenoh-bridge",
            Path::Zenoh => "zenoh",
            Path::ZenohChannel => "zenoh-channel",
            Path::ExportHalf => "export half",
            Path::ImportHalf => "import half",
        }
    }

    /// Whether its messages/s are measured: a half's rate would be its plain side's (the
    /// stand-in exporter puts one message at a time, the real one batches), so not.
    fn rated(self) -> bool {
        !matches!(self, Path::ExportHalf | Path::ImportHalf)
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
    let mut rates: [Vec<f64>; 5] = Default::default();
    let mut p50: [Vec<f64>; 5] = Default::default();
    let mut p99: [Vec<f64>; 5] = Default::default();
    for rep in 0..o.reps {
        for path in rotated(&Path::ALL, rep) {
            let k = path as usize;
            if path.rated() {
                progress.say(&format!("{} rate, repetition {}", path.name(), rep + 1));
                let r = trial(path, rate, false)?;
                rates[k].push(r.get::<f64>("count")? / (r.get::<f64>("ns")? / 1e9));
            }
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
    // What each end of the bridge adds to plain Zenoh's p50, per repetition.
    let excess = |half: Path| {
        let d: Vec<f64> = p50[half as usize]
            .iter()
            .zip(&p50[z])
            .map(|(h, z)| h - z)
            .collect();
        Summary::of(&d)
    };
    let (export_end, import_end) = (excess(Path::ExportHalf), excess(Path::ImportHalf));
    let mut table = Table::new(&["path", "Mmsg/s", "p50 µs", "p99 µs"]);
    for path in Path::ALL {
        let k = path as usize;
        table.row(vec![
            path.name().into(),
            if path.rated() {
                Summary::of(&rates[k]).show(millions(1.0), 3)
            } else {
                "-".into()
            },
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
         subscriber's default channel in its own thread, as Zenoh's examples do\n\
         what each end adds to zenoh's p50 (its half's p50 minus zenoh's, per repetition, µs): \
         export {}, import {}; each half is plain Zenoh plus one local hop\n",
        table.render(),
        o.reps,
        within(&rate_ratio),
        within(&p50_ratio),
        within(&p99_ratio),
        export_end.show(1.0, 1),
        import_end.show(1.0, 1),
    );
    let results = Path::ALL
        .iter()
        .map(|&path| {
            let k = path as usize;
            json!({
                "transport": path.name(),
                "msgs_per_s": if path.rated() {
                    Summary::of(&rates[k]).json(1.0)
                } else {
                    serde_json::Value::Null
                },
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
            "p50_export_end_us": export_end.json(1.0),
            "p50_import_end_us": import_end.json(1.0),
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

/// One trial of `path`: starts its processes, each ready before the next (subscribers first),
/// and waits for the subscriber's result.
fn trial(path: Path, pace: Pace, latency: bool) -> Result<Report> {
    let port = free_port()?;
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let mode = if latency { "latency" } else { "rate" };
    let node =
        |name: &str, config: serde_json::Value| spec(name, vec!["node".into(), config.to_string()]);
    let importer = |b: &Host| {
        node(
            "importer",
            json!({"directory": b.path(), "listen": [endpoint],
                "topics": [{"topic": TOPIC, "direction": "import", "bytes": true,
                            "max_message": MAX_MESSAGE}]}),
        )
    };
    let exporter = |a: &Host| {
        node(
            "exporter",
            json!({"directory": a.path(), "connect": [endpoint],
                "topics": [{"topic": TOPIC, "direction": "export"}]}),
        )
    };
    let shm_sub = |b: &Host| {
        let args = vec!["shm-sub".into(), b.path(), TOPIC.into(), mode.into()];
        spec("subscriber on B", args)
    };
    let shm_pub = |a: &Host| {
        let mut args = vec!["shm-pub".into(), a.path(), TOPIC.into()];
        args.extend(pace.args());
        spec("publisher on A", args)
    };
    let z_sub = |reader: &str| {
        let args = vec!["z-sub".into(), endpoint.clone(), mode.into(), reader.into()];
        spec("zenoh subscriber", args)
    };
    let z_pub = |format: Format| {
        let mut args = vec!["z-pub".into(), endpoint.clone(), format.arg().into()];
        args.extend(pace.args());
        spec("zenoh publisher", args)
    };
    let (a, b) = (Host::new("bridge-a")?, Host::new("bridge-b")?);
    // In start order; the one that reports the result is marked.
    let parts = match path {
        Path::Bridge => vec![
            (importer(&b), false),
            (shm_sub(&b), true),
            (exporter(&a), false),
            (shm_pub(&a), false),
        ],
        Path::Zenoh => vec![(z_sub("callback"), true), (z_pub(Format::Plain), false)],
        Path::ZenohChannel => vec![(z_sub("channel"), true), (z_pub(Format::Plain), false)],
        Path::ExportHalf => vec![
            (z_sub("wire"), true),
            (exporter(&a), false),
            (shm_pub(&a), false),
        ],
        Path::ImportHalf => vec![
            (importer(&b), false),
            (shm_sub(&b), true),
            (z_pub(Format::Wire), false),
        ],
    };
    let mut fleet = Fleet::new();
    let mut sub = None;
    for (s, reports) in parts {
        let i = fleet.spawn(s)?;
        fleet.expect(i, "ready", Instant::now() + STARTUP)?;
        if reports {
            sub = Some(i);
        }
    }
    let sub = sub.expect("every path has a subscriber");
    let span = match pace {
        Pace::Rate(d) => d,
        Pace::Latency(n, i) => i * n as u32,
    };
    fleet.expect(sub, "result", Instant::now() + span + STALL)
}
