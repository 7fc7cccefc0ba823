//! The subscriber's settings: topic, mode, start, waits, whom to trust, what to expect, where
//! to look.

use std::path::PathBuf;
use std::time::Duration;

use shmcast_core::{Mode, Resume, Start};

use super::Subscriber;
use crate::contract::{Expectation, MessageType};
use crate::error::ConnectError;
use crate::policy::Admission;

/// Settings for a [`Subscriber`].
#[derive(Clone, Debug)]
pub struct SubscriberBuilder {
    pub(super) topic: String,
    pub(super) mode: Mode,
    pub(super) start: Start,
    pub(super) spin: u32,
    pub(super) spin_limit: Duration,
    pub(super) connect_timeout: Option<Duration>,
    pub(super) handshake_timeout: Duration,
    pub(super) publisher: Admission,
    pub(super) expect: Expectation,
    pub(super) directory: Option<PathBuf>,
    pub(super) resume: Resume,
}

impl SubscriberBuilder {
    /// Defaults: gating, start at the newest message, no fixed spinning, adaptive spinning up
    /// to [`DEFAULT_SPIN_LIMIT`](crate::DEFAULT_SPIN_LIMIT) in blocking receives, fail at once
    /// if no publisher exists, 5 s handshake timeout, trust only a publisher of our own uid.
    pub fn new(topic: impl Into<String>) -> Self {
        SubscriberBuilder {
            topic: topic.into(),
            mode: Mode::Gating,
            start: Start::Newest,
            spin: 0,
            spin_limit: crate::DEFAULT_SPIN_LIMIT,
            connect_timeout: None,
            handshake_timeout: Duration::from_secs(5),
            publisher: Admission::SameUid,
            expect: Expectation::default(),
            directory: None,
            resume: Resume::default(),
        }
    }

    /// Gating (reliable, may slow the publisher) or lossy (never slows it).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Shorthand for `mode(Mode::Lossy)`.
    pub fn lossy(self) -> Self {
        self.mode(Mode::Lossy)
    }

    /// Start with the next message (default) or with the oldest still in the ring.
    pub fn start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }

    /// Where a lossy subscriber continues after the publisher lapped it: two of the largest
    /// messages ahead of where the publisher overwrites next ([`Resume::Slack`], the default:
    /// history it can still read before it is lapped again), with the newest message
    /// ([`Resume::Newest`]), or with the oldest still in the ring ([`Resume::Oldest`]: the most
    /// history, but the publisher overwrites that message next, so a subscriber slower than the
    /// publisher is soon lapped again). Either way the receive first reports
    /// [`RecvError::Lagged`](crate::RecvError::Lagged) with the exact number missed. A gating
    /// subscriber uses it only once demoted.
    ///
    /// ```no_run
    /// use shmcast::{Resume, Subscriber};
    ///
    /// // Keep as much history as the ring holds after a lag.
    /// let sub = Subscriber::builder("telemetry").lossy().resume(Resume::Oldest).connect()?;
    /// # Ok::<(), shmcast::ConnectError>(())
    /// ```
    pub fn resume(mut self, resume: Resume) -> Self {
        self.resume = resume;
        self
    }

    /// How many times a blocking receive polls before parking, whatever happened before. Only
    /// worth it with fewer spinning subscribers than idle cores.
    pub fn spin(mut self, polls: u32) -> Self {
        self.spin = polls;
        self
    }

    /// The longest a blocking receive (`recv`, `recv_timeout`, `recv_into`) that found nothing
    /// polls for a message before it parks (default
    /// [`DEFAULT_SPIN_LIMIT`](crate::DEFAULT_SPIN_LIMIT), 50 µs; `Duration::ZERO`: park at
    /// once). Within this limit the subscriber learns how long to poll from its last waits, and
    /// stops polling while no message comes in time (a stopped or slow publisher) or while it
    /// loses its CPU as it polls. Where the machine runs more threads than it has CPUs, it polls
    /// between `sched_yield`s, so that the thread it waits for, or another reader sharing its
    /// core, runs first; it never polls on a single-CPU machine. Polling saves the park, the publisher's `FUTEX_WAKE` and a cross-CPU
    /// wake when the publisher is about to commit. `try_recv` never polls: an event loop has
    /// other work. A timed receive may end up to this much past its timeout. A longer limit
    /// than [`MAX_SPIN_LIMIT`](crate::MAX_SPIN_LIMIT) (10 ms) counts as that.
    pub fn spin_limit(mut self, limit: Duration) -> Self {
        self.spin_limit = limit;
        self
    }

    /// Wait up to `timeout` for a publisher to appear (default: fail at once).
    /// `Duration::MAX` waits without end.
    ///
    /// A publisher that goes away or stops answering during the handshake (one killed as this
    /// subscriber connects, which is when a reconnecting subscriber comes) counts as not there
    /// yet: the subscriber waits for the next one within `timeout`. So does a publisher that
    /// refuses it as busy (too many handshakes pending there): it tries again. A connect
    /// therefore takes at most `timeout` plus one
    /// [`handshake_timeout`](Self::handshake_timeout).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long the publisher may take to answer. Must be greater than zero
    /// ([`connect`](Self::connect) fails with [`ConnectError::InvalidOption`] otherwise).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Which publishers to trust: the uid of the process serving the socket (`SO_PEERCRED`) is
    /// checked right after connecting, before anything is sent or received, and any other uid
    /// is [`ConnectError::UntrustedPublisher`]. Default [`Admission::SameUid`]: our own uid.
    ///
    /// A named topic lives in our own private directory, so only a process of our uid (or root)
    /// can serve it; a topic given as a path can lie in a directory that others may write, where
    /// anyone could have bound the socket. Trust a service account's publisher by its uid:
    ///
    /// ```no_run
    /// use shmcast::{Admission, Subscriber};
    ///
    /// let sub = Subscriber::builder("/run/sensors/imu.sock")
    ///     .publisher(Admission::Uids(vec![998]))
    ///     .connect()?;
    /// # Ok::<(), shmcast::ConnectError>(())
    /// ```
    pub fn publisher(mut self, trusted: Admission) -> Self {
        self.publisher = trusted;
        self
    }

    /// Requires the topic to carry `message`, exactly as its publisher declared it (see
    /// [`PublisherBuilder::declare`](crate::PublisherBuilder::declare)). Otherwise
    /// [`connect`](Self::connect) fails with [`ConnectError::ContractMismatch`], naming both,
    /// after dropping the connection; a type no publisher can declare (a bad name or alignment)
    /// fails with [`ConnectError::InvalidExpectation`] before anything is sent. Default: any.
    pub fn expect(mut self, message: MessageType) -> Self {
        self.expect.message = Some(message);
        self
    }

    /// Requires every message to be one `T`: the topic must declare `T`'s name (without module
    /// paths, as [`PublisherBuilder::pod`](crate::PublisherBuilder::pod) names it), size and
    /// alignment. See [`expect`](Self::expect).
    ///
    /// ```no_run
    /// use shmcast::{ConnectError, Subscriber};
    ///
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Tick { seq: u64, price: f64 }
    ///
    /// match Subscriber::builder("ticks").expect_pod::<Tick>().connect() {
    ///     Ok(sub) => println!("the topic carries {}", sub.contract()),
    ///     // "topic contract mismatch: the topic carries pod "Quote" (24 bytes, align 8),
    ///     // messages up to 262144 bytes; this subscriber expects pod "Tick" (16 bytes, align 8)"
    ///     Err(e @ ConnectError::ContractMismatch { .. }) => eprintln!("{e}"),
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expect_pod<T: bytemuck::Pod>(self) -> Self {
        self.expect(MessageType::pod::<T>())
    }

    /// Requires every message to be one `T` declared under `name`
    /// ([`PublisherBuilder::pod_named`](crate::PublisherBuilder::pod_named)). See
    /// [`expect`](Self::expect).
    pub fn expect_pod_named<T: bytemuck::Pod>(self, name: impl Into<String>) -> Self {
        self.expect(MessageType::pod_named::<T>(name))
    }

    /// Requires the topic to declare schema `name` at exactly `version`. See
    /// [`expect`](Self::expect).
    pub fn expect_schema(self, name: impl Into<String>, version: u32) -> Self {
        self.expect(MessageType::schema(name, version))
    }

    /// Requires the topic to allow messages of at least `bytes` (its maximum message size),
    /// whatever its message type; [`ConnectError::ContractMismatch`] otherwise.
    pub fn expect_max_message(mut self, bytes: usize) -> Self {
        self.expect.max_message_at_least = Some(bytes);
        self
    }

    /// The directory to look for a topic name's socket in, instead of `$SHMCAST_DIR`,
    /// `$XDG_RUNTIME_DIR/shmcast/` or `/tmp/shmcast-<uid>/` (see [`TopicDir`](crate::TopicDir)):
    /// the publisher's. An existing one must be ours and closed to group and others, or
    /// [`connect`](Self::connect) fails with
    /// [`TopicError::InsecureDirectory`](crate::TopicError::InsecureDirectory); a missing one
    /// means no publisher yet. A topic that is a socket path (it contains `/`) is used as given,
    /// wherever this points. A relative directory (or socket path) is taken from this process's
    /// working directory when `connect` runs, as any relative path.
    ///
    /// ```no_run
    /// let sub = shmcast::Subscriber::builder("ticks")
    ///     .directory("/run/trading/topics")
    ///     .connect()?;
    /// # Ok::<(), shmcast::ConnectError>(())
    /// ```
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.directory = Some(dir.into());
        self
    }

    /// Connects.
    pub fn connect(self) -> Result<Subscriber, ConnectError> {
        Subscriber::open(self)
    }

    /// How long [`connect`](Self::connect) waits for a publisher to appear (`None`: not at
    /// all), and these settings without that wait: one attempt, for a caller with its own
    /// backoff.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn split_connect_wait(mut self) -> (Option<Duration>, Self) {
        (self.connect_timeout.take(), self)
    }
}
