//! Export: a local subscriber of one topic, and a Zenoh publisher that puts every message it
//! receives, header first ([`wire`](crate::wire)), on one thread per topic.
//!
//! * **Reliable**: the subscriber is gating and the Zenoh publisher blocks when its queue is
//!   full, so the network's backpressure reaches the local publisher, which waits at most its
//!   stall bound and then demotes the exporter to lossy ([`Event::Demoted`]). While no Zenoh
//!   subscriber matches the key the exporter does not read, so nothing is put into the void.
//! * **Lossy**: the subscriber is lossy and the Zenoh publisher drops what its queue cannot
//!   take; a lag of the local ring is counted in `local_lagged`, and the sequence numbers let
//!   the importer count every loss.
//!
//! Consecutive messages already waiting in the ring travel as one batch ([`wire`](crate::wire)):
//! one Zenoh put, routed once, for many small messages. The exporter never waits to fill a
//! batch: it puts what it gathered as soon as the ring is empty.
//!
//! The local publisher may come and go: the exporter connects again, from its newest message.
//! Every message carries the topic's `source` and the exporter's `epoch` ([`wire`](crate::wire)):
//! the epoch goes up by one each time the exporter connects after its local publisher went
//! away, so that the importer counts the new publisher's stream as a reset, whatever its first
//! sequence number.
//!
//! A topic whose publisher declares it imported (a bridge's import: [`Subscriber::imported`])
//! is never exported: its messages came from Zenoh, and putting them back could send them
//! round a loop of bridges, which no single bridge's configuration check can see when the
//! import runs in another bridge process. The exporter disconnects at once, counts the refusal
//! in `refused`, reports it once ([`Event::LoopRefused`]), and looks again every
//! [`REFUSED_RETRY`], in case a publisher of the host's own replaces the importer.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shmcast::{ConnectError, Mode, RecvError, Subscriber};
use zenoh::Wait;
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;

use crate::config::{Reliability, TopicConfig};
use crate::endpoint::clean;
use crate::event::{Event, Sink};
use crate::source;
use crate::stats::Counters;
use crate::wire::{Batch, Encoder, Sender, WireContract};

/// How long one receive waits before the exporter looks at its stop flag again.
const POLL: Duration = Duration::from_millis(50);
/// How long one connection attempt waits for the local publisher.
const CONNECT: Duration = Duration::from_millis(200);
/// How long after refusing an imported topic the exporter looks at it again.
const REFUSED_RETRY: Duration = Duration::from_secs(1);

/// Why [`Export::pump`] returned.
enum Ended {
    /// The local publisher went away: the next one is a new stream.
    Gone,
    /// Receiving failed: connect again.
    Failed,
    /// The bridge stops.
    Stopped,
}

/// One exported topic, ready to run.
pub(crate) struct Export {
    pub topic: TopicConfig,
    pub key: String,
    pub directory: Option<PathBuf>,
    pub origin: u64,
    pub counters: Arc<Counters>,
    pub stop: Arc<AtomicBool>,
    pub sink: Sink,
}

impl Export {
    /// Declares the Zenoh publisher and starts the export thread.
    pub fn spawn(self, session: &zenoh::Session) -> Result<JoinHandle<()>, String> {
        let congestion = match self.topic.reliability {
            Reliability::Reliable => CongestionControl::Block,
            Reliability::Lossy => CongestionControl::Drop,
        };
        // Not express: Zenoh batches messages that arrive while a batch is being sent, which
        // is what carries a flat-out topic at the rate of the network rather than of syscalls.
        let publisher = session
            .declare_publisher(self.key.clone())
            .congestion_control(congestion)
            .express(false)
            .allowed_destination(Locality::Remote)
            .wait()
            .map_err(|e| {
                format!(
                    "declaring the Zenoh publisher on {}: {}",
                    self.key,
                    clean(&e.to_string())
                )
            })?;
        let source = source::of(&self.topic.topic, self.directory.as_deref());
        let matched = Arc::new(AtomicBool::new(false));
        let flag = matched.clone();
        let listener = publisher
            .matching_listener()
            .callback(move |m| flag.store(m.matching(), Ordering::Relaxed))
            .wait()
            .map_err(|e| {
                format!(
                    "watching subscribers of {}: {}",
                    self.key,
                    clean(&e.to_string())
                )
            })?;
        std::thread::Builder::new()
            .name(format!("export-{}", self.topic.topic))
            .spawn(move || {
                let _listener = listener;
                self.run(&publisher, &matched, source);
            })
            .map_err(|e| format!("starting the export thread: {e}"))
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps for `d`, or less if the bridge stops meanwhile.
    fn pause(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stopped() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(POLL));
        }
    }

    fn run(
        &self,
        publisher: &zenoh::pubsub::Publisher<'static>,
        matched: &AtomicBool,
        source: u64,
    ) {
        let reliable = self.topic.reliability == Reliability::Reliable;
        let mut connections = 0u64;
        // Goes up when the local publisher went away: the next one is a new stream. (After a
        // failed receive the exporter connects again to what is most likely the same one.)
        let mut epoch = 0u32;
        let mut reported_failure = false;
        let mut reported_loop = false;
        while !self.stopped() {
            if reliable && !matched.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let mut b = Subscriber::builder(self.topic.topic.clone())
                .mode(if reliable { Mode::Gating } else { Mode::Lossy })
                .connect_timeout(CONNECT);
            if let Some(dir) = &self.directory {
                b = b.directory(dir);
            }
            let mut sub = match b.connect() {
                Ok(s) => s,
                Err(ConnectError::NoPublisher { .. }) => continue,
                Err(e) => {
                    if !reported_failure {
                        reported_failure = true;
                        self.event(Event::Failed {
                            topic: self.topic.topic.clone(),
                            reason: format!("connecting: {e} (retrying)"),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(500));
                    continue;
                }
            };
            reported_failure = false;
            if sub.imported() {
                drop(sub);
                Counters::add(&self.counters.refused, 1);
                if !reported_loop {
                    reported_loop = true;
                    self.event(Event::LoopRefused {
                        topic: self.topic.topic.clone(),
                        key: self.key.clone(),
                    });
                }
                self.pause(REFUSED_RETRY);
                continue;
            }
            reported_loop = false;
            if connections > 0 {
                Counters::add(&self.counters.reconnects, 1);
            }
            connections += 1;
            let contract = WireContract {
                message: sub.contract().message.clone(),
                max_message: sub.contract().max_message,
            };
            let sender = Sender {
                origin: self.origin,
                source,
                epoch,
            };
            let Some(encoder) = Encoder::new(sender, &contract) else {
                self.event(Event::Failed {
                    topic: self.topic.topic.clone(),
                    reason: format!("{contract} cannot travel (a name over 255 bytes?)"),
                });
                return;
            };
            self.event(Event::Connected {
                topic: self.topic.topic.clone(),
                key: self.key.clone(),
                contract: contract.to_string(),
            });
            match self.pump(&mut sub, &encoder, publisher, matched) {
                Ended::Gone => {
                    epoch = epoch.wrapping_add(1);
                    self.event(Event::PublisherGone {
                        topic: self.topic.topic.clone(),
                    });
                }
                Ended::Failed | Ended::Stopped => {}
            }
        }
    }

    /// Bridges messages until the local publisher goes away, receiving fails or the bridge
    /// stops.
    fn pump(
        &self,
        sub: &mut Subscriber,
        encoder: &Encoder,
        publisher: &zenoh::pubsub::Publisher<'static>,
        matched: &AtomicBool,
    ) -> Ended {
        let reliable = self.topic.reliability == Reliability::Reliable;
        let mut batch = Batch::default();
        while !self.stopped() {
            if batch.is_empty() && reliable && !matched.load(Ordering::Relaxed) {
                // Hold the ring rather than put into the void: the local publisher waits (up
                // to its stall bound) until an importer is back.
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            // Block only with nothing gathered; otherwise take what is already there, and put
            // the batch as soon as the ring is empty (without preparing the subscriber's
            // descriptor for an event loop, which costs the next message its latency).
            let got = if batch.is_empty() {
                sub.recv_timeout(POLL)
            } else {
                sub.try_recv_ready()
            };
            match got {
                Ok(sample) => {
                    if !batch.takes(sample.seq(), sample.len()) {
                        self.put(publisher, &mut batch);
                    }
                    batch.push(encoder, sample.seq(), &sample);
                }
                Err(RecvError::Timeout | RecvError::Empty) => self.put(publisher, &mut batch),
                Err(RecvError::Lagged(n)) => {
                    self.put(publisher, &mut batch);
                    Counters::add(&self.counters.local_lagged, n);
                }
                Err(RecvError::Demoted) => {
                    self.put(publisher, &mut batch);
                    Counters::add(&self.counters.demotions, 1);
                    self.event(Event::Demoted {
                        topic: self.topic.topic.clone(),
                    });
                }
                Err(RecvError::Disconnected) => {
                    self.put(publisher, &mut batch);
                    return Ended::Gone;
                }
                Err(e) => {
                    self.put(publisher, &mut batch);
                    self.event(Event::Failed {
                        topic: self.topic.topic.clone(),
                        reason: format!("receiving: {e} (connecting again)"),
                    });
                    return Ended::Failed;
                }
            }
        }
        Ended::Stopped
    }

    /// Puts what `batch` holds, if anything.
    fn put(&self, publisher: &zenoh::pubsub::Publisher<'static>, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        let (message, last, n, bytes) = batch.take();
        if let Err(e) = publisher.put(message).wait() {
            self.event(Event::Failed {
                topic: self.topic.topic.clone(),
                reason: format!("putting on {}: {}", self.key, clean(&e.to_string())),
            });
            return;
        }
        let c = &self.counters;
        Counters::add(&c.messages, n);
        Counters::add(&c.bytes, bytes);
        c.last_seq.store(last, Ordering::Relaxed);
    }

    fn event(&self, e: Event) {
        (self.sink)(e);
    }
}
