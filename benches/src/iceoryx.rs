//! iceoryx2 (the published crate) as a peer transport, behind the `iceoryx2` feature.
//!
//! Configuration, the best this crate's API offers for each mode:
//!
//! * publish-subscribe service with `[u64]` payloads, one publisher, `max_subscribers` = the
//!   trial's count, no history, `enable_safe_overflow(false)` and a publisher backpressure
//!   strategy of `RetryUntilDelivered` (reliable, like a gating shmcast subscriber), with a
//!   backpressure handler that yields the CPU between retries and gives up after the stall
//!   deadline; every subscriber buffers as many messages as a shmcast ring of the same trial
//!   holds (2 to 4096), a latency listener 4096 timestamps;
//! * event-driven mode adds an event service: the publisher calls `notify()` after every `send`,
//!   each subscriber blocks in `Listener::timed_wait` when it finds nothing, then drains;
//! * busy mode has no event service: subscribers poll `receive()`.
//!
//! Messages are filled element by element (`write_from_fn`, no zeroing first) and checked in
//! place. The stream ends with an empty message.

use std::time::{Duration, Instant};

use iceoryx2::port::{BackpressureAction, BackpressureInfo};
use iceoryx2::prelude::*;

use crate::error::{BenchError, Result, failed};
use crate::fanout::{self, Outcome, STALL, STARTUP, Trial, Wait, ring_capacity, unique_topic};
use crate::payload::{self, Verifier};
use crate::sys::{cpu_self_ns, now_ns};

type Ipc = ipc::Service;

fn node() -> Result<Node<Ipc>> {
    // Without a config file iceoryx2 warns on every node; its defaults are what we want.
    set_log_level(LogLevel::Error);
    NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<Ipc>()
        .map_err(failed("creating an iceoryx2 node"))
}

fn service_name(name: &str) -> Result<ServiceName> {
    name.try_into()
        .map_err(failed(format!("iceoryx2 service name {name:?}")))
}

fn event_name(topic: &str) -> String {
    format!("{topic}.event")
}

/// Messages each subscriber buffers: what a shmcast ring of the same trial holds.
fn buffer_for(size: usize) -> usize {
    (ring_capacity(size) as usize / (size + 16)).clamp(2, 4096)
}

/// Retries a full subscriber buffer, yielding the CPU (the subscribers need it on a small
/// machine), and fails after [`STALL`].
fn backpressure(info: &BackpressureInfo) -> BackpressureAction {
    if info.elapsed_time > STALL {
        BackpressureAction::DiscardDataAndFail
    } else {
        if info.retries > 16 {
            std::thread::yield_now();
        }
        BackpressureAction::Retry
    }
}

/// Waits until `count()` reaches `n`.
fn wait_until(what: &str, n: usize, count: impl Fn() -> usize) -> Result<()> {
    let deadline = Instant::now() + STARTUP;
    while count() < n {
        if Instant::now() >= deadline {
            return Err(BenchError::Child {
                who: format!("iceoryx2 {what}"),
                what: format!("only {} of {n} connected within {STARTUP:?}", count()),
            });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// One stream trial (`throughput`, `small`).
pub fn stream(trial: Trial) -> Result<Outcome> {
    let topic = unique_topic("iceoryx2");
    let node = node()?;
    let words = trial.size / 8;
    let service = node
        .service_builder(&service_name(&topic)?)
        .publish_subscribe::<[u64]>()
        .max_publishers(1)
        .max_subscribers(trial.subs)
        .subscriber_max_buffer_size(buffer_for(trial.size))
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
    let mut fleet = fanout::spawn_subscribers(trial, |_| (topic.clone(), Vec::new()))?;
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
    let every = if trial.size >= 4096 { 1 } else { 64 };
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
    fanout::collect(
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

/// The child side of a stream trial: returns the CPU time at which it said `ready`.
pub fn stream_child(topic: &str, size: usize, wait: Wait, verifier: &mut Verifier) -> Result<u64> {
    let node = node()?;
    let service = node
        .service_builder(&service_name(topic)?)
        .publish_subscribe::<[u64]>()
        .open()
        .map_err(failed("opening the iceoryx2 service"))?;
    let subscriber = service
        .subscriber_builder()
        .buffer_size(buffer_for(size))
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
                match &listener {
                    Some(l) => {
                        l.timed_wait(|_| {}, STALL)
                            .map_err(failed("iceoryx2 listener wait"))?;
                        if since.elapsed() >= STALL {
                            return Err(fanout::stalled("iceoryx2"));
                        }
                    }
                    None => {
                        spins = spins.wrapping_add(1);
                        if spins % 1024 == 0 && since.elapsed() >= STALL {
                            return Err(fanout::stalled("iceoryx2"));
                        }
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }
}

/// Timestamps each latency listener buffers: like shmcast's 1 MiB ring, seconds of them, so a
/// starved listener never makes the publisher wait.
const LATENCY_BUFFER: usize = 4096;

/// The publisher side of a latency trial.
pub struct LatencyPublisher {
    publisher: iceoryx2::port::publisher::Publisher<Ipc, u64, ()>,
    notifier: Option<iceoryx2::port::notifier::Notifier<Ipc>>,
    service: iceoryx2::service::port_factory::publish_subscribe::PortFactory<Ipc, u64, ()>,
    events: Option<iceoryx2::service::port_factory::event::PortFactory<Ipc>>,
    _node: Node<Ipc>,
}

impl LatencyPublisher {
    /// Creates the services for `listeners` listeners; with `busy`, no event service.
    pub fn new(topic: &str, listeners: usize, busy: bool) -> Result<LatencyPublisher> {
        let node = node()?;
        let service = node
            .service_builder(&service_name(topic)?)
            .publish_subscribe::<u64>()
            .max_publishers(1)
            .max_subscribers(listeners)
            .subscriber_max_buffer_size(LATENCY_BUFFER)
            .history_size(0)
            .enable_safe_overflow(false)
            .create()
            .map_err(failed("creating the iceoryx2 service"))?;
        let events = if busy {
            None
        } else {
            Some(
                node.service_builder(&service_name(&event_name(topic))?)
                    .event()
                    .max_listeners(listeners)
                    .create()
                    .map_err(failed("creating the iceoryx2 event service"))?,
            )
        };
        let publisher = service
            .publisher_builder()
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
        Ok(LatencyPublisher {
            publisher,
            notifier,
            service,
            events,
            _node: node,
        })
    }

    /// Waits until `n` listeners are connected.
    pub fn wait_for_listeners(&self, n: usize) -> Result<()> {
        wait_until("subscribers", n, || {
            self.service.dynamic_config().number_of_subscribers()
        })?;
        if let Some(e) = &self.events {
            wait_until("listeners", n, || e.dynamic_config().number_of_listeners())?;
        }
        Ok(())
    }

    /// Publishes `ts` and notifies; returns the listeners notified.
    pub fn send(&self, ts: u64) -> Result<u64> {
        self.publisher
            .loan_uninit()
            .map_err(failed("iceoryx2 loan"))?
            .write_payload(ts)
            .send()
            .map_err(failed("iceoryx2 send"))?;
        match &self.notifier {
            Some(n) => Ok(n.notify().map_err(failed("iceoryx2 notify"))? as u64),
            None => Ok(0),
        }
    }
}

/// The child side of a latency trial: fills `samples` until the end marker (0); returns the CPU
/// time at which it said `ready`.
pub fn latency_listener(topic: &str, busy: bool, samples: &mut Vec<u64>) -> Result<u64> {
    let node = node()?;
    let service = node
        .service_builder(&service_name(topic)?)
        .publish_subscribe::<u64>()
        .open()
        .map_err(failed("opening the iceoryx2 service"))?;
    let subscriber = service
        .subscriber_builder()
        .buffer_size(LATENCY_BUFFER)
        .create()
        .map_err(failed("creating the iceoryx2 subscriber"))?;
    let listener = if busy {
        None
    } else {
        Some(
            node.service_builder(&service_name(&event_name(topic))?)
                .event()
                .open()
                .map_err(failed("opening the iceoryx2 event service"))?
                .listener_builder()
                .create()
                .map_err(failed("creating the iceoryx2 listener"))?,
        )
    };
    crate::process::say("ready")?;
    let cpu0 = cpu_self_ns();
    let mut idle_since: Option<Instant> = None;
    let mut spins = 0u32;
    loop {
        match subscriber.receive().map_err(failed("iceoryx2 receive"))? {
            Some(sample) => {
                let now = now_ns();
                idle_since = None;
                let ts = *sample.payload();
                if ts == 0 {
                    return Ok(cpu0);
                }
                samples.push(now.saturating_sub(ts));
            }
            None => {
                let since = *idle_since.get_or_insert_with(Instant::now);
                match &listener {
                    Some(l) => {
                        l.timed_wait(|_| {}, STALL)
                            .map_err(failed("iceoryx2 listener wait"))?;
                        if since.elapsed() >= STALL {
                            return Err(fanout::stalled("iceoryx2"));
                        }
                    }
                    None => {
                        spins = spins.wrapping_add(1);
                        if spins % 1024 == 0 && since.elapsed() >= STALL {
                            return Err(fanout::stalled("iceoryx2"));
                        }
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }
}
