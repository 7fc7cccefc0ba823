//! One trial of a stream of fixed-size messages from this process to N subscriber processes, as
//! fast as the transport goes: the engine behind `throughput` and `small`.
//!
//! The publisher fills every byte of every message ([`payload::fill`]) for a fixed time, then ends
//! the stream; every subscriber checks every byte ([`payload::Verifier`]) until the end of the
//! stream and reports when it got there. Elapsed time runs from the publisher's first message to
//! the last subscriber's end of stream.
//!
//! * `memcpy`: the single-process reference. The publisher fills one buffer and copies it into
//!   one buffer per subscriber, each of which is then checked, all on one thread.
//! * `unix-stream`: one `socketpair(AF_UNIX, SOCK_STREAM)` per subscriber. The publisher sends
//!   each message to every socket with non-blocking `send`s and `poll`s only when every
//!   unfinished socket is full, so a slow subscriber never idles the others. One `send` per
//!   message and socket at least, never batched: messages go out as they are produced.
//! * `shmcast-gating` / `shmcast-lossy`: one ring; the publisher loans each message in place;
//!   gating subscribers check it in place, lossy ones check their validated copy.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::net::SocketType;
use shmcast::{Mode, Publisher, RecvError, Subscriber};

use crate::error::{BenchError, Result, failed, sys};
use crate::payload::{self, Verifier};
use crate::process::{self, Fleet, Spec};
use crate::sys::{cpu_self_ns, now_ns};

/// Longest a publisher waits for a subscriber to make room, or a subscriber for a message,
/// before the trial fails as stalled.
pub const STALL: Duration = Duration::from_secs(10);

/// Longest the children of a trial may take to start and connect.
pub const STARTUP: Duration = Duration::from_secs(20);

/// The child role of a stream subscriber.
pub const ROLE: &str = "stream-subscriber";

/// How a stream is carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Single-process reference: one copy per subscriber.
    Memcpy,
    /// One unix stream socket per subscriber.
    UnixStream,
    /// shmcast, gating subscribers.
    ShmcastGating,
    /// shmcast, lossy subscribers.
    ShmcastLossy,
    /// iceoryx2 publish-subscribe (with an event service in event-driven mode).
    #[cfg(feature = "iceoryx2")]
    Iceoryx2,
}

impl Transport {
    /// The transport's name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Memcpy => "memcpy",
            Transport::UnixStream => "unix-stream",
            Transport::ShmcastGating => "shmcast-gating",
            Transport::ShmcastLossy => "shmcast-lossy",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2 => "iceoryx2",
        }
    }

    fn parse(name: &str) -> Result<Transport> {
        let all = [
            Transport::Memcpy,
            Transport::UnixStream,
            Transport::ShmcastGating,
            Transport::ShmcastLossy,
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2,
        ];
        all.into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| BenchError::Usage(format!("unknown stream transport {name:?}")))
    }

    /// Whether subscribers may miss messages.
    pub fn lossy(self) -> bool {
        self == Transport::ShmcastLossy
    }
}

/// How a subscriber waits for the next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Blocks in the kernel until woken.
    Event,
    /// Polls without ever blocking.
    Busy,
}

impl Wait {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Wait::Event => "event",
            Wait::Busy => "busy",
        }
    }

    fn parse(name: &str) -> Result<Wait> {
        match name {
            "event" => Ok(Wait::Event),
            "busy" => Ok(Wait::Busy),
            _ => Err(BenchError::Usage(format!("unknown wait mode {name:?}"))),
        }
    }
}

/// One trial.
#[derive(Clone, Copy, Debug)]
pub struct Trial {
    /// The transport.
    pub transport: Transport,
    /// Number of subscribers.
    pub subs: usize,
    /// Message size in bytes (a multiple of 8, at least [`payload::MIN_LEN`]).
    pub size: usize,
    /// How long the publisher publishes.
    pub duration: Duration,
    /// How subscribers wait.
    pub wait: Wait,
}

/// What one trial measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Messages published.
    pub published: u64,
    /// Messages checked by subscribers, summed over subscribers.
    pub delivered: u64,
    /// From the first message to the last subscriber's end of stream, s.
    pub elapsed: f64,
    /// CPU time of the publisher and every subscriber between start and end of stream, ns.
    pub cpu_ns: u64,
    /// The publisher's CPU time in the window plus every child's whole life (start-up and exit
    /// included), ns.
    pub cpu_lifetime_ns: u64,
    /// Syscalls the publisher made to deliver (sends, polls, wakes, waits for space).
    pub publisher_syscalls: u64,
}

impl Outcome {
    /// Messages per second each subscriber received (on average over subscribers).
    pub fn msgs_per_s(&self, subs: usize) -> f64 {
        self.delivered as f64 / subs as f64 / self.elapsed
    }

    /// Bytes per second delivered to all subscribers together.
    pub fn bytes_per_s(&self, size: usize) -> f64 {
        self.delivered as f64 * size as f64 / self.elapsed
    }
}

/// A topic name no other trial or run uses.
pub fn unique_topic(kind: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "shmcast-bench-{}-{kind}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// shmcast ring size for messages of `size` bytes: room for several in flight.
pub fn ring_capacity(size: usize) -> u64 {
    ((size as u64 + 16).next_power_of_two() * 4).max(1 << 20)
}

/// How often the publisher looks at the clock: every message for large ones, less often for
/// small ones, where a clock read would be a noticeable share of the work.
fn clock_every(size: usize) -> u64 {
    if size >= 4096 { 1 } else { 64 }
}

/// Runs one trial.
pub fn run(trial: Trial) -> Result<Outcome> {
    match trial.transport {
        Transport::Memcpy => memcpy(trial),
        Transport::UnixStream => unix_stream(trial),
        Transport::ShmcastGating | Transport::ShmcastLossy => shmcast(trial),
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 => crate::iceoryx::stream(trial),
    }
}

/// Spawns the subscribers of `trial`; `endpoint(i)` gives subscriber `i`'s endpoint argument and
/// the descriptors it inherits.
pub fn spawn_subscribers(
    trial: Trial,
    mut endpoint: impl FnMut(usize) -> (String, Vec<std::os::fd::RawFd>),
) -> Result<Fleet> {
    let mut fleet = Fleet::new();
    for i in 0..trial.subs {
        let (arg, fds) = endpoint(i);
        fleet.spawn(Spec {
            name: format!("{} subscriber {i}", trial.transport.name()),
            role: ROLE,
            args: vec![
                trial.transport.name().into(),
                arg,
                trial.size.to_string(),
                trial.wait.name().into(),
            ],
            fds,
        })?;
    }
    Ok(fleet)
}

/// Collects the subscribers' reports after the publisher ended the stream, reaps them and
/// completes `out`.
pub fn collect(mut fleet: Fleet, t0: u64, mut out: Outcome) -> Result<Outcome> {
    let reports = fleet.expect_all("result", Instant::now() + STALL)?;
    let mut end = t0;
    for r in &reports {
        out.delivered += r.get::<u64>("messages")?;
        out.cpu_ns += r.get::<u64>("cpu_ns")?;
        end = end.max(r.get::<u64>("end_ns")?);
    }
    out.cpu_lifetime_ns += fleet.finish(Instant::now() + STALL)?;
    out.elapsed = (end - t0) as f64 / 1e9;
    Ok(out)
}

fn memcpy(trial: Trial) -> Result<Outcome> {
    let mut src = vec![0u8; trial.size];
    let mut dst = vec![vec![0u8; trial.size]; trial.subs];
    let mut verifiers: Vec<Verifier> = (0..trial.subs)
        .map(|_| Verifier::new(trial.size, false))
        .collect();
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = clock_every(trial.size);
    let mut seq = 0u64;
    loop {
        payload::fill(&mut src, seq);
        for (d, v) in dst.iter_mut().zip(&mut verifiers) {
            d.copy_from_slice(&src);
            v.message(d)?;
        }
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    let t1 = now_ns();
    let cpu = cpu_self_ns() - cpu0;
    Ok(Outcome {
        published: seq,
        delivered: verifiers.iter().map(|v| v.messages).sum(),
        elapsed: (t1 - t0) as f64 / 1e9,
        cpu_ns: cpu,
        cpu_lifetime_ns: cpu,
        publisher_syscalls: 0,
    })
}

fn unix_stream(trial: Trial) -> Result<Outcome> {
    let mut mine: Vec<OwnedFd> = Vec::with_capacity(trial.subs);
    let mut theirs: Vec<OwnedFd> = Vec::with_capacity(trial.subs);
    for _ in 0..trial.subs {
        let (a, b) = crate::sys::unix_pair(SocketType::STREAM).map_err(sys("socketpair"))?;
        mine.push(a);
        theirs.push(b);
    }
    let mut fleet = spawn_subscribers(trial, |i| {
        let fd = process::raw(&theirs[i]);
        (fd.to_string(), vec![fd])
    })?;
    // The subscribers hold their ends now; ours must close so they see the end of stream.
    drop(theirs);
    fleet.expect_all("ready", Instant::now() + STARTUP)?;

    let mut msg = vec![0u8; trial.size];
    let mut sent = vec![0usize; trial.subs];
    let mut syscalls = 0u64;
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = clock_every(trial.size);
    let mut seq = 0u64;
    loop {
        payload::fill(&mut msg, seq);
        sent.fill(0);
        loop {
            let mut unfinished = 0;
            for (fd, at) in mine.iter().zip(sent.iter_mut()) {
                // Send until the socket is full; a short send means it just filled up.
                while *at < msg.len() {
                    syscalls += 1;
                    match crate::sys::send_nowait(fd.as_fd(), &msg[*at..])
                        .map_err(sys("send on a unix stream"))?
                    {
                        Some(n) => {
                            *at += n;
                            if *at < msg.len() {
                                break;
                            }
                        }
                        None => break,
                    }
                }
                if *at < msg.len() {
                    unfinished += 1;
                }
            }
            if unfinished == 0 {
                break;
            }
            let mut polls: Vec<PollFd<'_>> = mine
                .iter()
                .zip(&sent)
                .filter(|&(_, &at)| at < msg.len())
                .map(|(fd, _)| PollFd::new(fd, PollFlags::OUT))
                .collect();
            syscalls += 1;
            if crate::sys::poll(&mut polls, STALL).map_err(sys("poll on unix streams"))? == 0 {
                return Err(BenchError::Child {
                    who: "unix-stream subscribers".into(),
                    what: format!("took no data for {STALL:?}"),
                });
            }
        }
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    let cpu = cpu_self_ns() - cpu0;
    drop(mine);
    collect(
        fleet,
        t0,
        Outcome {
            published: seq,
            cpu_ns: cpu,
            cpu_lifetime_ns: cpu,
            publisher_syscalls: syscalls,
            ..Outcome::default()
        },
    )
}

fn shmcast(trial: Trial) -> Result<Outcome> {
    let topic = unique_topic("stream");
    let mut publisher = Publisher::builder(topic.as_str())
        .capacity(ring_capacity(trial.size))
        .max_message(trial.size as u64)
        .bind()
        .map_err(failed("binding the shmcast publisher"))?;
    let mut fleet = spawn_subscribers(trial, |_| (topic.clone(), Vec::new()))?;
    fleet.expect_all("ready", Instant::now() + STARTUP)?;
    wait_for_subscribers(&publisher, trial.subs)?;

    let before = publisher.stats();
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = clock_every(trial.size);
    let mut seq = 0u64;
    loop {
        // A timed loan reads the clock only when the ring is full.
        let mut loan = publisher
            .loan_timeout(trial.size, STALL)
            .map_err(failed("shmcast loan"))?;
        payload::fill(&mut loan, seq);
        loan.publish();
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    let cpu = cpu_self_ns() - cpu0;
    let after = publisher.stats();
    drop(publisher);
    collect(
        fleet,
        t0,
        Outcome {
            published: seq,
            cpu_ns: cpu,
            cpu_lifetime_ns: cpu,
            publisher_syscalls: shmcast_syscalls(&before, &after),
            ..Outcome::default()
        },
    )
}

/// Syscalls a shmcast publisher made between two snapshots: one per wake, and a `poll` plus a
/// `read` per wait for space. Committing makes none.
pub fn shmcast_syscalls(before: &shmcast::PublisherStats, after: &shmcast::PublisherStats) -> u64 {
    (after.wake_syscalls - before.wake_syscalls) + 2 * (after.space_waits - before.space_waits)
}

/// Waits until the publisher has admitted `n` subscribers.
pub fn wait_for_subscribers(publisher: &Publisher, n: usize) -> Result<()> {
    let deadline = Instant::now() + STARTUP;
    while publisher.subscriber_count() < n {
        if Instant::now() >= deadline {
            return Err(BenchError::Child {
                who: "shmcast subscribers".into(),
                what: format!(
                    "only {} of {n} admitted within {STARTUP:?}",
                    publisher.subscriber_count()
                ),
            });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// The child side: `stream-subscriber TRANSPORT ENDPOINT SIZE WAIT`.
pub fn child(args: &[String]) -> Result<()> {
    let [transport, endpoint, size, wait] = args else {
        return Err(BenchError::Usage(format!(
            "{ROLE} takes 4 arguments, got {}",
            args.len()
        )));
    };
    let transport = Transport::parse(transport)?;
    let size: usize = process::parse_arg(size)?;
    let wait = Wait::parse(wait)?;
    let mut verifier = Verifier::new(size, transport.lossy());
    let cpu0;
    match transport {
        Transport::UnixStream => {
            let fd = crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
                .map_err(sys("adopting the stream socket"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            receive_stream(&fd, wait, &mut verifier)?;
        }
        Transport::ShmcastGating | Transport::ShmcastLossy => {
            let mode = if transport.lossy() {
                Mode::Lossy
            } else {
                Mode::Gating
            };
            let mut sub = Subscriber::builder(endpoint.as_str())
                .mode(mode)
                .spin(if wait == Wait::Busy { u32::MAX } else { 0 })
                .connect_timeout(STARTUP)
                .connect()
                .map_err(failed("connecting a shmcast subscriber"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            // `recv` without a timeout: the parent bounds every trial and kills a stalled
            // child, and a timed receive would read the clock on every message.
            loop {
                match sub.recv() {
                    Ok(sample) => verifier.message(&sample)?,
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Disconnected) => break,
                    Err(e) => return Err(failed("shmcast receive")(e)),
                }
            }
        }
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 => {
            cpu0 = crate::iceoryx::stream_child(endpoint, size, wait, &mut verifier)?;
        }
        Transport::Memcpy => {
            return Err(BenchError::Usage("memcpy has no subscriber process".into()));
        }
    }
    let end = now_ns();
    let cpu = cpu_self_ns() - cpu0;
    process::say(&format!(
        "result messages={} skipped={} end_ns={end} cpu_ns={cpu}",
        verifier.messages, verifier.skipped
    ))
}

/// Reads a unix stream to its end, checking every byte.
fn receive_stream(fd: &OwnedFd, wait: Wait, verifier: &mut Verifier) -> Result<()> {
    const BUF: usize = 256 * 1024;
    let mut buf = vec![0u8; BUF];
    crate::sys::set_recv_timeout(fd.as_fd(), STALL).map_err(sys("setting SO_RCVTIMEO"))?;
    let mut filled = 0;
    let mut done = 0;
    loop {
        let n = match wait {
            Wait::Event => crate::sys::recv(fd.as_fd(), &mut buf[filled..])
                .map_err(sys("recv on a unix stream"))?
                .ok_or_else(|| stalled("unix-stream"))?,
            Wait::Busy => {
                let deadline = Instant::now() + STALL;
                loop {
                    if let Some(n) = crate::sys::recv_nowait(fd.as_fd(), &mut buf[filled..])
                        .map_err(sys("recv on a unix stream"))?
                    {
                        break n;
                    }
                    if Instant::now() >= deadline {
                        return Err(stalled("unix-stream"));
                    }
                }
            }
        };
        if n == 0 {
            return Ok(());
        }
        filled += n;
        let whole = filled & !7;
        verifier.stream(&buf[done..whole])?;
        done = whole;
        if filled == BUF {
            filled = 0;
            done = 0;
        }
    }
}

/// The error of a subscriber that waited [`STALL`] for a message.
pub fn stalled(transport: &str) -> BenchError {
    BenchError::Child {
        who: format!("{transport} subscriber"),
        what: format!("no message for {STALL:?}"),
    }
}
