//! The tokio transports of a stream trial, each side in a current-thread runtime:
//!
//! * `shmcast-tokio`: an `AsyncPublisher` awaiting each loan, `AsyncSubscriber`s checking each
//!   message in place after `recv().await`.
//! * `tokio-unix`: one `socketpair(AF_UNIX, SOCK_STREAM)` per subscriber, as `unix-stream`,
//!   through tokio's `UnixStream`: the publisher awaits `write_all` of each message on every
//!   socket in turn (at least one `write` per message and socket, counted as the publisher's
//!   syscalls), the subscribers await `read` and check the byte stream.
//! * `tokio-broadcast`: `tokio::sync::broadcast` inside this process, the in-process anchor:
//!   each message an `Arc<[u8]>` filled once and checked by every receiver, each receiver a
//!   thread with its own runtime awaiting `recv`; the publisher yields its thread while the
//!   slowest receiver has a full channel's worth to read, so nothing is dropped.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;

use ::tokio::io::{AsyncReadExt, AsyncWriteExt};
use shmcast::tokio::{AsyncPublisher, AsyncSubscriber};
use shmcast::{Publisher, RecvError};

use super::shmcast::publisher_outcome;
use super::subscribers;
use super::trial::{Outcome, Trial};
use crate::error::{BenchError, Result, failed, sys};
use crate::harness::{
    STALL, STARTUP, ring_capacity, stalled, tokio_runtime, unique_topic, wait_for_subscribers,
};
use crate::payload::{self, Verifier};
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// Messages a `tokio-broadcast` channel holds.
const BROADCAST_SLOTS: usize = 4096;

/// The `shmcast-tokio` publisher: binds, waits for every subscriber, then awaits, fills and
/// publishes loans until the trial's time is up.
pub(super) fn publish_shmcast(trial: Trial) -> Result<Outcome> {
    let topic = unique_topic("stream");
    let rt = tokio_runtime()?;
    let publisher = Publisher::builder(topic.as_str())
        .capacity(ring_capacity(trial.size))
        .max_message(trial.size as u64)
        .bind()
        .map_err(failed("binding the shmcast publisher"))?;
    let mut fleet = subscribers::spawn(trial, |_| (topic.clone(), Vec::new()))?;
    fleet.expect_all("ready", Instant::now() + STARTUP)?;
    wait_for_subscribers(&publisher, trial.subs)?;
    let (published, cpu, before, after) = rt.block_on(async {
        let mut publisher =
            AsyncPublisher::new(publisher).map_err(sys("registering the publisher"))?;
        let before = publisher.stats();
        let cpu0 = cpu_self_ns();
        let t0 = now_ns();
        let end = t0 + trial.duration.as_nanos() as u64;
        let every = trial.clock_every();
        let mut seq = 0u64;
        loop {
            let mut loan = ::tokio::time::timeout(STALL, publisher.loan(trial.size))
                .await
                .map_err(|_| stalled("shmcast-tokio"))?
                .map_err(failed("shmcast-tokio loan"))?;
            payload::fill(&mut loan, seq);
            loan.publish();
            seq += 1;
            if seq % every == 0 && now_ns() >= end {
                break;
            }
        }
        let cpu = cpu_self_ns() - cpu0;
        Ok::<_, BenchError>(((seq, t0), cpu, before, publisher.stats()))
    })?;
    drop(rt);
    let (seq, t0) = published;
    subscribers::collect(fleet, t0, publisher_outcome(seq, cpu, &before, &after))
}

/// The `shmcast-tokio` subscriber on topic `endpoint`: checks every message in place until the
/// publisher is gone. Returns the CPU time at which it said `ready`.
pub(super) fn subscribe_shmcast(endpoint: &str, verifier: &mut Verifier) -> Result<u64> {
    tokio_runtime()?.block_on(async {
        let mut sub = AsyncSubscriber::builder(endpoint)
            .connect_timeout(STARTUP)
            .connect_async()
            .await
            .map_err(failed("connecting a shmcast-tokio subscriber"))?;
        process::say("ready")?;
        let cpu0 = cpu_self_ns();
        // No timeout: the parent bounds every trial and kills a stalled child.
        loop {
            match sub.recv().await {
                Ok(sample) => verifier.message(&sample)?,
                Err(RecvError::Disconnected) => return Ok(cpu0),
                Err(e) => return Err(failed("shmcast-tokio receive")(e)),
            }
        }
    })
}

/// The `tokio-unix` publisher.
pub(super) fn publish_unix(trial: Trial) -> Result<Outcome> {
    let (mine, fleet) = subscribers::spawn_on_sockets(trial)?;
    let rt = tokio_runtime()?;
    let (seq, t0, cpu) = rt.block_on(async {
        let mut streams = Vec::with_capacity(mine.len());
        for fd in mine {
            streams.push(tokio_stream(fd)?);
        }
        let mut msg = vec![0u8; trial.size];
        let cpu0 = cpu_self_ns();
        let t0 = now_ns();
        let end = t0 + trial.duration.as_nanos() as u64;
        let every = trial.clock_every();
        let mut seq = 0u64;
        loop {
            payload::fill(&mut msg, seq);
            for s in &mut streams {
                ::tokio::time::timeout(STALL, s.write_all(&msg))
                    .await
                    .map_err(|_| stalled("tokio-unix"))?
                    .map_err(sys("write on a tokio unix stream"))?;
            }
            seq += 1;
            if seq % every == 0 && now_ns() >= end {
                break;
            }
        }
        Ok::<_, BenchError>((seq, t0, cpu_self_ns() - cpu0))
    })?;
    // The streams were dropped with the future: the subscribers see the end of the stream.
    drop(rt);
    subscribers::collect(
        fleet,
        t0,
        Outcome {
            published: seq,
            cpu_ns: cpu,
            cpu_lifetime_ns: cpu,
            publisher_syscalls: seq * trial.subs as u64,
            ..Outcome::default()
        },
    )
}

fn tokio_stream(fd: OwnedFd) -> Result<::tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)
        .map_err(sys("making the stream non-blocking"))?;
    ::tokio::net::UnixStream::from_std(std).map_err(sys("registering the stream with tokio"))
}

/// The `tokio-unix` subscriber on the inherited socket `endpoint`: checks the stream to its end.
/// Returns the CPU time at which it said `ready`.
pub(super) fn subscribe_unix(endpoint: &str, verifier: &mut Verifier) -> Result<u64> {
    const BUF: usize = 256 * 1024;
    let fd = crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
        .map_err(sys("adopting the stream socket"))?;
    tokio_runtime()?.block_on(async {
        let mut stream = tokio_stream(fd)?;
        process::say("ready")?;
        let cpu0 = cpu_self_ns();
        let mut buf = vec![0u8; BUF];
        let (mut filled, mut done) = (0, 0);
        loop {
            let n = ::tokio::time::timeout(STALL, stream.read(&mut buf[filled..]))
                .await
                .map_err(|_| stalled("tokio-unix"))?
                .map_err(sys("read on a tokio unix stream"))?;
            if n == 0 {
                return Ok(cpu0);
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
    })
}

/// A whole `tokio-broadcast` trial in this process. CPU time is the whole process's.
pub(super) fn broadcast(trial: Trial) -> Result<Outcome> {
    let (tx, _) = ::tokio::sync::broadcast::channel::<Arc<[u8]>>(BROADCAST_SLOTS);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receivers: Vec<std::thread::JoinHandle<Result<(u64, u64)>>> = (0..trial.subs)
        .map(|_| {
            let mut rx = tx.subscribe();
            let ready = ready_tx.clone();
            let size = trial.size;
            std::thread::spawn(move || {
                let rt = tokio_runtime()?;
                let _ = ready.send(());
                let mut verifier = Verifier::new(size, false);
                rt.block_on(async {
                    loop {
                        match rx.recv().await {
                            Ok(m) => verifier.message(&m)?,
                            Err(::tokio::sync::broadcast::error::RecvError::Closed) => break,
                            Err(e) => {
                                return Err(BenchError::Corrupt(format!("tokio-broadcast: {e}")));
                            }
                        }
                    }
                    Ok((verifier.messages, now_ns()))
                })
            })
        })
        .collect();
    for _ in 0..trial.subs {
        ready_rx
            .recv_timeout(STARTUP)
            .map_err(|_| stalled("tokio-broadcast start"))?;
    }
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = trial.clock_every();
    let mut seq = 0u64;
    let mut msg = vec![0u8; trial.size];
    loop {
        let stall = Instant::now() + STALL;
        while tx.len() >= BROADCAST_SLOTS - 1 {
            if Instant::now() >= stall {
                return Err(stalled("tokio-broadcast"));
            }
            std::thread::yield_now();
        }
        payload::fill(&mut msg, seq);
        tx.send(Arc::from(&msg[..]))
            .map_err(|_| BenchError::Corrupt("every tokio-broadcast receiver left".into()))?;
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    drop(tx);
    let mut out = Outcome {
        published: seq,
        ..Outcome::default()
    };
    let mut last = t0;
    for r in receivers {
        let (messages, at) = r
            .join()
            .map_err(|_| BenchError::Corrupt("a tokio-broadcast receiver panicked".into()))??;
        out.delivered += messages;
        last = last.max(at);
    }
    out.cpu_ns = cpu_self_ns() - cpu0;
    out.cpu_lifetime_ns = out.cpu_ns;
    out.elapsed = (last - t0) as f64 / 1e9;
    Ok(out)
}
