//! `iceoryx2`: a publish-subscribe service of `[u64]` messages, with an event service in
//! event-driven mode (configuration: [`crate::iceoryx`]).

use std::time::Instant;

use iceoryx2::prelude::*;

use super::subscribers;
use super::trial::{Outcome, Trial, Wait};
use crate::error::{Result, failed};
use crate::harness::{STARTUP, ring_capacity, unique_topic};
use crate::iceoryx::{backpressure, event_name, idle, node, service_name, wait_until};
use crate::payload::{self, Verifier};
use crate::sys::{cpu_self_ns, now_ns};

/// Messages each subscriber buffers: what a shmcast ring of the same trial holds.
fn buffer_for(size: usize) -> usize {
    (ring_capacity(size) as usize / (size + 16)).clamp(2, 4096)
}

/// The publisher side of one trial.
pub(super) fn publish(trial: Trial) -> Result<Outcome> {
    let topic = unique_topic("iceoryx2");
    let node = node()?;
    let words = trial.size / 8;
    let buffer = trial.in_flight.unwrap_or_else(|| buffer_for(trial.size));
    let service = node
        .service_builder(&service_name(&topic)?)
        .publish_subscribe::<[u64]>()
        .max_publishers(1)
        .max_subscribers(trial.subs)
        .subscriber_max_buffer_size(buffer)
        .history_size(0)
        .enable_safe_overflow(false)
        .create()
        .map_err(failed("creating the iceoryx2 service"))?;
    let events = match trial.wait {
        Wait::Event => Some(
            node.service_builder(&service_name(&event_name(&topic))?)
                .event()
                .max_listeners(trial.subs)
                .create()
                .map_err(failed("creating the iceoryx2 event service"))?,
        ),
        Wait::Busy => None,
    };
    let publisher = service
        .publisher_builder()
        .initial_max_slice_len(words)
        .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
        .set_backpressure_handler(backpressure)
        .create()
        .map_err(failed("creating the iceoryx2 publisher"))?;
    let notifier = match &events {
        Some(e) => Some(
            e.notifier_builder()
                .create()
                .map_err(failed("creating the iceoryx2 notifier"))?,
        ),
        None => None,
    };
    // The subscribers learn their buffer size with the service name: `SERVICE/BUFFER`.
    let mut fleet = subscribers::spawn(trial, |_| (format!("{topic}/{buffer}"), Vec::new()))?;
    fleet.expect_all("ready", Instant::now() + STARTUP)?;
    wait_until("subscribers", trial.subs, || {
        service.dynamic_config().number_of_subscribers()
    })?;
    if let Some(e) = &events {
        wait_until("listeners", trial.subs, || {
            e.dynamic_config().number_of_listeners()
        })?;
    }

    let mut notified = 0u64;
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = trial.clock_every();
    let mut seq = 0u64;
    let mut send = |len: usize, seq: u64| -> Result<()> {
        let sample = publisher
            .loan_slice_uninit(len)
            .map_err(failed("iceoryx2 loan"))?
            .write_from_fn(|i| payload::word_of(seq, i, len));
        sample.send().map_err(failed("iceoryx2 send"))?;
        if let Some(n) = &notifier {
            notified += n.notify().map_err(failed("iceoryx2 notify"))? as u64;
        }
        Ok(())
    };
    loop {
        send(words, seq)?;
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    let cpu = cpu_self_ns() - cpu0;
    send(0, seq)?;
    subscribers::collect(
        fleet,
        t0,
        Outcome {
            published: seq,
            cpu_ns: cpu,
            cpu_lifetime_ns: cpu,
            publisher_syscalls: notified,
            ..Outcome::default()
        },
    )
}

/// The subscriber side, on `endpoint` (`SERVICE/BUFFER`): returns the CPU time at which it said
/// `ready`.
pub(super) fn subscribe(endpoint: &str, wait: Wait, verifier: &mut Verifier) -> Result<u64> {
    let (topic, buffer) = endpoint
        .rsplit_once('/')
        .ok_or_else(|| crate::error::BenchError::Usage(format!("bad endpoint {endpoint:?}")))?;
    let buffer: usize = crate::process::parse_arg(buffer)?;
    let node = node()?;
    let service = node
        .service_builder(&service_name(topic)?)
        .publish_subscribe::<[u64]>()
        .open()
        .map_err(failed("opening the iceoryx2 service"))?;
    let subscriber = service
        .subscriber_builder()
        .buffer_size(buffer)
        .create()
        .map_err(failed("creating the iceoryx2 subscriber"))?;
    let listener = match wait {
        Wait::Event => Some(
            node.service_builder(&service_name(&event_name(topic))?)
                .event()
                .open()
                .map_err(failed("opening the iceoryx2 event service"))?
                .listener_builder()
                .create()
                .map_err(failed("creating the iceoryx2 listener"))?,
        ),
        Wait::Busy => None,
    };
    crate::process::say("ready")?;
    let cpu0 = cpu_self_ns();
    let mut idle_since: Option<Instant> = None;
    let mut spins = 0u32;
    loop {
        match subscriber.receive().map_err(failed("iceoryx2 receive"))? {
            Some(sample) => {
                idle_since = None;
                let words = sample.payload();
                if words.is_empty() {
                    return Ok(cpu0);
                }
                verifier.message_words(words)?;
            }
            None => {
                let since = *idle_since.get_or_insert_with(Instant::now);
                idle(listener.as_ref(), since, &mut spins)?;
            }
        }
    }
}
