//! `iceoryx2` and `iceoryx2-busy`: a publish-subscribe service of `u64` timestamps, with an event
//! service unless the listeners busy-poll (configuration: [`crate::iceoryx`]).

use std::time::Instant;

use iceoryx2::prelude::*;

use crate::error::{Result, failed};
use crate::iceoryx::{Ipc, backpressure, event_name, idle, node, service_name, wait_until};
use crate::sys::{cpu_self_ns, now_ns};

/// Timestamps each listener buffers: like shmcast's 1 MiB ring, seconds of them, so a starved
/// listener never makes the publisher wait.
const BUFFER: usize = 4096;

/// The publisher side of a trial.
pub(super) struct Publisher {
    publisher: iceoryx2::port::publisher::Publisher<Ipc, u64, ()>,
    notifier: Option<iceoryx2::port::notifier::Notifier<Ipc>>,
    service: iceoryx2::service::port_factory::publish_subscribe::PortFactory<Ipc, u64, ()>,
    events: Option<iceoryx2::service::port_factory::event::PortFactory<Ipc>>,
    _node: Node<Ipc>,
}

impl Publisher {
    /// Creates the services for `listeners` listeners; with `busy`, no event service.
    pub(super) fn new(topic: &str, listeners: usize, busy: bool) -> Result<Publisher> {
        let node = node()?;
        let service = node
            .service_builder(&service_name(topic)?)
            .publish_subscribe::<u64>()
            .max_publishers(1)
            .max_subscribers(listeners)
            .subscriber_max_buffer_size(BUFFER)
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
        Ok(Publisher {
            publisher,
            notifier,
            service,
            events,
            _node: node,
        })
    }

    /// Waits until `n` listeners are connected.
    pub(super) fn wait_for_listeners(&self, n: usize) -> Result<()> {
        wait_until("subscribers", n, || {
            self.service.dynamic_config().number_of_subscribers()
        })?;
        if let Some(e) = &self.events {
            wait_until("listeners", n, || e.dynamic_config().number_of_listeners())?;
        }
        Ok(())
    }

    /// Publishes `ts` and notifies; returns the listeners notified.
    pub(super) fn send(&self, ts: u64) -> Result<u64> {
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

/// The listener side: fills `samples` until the end marker (0); returns the CPU time at which it
/// said `ready`.
pub(super) fn listen(topic: &str, busy: bool, samples: &mut Vec<u64>) -> Result<u64> {
    let node = node()?;
    let service = node
        .service_builder(&service_name(topic)?)
        .publish_subscribe::<u64>()
        .open()
        .map_err(failed("opening the iceoryx2 service"))?;
    let subscriber = service
        .subscriber_builder()
        .buffer_size(BUFFER)
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
                idle(listener.as_ref(), since, &mut spins)?;
            }
        }
    }
}
