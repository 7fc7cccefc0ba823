//! The subscriber processes of a stream trial: started with their endpoint, and their reports
//! collected once the publisher has ended the stream.

use std::os::fd::{OwnedFd, RawFd};
use std::time::Instant;

use rustix::net::SocketType;

use super::trial::{Outcome, Trial};
use crate::error::{Result, sys};
use crate::harness::{STALL, STARTUP};
use crate::process::{self, Fleet, Spec};

/// The child role of a stream subscriber.
pub const ROLE: &str = "stream-subscriber";

/// Spawns the subscribers of `trial`; `endpoint(i)` gives subscriber `i`'s endpoint argument and
/// the descriptors it inherits.
pub(super) fn spawn(
    trial: Trial,
    mut endpoint: impl FnMut(usize) -> (String, Vec<RawFd>),
) -> Result<Fleet> {
    let mut fleet = Fleet::new();
    for i in 0..trial.subs {
        let (arg, fds) = endpoint(i);
        let cpu = trial.pin.and_then(|p| p.subscriber(i));
        fleet.spawn_on(
            Spec {
                name: format!("{} subscriber {i}", trial.transport.name()),
                role: ROLE,
                args: vec![
                    trial.transport.name().into(),
                    arg,
                    trial.size.to_string(),
                    trial.wait.name().into(),
                    if i + 1 == trial.subs {
                        trial.slow_ns
                    } else {
                        0
                    }
                    .to_string(),
                ],
                fds,
            },
            cpu,
        )?;
    }
    Ok(fleet)
}

/// Spawns the subscribers of `trial` each on its own unix stream socket pair and waits until
/// every one is ready; returns the publisher's ends, one per subscriber, and the fleet.
pub(super) fn spawn_on_sockets(trial: Trial) -> Result<(Vec<OwnedFd>, Fleet)> {
    let mut mine: Vec<OwnedFd> = Vec::with_capacity(trial.subs);
    let mut theirs: Vec<OwnedFd> = Vec::with_capacity(trial.subs);
    for _ in 0..trial.subs {
        let (a, b) = crate::sys::unix_pair(SocketType::STREAM).map_err(sys("socketpair"))?;
        mine.push(a);
        theirs.push(b);
    }
    let mut fleet = spawn(trial, |i| {
        let fd = process::raw(&theirs[i]);
        (fd.to_string(), vec![fd])
    })?;
    // The subscribers hold their ends now; ours must close so they see the end of stream.
    drop(theirs);
    fleet.expect_all("ready", Instant::now() + STARTUP)?;
    Ok((mine, fleet))
}

/// Collects the subscribers' reports after the publisher ended the stream, reaps them and
/// completes `out`.
pub(super) fn collect(mut fleet: Fleet, t0: u64, mut out: Outcome) -> Result<Outcome> {
    let reports = fleet.expect_all("result", Instant::now() + STALL)?;
    let mut end = t0;
    for r in &reports {
        out.delivered += r.get::<u64>("messages")?;
        out.cpu_ns += r.get::<u64>("cpu_ns")?;
        out.behind += r.get::<u64>("behind")?;
        end = end.max(r.get::<u64>("end_ns")?);
    }
    out.cpu_lifetime_ns += fleet.finish(Instant::now() + STALL)?;
    out.elapsed = (end - t0) as f64 / 1e9;
    Ok(out)
}
