//! [`Bridge`]: one Zenoh session, an export thread per exported topic and a Zenoh subscriber
//! per imported one, with their counters; [`BridgeError`] when it cannot start.

use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zenoh::Wait;

use crate::config::{BridgeConfig, ConfigError, Direction, TopicConfig};
use crate::endpoint::clean;
use crate::event::{Event, Sink};
use crate::export::Export;
use crate::import::Import;
use crate::session;
use crate::stats::{Counters, TopicStats};

/// Settings for a [`Bridge`] beyond its configuration.
pub struct BridgeBuilder {
    config: BridgeConfig,
    sink: Sink,
}

impl BridgeBuilder {
    /// Hands every [`Event`] to `sink` (default: dropped), from the bridge's threads.
    pub fn on_event(mut self, sink: impl Fn(Event) + Send + Sync + 'static) -> BridgeBuilder {
        self.sink = Arc::new(sink);
        self
    }

    /// Validates the configuration, opens the Zenoh session and starts every topic.
    pub fn start(self) -> Result<Bridge, BridgeError> {
        Bridge::create(self)
    }
}

/// A running bridge. Dropping it (or [`Bridge::stop`]) stops every topic and closes the
/// session; imported topics end, so their local subscribers see the end of the stream. Either
/// returns within [`Bridge::STOP_BOUND`] (plus at most 0.1 s for the watch on `connect`
/// endpoints), even when a peer takes nothing.
pub struct Bridge {
    session: Option<zenoh::Session>,
    sink: Sink,
    id: u64,
    stop: Arc<AtomicBool>,
    exports: Vec<JoinHandle<()>>,
    /// The threads that bind configured imports whose topic could not be bound at start.
    bindings: Vec<JoinHandle<()>>,
    watch: Option<JoinHandle<()>>,
    imports: Vec<zenoh::pubsub::Subscriber<()>>,
    topics: Vec<(TopicConfig, String, Arc<Counters>)>,
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge")
            .field("id", &format_args!("{:016x}", self.id))
            .field("topics", &self.topics.len())
            .finish()
    }
}

impl Bridge {
    /// A bridge doing what `config` says.
    pub fn builder(config: BridgeConfig) -> BridgeBuilder {
        BridgeBuilder {
            config,
            sink: Arc::new(|_| {}),
        }
    }

    /// Starts a bridge doing what `config` says, without events.
    pub fn start(config: BridgeConfig) -> Result<Bridge, BridgeError> {
        Bridge::builder(config).start()
    }

    fn create(b: BridgeBuilder) -> Result<Bridge, BridgeError> {
        let config = b.config;
        config.validate().map_err(BridgeError::Config)?;
        // The topic directory, checked as every local publisher and subscriber checks it, so
        // that a directory no topic may use is refused now, not at the first message.
        let dir = match &config.directory {
            Some(path) => shmcast::TopicDir {
                path: path.clone(),
                source: shmcast::DirSource::Builder,
            },
            None => shmcast::TopicDir::from_env().map_err(BridgeError::Directory)?,
        };
        dir.check().map_err(BridgeError::Directory)?;
        let session = session::open(&config).map_err(BridgeError::Zenoh)?;
        let mut bridge = Bridge {
            session: None,
            sink: b.sink.clone(),
            id: random_id(),
            stop: Arc::new(AtomicBool::new(false)),
            exports: Vec::new(),
            bindings: Vec::new(),
            watch: None,
            imports: Vec::new(),
            topics: Vec::new(),
        };
        for t in &config.topics {
            let key = t.key_under(&config.prefix);
            let counters = Arc::new(Counters::default());
            let fail = |reason: String| BridgeError::Topic {
                topic: t.topic.clone(),
                direction: t.direction,
                reason: clean(&reason),
            };
            match t.direction {
                Direction::Export => {
                    let handle = Export {
                        topic: t.clone(),
                        key: key.clone(),
                        directory: config.directory.clone(),
                        origin: bridge.id,
                        counters: counters.clone(),
                        stop: bridge.stop.clone(),
                        sink: b.sink.clone(),
                    }
                    .spawn(&session)
                    .map_err(fail)?;
                    bridge.exports.push(handle);
                }
                Direction::Import => {
                    let running = Import {
                        topic: t.clone(),
                        key: key.clone(),
                        directory: config.directory.clone(),
                        origin: bridge.id,
                        counters: counters.clone(),
                        stop: bridge.stop.clone(),
                        sink: b.sink.clone(),
                    }
                    .spawn(&session)
                    .map_err(fail)?;
                    bridge.imports.push(running.subscriber);
                    bridge.bindings.extend(running.binding);
                }
            }
            bridge.topics.push((t.clone(), key, counters));
        }
        bridge.watch = session::watch(
            &session,
            &config.connect,
            bridge.stop.clone(),
            b.sink.clone(),
        )
        .map_err(BridgeError::Zenoh)?;
        bridge.session = Some(session);
        Ok(bridge)
    }

    /// This bridge's random id, carried in every message it exports.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A snapshot of every topic's counters, in configuration order.
    pub fn stats(&self) -> Vec<TopicStats> {
        self.topics
            .iter()
            .map(|(t, key, c)| TopicStats::read(&t.topic, key, t.direction, t.reliability, c))
            .collect()
    }

    /// The longest [`Bridge::stop`] or dropping a bridge waits for its Zenoh session to close
    /// and its exports to end. Closing takes milliseconds while the peers take what they are
    /// sent; a peer that takes nothing (a stopped process, a link that stays silent until
    /// Zenoh's lease ends it) could hold Zenoh's close for its own 10 s timeout and a reliable
    /// export's blocked put for longer. Past this bound the bridge reports
    /// [`Event::StopIncomplete`] and returns: the rest finishes in the background (an imported
    /// topic ends when its Zenoh subscriber is closed), or when the process exits.
    pub const STOP_BOUND: Duration = Duration::from_secs(2);

    /// Stops every topic, closes the Zenoh session and returns every topic's final counters.
    ///
    /// Returns within [`Bridge::STOP_BOUND`] (2 s; plus at most 0.1 s for the watch on
    /// `connect` endpoints). When that bound cut the close short ([`Event::StopIncomplete`]),
    /// a put still blocked at that moment may yet complete, and the counters returned do not
    /// include it; otherwise nothing changes them any more.
    pub fn stop(mut self) -> Vec<TopicStats> {
        self.shut_down();
        self.stats()
    }

    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Before the session closes, which would look like every peer leaving.
        if let Some(watch) = self.watch.take() {
            let _ = watch.join();
        }
        let deadline = Instant::now() + Bridge::STOP_BOUND;
        // They look at the stop flag every 50 ms and never wait for a lock (a bind itself may
        // take up to a second, probing a busy socket); waited for before the imports close,
        // so that an imported topic ends with its Zenoh subscriber. One still binding at the
        // deadline ends by itself a moment later, and its topic with it.
        for binding in self.bindings.drain(..) {
            finish(binding, deadline);
        }
        let closed = self.close_session(deadline);
        if !closed {
            (self.sink)(Event::StopIncomplete {
                what: "closing the Zenoh session".into(),
                waited: Bridge::STOP_BOUND,
            });
        }
        // Closing the session also ends a put blocked on a full queue; the others look at the
        // stop flag every 50 ms.
        let mut running = 0;
        for handle in self.exports.drain(..) {
            if !finish(handle, deadline) {
                running += 1;
            }
        }
        if running > 0 {
            (self.sink)(Event::StopIncomplete {
                what: match running {
                    1 => "an export blocked in a Zenoh put".to_owned(),
                    n => format!("{n} exports blocked in Zenoh puts"),
                },
                waited: Bridge::STOP_BOUND,
            });
        }
    }

    /// Undeclares the imports and closes the session in a thread of its own, waiting for it
    /// until `deadline`; whether it finished.
    fn close_session(&mut self, deadline: Instant) -> bool {
        let imports = std::mem::take(&mut self.imports);
        let session = self.session.take();
        if imports.is_empty() && session.is_none() {
            return true;
        }
        let (done, finished) = std::sync::mpsc::channel();
        let close = move || {
            for sub in imports {
                let _ = sub.undeclare().wait();
            }
            if let Some(session) = session {
                let _ = session.close().wait();
            }
            let _ = done.send(());
        };
        match std::thread::Builder::new()
            .name("bridge-close".into())
            .spawn(close)
        {
            Ok(_) => finished
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .is_ok(),
            // The closure, dropped unstarted, dropped the subscribers and the session, which
            // closes them as it can.
            Err(_) => true,
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Waits until `handle`'s thread has ended, or until `deadline`; whether it ended (and was
/// joined).
fn finish(handle: JoinHandle<()>, deadline: Instant) -> bool {
    while !handle.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let ended = handle.is_finished();
    if ended {
        let _ = handle.join();
    }
    ended
}

fn random_id() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// Why a bridge could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum BridgeError {
    /// The configuration is refused.
    Config(ConfigError),
    /// The Zenoh session could not be opened (a port in use, a router a client cannot reach).
    Zenoh(String),
    /// The local topic directory is one no topic may use (relative, open to others, another
    /// user's, a symbolic link).
    Directory(shmcast::TopicError),
    /// A topic could not start (its Zenoh declaration). A local topic that cannot be bound is
    /// no such failure: the import retries it ([`Event::BindFailed`]).
    Topic {
        /// The local topic.
        topic: String,
        /// Which way.
        direction: Direction,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::Config(e) => write!(f, "configuration: {e}"),
            BridgeError::Zenoh(e) => f.write_str(e),
            BridgeError::Directory(e) => e.fmt(f),
            BridgeError::Topic {
                topic,
                direction,
                reason,
            } => write!(f, "{direction} {topic}: {reason}"),
        }
    }
}

impl std::error::Error for BridgeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BridgeError::Config(e) => Some(e),
            _ => None,
        }
    }
}
