//! One trial: paced timestamps from this process to listener processes (and a relay), over one
//! transport, and what the listeners measured.

use std::os::fd::{AsFd, RawFd};
use std::time::{Duration, Instant};

use rustix::net::SocketType;
use shmcast::Publisher;

use super::listener::{LISTENER, RELAY};
use super::transport::{END, Transport, send_dgram};
use crate::error::{Result, failed, sys};
use crate::harness::{STALL, STARTUP, shmcast_syscalls, unique_topic, wait_for_subscribers};
use crate::process::{self, Fleet, Spec};
use crate::sys::{cpu_self_ns, now_ns};

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
pub(super) struct Sent {
    pub(super) cpu_ns: u64,
    syscalls: u64,
    space_syscalls: u64,
}

/// Sends `trial.messages` timestamps, one every `trial.interval`, through `send`, which gets the
/// timestamp and returns the syscalls it made.
pub(super) fn paced(trial: &Trial, mut send: impl FnMut(u64) -> Result<u64>) -> Result<Sent> {
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

/// Runs one trial.
pub fn run_trial(trial: Trial) -> Result<Outcome> {
    if trial.transport == Transport::TokioBroadcast {
        return super::tokio::broadcast_trial(&trial);
    }
    let mut fleet = Fleet::new();
    let sent;
    match trial.transport {
        Transport::UnixDgram | Transport::UnixRelay | Transport::TokioUnix => {
            let stream = trial.transport == Transport::TokioUnix;
            let send = if stream {
                super::tokio::send_stream
            } else {
                send_dgram
            };
            let kind = if stream {
                SocketType::STREAM
            } else {
                SocketType::DGRAM
            };
            let mut mine = Vec::new();
            let mut theirs = Vec::new();
            for _ in 0..trial.listeners {
                let (a, b) = crate::sys::unix_pair(kind).map_err(sys("socketpair"))?;
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
                mine.iter().map(|fd| send(fd, ts)).sum::<Result<u64>>()
            })?;
            for fd in &mine {
                send(fd, END)?;
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
        Transport::Shmcast
        | Transport::ShmcastSpin
        | Transport::ShmcastPoll
        | Transport::ShmcastTokio => {
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
            let publisher =
                super::iceoryx::Publisher::new(&service, trial.listeners, trial.transport.spins())?;
            for i in 0..trial.listeners {
                spawn_listener(&mut fleet, &trial, i, service.clone(), Vec::new())?;
            }
            fleet.expect_all("ready", Instant::now() + STARTUP)?;
            publisher.wait_for_listeners(trial.listeners)?;
            sent = paced(&trial, |ts| publisher.send(ts))?;
            publisher.send(END)?;
        }
        Transport::TokioBroadcast => unreachable!("run in this process above"),
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
