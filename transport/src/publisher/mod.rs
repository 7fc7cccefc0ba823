//! The publisher: owns the ring, lends writable buffers inside it, and wakes parked subscribers.

mod builder;
mod closer;
mod space_watch;

pub use builder::PublisherBuilder;
pub use closer::Closer;

use crate::claim::Claim;
use crate::contract::{Contract, MessageType};
use crate::error::{BindError, LoanError, WaitError};
use crate::full_wait::{FullWait, Next, Stall, Wait};
use crate::loan::{Loan, PodLoan};
use crate::policy::Admission;
pub use crate::publisher_stats::PublisherStats;
use crate::server;
use crate::shared::Shared;
use crate::shm::SharedMemory;
use crate::spin::{self, Spin};
use crate::sys;
use crate::topic;
use crate::wake::{self, SpaceWait};
pub use shmcast_core::DEFAULT_CACHE_WINDOW;
use shmcast_core::{ReserveError, RingConfig, Writer};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::full_wait::DEFAULT_STALL_BOUND;

/// The default of [`PublisherBuilder::spin_limit`] and
/// [`SubscriberBuilder::spin_limit`](crate::SubscriberBuilder::spin_limit): a few cross-CPU wakes.
pub const DEFAULT_SPIN_LIMIT: Duration = spin::MAX_SPIN;

/// The longest spin limit, 10 ms: [`PublisherBuilder::spin_limit`] and
/// [`SubscriberBuilder::spin_limit`](crate::SubscriberBuilder::spin_limit) count a longer one
/// as this, so a deadline or the stall bound is never late by more.
pub const MAX_SPIN_LIMIT: Duration = spin::CAP;

/// The single publisher of a topic: owns the ring, lends writable buffers inside it, and wakes
/// parked subscribers.
///
/// # Overload and failure
///
/// * A gating subscriber that does not release makes the ring full: [`Publisher::try_loan`]
///   returns [`LoanError::Full`], [`Publisher::loan_timeout`] waits up to its timeout, and
///   [`Publisher::loan`] waits — up to the stall bound, if one is configured, after which the
///   slowest gating subscriber is demoted to lossy and publishing continues.
/// * A subscriber whose connection hangs up (it exited or was killed) is removed at once; a
///   publisher waiting on it continues immediately.
/// * Dropping the publisher ends the stream: subscribers receive everything committed, then
///   [`RecvError::Disconnected`](crate::RecvError::Disconnected). The socket file is removed
///   first, so a subscriber told the stream ended finds none left, and a new publisher may bind
///   the topic at once.
///
/// ```no_run
/// use shmcast::{Publisher, Subscriber};
///
/// let mut publisher = Publisher::builder("doc-example").capacity(1 << 20).bind()?;
/// let mut loan = publisher.loan(5)?;
/// loan.copy_from_slice(b"hello");
/// loan.publish();
/// publisher.send(b"world")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Publisher {
    shared: Arc<Shared>,
    server: Option<JoinHandle<()>>,
    shutdown: Arc<OwnedFd>,
    /// The topic socket; its file is removed first when the publisher drops.
    claim: Claim,
    stall_bound: Option<Duration>,
    pub(crate) space_waits: u64,
    /// Times an async loan found the ring full (the writer counts those of `try_reserve`).
    full_async: u64,
    /// How long a loan polls for space before it sleeps, learned from the last waits.
    spin: Spin,
    /// How long the ring has stayed full, across loans (the stall bound counts from it).
    stall: Stall,
    /// Whether [`watch_space`](Self::watch_space) left a wait announced and the space set's
    /// timer armed; the next loan or watch withdraws them.
    space_watched: bool,
    max_message: usize,
    /// The length of every message, if the topic declares a Pod type: fixed-length loans and
    /// sends of another length are refused.
    pod_len: Option<usize>,
    contract: Contract,
    /// The process that bound it: a copy inherited across `fork` is not the publisher.
    pid: u32,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("path", &self.claim.path())
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// Settings for a publisher on `topic` (a name, or a socket path containing `/`).
    pub fn builder(topic: impl Into<String>) -> PublisherBuilder {
        PublisherBuilder::new(topic)
    }

    /// A publisher on `topic` with default settings.
    pub fn bind(topic: &str) -> Result<Publisher, BindError> {
        PublisherBuilder::new(topic).bind()
    }

    fn create(b: PublisherBuilder) -> Result<Publisher, BindError> {
        if b.handshake_timeout.is_zero() {
            return Err(BindError::InvalidOption {
                option: "handshake_timeout",
                reason: "must be greater than zero: a zero timeout would refuse every subscriber",
            });
        }
        if b.max_message == Some(0) {
            return Err(BindError::InvalidOption {
                option: "max_message",
                reason: "must be at least 1: a maximum of 0 allows only empty messages",
            });
        }
        let max = b
            .max_message
            .unwrap_or(RingConfig::default_max_payload(b.capacity));
        let cfg = RingConfig::new(b.capacity, max).map_err(BindError::Config)?;
        let contract =
            Contract::declare(b.message, cfg.max_payload()).map_err(BindError::Contract)?;
        let path = topic::resolve(&b.topic, b.directory.as_deref(), true)?.path;

        let ring = Arc::new(SharedMemory::create_sealed_ring(
            "shmcast-ring",
            cfg.region_len(),
        )?);
        let ring_ro = sys::fs::reopen_readonly(ring.fd())?;
        let region = ring
            .region()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut writer =
            Writer::new(region, cfg).map_err(|e| std::io::Error::other(e.to_string()))?;
        writer.set_cache_window(b.cache_window);
        drop(ring);

        let shared = Arc::new(Shared {
            topic: path.clone(),
            writer: Mutex::new(writer),
            joined: Condvar::new(),
            joined_fd: sys::event::eventfd_create(true)?,
            ring_ro,
            space: SpaceWait::new()?,
            admission: b.admission,
            handshake_timeout: b.handshake_timeout,
            max_pending: b.max_pending,
            max_subscribers: b.max_subscribers,
            imported: b.imported,
            wake_syscalls: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            departed: AtomicU64::new(0),
            upstream_lost: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        });

        let open_to_others = match &shared.admission {
            Admission::SameUid => false,
            Admission::Uids(others) => !others.is_empty(),
            Admission::AnyUid => true,
        };
        let (claim, listener) = Claim::bind(&path, open_to_others)?;
        let shutdown = Arc::new(sys::event::eventfd_create(true)?);
        let server = server::spawn(listener, shared.clone(), shutdown.clone(), contract.clone())?;
        Ok(Publisher {
            shared,
            server: Some(server),
            shutdown,
            claim,
            stall_bound: b.stall_bound,
            space_waits: 0,
            full_async: 0,
            spin: Spin::new(b.spin_limit),
            stall: Stall::default(),
            space_watched: false,
            max_message: cfg.max_payload(),
            pod_len: match &contract.message {
                MessageType::Pod { size, .. } => Some(*size),
                _ => None,
            },
            contract,
            pid: std::process::id(),
        })
    }

    /// A handle that ends this stream from another thread, as dropping the publisher would
    /// ([`Closer`]): for a process that exits on a signal.
    pub fn closer(&self) -> Closer {
        Closer::new(&self.shared, self.claim.copy())
    }

    /// The socket path subscribers connect to.
    pub fn path(&self) -> &Path {
        self.claim.path()
    }

    /// Largest message in bytes.
    pub fn max_message(&self) -> usize {
        self.max_message
    }

    /// What this publisher declared the topic carries, as every subscriber receives it.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Whether this publisher declared that it republishes imported messages
    /// ([`PublisherBuilder::imported`]).
    pub fn imported(&self) -> bool {
        self.shared.imported
    }

    /// Adds `n` to the messages lost upstream: messages this publisher's source sent that never
    /// reached it, so no subscriber can receive them (a bridge's importer notes every gap in the
    /// remote sequence numbers here). The count only grows; it is shown by
    /// [`stats`](Self::stats), by introspection
    /// ([`TopicCounters::upstream_lost`](crate::TopicCounters::upstream_lost)) and by
    /// `shmcast stat`, so that a loss before the topic is never hidden from its readers' side.
    /// Losses on this host are counted apart: a lossy subscriber's own lag
    /// ([`RecvError::Lagged`](crate::RecvError::Lagged)) is not upstream.
    ///
    /// ```no_run
    /// let publisher = shmcast::Publisher::builder("relayed").imported(true).bind()?;
    /// // The source's message 7 followed message 4: 5 and 6 were lost on the way.
    /// publisher.note_upstream_lost(2);
    /// assert_eq!(publisher.stats().upstream_lost, 2);
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn note_upstream_lost(&self, n: u64) {
        self.shared.upstream_lost.fetch_add(n, Ordering::Relaxed);
    }

    /// Lends a writable `len`-byte buffer inside the ring, waiting while gating subscribers hold
    /// the space (up to the stall bound, if configured, after which the slowest is demoted).
    ///
    /// On a topic that declares a Pod type ([`PublisherBuilder::pod`](crate::PublisherBuilder::pod)),
    /// `len` must be its size: [`LoanError::WrongLength`] otherwise, before any wait.
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.check_len(len)?;
        self.loan_until(len, Wait::Forever)
    }

    /// Like [`loan`](Self::loan), but gives up with [`LoanError::Timeout`] after `timeout`.
    pub fn loan_timeout(&mut self, len: usize, timeout: Duration) -> Result<Loan<'_>, LoanError> {
        self.check_len(len)?;
        self.loan_until(len, Wait::For(timeout))
    }

    /// Like [`loan`](Self::loan), but never waits: a full ring is [`LoanError::Full`].
    pub fn try_loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.check_len(len)?;
        self.loan_until(len, Wait::Never)
    }

    /// Refuses a message of `len` bytes on a topic whose declared Pod type has another size.
    pub(crate) fn check_len(&self, len: usize) -> Result<(), LoanError> {
        match self.pod_len {
            Some(size) if size != len => Err(LoanError::WrongLength {
                declared: self.contract.message.clone(),
                len,
            }),
            _ => Ok(()),
        }
    }

    /// Lends a buffer of up to `max` bytes for a message whose length is known only once it is
    /// written: the loan starts empty, is filled by appending (`io::Write`, `write!`, a
    /// serializer's writer, [`Loan::extend_from_slice`]) and [`publish`](Loan::publish) sends
    /// exactly the bytes written. Waits for space as [`loan`](Self::loan) does, for all `max`
    /// bytes: ask for what the message may need, not more (the unused part is free again at once
    /// when the message is published).
    ///
    /// Its length is known only when it is published, so on a topic that declares a Pod type
    /// nothing checks it: a message of another length reaches the subscribers, whose
    /// [`Sample::as_pod`](crate::Sample::as_pod) then fails. Use
    /// [`loan_pod`](Self::loan_pod) there.
    ///
    /// ```no_run
    /// use std::io::Write;
    ///
    /// let mut publisher = shmcast::Publisher::bind("events")?;
    /// let mut loan = publisher.loan_up_to(128)?;
    /// write!(loan, "job {} done in {} ms", 17, 240)?;
    /// loan.publish(); // 21 bytes
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loan_up_to(&mut self, max: usize) -> Result<Loan<'_>, LoanError> {
        self.loan_until(max, Wait::Forever).map(Loan::emptied)
    }

    /// Like [`loan_up_to`](Self::loan_up_to), but gives up with [`LoanError::Timeout`] after
    /// `timeout`.
    pub fn loan_up_to_timeout(
        &mut self,
        max: usize,
        timeout: Duration,
    ) -> Result<Loan<'_>, LoanError> {
        self.loan_until(max, Wait::For(timeout)).map(Loan::emptied)
    }

    /// Like [`loan_up_to`](Self::loan_up_to), but never waits: a full ring is
    /// [`LoanError::Full`].
    pub fn try_loan_up_to(&mut self, max: usize) -> Result<Loan<'_>, LoanError> {
        self.loan_until(max, Wait::Never).map(Loan::emptied)
    }

    /// Reserves `len` bytes, waiting for space as `wait` says. Deadlines count from the moment
    /// the ring is first found full, which is the call itself up to one reservation attempt.
    pub(crate) fn loan_until(&mut self, len: usize, wait: Wait) -> Result<Loan<'_>, LoanError> {
        self.end_space_watch();
        let shared: &Shared = &self.shared;
        let mut guard = shared.lock();
        let mut full = FullWait::new(wait, self.stall_bound);
        let mut tokens = [0u64; wake::SPACE_EVENTS];
        loop {
            if shared.closing() {
                return Err(LoanError::Closed);
            }
            match guard.try_reserve(len) {
                Ok(res) => {
                    self.stall.end();
                    let ptr = guard.payload_ptr(&res);
                    return Ok(Loan::new(guard, res, shared, ptr, len));
                }
                Err(ReserveError::TooLarge { len, max }) => {
                    return Err(LoanError::TooLarge { len, max });
                }
                // A `Closer` ended the stream from another thread.
                Err(ReserveError::Closed) => return Err(LoanError::Closed),
                Err(ReserveError::Full { .. }) => {}
            }
            let Next::Sleep(timeout) =
                full.on_full(shared, &mut guard, &mut self.spin, &mut self.stall, len)?
            else {
                continue;
            };
            drop(guard);
            self.space_waits += 1;
            let waited = shared.space.wait(&mut tokens, timeout);
            guard = shared.lock();
            let ready = match waited {
                Ok(ready) => ready,
                Err(e) => {
                    guard.end_wait_for_space();
                    return Err(LoanError::Io(e));
                }
            };
            FullWait::end(shared, &mut guard, &tokens[..ready]);
        }
    }

    /// One step of a wait for space in an event loop ([`watch_space`](Self::watch_space),
    /// `shmcast::tokio`): `Ok(None)` once `len` bytes fit now; `Ok(Some(t))` after announcing a
    /// wait, to sleep at most `t` on the space set and end with `full_wait::end_now`.
    pub(crate) fn space_step(
        &mut self,
        len: usize,
        full: &mut FullWait,
    ) -> Result<Option<Duration>, LoanError> {
        self.end_space_watch();
        if len > self.max_message {
            return Err(LoanError::TooLarge {
                len,
                max: self.max_message,
            });
        }
        let shared: &Shared = &self.shared;
        let mut guard = shared.lock();
        loop {
            if shared.closing() {
                return Err(LoanError::Closed);
            }
            if guard.has_space_for(len) {
                self.stall.end();
                return Ok(None);
            }
            self.full_async += 1;
            if let Next::Sleep(timeout) =
                full.on_full(shared, &mut guard, &mut self.spin, &mut self.stall, len)?
            {
                self.space_waits += 1;
                return Ok(Some(timeout));
            }
        }
    }

    /// What the publisher and its server thread share.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The stall bound loans wait under.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn stall_bound(&self) -> Option<Duration> {
        self.stall_bound
    }

    /// Lends a buffer for one `T`, to be filled in place. On a topic that declares a Pod type
    /// ([`PublisherBuilder::pod`](crate::PublisherBuilder::pod)), `T` must have its size and
    /// alignment ([`LoanError::WrongType`] otherwise).
    pub fn loan_pod<T: bytemuck::Pod>(&mut self) -> Result<PodLoan<'_, T>, LoanError> {
        self.check_pod::<T>()?;
        Ok(PodLoan::new(self.loan(size_of::<T>())?))
    }

    /// Whether a `T` may be sent on this topic: aligned within a payload, and of the declared
    /// Pod type's size and alignment if the topic declares one. (Names are not compared: a
    /// type may be declared under a name of the user's choosing, `pod_named`.)
    pub(crate) fn check_pod<T: bytemuck::Pod>(&self) -> Result<(), LoanError> {
        let (size, align) = (size_of::<T>(), align_of::<T>());
        if align > 16 {
            return Err(LoanError::Unaligned { align });
        }
        match &self.contract.message {
            MessageType::Pod {
                size: s, align: a, ..
            } if (*s, *a) != (size, align) => Err(LoanError::WrongType {
                declared: self.contract.message.clone(),
                size,
                align,
            }),
            _ => Ok(()),
        }
    }

    /// Copies `payload` into the ring and publishes it (waiting for space like `loan`). On a
    /// topic that declares a Pod type, a payload of another length is
    /// [`LoanError::WrongLength`].
    pub fn send(&mut self, payload: &[u8]) -> Result<(), LoanError> {
        let mut loan = self.loan(payload.len())?;
        loan.copy_from_slice(payload);
        loan.publish();
        Ok(())
    }

    /// Publishes one `T` (of the declared Pod type's size and alignment, if the topic declares
    /// one: [`LoanError::WrongType`] otherwise).
    pub fn send_pod<T: bytemuck::Pod>(&mut self, value: &T) -> Result<(), LoanError> {
        self.check_pod::<T>()?;
        self.send(bytemuck::bytes_of(value))
    }

    /// Number of connected subscribers.
    pub fn subscriber_count(&self) -> usize {
        self.shared.lock().subscriber_count()
    }

    /// Waits until at least `n` subscribers are connected, at most `timeout`
    /// (`Duration::MAX`: without end); returns how many are.
    ///
    /// Messages published before a subscriber connects never reach it (it starts with the next
    /// one, or with what is still in the ring for [`Start::Oldest`](crate::Start::Oldest)): call
    /// this before the first message when every subscriber must see the whole stream. A
    /// subscriber counts from the moment it is admitted, before its handshake completes, so
    /// nothing published after this returns is lost to it. One whose expectation the topic's
    /// contract does not meet is refused before it is admitted, and never counts.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// let mut publisher = shmcast::Publisher::bind("jobs")?;
    /// publisher.wait_for_subscribers(2, Duration::from_secs(10))?;
    /// publisher.send(b"first job")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_subscribers(&self, n: usize, timeout: Duration) -> Result<usize, WaitError> {
        let start = Instant::now();
        let deadline = start.checked_add(timeout);
        let mut writer = self.shared.lock();
        loop {
            let connected = writer.subscriber_count();
            if connected >= n {
                return Ok(connected);
            }
            if self.shared.closing() {
                return Err(WaitError {
                    wanted: n,
                    connected,
                    waited: start.elapsed(),
                    closed: true,
                });
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => wake::PARK_RECHECK,
            };
            if left.is_zero() {
                return Err(WaitError {
                    wanted: n,
                    connected,
                    waited: start.elapsed(),
                    closed: false,
                });
            }
            // Bounded slices: a departure (which does not signal) is seen within one.
            let slice = left.min(wake::PARK_RECHECK);
            writer = self
                .shared
                .joined
                .wait_timeout(writer, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// A snapshot of the counters and of every subscriber.
    pub fn stats(&self) -> PublisherStats {
        let w = self.shared.lock();
        let ws = w.stats();
        PublisherStats {
            messages: ws.messages,
            wake_syscalls: self.shared.wake_syscalls.load(Ordering::Relaxed),
            full: ws.full + self.full_async,
            space_waits: self.space_waits,
            demotions: ws.demotions,
            early_wraps: ws.early_wraps,
            admitted: self.shared.admitted.load(Ordering::Relaxed),
            refused: self.shared.refused.load(Ordering::Relaxed),
            departed: self.shared.departed.load(Ordering::Relaxed),
            upstream_lost: self.shared.upstream_lost.load(Ordering::Relaxed),
            subscribers: w.subscribers().collect(),
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A copy inherited across `fork`: the stream, the socket file and the handshake
            // thread are the parent's, which publishes on. Only this process's descriptors
            // and mappings close; the server thread does not exist here, so it is not joined.
            self.claim.disown();
            std::mem::forget(self.server.take());
            return;
        }
        // The socket file goes first: a subscriber told the stream ended finds no file left,
        // even if this process dies right after telling it, and a successor may bind at once.
        self.claim.release();
        {
            let mut w = self.shared.lock();
            self.shared.wake(&mut w, |w, wake| w.close(wake));
        }
        let _ = sys::event::eventfd_signal(self.shutdown.as_fd());
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}
