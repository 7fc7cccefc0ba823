//! `unix-stream`: one `socketpair(AF_UNIX, SOCK_STREAM)` per subscriber; the publisher sends
//! every message to every socket, the subscribers check the byte stream as it comes.

use std::os::fd::{AsFd, OwnedFd};
use std::time::Instant;

use rustix::event::{PollFd, PollFlags};

use super::subscribers;
use super::trial::{Outcome, Trial, Wait};
use crate::error::{BenchError, Result, sys};
use crate::harness::{STALL, stalled};
use crate::payload::{self, Verifier};
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// The publisher side: non-blocking `send`s to every socket, and a `poll` only when every
/// unfinished socket is full, so a slow subscriber never idles the others.
pub(super) fn publish(trial: Trial) -> Result<Outcome> {
    let (mine, fleet) = subscribers::spawn_on_sockets(trial)?;

    let mut msg = vec![0u8; trial.size];
    let mut sent = vec![0usize; trial.subs];
    let mut syscalls = 0u64;
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = trial.clock_every();
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
    subscribers::collect(
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

/// The subscriber side, on the inherited socket `endpoint`: checks the stream to its end.
/// Returns the CPU time at which it said `ready`.
pub(super) fn subscribe(endpoint: &str, wait: Wait, verifier: &mut Verifier) -> Result<u64> {
    let fd = crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
        .map_err(sys("adopting the stream socket"))?;
    process::say("ready")?;
    let cpu0 = cpu_self_ns();
    receive(&fd, wait, verifier)?;
    Ok(cpu0)
}

/// Reads a unix stream to its end, checking every byte.
fn receive(fd: &OwnedFd, wait: Wait, verifier: &mut Verifier) -> Result<()> {
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
