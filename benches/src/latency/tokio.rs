//! The tokio transports of the latency scenario: listeners awaiting in their own current-thread
//! runtime (`shmcast-tokio`, `tokio-unix`), and `tokio-broadcast`, a whole trial inside this
//! process.

use std::os::fd::{AsFd, OwnedFd};

use ::tokio::io::AsyncReadExt;
use shmcast::RecvError;
use shmcast::tokio::AsyncSubscriber;

use super::transport::END;
use super::trial::{Outcome, Trial, paced};
use crate::error::{BenchError, Result, failed, sys};
use crate::harness::{STALL, STARTUP, stalled, tokio_runtime};
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// A `shmcast-tokio` listener on topic `endpoint`; returns the CPU time at which it said `ready`.
pub(super) fn listen_shmcast(endpoint: &str, samples: &mut Vec<u64>) -> Result<u64> {
    tokio_runtime()?.block_on(async {
        let mut sub = AsyncSubscriber::builder(endpoint)
            .connect_timeout(STARTUP)
            .connect_async()
            .await
            .map_err(failed("connecting a shmcast-tokio listener"))?;
        process::say("ready")?;
        let cpu0 = cpu_self_ns();
        // No timeout: the parent bounds every trial and kills a stalled child.
        loop {
            match sub.recv().await {
                Ok(sample) => {
                    let now = now_ns();
                    let ts = sample
                        .as_pod::<u64>()
                        .map_err(|e| BenchError::Corrupt(e.to_string()))?;
                    samples.push(now.saturating_sub(*ts));
                }
                Err(RecvError::Disconnected) => return Ok(cpu0),
                Err(e) => return Err(failed("shmcast-tokio receive")(e)),
            }
        }
    })
}

/// A `tokio-unix` listener on the inherited stream socket `endpoint`; returns the CPU time at
/// which it said `ready`.
pub(super) fn listen_unix(endpoint: &str, samples: &mut Vec<u64>) -> Result<u64> {
    let fd = crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
        .map_err(sys("adopting the stream socket"))?;
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)
        .map_err(sys("making the stream non-blocking"))?;
    tokio_runtime()?.block_on(async {
        let mut stream = ::tokio::net::UnixStream::from_std(std)
            .map_err(sys("registering the stream with tokio"))?;
        process::say("ready")?;
        let cpu0 = cpu_self_ns();
        let mut buf = [0u8; 8];
        loop {
            match ::tokio::time::timeout(STALL, stream.read_exact(&mut buf)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(sys("read on a tokio unix stream")(e)),
                Err(_) => return Err(stalled("tokio-unix")),
            }
            let now = now_ns();
            let ts = u64::from_ne_bytes(buf);
            if ts == END {
                return Ok(cpu0);
            }
            samples.push(now.saturating_sub(ts));
        }
    })
}

/// Sends an 8-byte timestamp on a stream socket, waiting (bounded) while it is full.
pub(super) fn send_stream(fd: &OwnedFd, value: u64) -> Result<u64> {
    let bytes = value.to_ne_bytes();
    let mut at = 0;
    let mut calls = 0;
    while at < bytes.len() {
        calls += 1;
        match crate::sys::send_nowait(fd.as_fd(), &bytes[at..])
            .map_err(sys("send on a unix stream"))?
        {
            Some(n) => at += n,
            None => {
                calls += 1;
                if !crate::sys::wait_writable(fd.as_fd(), STALL).map_err(sys("poll"))? {
                    return Err(BenchError::Child {
                        who: "a tokio-unix listener".into(),
                        what: format!("took nothing for {STALL:?}"),
                    });
                }
            }
        }
    }
    Ok(calls)
}

/// A whole `tokio-broadcast` trial in this process: paced timestamps into a broadcast channel,
/// each listener a thread running its own runtime. The CPU time is the whole process's.
pub(super) fn broadcast_trial(trial: &Trial) -> Result<Outcome> {
    let (tx, _) = ::tokio::sync::broadcast::channel::<u64>(1 << 12);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let listeners: Vec<std::thread::JoinHandle<Result<Vec<u64>>>> = (0..trial.listeners)
        .map(|_| {
            let mut rx = tx.subscribe();
            let ready = ready_tx.clone();
            let messages = trial.messages;
            std::thread::spawn(move || {
                let rt = tokio_runtime()?;
                let _ = ready.send(());
                rt.block_on(async {
                    let mut samples = Vec::with_capacity(messages);
                    loop {
                        match rx.recv().await {
                            Ok(END) => return Ok(samples),
                            Ok(ts) => samples.push(now_ns().saturating_sub(ts)),
                            Err(e) => {
                                return Err(BenchError::Corrupt(format!(
                                    "tokio-broadcast listener: {e}"
                                )));
                            }
                        }
                    }
                })
            })
        })
        .collect();
    for _ in 0..trial.listeners {
        ready_rx
            .recv_timeout(STARTUP)
            .map_err(|_| stalled("tokio-broadcast listener start"))?;
    }
    let sent = paced(trial, |ts| {
        tx.send(ts)
            .map_err(|_| BenchError::Corrupt("every tokio-broadcast listener left".into()))?;
        Ok(0)
    })?;
    let _ = tx.send(END);
    let mut out = Outcome {
        cpu_ns: sent.cpu_ns,
        cpu_lifetime_ns: sent.cpu_ns,
        ..Outcome::default()
    };
    let warmup = trial.messages / 10;
    for l in listeners {
        let samples = l
            .join()
            .map_err(|_| BenchError::Corrupt("a tokio-broadcast listener panicked".into()))??;
        out.received.push(samples.len() as u64);
        out.samples
            .push(samples.get(warmup..).unwrap_or_default().to_vec());
    }
    Ok(out)
}
