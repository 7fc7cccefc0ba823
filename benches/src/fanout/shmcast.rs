//! `shmcast-gating` / `shmcast-lossy`: one ring; the publisher loans each message in place;
//! gating subscribers check it in place, lossy ones check their validated copy.

use std::time::{Duration, Instant};

use shmcast::{Mode, Publisher, PublisherStats, RecvError, Resume, Subscriber};

use super::subscribers;
use super::trial::{Outcome, Transport, Trial, Wait};
use crate::error::{BenchError, Result, failed};
use crate::harness::{
    STALL, STARTUP, ring_capacity, ring_holding, shmcast_syscalls, unique_topic,
    wait_for_subscribers,
};
use crate::payload::{self, Verifier};
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// What a shmcast publisher (blocking or async) did in a trial: `published` messages for `cpu`
/// ns of its CPU, its syscalls and waits for space between the `before` and `after` snapshots.
pub(super) fn publisher_outcome(
    published: u64,
    cpu: u64,
    before: &PublisherStats,
    after: &PublisherStats,
) -> Outcome {
    Outcome {
        published,
        cpu_ns: cpu,
        cpu_lifetime_ns: cpu,
        publisher_syscalls: shmcast_syscalls(before, after),
        publisher_waits: after.space_waits - before.space_waits,
        ..Outcome::default()
    }
}

/// The publisher side: binds a fresh topic, waits for every subscriber, then loans, fills and
/// publishes until the trial's time is up.
pub(super) fn publish(trial: Trial) -> Result<Outcome> {
    let topic = unique_topic("stream");
    let mut publisher = Publisher::builder(topic.as_str())
        .capacity(match trial.in_flight {
            Some(frames) => ring_holding(trial.size, frames),
            None => ring_capacity(trial.size),
        })
        .max_message(trial.size as u64)
        .spin_limit(if trial.transport == Transport::ShmcastSleep {
            Duration::ZERO
        } else {
            shmcast::DEFAULT_SPIN_LIMIT
        })
        .bind()
        .map_err(failed("binding the shmcast publisher"))?;
    let mut fleet = subscribers::spawn(trial, |_| (topic.clone(), Vec::new()))?;
    fleet.expect_all("ready", Instant::now() + STARTUP)?;
    wait_for_subscribers(&publisher, trial.subs)?;

    let before = publisher.stats();
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = trial.clock_every();
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
    subscribers::collect(fleet, t0, publisher_outcome(seq, cpu, &before, &after))
}

/// The subscriber side, on topic `endpoint`: checks every message until the publisher is gone,
/// noting for lossy subscribers how many newer messages were committed when each was received,
/// and checking that their lag reports account exactly for every gap. Returns the CPU time at
/// which it said `ready`.
pub(super) fn subscribe(
    transport: Transport,
    endpoint: &str,
    wait: Wait,
    verifier: &mut Verifier,
) -> Result<u64> {
    let (mode, resume) = match transport {
        Transport::ShmcastLossyOldest => (Mode::Lossy, Resume::Oldest),
        Transport::ShmcastLossyNewest => (Mode::Lossy, Resume::Newest),
        t if t.lossy() => (Mode::Lossy, Resume::default()),
        _ => (Mode::Gating, Resume::default()),
    };
    let mut sub = Subscriber::builder(endpoint)
        .mode(mode)
        .resume(resume)
        .spin(if wait == Wait::Busy { u32::MAX } else { 0 })
        // `shmcast-sleep` measures waits without spinning on either side.
        .spin_limit(if transport == Transport::ShmcastSleep {
            Duration::ZERO
        } else {
            shmcast::DEFAULT_SPIN_LIMIT
        })
        .connect_timeout(STARTUP)
        .connect()
        .map_err(failed("connecting a shmcast subscriber"))?;
    process::say("ready")?;
    let cpu0 = cpu_self_ns();
    let lossy = transport.lossy();
    let mut reported = 0u64;
    // `recv` without a timeout: the parent bounds every trial and kills a stalled child, and a
    // timed receive would read the clock on every message.
    loop {
        let got = if transport == Transport::ShmcastLatest {
            sub.recv_latest().map(|m| {
                reported += m.skipped();
                m.into_sample()
            })
        } else {
            sub.recv()
        };
        match got {
            Ok(sample) => {
                if lossy {
                    verifier.behind += sample.behind();
                }
                verifier.message(&sample)?
            }
            Err(RecvError::Lagged(n)) => reported += n,
            Err(RecvError::Disconnected) => break,
            Err(e) => return Err(failed("shmcast receive")(e)),
        }
    }
    if reported != verifier.skipped {
        return Err(BenchError::Corrupt(format!(
            "lag reports add up to {reported} messages, the gaps to {}",
            verifier.skipped
        )));
    }
    Ok(cpu0)
}
