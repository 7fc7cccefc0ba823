//! iceoryx2 (the published crate) as a peer transport, behind the `iceoryx2` feature: what its
//! stream trials ([`crate::fanout`]) and latency trials ([`crate::latency`]) share.
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

use iceoryx2::port::listener::Listener;
use iceoryx2::port::{BackpressureAction, BackpressureInfo};
use iceoryx2::prelude::*;

use crate::error::{BenchError, Result, failed};
use crate::harness::{STALL, STARTUP, stalled};

/// The service flavour: shared memory between processes.
pub type Ipc = ipc::Service;

/// A node of this process, with iceoryx2's own signal handling off.
pub fn node() -> Result<Node<Ipc>> {
    // Without a config file iceoryx2 warns on every node; its defaults are what we want.
    set_log_level(LogLevel::Error);
    NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<Ipc>()
        .map_err(failed("creating an iceoryx2 node"))
}

/// `name` as a service name.
pub fn service_name(name: &str) -> Result<ServiceName> {
    name.try_into()
        .map_err(failed(format!("iceoryx2 service name {name:?}")))
}

/// The name of the event service that goes with the publish-subscribe service `topic`.
pub fn event_name(topic: &str) -> String {
    format!("{topic}.event")
}

/// Retries a full subscriber buffer, yielding the CPU (the subscribers need it on a small
/// machine), and fails after [`STALL`].
pub fn backpressure(info: &BackpressureInfo) -> BackpressureAction {
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
pub fn wait_until(what: &str, n: usize, count: impl Fn() -> usize) -> Result<()> {
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

/// One wait of a receiver that found nothing, idle since `since`: blocks on its event
/// `listener` (event-driven mode) or spins once (busy mode, counting in `spins`). Fails when
/// nothing came for [`STALL`].
pub fn idle(listener: Option<&Listener<Ipc>>, since: Instant, spins: &mut u32) -> Result<()> {
    match listener {
        Some(l) => {
            l.timed_wait(|_| {}, STALL)
                .map_err(failed("iceoryx2 listener wait"))?;
            if since.elapsed() >= STALL {
                return Err(stalled("iceoryx2"));
            }
        }
        None => {
            *spins = spins.wrapping_add(1);
            if *spins % 1024 == 0 && since.elapsed() >= STALL {
                return Err(stalled("iceoryx2"));
            }
            std::hint::spin_loop();
        }
    }
    Ok(())
}
