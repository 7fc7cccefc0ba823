//! Import: a Zenoh subscriber of one key whose callback republishes every message into a local
//! topic, so local subscribers read it in place with the normal API.
//!
//! * The local topic declares the remote contract: from the configuration when it names both
//!   the message type and the maximum (bound at start), else from the first message (bound
//!   then; any configured part must agree). A message of any other contract is refused,
//!   counted in `refused` and reported once per remote contract ([`Event::ContractRefused`]).
//! * The local topic is declared imported ([`PublisherBuilder::imported`](shmcast::PublisherBuilder::imported)),
//!   so that no bridge exports it again (`export`).
//! * Sequence numbers are followed per source (`follow`: the exporting host's topic, so two
//!   hosts exporting to one key are counted apart): a jump from `n` to `n + 1 + k` counts
//!   `k` in `gaps` (and one `gap_event`), and tells the local publisher
//!   ([`Publisher::note_upstream_lost`]), whose introspection (`shmcast stat`) then shows the
//!   same count; a new stream of the remote publisher (a new epoch, or a step backwards) is
//!   counted in `resets`, and counting starts again there. Each source is counted in
//!   `sources`, and the first time a key hears a second one it is reported
//!   ([`Event::FanIn`]): their messages interleave on the local topic.
//! * **Reliable**: a full local ring makes the callback wait (the local publisher's blocking
//!   loan, bounded by its stall bound), which holds Zenoh's reception and so, through TCP, the
//!   exporter's blocking put. **Lossy**: a full ring drops the message, counted in
//!   `local_dropped` and told to the local publisher as lost upstream, as gaps are (a gating
//!   local subscriber stopped for the stall bound is demoted by these tries as by a wait).
//! * A configured `capacity` that cannot hold two of the remote's largest messages refuses
//!   that contract (`refused`, [`Event::ContractRefused`] once); any other failure to bind the
//!   local topic (another publisher serves it, the directory cannot be used) drops the
//!   messages (`local_dropped`) and is retried a second later, reported once per outage
//!   ([`Event::BindFailed`]) and followed by [`Event::Bound`] when it succeeds. It never ends
//!   the bridge, whether the contract is configured (bound at start, then retried every second
//!   by a thread of the import's own until it binds, messages or not) or adopted (retried with
//!   the next message at least a second later). What was dropped meanwhile is told to the
//!   local publisher as lost upstream as soon as it is bound, so its `upstream_lost` is always
//!   `gaps` plus `local_dropped`.
//! * A batch ([`wire`](crate::wire)) is published as the messages it carries, in order, each
//!   counted as if it had come alone: refused, dropped and published alike.
//! * A payload that is not a bridge message, or is larger than the topic's maximum, is counted
//!   in `malformed` and skipped.
//!
//! The importer never hears its own session's publications (`Locality::Remote`), a bridge
//! never exports a topic it imports ([`BridgeConfig::validate`](crate::BridgeConfig::validate)),
//! and no other bridge exports it either (it is declared imported).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shmcast::{BindError, ConfigError, LoanError, Publisher};
use zenoh::Wait;
use zenoh::bytes::ZBytes;
use zenoh::sample::Locality;

use crate::config::{Reliability, TopicConfig};
use crate::endpoint::clean;
use crate::event::{Event, Sink};
use crate::follow::{Step, Streams};
use crate::stats::Counters;
use crate::wire::{self, MAX_HEADER, Sender, WireContract, WireError};

/// How long after a failed bind the importer tries again.
const BIND_RETRY: Duration = Duration::from_secs(1);
/// How often the thread that binds a configured contract looks at the bridge's stop flag.
const POLL: Duration = Duration::from_millis(50);

/// One imported topic.
pub(crate) struct Import {
    pub topic: TopicConfig,
    pub key: String,
    pub directory: Option<PathBuf>,
    pub origin: u64,
    pub counters: Arc<Counters>,
    pub stop: Arc<AtomicBool>,
    pub sink: Sink,
}

/// A started import: its Zenoh subscriber, and the thread that binds its configured contract
/// while the local topic cannot be bound at start (it ends once bound, or at the bridge's
/// stop).
pub(crate) struct Running {
    pub subscriber: zenoh::pubsub::Subscriber<()>,
    pub binding: Option<JoinHandle<()>>,
}

/// What the callback keeps between messages.
struct State {
    import: Import,
    publisher: Option<Publisher>,
    /// The encoded contract of `publisher`.
    local: Vec<u8>,
    /// The sequence numbers of each source.
    streams: Streams,
    /// Whether a second source was reported.
    fan_in_reported: bool,
    /// Remote contracts already reported as refused.
    refused: Vec<Vec<u8>>,
    malformed_reported: bool,
    bind_failed_at: Option<Instant>,
    /// Whether the current failure to bind was reported.
    bind_failure_reported: bool,
    /// Messages dropped while the local topic was not bound, to be noted as lost upstream
    /// once it is.
    unnoted: u64,
}

impl Import {
    /// Binds the local topic if the configuration fixes its contract (or, if the topic cannot
    /// be bound now, starts the thread that tries again every second), then declares the
    /// Zenoh subscriber.
    pub fn spawn(self, session: &zenoh::Session) -> Result<Running, String> {
        let key = self.key.clone();
        let thread = format!("bind-{}", self.topic.topic);
        let stop = self.stop.clone();
        let configured = match (&self.topic.message, self.topic.max_message) {
            (Some(message), Some(max)) => Some(WireContract {
                message: message.clone(),
                max_message: max,
            }),
            _ => None,
        };
        let mut state = State {
            import: self,
            publisher: None,
            local: Vec::new(),
            streams: Streams::default(),
            fan_in_reported: false,
            refused: Vec::new(),
            malformed_reported: false,
            bind_failed_at: None,
            bind_failure_reported: false,
            unnoted: 0,
        };
        let mut retry = None;
        if let Some(contract) = configured {
            match state.bind(&contract) {
                Ok(()) => {}
                // The moment, not the configuration: the topic in use, the directory. Retried
                // as a failure to bind on a message is; the other topics carry on meanwhile.
                Err(BindFailure::Other(e)) => {
                    state.bind_failed(e);
                    retry = Some(contract);
                }
                // Checked with the configuration (`contract`), so not met here.
                Err(e) => return Err(format!("binding: {e}")),
            }
        }
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        let subscriber = session
            .declare_subscriber(key.clone())
            .allowed_origin(Locality::Remote)
            .callback(move |sample| {
                // One Zenoh session delivers one key's samples in order, so the lock is only
                // ever contended when the bridge stops or the binding thread tries.
                let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                s.receive(sample.payload());
            })
            .wait()
            .map_err(|e| {
                format!(
                    "declaring the Zenoh subscriber on {key}: {}",
                    clean(&e.to_string())
                )
            })?;
        let binding = match retry {
            Some(contract) => Some(
                std::thread::Builder::new()
                    .name(thread)
                    .spawn(move || bind_until_bound(&state, &contract, &stop))
                    .map_err(|e| format!("starting the thread that binds the local topic: {e}"))?,
            ),
            None => None,
        };
        Ok(Running {
            subscriber,
            binding,
        })
    }
}

/// Tries to bind `contract` every [`BIND_RETRY`] until the local topic is bound (by this thread
/// or by a message) or `stop` is set. Never waits for the lock: a callback holding it (a
/// reliable loan waiting for ring space) is left alone, and the next look tries again.
fn bind_until_bound(state: &Mutex<State>, contract: &WireContract, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(POLL);
        let mut s = match state.try_lock() {
            Ok(s) => s,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => continue,
        };
        if s.publisher.is_some() {
            return;
        }
        if s.bind_failed_at.is_some_and(|at| at.elapsed() < BIND_RETRY) {
            continue;
        }
        match s.bind(contract) {
            Ok(()) => return,
            Err(BindFailure::Other(e)) => s.bind_failed(e),
            // The configuration was checked: a contract that binds at no moment is not met.
            Err(_) => return,
        }
    }
}

/// Why the local topic could not be bound.
enum BindFailure {
    /// The configured capacity cannot hold two of the remote's largest messages.
    TooSmall { capacity: u64, limit: u64 },
    /// The remote contract is none a publisher may declare (a bad name or alignment).
    Invalid(String),
    /// Anything else (the topic in use, the directory): worth another try later.
    Other(String),
}

impl std::fmt::Display for BindFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindFailure::TooSmall { capacity, limit } => write!(
                f,
                "a {capacity}-byte ring holds messages up to {limit} bytes, fewer than the topic's"
            ),
            BindFailure::Invalid(e) | BindFailure::Other(e) => f.write_str(e),
        }
    }
}

impl State {
    fn event(&self, e: Event) {
        (self.import.sink)(e);
    }

    fn bind(&mut self, contract: &WireContract) -> Result<(), BindFailure> {
        let encoded = contract
            .encode()
            .ok_or_else(|| BindFailure::Other(format!("{contract} cannot travel")))?;
        let t = &self.import.topic;
        let span = (contract.max_message as u64 + 32) * 2;
        let capacity = t
            .capacity
            .unwrap_or_else(|| span.next_power_of_two().max(1 << 20));
        let mut b = Publisher::builder(t.topic.clone())
            .imported(true)
            .declare(contract.message.clone())
            .max_message(contract.max_message as u64)
            .capacity(capacity);
        if let Some(dir) = &self.import.directory {
            b = b.directory(dir);
        }
        let publisher = b.bind().map_err(|e| match e {
            BindError::Config(ConfigError::MaxPayload { limit, .. }) if t.capacity.is_some() => {
                BindFailure::TooSmall { capacity, limit }
            }
            BindError::Contract(e) => BindFailure::Invalid(e.to_string()),
            e => BindFailure::Other(e.to_string()),
        })?;
        // Lost before there was a topic to note them on: its subscribers never saw them.
        if self.unnoted > 0 {
            publisher.note_upstream_lost(std::mem::take(&mut self.unnoted));
        }
        self.publisher = Some(publisher);
        self.local = encoded;
        self.bind_failed_at = None;
        self.bind_failure_reported = false;
        self.event(Event::Bound {
            topic: t.topic.clone(),
            key: self.import.key.clone(),
            contract: contract.to_string(),
        });
        Ok(())
    }

    fn malformed(&mut self, reason: String) {
        Counters::add(&self.import.counters.malformed, 1);
        if !self.malformed_reported {
            self.malformed_reported = true;
            self.event(Event::Malformed {
                topic: self.import.topic.topic.clone(),
                key: self.import.key.clone(),
                reason,
            });
        }
    }

    fn receive(&mut self, payload: &ZBytes) {
        let mut slices = payload.slices();
        let first = slices.next().unwrap_or_default();
        // The header is nearly always inside the first slice; gather it otherwise.
        let gathered;
        let (header, rest_of_first, whole) = match wire::decode(first) {
            Ok(h) => (h, &first[h.len..], false),
            Err(_) if first.len() < MAX_HEADER && payload.len() > first.len() => {
                gathered = payload.to_bytes();
                match wire::decode(&gathered) {
                    Ok(h) => (h, &gathered[h.len..], true),
                    Err(e) => return self.malformed(e.to_string()),
                }
            }
            Err(e) => return self.malformed(e.to_string()),
        };
        if header.sender.origin == self.import.origin {
            return;
        }
        let owned;
        let body: &[u8] = if !header.batch || whole || payload.slices().nth(1).is_none() {
            rest_of_first
        } else {
            owned = payload.to_bytes();
            &owned[header.len..]
        };
        if self.publisher.is_none() || header.contract != self.local.as_slice() {
            // Refused or dropped: counted per message, as the batch would have been delivered.
            let (n, bad) = if header.batch {
                count_records(body)
            } else {
                (1, None)
            };
            let taken = n > 0
                && (self.publisher.is_some() || self.adopt(header.contract, n))
                && (header.contract == self.local.as_slice()
                    || self.refuse(header.contract.to_vec(), n));
            if !taken {
                if let Some((i, e)) = bad {
                    self.malformed(format!("batch record {i}: {e}"));
                }
                return;
            }
        }
        if header.batch {
            for (i, record) in wire::records(body).enumerate() {
                match record {
                    Ok(r) => {
                        let seq = header.seq.wrapping_add(i as u64);
                        self.deliver(header.sender, seq, r.len(), r, std::iter::empty(), true);
                    }
                    Err(e) => {
                        self.malformed(format!("batch record {i}: {e}"));
                        break;
                    }
                }
            }
            return;
        }
        let len = payload.len() - header.len;
        self.deliver(header.sender, header.seq, len, rest_of_first, slices, whole);
    }

    /// Publishes message `seq` of `len` bytes from `sender`: `first`, then `slices` unless
    /// `whole`.
    fn deliver<'a>(
        &mut self,
        sender: Sender,
        seq: u64,
        len: usize,
        first: &[u8],
        slices: impl Iterator<Item = &'a [u8]>,
        whole: bool,
    ) {
        self.count_sequence(sender, seq);
        let lossy = self.import.topic.reliability == Reliability::Lossy;
        let Some(publisher) = self.publisher.as_mut() else {
            return;
        };
        let published = publish(publisher, len, lossy, first, slices, whole);
        let c = &self.import.counters;
        match published {
            Ok(()) => {}
            Err(None) => {
                // Lost before the local topic, as a gap is: its subscribers see it as lost
                // upstream, since the local sequence numbers close over it.
                publisher.note_upstream_lost(1);
                return Counters::add(&c.local_dropped, 1);
            }
            Err(Some(reason)) => return self.malformed(reason),
        }
        Counters::add(&c.messages, 1);
        Counters::add(&c.bytes, len as u64);
        c.last_seq.store(seq, Ordering::Relaxed);
    }

    /// Drops `n` messages that arrived while the local topic could not be bound.
    fn drop_unbound(&mut self, n: u64) {
        Counters::add(&self.import.counters.local_dropped, n);
        self.unnoted += n;
    }

    /// Binds the local topic with the first remote contract, for a payload of `n` messages;
    /// `false` if it cannot be.
    fn adopt(&mut self, encoded: &[u8], n: u64) -> bool {
        if self.refused.iter().any(|r| r == encoded) {
            Counters::add(&self.import.counters.refused, n);
            return false;
        }
        let remote = match WireContract::decode(encoded) {
            Ok(c) => c,
            Err(e) => {
                self.malformed(e.to_string());
                return false;
            }
        };
        let t = &self.import.topic;
        let agrees = t.message.as_ref().is_none_or(|m| *m == remote.message)
            && t.max_message.is_none_or(|m| m == remote.max_message);
        if !agrees {
            let local = match (&t.message, t.max_message) {
                (Some(m), Some(n)) => format!("{m}, messages up to {n} bytes"),
                (Some(m), None) => m.to_string(),
                (None, Some(n)) => format!("messages up to {n} bytes"),
                (None, None) => "anything".into(),
            };
            self.refuse_as(encoded.to_vec(), remote, local, n);
            return false;
        }
        if self
            .bind_failed_at
            .is_some_and(|at| at.elapsed() < BIND_RETRY)
        {
            self.drop_unbound(n);
            return false;
        }
        match self.bind(&remote) {
            Ok(()) => true,
            Err(BindFailure::TooSmall { capacity, limit }) => {
                // The configuration, not the moment: no retry would bind it. Refused as a
                // contract the topic cannot carry, reported once, counted in `refused`.
                let local = format!(
                    "messages up to {limit} bytes, what the configured {capacity}-byte ring holds"
                );
                self.refuse_as(encoded.to_vec(), remote, local, n);
                false
            }
            Err(BindFailure::Invalid(e)) => {
                let local = format!("only contracts a publisher may declare ({e})");
                self.refuse_as(encoded.to_vec(), remote, local, n);
                false
            }
            Err(BindFailure::Other(e)) => {
                self.bind_failed(e);
                self.drop_unbound(n);
                false
            }
        }
    }

    /// Notes a failure to bind that is worth another try a second later, and reports it if it
    /// is the first of this outage.
    fn bind_failed(&mut self, reason: String) {
        self.bind_failed_at = Some(Instant::now());
        if !self.bind_failure_reported {
            self.bind_failure_reported = true;
            self.event(Event::BindFailed {
                topic: self.import.topic.topic.clone(),
                key: self.import.key.clone(),
                reason,
            });
        }
    }

    /// Refuses `n` messages of the contract `encoded`; always `false` (nothing is taken).
    fn refuse(&mut self, encoded: Vec<u8>, n: u64) -> bool {
        match WireContract::decode(&encoded) {
            Ok(remote) => {
                let local = WireContract::decode(&self.local)
                    .map(|c| c.to_string())
                    .unwrap_or_default();
                self.refuse_as(encoded, remote, local, n);
            }
            Err(e) => self.malformed(e.to_string()),
        }
        false
    }

    fn refuse_as(&mut self, encoded: Vec<u8>, remote: WireContract, local: String, n: u64) {
        Counters::add(&self.import.counters.refused, n);
        if !self.refused.contains(&encoded) {
            self.refused.push(encoded);
            self.event(Event::ContractRefused {
                topic: self.import.topic.topic.clone(),
                key: self.import.key.clone(),
                remote: remote.to_string(),
                local,
            });
        }
    }

    fn count_sequence(&mut self, sender: Sender, seq: u64) {
        let followed = self.streams.follow(sender, seq);
        let c = &self.import.counters;
        if followed.new_source {
            Counters::add(&c.sources, 1);
            if self.streams.len() > 1 && !self.fan_in_reported {
                self.fan_in_reported = true;
                self.event(Event::FanIn {
                    topic: self.import.topic.topic.clone(),
                    key: self.import.key.clone(),
                });
            }
        }
        match followed.step {
            Step::InOrder => {}
            Step::Gap(k) => {
                Counters::add(&c.gaps, k);
                Counters::add(&c.gap_events, 1);
                if let Some(p) = &self.publisher {
                    p.note_upstream_lost(k);
                }
            }
            Step::Reset => Counters::add(&c.resets, 1),
        }
    }
}

/// The records of a batch that decode, and where the first that does not is (its index and
/// why).
fn count_records(body: &[u8]) -> (u64, Option<(usize, WireError)>) {
    let mut n = 0;
    for (i, record) in wire::records(body).enumerate() {
        match record {
            Ok(_) => n += 1,
            Err(e) => return (n, Some((i, e))),
        }
    }
    (n, None)
}

/// Copies one payload (`first`, then the rest of `slices` unless `whole` says `first` holds
/// it all) into a loan of `len` bytes and publishes it. `Err(None)`: the ring was full (lossy)
/// or stayed full; `Err(Some(why))`: the payload does not fit the topic.
fn publish<'a>(
    publisher: &mut Publisher,
    len: usize,
    lossy: bool,
    first: &[u8],
    slices: impl Iterator<Item = &'a [u8]>,
    whole: bool,
) -> Result<(), Option<String>> {
    let loan = if lossy {
        publisher.try_loan(len)
    } else {
        publisher.loan(len)
    };
    let mut loan = match loan {
        Ok(l) => l,
        Err(LoanError::Full | LoanError::Timeout) => return Err(None),
        Err(e) => return Err(Some(format!("{len}-byte payload: {e}"))),
    };
    let mut at = first.len();
    loan[..at].copy_from_slice(first);
    if !whole {
        for s in slices {
            loan[at..at + s.len()].copy_from_slice(s);
            at += s.len();
        }
    }
    loan.publish();
    Ok(())
}
