//! `latency`: the 2002 experiment. The publisher sends an 8-byte `CLOCK_MONOTONIC` timestamp
//! every `--interval-us` (100 µs) to `--listeners` (3) listener processes, each blocked until
//! woken; each listener subtracts the timestamp from its own clock reading when its receive
//! returns. Reports p50/p90/p99/p99.9/max per listener (HdrHistogram over every repetition),
//! CPU time per message over all processes, and the publisher's syscalls per message.
//!
//! * `unix-relay`: publisher → relay process → one unix datagram socket per listener.
//! * `unix-dgram`: the publisher sends to each listener's unix datagram socket.
//! * `udp-multicast`: one `sendto` to 239.255.83.67 on loopback (`IP_MULTICAST_IF` 127.0.0.1,
//!   `IP_MULTICAST_LOOP`, TTL 0: nothing leaves the host); every listener joined the group.
//! * `shmcast`: listeners block in `recv` (one futex wake for all parked listeners, no
//!   spinning).
//! * `shmcast-spin`: listeners busy-poll (`spin(u32::MAX)`); sane only with fewer listeners than
//!   cores, which the run warns about.
//! * `shmcast-poll`: listeners wait in `poll()` on the subscriber's descriptor and call
//!   `try_recv`, as an event loop does (one doorbell per parked listener); only with several
//!   listeners.
//!
//! A second group runs one listener, where `shmcast-spin` on an otherwise idle core shows the
//! floor of a busy-polling handoff.

use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use rustix::net::SocketType;
use serde_json::json;
use shmcast::{Publisher, RecvError, Subscriber};

use crate::error::{BenchError, Result, failed, sys};
use crate::fanout::{STALL, STARTUP, shmcast_syscalls, unique_topic, wait_for_subscribers};
use crate::limits::Limits;
use crate::options::Options;
use crate::process::{self, Fleet, Spec};
use crate::report::{Progress, Section, cores, rotated};
use crate::stats::{self, Percentiles, Summary};
use crate::svg;
use crate::sys::{cpu_self_ns, now_ns};
use crate::table::Table;

/// The child role of a listener.
pub const LISTENER: &str = "latency-listener";
/// The child role of the relay.
pub const RELAY: &str = "latency-relay";

/// The timestamp that ends a socket stream (a real one is never 0).
const END: u64 = 0;

/// How the timestamps travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Publisher → relay process → a unix datagram socket per listener.
    UnixRelay,
    /// A unix datagram socket per listener.
    UnixDgram,
    /// One UDP multicast datagram on loopback.
    UdpMulticast,
    /// shmcast, listeners parked in `recv` (futex).
    Shmcast,
    /// shmcast, listeners busy-polling.
    ShmcastSpin,
    /// shmcast, listeners in an event loop: `poll()` on the descriptor, then `try_recv`.
    ShmcastPoll,
    /// iceoryx2 publish-subscribe with an event service: listeners block on the event.
    #[cfg(feature = "iceoryx2")]
    Iceoryx2,
    /// iceoryx2 publish-subscribe, listeners busy-polling.
    #[cfg(feature = "iceoryx2")]
    Iceoryx2Busy,
}

const ALL: &[Transport] = &[
    Transport::UnixRelay,
    Transport::UnixDgram,
    Transport::UdpMulticast,
    Transport::Shmcast,
    Transport::ShmcastSpin,
    Transport::ShmcastPoll,
    #[cfg(feature = "iceoryx2")]
    Transport::Iceoryx2,
    #[cfg(feature = "iceoryx2")]
    Transport::Iceoryx2Busy,
];

impl Transport {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Transport::UnixRelay => "unix-relay",
            Transport::UnixDgram => "unix-dgram",
            Transport::UdpMulticast => "udp-multicast",
            Transport::Shmcast => "shmcast",
            Transport::ShmcastSpin => "shmcast-spin",
            Transport::ShmcastPoll => "shmcast-poll",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2 => "iceoryx2",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2Busy => "iceoryx2-busy",
        }
    }

    fn parse(name: &str) -> Result<Transport> {
        ALL.iter()
            .copied()
            .find(|t| t.name() == name)
            .ok_or_else(|| BenchError::Usage(format!("unknown latency transport {name:?}")))
    }

    /// Whether this is one of the socket alternatives.
    pub fn socket(self) -> bool {
        matches!(
            self,
            Transport::UnixRelay | Transport::UnixDgram | Transport::UdpMulticast
        )
    }

    /// Whether listeners busy-poll.
    pub fn spins(self) -> bool {
        match self {
            Transport::ShmcastSpin => true,
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2Busy => true,
            _ => false,
        }
    }
}

/// One trial.
#[derive(Clone, Copy, Debug)]
pub struct Trial {
    /// The transport.
    pub transport: Transport,
    /// Number of listeners.
    pub listeners: usize,
    /// Timestamps sent.
    pub messages: usize,
    /// Publishing period.
    pub interval: Duration,
}

/// What one trial measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Latencies per listener, ns, warm-up dropped.
    pub samples: Vec<Vec<u64>>,
    /// Timestamps each listener received (warm-up included).
    pub received: Vec<u64>,
    /// CPU time of every process of the trial in the measured window, ns.
    pub cpu_ns: u64,
    /// The publisher's window plus every child's whole life, ns.
    pub cpu_lifetime_ns: u64,
    /// Syscalls the publisher made to deliver.
    pub publisher_syscalls: u64,
    /// Of those, the ones spent waiting for ring space (shmcast: a full ring behind a starved
    /// listener), not waking anyone.
    pub publisher_space_syscalls: u64,
}

/// What the publisher side of a transport reports after its paced loop.
struct Sent {
    cpu_ns: u64,
    syscalls: u64,
    space_syscalls: u64,
}

/// Sends `trial.messages` timestamps, one every `trial.interval`, through `send`, which gets the
/// timestamp and returns the syscalls it made.
fn paced(trial: &Trial, mut send: impl FnMut(u64) -> Result<u64>) -> Result<Sent> {
    crate::sys::tight_timer_slack();
    let interval = trial.interval.as_nanos() as u64;
    let cpu0 = cpu_self_ns();
    let start = now_ns() + 1_000_000;
    let mut syscalls = 0;
    for k in 0..trial.messages as u64 {
        crate::sys::sleep_until_ns(start + k * interval);
        syscalls += send(now_ns())?;
    }
    Ok(Sent {
        cpu_ns: cpu_self_ns() - cpu0,
        syscalls,
        space_syscalls: 0,
    })
}

fn spawn_listener(
    fleet: &mut Fleet,
    trial: &Trial,
    i: usize,
    endpoint: String,
    fds: Vec<RawFd>,
) -> Result<()> {
    fleet.spawn(Spec {
        name: format!("{} listener {i}", trial.transport.name()),
        role: LISTENER,
        args: vec![
            trial.transport.name().into(),
            endpoint,
            trial.messages.to_string(),
        ],
        fds,
    })?;
    Ok(())
}

/// Sends an 8-byte datagram on a connected socket, waiting (bounded) while its queue is full.
fn send_dgram(fd: &OwnedFd, value: u64) -> Result<u64> {
    let bytes = value.to_ne_bytes();
    let mut calls = 1;
    while crate::sys::send_nowait(fd.as_fd(), &bytes)
        .map_err(sys("send on a unix datagram socket"))?
        .is_none()
    {
        calls += 2;
        if !crate::sys::wait_writable(fd.as_fd(), STALL).map_err(sys("poll"))? {
            return Err(BenchError::Child {
                who: "a datagram receiver".into(),
                what: format!("took nothing for {STALL:?}"),
            });
        }
    }
    Ok(calls)
}

/// Runs one trial.
pub fn run_trial(trial: Trial) -> Result<Outcome> {
    let mut fleet = Fleet::new();
    let sent;
    match trial.transport {
        Transport::UnixDgram | Transport::UnixRelay => {
            let mut mine = Vec::new();
            let mut theirs = Vec::new();
            for _ in 0..trial.listeners {
                let (a, b) = crate::sys::unix_pair(SocketType::DGRAM).map_err(sys("socketpair"))?;
                mine.push(a);
                theirs.push(b);
            }
            for (i, fd) in theirs.iter().enumerate() {
                let raw = process::raw(fd);
                spawn_listener(&mut fleet, &trial, i, raw.to_string(), vec![raw])?;
            }
            drop(theirs);
            if trial.transport == Transport::UnixRelay {
                let (to_relay, relay_in) =
                    crate::sys::unix_pair(SocketType::DGRAM).map_err(sys("socketpair"))?;
                let mut fds = vec![process::raw(&relay_in)];
                fds.extend(mine.iter().map(process::raw));
                fleet.spawn(Spec {
                    name: "unix-relay relay".into(),
                    role: RELAY,
                    args: fds.iter().map(RawFd::to_string).collect(),
                    fds,
                })?;
                mine = vec![to_relay];
            }
            fleet.expect_all("ready", Instant::now() + STARTUP)?;
            sent = paced(&trial, |ts| {
                mine.iter()
                    .map(|fd| send_dgram(fd, ts))
                    .sum::<Result<u64>>()
            })?;
            for fd in &mine {
                send_dgram(fd, END)?;
            }
        }
        Transport::UdpMulticast => {
            let port = multicast_port();
            for i in 0..trial.listeners {
                spawn_listener(&mut fleet, &trial, i, port.to_string(), Vec::new())?;
            }
            fleet.expect_all("ready", Instant::now() + STARTUP)?;
            let fd = crate::sys::multicast_sender().map_err(sys("creating the UDP sender"))?;
            let group = crate::sys::multicast_group(port);
            sent = paced(&trial, |ts| {
                crate::sys::send_to(fd.as_fd(), &ts.to_ne_bytes(), group)
                    .map_err(sys("sendto the multicast group"))?;
                Ok(1)
            })?;
            // UDP may drop a datagram; the end marker goes out a few times.
            for _ in 0..3 {
                std::thread::sleep(Duration::from_millis(1));
                crate::sys::send_to(fd.as_fd(), &END.to_ne_bytes(), group)
                    .map_err(sys("sendto the multicast group"))?;
            }
        }
        Transport::Shmcast | Transport::ShmcastSpin | Transport::ShmcastPoll => {
            let topic = unique_topic("latency");
            // A ring that holds seconds of timestamps: a starved listener (spinning ones on a
            // small machine) must not make the publisher wait for space.
            let mut publisher = Publisher::builder(topic.as_str())
                .capacity(1 << 20)
                .bind()
                .map_err(failed("binding the shmcast publisher"))?;
            for i in 0..trial.listeners {
                spawn_listener(&mut fleet, &trial, i, topic.clone(), Vec::new())?;
            }
            fleet.expect_all("ready", Instant::now() + STARTUP)?;
            wait_for_subscribers(&publisher, trial.listeners)?;
            let before = publisher.stats();
            let mut s = paced(&trial, |ts| {
                // A full ring (a stalled listener) is the only reason to wait, with a deadline.
                let mut loan = publisher
                    .loan_timeout(8, STALL)
                    .map_err(failed("shmcast loan"))?;
                loan.copy_from_slice(&ts.to_ne_bytes());
                loan.publish();
                Ok(0)
            })?;
            let after = publisher.stats();
            s.syscalls = shmcast_syscalls(&before, &after);
            s.space_syscalls = 2 * (after.space_waits - before.space_waits);
            sent = s;
            drop(publisher);
        }
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 | Transport::Iceoryx2Busy => {
            let service = unique_topic("latency");
            let publisher = crate::iceoryx::LatencyPublisher::new(
                &service,
                trial.listeners,
                trial.transport.spins(),
            )?;
            for i in 0..trial.listeners {
                spawn_listener(&mut fleet, &trial, i, service.clone(), Vec::new())?;
            }
            fleet.expect_all("ready", Instant::now() + STARTUP)?;
            publisher.wait_for_listeners(trial.listeners)?;
            sent = paced(&trial, |ts| publisher.send(ts))?;
            publisher.send(END)?;
        }
    }
    let mut out = Outcome {
        cpu_ns: sent.cpu_ns,
        cpu_lifetime_ns: sent.cpu_ns,
        publisher_syscalls: sent.syscalls,
        publisher_space_syscalls: sent.space_syscalls,
        ..Outcome::default()
    };
    let warmup = trial.messages / 10;
    let deadline = Instant::now() + STALL;
    for i in 0..trial.listeners {
        let result = fleet.expect(i, "result", deadline)?;
        out.cpu_ns += result.get::<u64>("cpu_ns")?;
        out.received.push(result.get("received")?);
        let samples = fleet.expect(i, "samples", deadline)?.numbers()?;
        out.samples
            .push(samples.get(warmup..).unwrap_or_default().to_vec());
    }
    for i in trial.listeners..fleet.len() {
        out.cpu_ns += fleet.expect(i, "result", deadline)?.get::<u64>("cpu_ns")?;
    }
    out.cpu_lifetime_ns += fleet.finish(Instant::now() + STALL)?;
    Ok(out)
}

/// A UDP port for this trial: derived from the pid and a counter, so concurrent runs differ.
fn multicast_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    30_000 + ((std::process::id() as u16).wrapping_mul(31).wrapping_add(n) % 30_000)
}

/// The child side: `latency-listener TRANSPORT ENDPOINT MESSAGES`.
pub fn listener(args: &[String]) -> Result<()> {
    let [transport, endpoint, messages] = args else {
        return Err(BenchError::Usage(format!(
            "{LISTENER} takes 3 arguments, got {}",
            args.len()
        )));
    };
    let transport = Transport::parse(transport)?;
    let messages: usize = process::parse_arg(messages)?;
    let mut samples: Vec<u64> = Vec::with_capacity(messages);
    let cpu0;
    match transport {
        Transport::UnixDgram | Transport::UnixRelay | Transport::UdpMulticast => {
            let fd = if transport == Transport::UdpMulticast {
                let port: u16 = process::parse_arg(endpoint)?;
                crate::sys::multicast_listener(crate::sys::multicast_group(port))
                    .map_err(sys("joining the multicast group on loopback"))?
            } else {
                crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
                    .map_err(sys("adopting the datagram socket"))?
            };
            crate::sys::set_recv_timeout(fd.as_fd(), STALL).map_err(sys("setting SO_RCVTIMEO"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            let mut buf = [0u8; 8];
            loop {
                let n = crate::sys::recv(fd.as_fd(), &mut buf)
                    .map_err(sys("recv"))?
                    .ok_or_else(|| crate::fanout::stalled(transport.name()))?;
                let now = now_ns();
                let ts = u64::from_ne_bytes(buf);
                if n != 8 {
                    return Err(BenchError::Corrupt(format!("datagram of {n} bytes")));
                }
                if ts == END {
                    break;
                }
                samples.push(now.saturating_sub(ts));
            }
        }
        Transport::Shmcast | Transport::ShmcastSpin | Transport::ShmcastPoll => {
            let spin = if transport.spins() { u32::MAX } else { 0 };
            let mut sub = Subscriber::builder(endpoint.as_str())
                .spin(spin)
                .connect_timeout(STARTUP)
                .connect()
                .map_err(failed("connecting a shmcast listener"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            // `recv` without a timeout: the parent bounds every trial and kills a stalled
            // child.
            // The same epoll instance, held apart so that waiting on it needs no borrow of `sub`.
            let event_fd = if transport == Transport::ShmcastPoll {
                Some(
                    sub.as_fd()
                        .try_clone_to_owned()
                        .map_err(sys("dup of the subscriber's descriptor"))?,
                )
            } else {
                None
            };
            loop {
                let got = if let Some(fd) = &event_fd {
                    match sub.try_recv() {
                        Err(RecvError::Empty) => {
                            crate::sys::wait_readable(fd.as_fd(), STALL)
                                .map_err(sys("poll on the subscriber"))?;
                            continue;
                        }
                        got => got,
                    }
                } else {
                    sub.recv()
                };
                match got {
                    Ok(sample) => {
                        let now = now_ns();
                        let ts = sample
                            .as_pod::<u64>()
                            .map_err(|e| BenchError::Corrupt(e.to_string()))?;
                        samples.push(now.saturating_sub(*ts));
                    }
                    Err(RecvError::Disconnected) => break,
                    Err(e) => return Err(failed("shmcast receive")(e)),
                }
            }
        }
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 | Transport::Iceoryx2Busy => {
            cpu0 = crate::iceoryx::latency_listener(endpoint, transport.spins(), &mut samples)?;
        }
    }
    let cpu = cpu_self_ns() - cpu0;
    process::say(&format!("result received={} cpu_ns={cpu}", samples.len()))?;
    let mut line = String::from("samples");
    for s in &samples {
        line.push(' ');
        line.push_str(&s.to_string());
    }
    process::say(&line)
}

/// The child side: `latency-relay IN_FD OUT_FD...`: forwards every datagram to every output.
pub fn relay(args: &[String]) -> Result<()> {
    let fds: Vec<OwnedFd> = args
        .iter()
        .map(|a| {
            crate::sys::adopt_inherited(process::fd_arg(a)?).map_err(sys("adopting a relay socket"))
        })
        .collect::<Result<_>>()?;
    let Some((input, outputs)) = fds.split_first() else {
        return Err(BenchError::Usage(format!("{RELAY} needs an input socket")));
    };
    crate::sys::set_recv_timeout(input.as_fd(), STALL).map_err(sys("setting SO_RCVTIMEO"))?;
    process::say("ready")?;
    let cpu0 = cpu_self_ns();
    let mut buf = [0u8; 8];
    loop {
        crate::sys::recv(input.as_fd(), &mut buf)
            .map_err(sys("recv"))?
            .ok_or_else(|| crate::fanout::stalled("unix-relay"))?;
        let ts = u64::from_ne_bytes(buf);
        for out in outputs {
            send_dgram(out, ts)?;
        }
        if ts == END {
            break;
        }
    }
    process::say(&format!("result cpu_ns={}", cpu_self_ns() - cpu0))
}

/// One group of trials: a listener count and the transports run with it.
struct Group {
    listeners: usize,
    transports: Vec<Transport>,
    /// Per transport, one outcome per repetition.
    outcomes: Vec<Vec<Outcome>>,
}

impl Group {
    fn outcomes(&self, t: Transport) -> &[Outcome] {
        let i = self
            .transports
            .iter()
            .position(|&x| x == t)
            .expect("listed");
        &self.outcomes[i]
    }

    /// Percentiles of listener `l` over every repetition.
    fn percentiles(&self, t: Transport, l: usize) -> Percentiles {
        let mut hist = stats::histogram();
        for o in self.outcomes(t) {
            stats::record(&mut hist, &o.samples[l]);
        }
        stats::percentiles(&hist)
    }

    /// Listener `l`'s median in each repetition, µs.
    fn rep_p50s(&self, t: Transport, l: usize) -> Vec<f64> {
        self.outcomes(t)
            .iter()
            .map(|o| {
                let mut hist = stats::histogram();
                stats::record(&mut hist, &o.samples[l]);
                stats::percentiles(&hist).p50
            })
            .collect()
    }

    /// The socket transport with the lowest p50 for listener `l`.
    fn best_socket(&self, l: usize) -> Option<Transport> {
        self.transports
            .iter()
            .copied()
            .filter(|t| t.socket())
            .min_by(|&a, &b| {
                self.percentiles(a, l)
                    .p50
                    .total_cmp(&self.percentiles(b, l).p50)
            })
    }

    fn per_msg(&self, t: Transport, f: fn(&Outcome) -> u64, messages: usize) -> f64 {
        let outcomes = self.outcomes(t);
        outcomes.iter().map(f).sum::<u64>() as f64 / (outcomes.len() * messages).max(1) as f64
    }
}

/// Runs the scenario.
pub fn run(o: &Options, limits: Option<&Limits>) -> Result<Section> {
    let progress = Progress::new("latency");
    let all: Vec<Transport> = ALL
        .iter()
        .copied()
        .filter(|t| o.runs(t.name(), *t == Transport::UnixDgram))
        .collect();
    let mut groups = vec![Group {
        listeners: o.listeners,
        outcomes: vec![Vec::new(); all.len()],
        transports: all.clone(),
    }];
    if o.listeners != 1 {
        let single: Vec<Transport> = all
            .iter()
            .copied()
            .filter(|&t| t != Transport::UnixRelay && t != Transport::ShmcastPoll)
            .collect();
        groups.push(Group {
            listeners: 1,
            outcomes: vec![Vec::new(); single.len()],
            transports: single,
        });
    }
    let cores = cores();
    for g in &groups {
        if g.listeners >= cores {
            progress.say(&format!(
                "WARNING: {} busy-polling listeners on {cores} cores: the spinning transports \
                 starve the publisher; their figures show that, not the transport",
                g.listeners
            ));
        }
    }
    for rep in 0..o.reps {
        for (k, g) in groups.iter_mut().enumerate() {
            for t in rotated(&g.transports, rep + k) {
                let outcome = run_trial(Trial {
                    transport: t,
                    listeners: g.listeners,
                    messages: o.messages,
                    interval: o.interval,
                })?;
                let p50s: Vec<String> = outcome
                    .samples
                    .iter()
                    .map(|s| {
                        let mut hist = stats::histogram();
                        stats::record(&mut hist, s);
                        format!("{:.1}", stats::percentiles(&hist).p50)
                    })
                    .collect();
                progress.say(&format!(
                    "rep {}/{}, {} listener(s), {:<14} p50 µs {}",
                    rep + 1,
                    o.reps,
                    g.listeners,
                    t.name(),
                    p50s.join(" / ")
                ));
                let i = g.transports.iter().position(|&x| x == t).expect("listed");
                g.outcomes[i].push(outcome);
            }
        }
    }
    Ok(report(o, &groups, limits, cores))
}

fn report(o: &Options, groups: &[Group], limits: Option<&Limits>, cores: usize) -> Section {
    let mut text = String::new();
    let mut results = Vec::new();
    let mut charts = Vec::new();
    for g in groups {
        text.push_str(&format!(
            "== latency: 8-byte timestamp every {} µs to {} listener(s), {} messages per trial \
             ({} warm-up dropped), {} repetition(s) merged\n\n",
            o.interval.as_micros(),
            g.listeners,
            o.messages,
            o.messages / 10,
            o.reps
        ));
        let mut table = Table::new(&[
            "transport",
            "listener",
            "p50 µs",
            "p90",
            "p99",
            "p99.9",
            "max",
            "p50 / best socket",
            "cpu µs/msg",
            "pub syscalls/msg",
        ]);
        let best: Vec<Option<Transport>> = (0..g.listeners).map(|l| g.best_socket(l)).collect();
        for &t in &g.transports {
            let cpu = g.per_msg(t, |x| x.cpu_ns, o.messages) / 1000.0;
            let cpu_life = g.per_msg(t, |x| x.cpu_lifetime_ns, o.messages) / 1000.0;
            let syscalls = g.per_msg(t, |x| x.publisher_syscalls, o.messages);
            let mut listeners = Vec::new();
            for (l, &best_l) in best.iter().enumerate() {
                let p = g.percentiles(t, l);
                let rep_p50 = Summary::of(&g.rep_p50s(t, l));
                let vs_best = best_l.map(|b| Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(b, l)));
                let vs_each: serde_json::Map<String, serde_json::Value> = g
                    .transports
                    .iter()
                    .filter(|a| a.socket())
                    .map(|&a| {
                        (
                            a.name().to_owned(),
                            Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(a, l)).json(1.0),
                        )
                    })
                    .collect();
                table.row(vec![
                    if l == 0 {
                        t.name().into()
                    } else {
                        String::new()
                    },
                    (l + 1).to_string(),
                    format!("{:.1}", p.p50),
                    format!("{:.1}", p.p90),
                    format!("{:.1}", p.p99),
                    format!("{:.1}", p.p999),
                    format!("{:.1}", p.max),
                    vs_best.map_or("-".into(), |r| {
                        format!("{} {}", r.show(1.0, 2), best_l.map_or("", |b| b.name()))
                    }),
                    if l == 0 {
                        format!("{cpu:.1}")
                    } else {
                        String::new()
                    },
                    if l == 0 {
                        format!("{syscalls:.2}")
                    } else {
                        String::new()
                    },
                ]);
                let received: u64 = g.outcomes(t).iter().map(|x| x.received[l]).sum();
                listeners.push(json!({
                    "p50_us": p.p50,
                    "p90_us": p.p90,
                    "p99_us": p.p99,
                    "p999_us": p.p999,
                    "max_us": p.max,
                    "samples": p.count,
                    "received": received,
                    "p50_us_reps": rep_p50.json(1.0),
                    "p50_ratio_vs_best_socket": vs_best.map(|r| r.json(1.0)),
                    "best_socket": best_l.map(|b| b.name()),
                    "p50_ratio_vs": vs_each,
                }));
            }
            let sent = (o.messages * g.outcomes(t).len()) as u64;
            results.push(json!({
                "transport": t.name(),
                "listener_count": g.listeners,
                "listeners": listeners,
                "cpu_us_per_msg": cpu,
                "cpu_us_per_msg_lifetime": cpu_life,
                "publisher_syscalls_per_msg": syscalls,
                "publisher_space_wait_syscalls_per_msg": g.per_msg(t, |x| x.publisher_space_syscalls, o.messages),
                "messages_sent": sent,
                "spinning_listeners_ge_cores": t.spins() && g.listeners >= cores,
            }));
        }
        text.push_str(&table.render());
        text.push_str(
            "  p50 / best socket: median (min..max) of per-repetition ratios of this listener's \
             p50 to the socket transport with the lowest p50 for it\n  cpu = publisher + \
             listeners (+ relay) per message, measured window; pub syscalls = the publisher's \
             sends or wake writes per message\n",
        );
        if g.listeners >= cores {
            text.push_str(&format!(
                "  WARNING: {} busy-polling listeners on {cores} cores: spinning rows measure \
                 starvation, not the transport\n",
                g.listeners
            ));
        }
        text.push_str(&alternatives_table(g));
        text.push_str(&targets(g, limits, o.messages));
        text.push('\n');
        charts.push((
            format!("latency-{}-listeners.svg", g.listeners),
            chart(o, g),
        ));
    }
    Section {
        text,
        json: json!({
            "scenario": "latency",
            "params": {
                "interval_us": o.interval.as_micros() as u64,
                "listeners": o.listeners,
                "listener_groups": groups.iter().map(|g| g.listeners).collect::<Vec<_>>(),
                "messages": o.messages,
                "warmup_dropped": o.messages / 10,
                "reps": o.reps,
                "message_bytes": 8,
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts,
    }
}

/// p50 ratios of every non-socket transport against every socket transport, per listener.
fn alternatives_table(g: &Group) -> String {
    let sockets: Vec<Transport> = g
        .transports
        .iter()
        .copied()
        .filter(|t| t.socket())
        .collect();
    let mut header = vec!["p50 ratio (per listener)".to_owned()];
    header.extend(sockets.iter().map(|s| format!("vs {}", s.name())));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header_refs);
    for &t in g.transports.iter().filter(|t| !t.socket()) {
        let mut row = vec![t.name().to_owned()];
        for &s in &sockets {
            let cells: Vec<String> = (0..g.listeners)
                .map(|l| {
                    format!(
                        "{:.2}",
                        Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(s, l)).median
                    )
                })
                .collect();
            row.push(cells.join(" / "));
        }
        table.row(row);
    }
    format!("\n{}", table.render())
}

/// Where the group stands against the latency targets.
fn targets(g: &Group, limits: Option<&Limits>, messages: usize) -> String {
    let mut out = String::new();
    let has = |t: Transport| g.transports.contains(&t) && !g.outcomes(t).is_empty();
    for t in [Transport::Shmcast, Transport::ShmcastPoll] {
        if g.listeners < 2 || !has(t) {
            continue;
        }
        let ratios: Vec<f64> = (0..g.listeners)
            .filter_map(|l| {
                let b = g.best_socket(l)?;
                Some(g.percentiles(t, l).p50 / g.percentiles(b, l).p50)
            })
            .collect();
        let worst = ratios.iter().copied().fold(0.0, f64::max);
        let verdict = if worst <= 0.5 {
            "meets the 0.5x aim"
        } else if worst < 1.0 {
            "meets the target"
        } else {
            "BELOW the target"
        };
        let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        out.push_str(&format!(
            "  target: {} listeners, {} p50 / best socket p50 per listener = {} ({verdict}; \
             target < 1, aim <= 0.5)\n",
            g.listeners,
            t.name(),
            shown.join(" / ")
        ));
    }
    if has(Transport::Shmcast) {
        let s = g.per_msg(Transport::Shmcast, |x| x.publisher_syscalls, messages);
        let waits = g.per_msg(Transport::Shmcast, |x| x.publisher_space_syscalls, messages);
        out.push_str(&format!(
            "  target: publisher syscalls/msg with every listener parked (shmcast) = {s:.3}{} \
             (target <= 1: {})\n",
            space_note(waits),
            if s <= 1.0 { "met" } else { "NOT met" }
        ));
    }
    if has(Transport::ShmcastPoll) {
        let s = g.per_msg(Transport::ShmcastPoll, |x| x.publisher_syscalls, messages);
        out.push_str(&format!(
            "  note: shmcast-poll makes {s:.3} publisher syscalls/msg: one doorbell per listener \
             waiting in an event loop (the <= 1 target is for listeners blocked in recv)\n"
        ));
    }
    if has(Transport::ShmcastSpin) {
        let s = g.per_msg(Transport::ShmcastSpin, |x| x.publisher_syscalls, messages);
        let waits = g.per_msg(
            Transport::ShmcastSpin,
            |x| x.publisher_space_syscalls,
            messages,
        );
        out.push_str(&format!(
            "  target: publisher syscalls/msg with no listener parked (shmcast-spin) = {s:.4}{} \
             (target 0: {})\n",
            space_note(waits),
            if s == 0.0 { "met" } else { "NOT met" }
        ));
        if g.listeners == 1 {
            let p = g.percentiles(Transport::ShmcastSpin, 0).p50;
            out.push_str(&format!(
                "  target: shmcast-spin, 1 listener, p50 = {p:.2} µs (target < 1 µs: {})\n",
                if p < 1.0 { "met" } else { "NOT met" }
            ));
        }
    }
    if let Some(l) = limits {
        if has(Transport::Shmcast) {
            let p = g.percentiles(Transport::Shmcast, 0).p50;
            out.push_str(&format!(
                "  limits: shmcast listener 1 p50 = {:.1}x a one-way eventfd wake (half the \
                 ping-pong round trip, {:.2} µs)\n",
                p * 1000.0 / (l.eventfd_rtt_ns / 2.0),
                l.eventfd_rtt_ns / 2000.0
            ));
        }
        if has(Transport::ShmcastSpin) && g.listeners < l.cores {
            let p = g.percentiles(Transport::ShmcastSpin, 0).p50;
            out.push_str(&format!(
                "  limits: shmcast-spin listener 1 p50 = {:.1}x a one-way cache-line transfer \
                 ({:.0} ns)\n",
                p * 1000.0 / (l.cacheline_rtt_ns / 2.0),
                l.cacheline_rtt_ns / 2.0
            ));
        }
    }
    out
}

/// ", of which N waits for ring space" when there were any.
fn space_note(per_msg: f64) -> String {
    if per_msg > 0.0 {
        format!(", of which {per_msg:.4} waiting for ring space")
    } else {
        String::new()
    }
}

fn chart(o: &Options, g: &Group) -> String {
    let groups: Vec<String> = g.transports.iter().map(|t| t.name().to_owned()).collect();
    let series: Vec<svg::Series<Option<svg::Bar>>> = (0..g.listeners)
        .map(|l| svg::Series {
            name: format!("listener {}", l + 1),
            values: g
                .transports
                .iter()
                .map(|&t| {
                    let p = g.percentiles(t, l);
                    Some(svg::Bar {
                        value: p.p50,
                        lo: p.p50,
                        hi: p.p99,
                    })
                })
                .collect(),
        })
        .collect();
    svg::bar_chart(
        &format!(
            "latency: 8-byte timestamp every {} µs, {} listener(s); bar p50, whisker to p99",
            o.interval.as_micros(),
            g.listeners
        ),
        "µs (log scale)",
        true,
        &groups,
        &series,
    )
}
