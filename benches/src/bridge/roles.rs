//! The child processes of the `bridge` scenario: a shmcast publisher and subscriber, a bridge
//! node (`shmcast_zenoh::Bridge`), and a plain Zenoh publisher and subscriber doing the same
//! work. For the halves of the bridge path, the plain Zenoh publisher can stand in for a remote
//! exporter, and the plain subscriber can read an exporter's puts ([`Format::Wire`]).
//!
//! Every message is [`SIZE`] bytes: its number (`END` for the last), the sender's
//! `CLOCK_MONOTONIC` time in ns, then filler. A publisher sends flat out for a duration
//! (`rate`) or paced at an interval (`latency`), then one `END` message; every path is
//! reliable, so the `END` arrives. A subscriber reports `result count= ns=` (first to last
//! message) or `result p50_us= p99_us=`.

use std::sync::mpsc;
use std::time::Duration;

use shmcast::{MessageType, Publisher, Start, Subscriber};
use shmcast_zenoh::wire;
use zenoh::Wait;
use zenoh::qos::CongestionControl;

use crate::error::{BenchError, Result};
use crate::harness::STARTUP;
use crate::process::{parse_arg, say};
use crate::stats;
use crate::sys::{now_ns, sleep_until_ns};

/// The child role of every process of the scenario.
pub const ROLE: &str = "bridge";
/// Bytes per message.
pub const SIZE: usize = 64;
/// The number of the last message.
const END: u64 = u64::MAX;
/// The topic of the bridge path on both hosts.
pub const TOPIC: &str = "bench";
/// The Zenoh key an exporter of [`TOPIC`] puts on, and its importer reads (the default).
const BRIDGE_KEY: &str = "shmcast/bench";
/// The largest message of [`TOPIC`]: the importer's configured contract says the same.
pub const MAX_MESSAGE: usize = 4096;

fn fill(buf: &mut [u8], n: u64) {
    buf[..8].copy_from_slice(&n.to_le_bytes());
    buf[8..16].copy_from_slice(&now_ns().to_le_bytes());
}

fn header(bytes: &[u8]) -> Result<(u64, u64)> {
    if bytes.len() != SIZE {
        return Err(BenchError::Check(format!(
            "a message of {} bytes",
            bytes.len()
        )));
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    Ok((word(0), word(8)))
}

fn zerr(what: &str) -> impl FnOnce(zenoh::Error) -> BenchError + '_ {
    move |e| BenchError::Transport {
        what: format!("zenoh {what}"),
        err: e.to_string(),
    }
}

fn shm(what: &'static str) -> impl FnOnce(&dyn std::fmt::Display) -> BenchError {
    move |e| BenchError::Transport {
        what: what.into(),
        err: e.to_string(),
    }
}

/// How the plain Zenoh processes frame a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The message alone, on the plain path's key.
    Plain,
    /// The bridge's wire format ([`wire`]) on the bridge's key: a publisher that stands in for
    /// a remote exporter, or a subscriber that reads what an exporter puts.
    Wire,
}

impl Format {
    /// As a child argument.
    pub fn arg(self) -> &'static str {
        match self {
            Format::Plain => "plain",
            Format::Wire => "wire",
        }
    }

    fn parse(arg: &str) -> Result<Format> {
        match arg {
            "plain" => Ok(Format::Plain),
            "wire" => Ok(Format::Wire),
            f => Err(BenchError::Usage(format!("unknown message format {f:?}"))),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Format::Plain => KEY,
            Format::Wire => BRIDGE_KEY,
        }
    }

    /// Passes `take` each message one Zenoh payload carries (itself, or an exporter's message
    /// or batch), until it returns `true` (the end); returns whether it did. The plain path
    /// takes its one message with nothing else done, as a plain subscriber would.
    fn take_each(self, bytes: &[u8], mut take: impl FnMut(&[u8]) -> Result<bool>) -> Result<bool> {
        let bad = |e: wire::WireError| BenchError::Check(format!("an exporter's put: {e}"));
        match self {
            Format::Plain => take(bytes),
            Format::Wire => {
                let h = wire::decode(bytes).map_err(bad)?;
                let body = &bytes[h.len..];
                if !h.batch {
                    return take(body);
                }
                for record in wire::records(body) {
                    if take(record.map_err(bad)?)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}

/// How a publisher sends: flat out for a duration, or `count` messages at an interval.
#[derive(Clone, Copy, Debug)]
pub enum Pace {
    /// As fast as the path takes them, for this long.
    Rate(Duration),
    /// This many, one every interval.
    Latency(usize, Duration),
}

impl Pace {
    /// As child arguments.
    pub fn args(self) -> Vec<String> {
        match self {
            Pace::Rate(d) => vec!["rate".into(), d.as_micros().to_string(), "0".into()],
            Pace::Latency(n, i) => vec!["latency".into(), n.to_string(), i.as_micros().to_string()],
        }
    }

    fn parse(args: &[String]) -> Result<Pace> {
        let [kind, a, b, ..] = args else {
            return Err(BenchError::Usage("a pace needs three arguments".into()));
        };
        let (a, b): (u64, u64) = (parse_arg(a)?, parse_arg(b)?);
        match kind.as_str() {
            "rate" => Ok(Pace::Rate(Duration::from_micros(a))),
            "latency" => Ok(Pace::Latency(a as usize, Duration::from_micros(b))),
            k => Err(BenchError::Usage(format!("unknown pace {k:?}"))),
        }
    }

    /// Calls `send(n, buf)` for every message, then for `END`.
    fn run(self, mut send: impl FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        let mut buf = [0x5au8; SIZE];
        match self {
            Pace::Rate(d) => {
                let end = now_ns() + d.as_nanos() as u64;
                let mut n = 0;
                while now_ns() < end {
                    fill(&mut buf, n);
                    send(&mut buf)?;
                    n += 1;
                }
            }
            Pace::Latency(count, interval) => {
                let mut at = now_ns();
                for n in 0..count as u64 {
                    at += interval.as_nanos() as u64;
                    sleep_until_ns(at);
                    fill(&mut buf, n);
                    send(&mut buf)?;
                }
            }
        }
        fill(&mut buf, END);
        send(&mut buf)
    }
}

/// What a subscriber has seen.
struct Tally {
    latency: bool,
    count: u64,
    first_ns: u64,
    last_ns: u64,
    samples: Vec<u64>,
}

impl Tally {
    fn new(latency: bool) -> Tally {
        Tally {
            latency,
            count: 0,
            first_ns: 0,
            last_ns: 0,
            samples: Vec::new(),
        }
    }

    /// Takes one message; `true` at the end.
    fn take(&mut self, bytes: &[u8]) -> Result<bool> {
        let (n, sent) = header(bytes)?;
        let now = now_ns();
        if n == END {
            return Ok(true);
        }
        if n != self.count {
            return Err(BenchError::Check(format!(
                "message {n} where {} was due: a reliable path lost or reordered",
                self.count
            )));
        }
        if self.count == 0 {
            self.first_ns = now;
        }
        self.last_ns = now;
        self.count += 1;
        if self.latency {
            self.samples.push(now.saturating_sub(sent));
        }
        Ok(false)
    }

    fn report(&self) -> Result<()> {
        if self.latency {
            let p = stats::percentiles_of(&self.samples);
            say(&format!("result p50_us={} p99_us={}", p.p50, p.p99))
        } else {
            say(&format!(
                "result count={} ns={}",
                self.count,
                self.last_ns.saturating_sub(self.first_ns).max(1)
            ))
        }
    }
}

/// The child side: `ROLE WHAT ARGS...`.
pub fn child(args: &[String]) -> Result<()> {
    let (what, rest) = args
        .split_first()
        .ok_or_else(|| BenchError::Usage("the bridge role needs a part".into()))?;
    let arg = |i: usize| {
        rest.get(i)
            .cloned()
            .ok_or_else(|| BenchError::Usage(format!("{what} needs argument {i}")))
    };
    match what.as_str() {
        "node" => node(&arg(0)?),
        "shm-pub" => shm_pub(&arg(0)?, &arg(1)?, Pace::parse(&rest[2..])?),
        "shm-sub" => shm_sub(&arg(0)?, &arg(1)?, arg(2)? == "latency"),
        "z-pub" => z_pub(&arg(0)?, Format::parse(&arg(1)?)?, Pace::parse(&rest[2..])?),
        "z-sub" => match arg(2)?.as_str() {
            "callback" => z_sub(&arg(0)?, arg(1)? == "latency", Format::Plain),
            "wire" => z_sub(&arg(0)?, arg(1)? == "latency", Format::Wire),
            "channel" => z_sub_channel(&arg(0)?, arg(1)? == "latency"),
            r => Err(BenchError::Usage(format!("unknown zenoh reader {r:?}"))),
        },
        w => Err(BenchError::Usage(format!("unknown bridge part {w:?}"))),
    }
}

/// A bridge running the JSON configuration `config` until the parent kills it.
fn node(config: &str) -> Result<()> {
    let config = shmcast_zenoh::BridgeConfig::from_json(config)
        .map_err(|e| BenchError::Usage(format!("bridge configuration: {e}")))?;
    let _bridge =
        shmcast_zenoh::Bridge::start(config).map_err(|e| shm("starting the bridge")(&e))?;
    say("ready")?;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn shm_pub(dir: &str, topic: &str, pace: Pace) -> Result<()> {
    let mut publisher = Publisher::builder(topic)
        .directory(dir)
        .max_message(MAX_MESSAGE as u64)
        .bind()
        .map_err(|e| shm("shmcast")(&e))?;
    // The exporter subscribes once the importer's Zenoh subscriber matches: the path is up.
    publisher
        .wait_for_subscribers(1, STARTUP)
        .map_err(|e| BenchError::Child {
            who: "bridge exporter".into(),
            what: e.to_string(),
        })?;
    say("ready")?;
    pace.run(|buf| {
        let mut loan = publisher.loan(SIZE).map_err(|e| shm("shmcast")(&e))?;
        loan.copy_from_slice(buf);
        loan.publish();
        Ok(())
    })?;
    // Keep the topic until the exporter has taken the last message.
    std::thread::sleep(Duration::from_secs(1));
    Ok(())
}

fn shm_sub(dir: &str, topic: &str, latency: bool) -> Result<()> {
    let mut sub = Subscriber::builder(topic)
        .directory(dir)
        .start(Start::Oldest)
        .connect_timeout(STARTUP)
        .connect()
        .map_err(|e| shm("shmcast")(&e))?;
    say("ready")?;
    let mut tally = Tally::new(latency);
    loop {
        let s = sub
            .recv_timeout(crate::harness::STALL)
            .map_err(|e| shm("shmcast")(&e))?;
        if tally.take(&s)? {
            break;
        }
    }
    tally.report()
}

fn session(endpoint: &str, listen: bool) -> Result<zenoh::Session> {
    let mut c = zenoh::Config::default();
    let key = if listen {
        "listen/endpoints"
    } else {
        "connect/endpoints"
    };
    for (k, v) in [
        (key, format!("[{endpoint:?}]")),
        ("scouting/multicast/enabled", "false".into()),
        ("scouting/gossip/enabled", "false".into()),
    ] {
        c.insert_json5(k, &v).map_err(zerr("configuring"))?;
    }
    zenoh::open(c).wait().map_err(zerr("opening a session"))
}

/// The key of the plain Zenoh path.
const KEY: &str = "bench/plain";

/// A plain Zenoh publisher; with [`Format::Wire`], one that stands in for a remote exporter of
/// [`TOPIC`] (one message per put, numbered from 0).
fn z_pub(endpoint: &str, format: Format, pace: Pace) -> Result<()> {
    let session = session(endpoint, false)?;
    let encoder = match format {
        Format::Plain => None,
        Format::Wire => {
            let sender = wire::Sender {
                origin: u64::from(std::process::id()) | 1 << 40,
                source: 1,
                epoch: 0,
            };
            let contract = wire::WireContract {
                message: MessageType::Bytes,
                max_message: MAX_MESSAGE,
            };
            let e = wire::Encoder::new(sender, &contract)
                .ok_or_else(|| BenchError::Check("the bench's contract cannot travel".into()))?;
            Some(e)
        }
    };
    let mut seq = 0u64;
    let publisher = session
        .declare_publisher(format.key())
        .congestion_control(CongestionControl::Block)
        .express(false)
        .wait()
        .map_err(zerr("declaring a publisher"))?;
    let deadline = now_ns() + STARTUP.as_nanos() as u64;
    while !publisher
        .matching_status()
        .wait()
        .map_err(zerr("matching"))?
        .matching()
    {
        if now_ns() > deadline {
            return Err(zerr("waiting for the subscriber")("no match".into()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    say("ready")?;
    pace.run(|buf| {
        let payload = match &encoder {
            Some(e) => e.encode(seq, buf),
            None => buf.to_vec(),
        };
        seq += 1;
        publisher.put(payload).wait().map_err(zerr("putting"))
    })?;
    std::thread::sleep(Duration::from_secs(1));
    Ok(())
}

/// A plain Zenoh subscriber reading in Zenoh's callback; with [`Format::Wire`], what an
/// exporter of [`TOPIC`] puts.
fn z_sub(endpoint: &str, latency: bool, format: Format) -> Result<()> {
    let session = session(endpoint, true)?;
    let (tx, rx) = mpsc::channel();
    let mut tally = Some(Tally::new(latency));
    let _sub = session
        .declare_subscriber(format.key())
        .callback_mut(move |sample| {
            let Some(t) = tally.as_mut() else { return };
            let bytes = sample.payload().to_bytes();
            let ended = format.take_each(&bytes, |m| t.take(m));
            match ended {
                Ok(false) => {}
                Ok(true) => {
                    let _ = tx.send(tally.take().map(Ok));
                }
                Err(e) => {
                    tally = None;
                    let _ = tx.send(Some(Err(e)));
                }
            }
        })
        .wait()
        .map_err(zerr("declaring a subscriber"))?;
    say("ready")?;
    match rx.recv_timeout(STARTUP + crate::harness::STALL * 3) {
        Ok(Some(Ok(tally))) => tally.report(),
        Ok(Some(Err(e))) => Err(e),
        _ => Err(zerr("receiving")("no end message".into())),
    }
}

/// A plain Zenoh subscriber that reads from its default channel in this thread, as Zenoh's
/// examples do.
fn z_sub_channel(endpoint: &str, latency: bool) -> Result<()> {
    let session = session(endpoint, true)?;
    let sub = session
        .declare_subscriber(KEY)
        .wait()
        .map_err(zerr("declaring a subscriber"))?;
    say("ready")?;
    let mut tally = Tally::new(latency);
    loop {
        let sample = match sub.recv_timeout(crate::harness::STALL) {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(zerr("receiving")(
                    "no message within the stall bound".into(),
                ));
            }
            Err(e) => return Err(zerr("receiving")(e)),
        };
        if tally.take(&sample.payload().to_bytes())? {
            return tally.report();
        }
    }
}
