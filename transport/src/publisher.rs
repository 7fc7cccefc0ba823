//! The publisher: owns the ring, lends writable buffers inside it, and wakes parked subscribers.

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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Settings for a [`Publisher`].
#[derive(Clone, Debug)]
pub struct PublisherBuilder {
    topic: String,
    capacity: u64,
    max_message: Option<u64>,
    admission: Admission,
    stall_bound: Option<Duration>,
    spin_limit: Duration,
    cache_window: u64,
    handshake_timeout: Duration,
    max_pending: usize,
    max_subscribers: Option<usize>,
    message: MessageType,
    imported: bool,
    directory: Option<PathBuf>,
}

impl PublisherBuilder {
    /// Defaults: a 1 MiB ring, messages up to a quarter of it, same-uid admission, a stall
    /// bound of [`DEFAULT_STALL_BOUND`] (5 s), 2 s handshake timeout, no limit on subscribers
    /// but the descriptor reserve (see [`max_subscribers`](Self::max_subscribers)).
    pub fn new(topic: impl Into<String>) -> Self {
        PublisherBuilder {
            topic: topic.into(),
            capacity: 1 << 20,
            max_message: None,
            admission: Admission::SameUid,
            stall_bound: Some(DEFAULT_STALL_BOUND),
            spin_limit: DEFAULT_SPIN_LIMIT,
            cache_window: DEFAULT_CACHE_WINDOW,
            handshake_timeout: Duration::from_secs(2),
            max_pending: 64,
            max_subscribers: None,
            message: MessageType::Bytes,
            imported: false,
            directory: None,
        }
    }

    /// Ring data size in bytes: a power of two from 64 bytes to 1 TiB (the memory is reserved,
    /// not touched: a large ring costs only what is written into it).
    pub fn capacity(mut self, bytes: u64) -> Self {
        self.capacity = bytes;
        self
    }

    /// Largest message in bytes: at least 1, at most half the capacity minus 16 and at most
    /// 4 GiB − 16. Default: a quarter of the capacity, within those bounds.
    pub fn max_message(mut self, bytes: u64) -> Self {
        self.max_message = Some(bytes);
        self
    }

    /// Who may subscribe.
    pub fn admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// How long the ring may stay full for a stalled gating subscriber before a loan demotes it
    /// to lossy (it receives [`RecvError::Demoted`](crate::RecvError::Demoted) and continues as
    /// a lossy subscriber for good). The time counts from when loans first found the ring full,
    /// across loans, until one fits: a `loan` that waits, `loan_timeout`s that give up and are
    /// retried, async loans dropped in a `select!` and `try_loan`s that find it full all count,
    /// and the first loan past the bound demotes. Default: [`DEFAULT_STALL_BOUND`], so that one
    /// stopped subscriber (a `SIGSTOP`, a debugger, a frozen container) cannot freeze the
    /// publisher forever. `None` never demotes, and each loan waits as long as its own timeout:
    /// an explicit choice for streams where no message may ever be lost, whatever a subscriber
    /// does.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// // Demote a gating subscriber that holds the ring for 100 ms.
    /// let fast = shmcast::Publisher::builder("market-data")
    ///     .stall_bound(Some(Duration::from_millis(100)))
    ///     .bind()?;
    /// // Never demote: a stopped gating subscriber stops this publisher too.
    /// let strict = shmcast::Publisher::builder("ledger").stall_bound(None).bind()?;
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn stall_bound(mut self, bound: Option<Duration>) -> Self {
        self.stall_bound = bound;
        self
    }

    /// The longest a loan that found the ring full polls for space before it sleeps (default
    /// 50 µs; `Duration::ZERO`: sleep at once). Within this limit the publisher learns how long
    /// to poll from its last waits, and stops polling while subscribers do not release in time
    /// (stopped, or slow). Where the machine runs more threads than it has CPUs, it polls
    /// between `sched_yield`s, so that the threads that would release run first (a loan
    /// awaited on an async runtime does not poll there at all); it never polls on a single-CPU
    /// machine. Polling saves the sleep, the subscriber's doorbell and a cross-CPU wake when a
    /// gating subscriber is about to release, the normal state of a small ring. A longer limit
    /// than [`MAX_SPIN_LIMIT`] (10 ms) counts as that.
    pub fn spin_limit(mut self, limit: Duration) -> Self {
        self.spin_limit = limit;
        self
    }

    /// Keeps a stream whose subscribers keep up in the front `bytes` of the ring (plus a
    /// message), where it stays in the CPU caches, instead of cycling the whole ring through
    /// memory (default [`DEFAULT_CACHE_WINDOW`], 4 MiB; 0 turns it off; a ring no larger than
    /// the window is used whole anyway). The publisher starts the next lap early only while
    /// every subscriber is gating and has caught up, so it never waits or overwrites anything
    /// for it, and a subscriber that falls behind gets the whole ring. Large messages through a
    /// large ring gain most (measured: up to twice the messages per second with 1 MiB messages
    /// in a 64 MiB ring). The price: while it applies, a subscriber that joins with
    /// [`Start::Oldest`](crate::Start::Oldest) finds the messages of the window, not of the
    /// whole ring; turn it off for a topic whose late joiners need the whole history.
    ///
    /// ```no_run
    /// // 64 MiB of history for late joiners, whatever the subscribers do.
    /// let publisher = shmcast::Publisher::builder("frames")
    ///     .capacity(64 << 20)
    ///     .cache_window(0)
    ///     .bind()?;
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn cache_window(mut self, bytes: u64) -> Self {
        self.cache_window = bytes;
        self
    }

    /// How long a connecting client may take to send its request before it is dropped. Must
    /// be greater than zero ([`bind`](Self::bind) fails with [`BindError::InvalidOption`]
    /// otherwise).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Most clients in the middle of a handshake at once; more are refused as busy.
    pub fn max_pending_handshakes(mut self, n: usize) -> Self {
        self.max_pending = n.max(1);
        self
    }

    /// Most subscribers admitted at once (`None`, the default: no limit); more are refused as
    /// busy until one leaves. Each costs the publisher two descriptors (its connection and its
    /// control block) and a look at its `parked` word per commit.
    ///
    /// Whatever this limit, a new subscriber is refused as busy while admitting it would leave
    /// the publisher's process fewer than an eighth of its descriptor limit (`RLIMIT_NOFILE`,
    /// between 16 and 256 descriptors), so that subscribers can never take the descriptors the
    /// rest of the program needs.
    ///
    /// ```no_run
    /// let publisher = shmcast::Publisher::builder("telemetry")
    ///     .max_subscribers(Some(32))
    ///     .bind()?;
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn max_subscribers(mut self, n: Option<usize>) -> Self {
        self.max_subscribers = n;
        self
    }

    /// Declares what the topic carries: every subscriber reads it
    /// ([`Subscriber::contract`](crate::Subscriber::contract)), and one that expects another
    /// type is refused on its side with
    /// [`ConnectError::ContractMismatch`](crate::ConnectError::ContractMismatch). Default
    /// [`MessageType::Bytes`]: bytes of no declared type. [`bind`](Self::bind) fails with
    /// [`BindError::Contract`] for a name that is empty, longer than
    /// [`MAX_CONTRACT_NAME`](crate::MAX_CONTRACT_NAME) bytes or holds a control character, an
    /// alignment that is not a power of two up to 16, or a Pod type larger than the maximum
    /// message.
    pub fn declare(mut self, message: MessageType) -> Self {
        self.message = message;
        self
    }

    /// Declares that every message is one `T`, named by its type name without module paths
    /// (`Tick` for `app::Tick`), with its size and alignment. See [`declare`](Self::declare).
    ///
    /// ```no_run
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Tick { seq: u64, price: f64 }
    ///
    /// let publisher = shmcast::Publisher::builder("ticks").pod::<Tick>().bind()?;
    /// // Subscribers see: pod "Tick" (16 bytes, align 8), messages up to 262144 bytes.
    /// println!("{}", publisher.contract());
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn pod<T: bytemuck::Pod>(self) -> Self {
        self.declare(MessageType::pod::<T>())
    }

    /// Declares that every message is one `T`, under a name of your choosing (to tell apart
    /// types of one name, or versions of one type). See [`declare`](Self::declare).
    pub fn pod_named<T: bytemuck::Pod>(self, name: impl Into<String>) -> Self {
        self.declare(MessageType::pod_named::<T>(name))
    }

    /// Declares that messages are bytes in schema `name` at `version` (a serialisation format
    /// and message type: `"proto:app.Tick"`, `"json:order"`). See [`declare`](Self::declare).
    pub fn schema(self, name: impl Into<String>, version: u32) -> Self {
        self.declare(MessageType::schema(name, version))
    }

    /// Declares that this publisher republishes messages imported from elsewhere, as a bridge
    /// does for a topic it imports from another host. Every subscriber learns it in the
    /// handshake ([`Subscriber::imported`](crate::Subscriber::imported)) and introspection shows
    /// it ([`TopicInfo::imported`](crate::TopicInfo::imported), `shmcast stat`); a bridge refuses
    /// to export an imported topic, so that no message can travel round a loop of bridges.
    /// Default: `false`.
    ///
    /// Subscribers built before this declaration existed refuse an imported topic's handshake
    /// (an invalid `flags` field); they read every other topic as before.
    pub fn imported(mut self, imported: bool) -> Self {
        self.imported = imported;
        self
    }

    /// The directory a topic name's socket is created in, instead of `$SHMCAST_DIR`,
    /// `$XDG_RUNTIME_DIR/shmcast/` or `/tmp/shmcast-<uid>/` (see [`TopicDir`](crate::TopicDir)).
    /// It is made with mode 0700 if missing (its parent must exist); an existing one must be
    /// ours and closed to group and others, or [`bind`](Self::bind) fails with
    /// [`TopicError::InsecureDirectory`](crate::TopicError::InsecureDirectory). Subscribers
    /// must look in the same directory. A topic that is a socket path (it contains `/`) is used
    /// as given, wherever this points.
    ///
    /// ```no_run
    /// let publisher = shmcast::Publisher::builder("ticks")
    ///     .directory("/run/trading/topics")
    ///     .bind()?;
    /// assert_eq!(publisher.path(), std::path::Path::new("/run/trading/topics/ticks"));
    /// # Ok::<(), shmcast::BindError>(())
    /// ```
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.directory = Some(dir.into());
        self
    }

    /// Creates the ring and starts serving the topic.
    pub fn bind(self) -> Result<Publisher, BindError> {
        Publisher::create(self)
    }
}

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
    max_message: usize,
    contract: Contract,
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
            .unwrap_or((b.capacity / 4).min(RingConfig::payload_limit(b.capacity)));
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
        });

        let (claim, listener) = Claim::bind(&path)?;
        let shutdown = Arc::new(sys::event::eventfd_create(true)?);
        let server = server::spawn(
            listener,
            shared.clone(),
            shutdown.clone(),
            contract.message.clone(),
        )?;
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
            max_message: cfg.max_payload(),
            contract,
        })
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
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.loan_until(len, Wait::Forever)
    }

    /// Like [`loan`](Self::loan), but gives up with [`LoanError::Timeout`] after `timeout`.
    pub fn loan_timeout(&mut self, len: usize, timeout: Duration) -> Result<Loan<'_>, LoanError> {
        self.loan_until(len, Wait::For(timeout))
    }

    /// Like [`loan`](Self::loan), but never waits: a full ring is [`LoanError::Full`].
    pub fn try_loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.loan_until(len, Wait::Never)
    }

    /// Lends a buffer of up to `max` bytes for a message whose length is known only once it is
    /// written: the loan starts empty, is filled by appending (`io::Write`, `write!`, a
    /// serializer's writer, [`Loan::extend_from_slice`]) and [`publish`](Loan::publish) sends
    /// exactly the bytes written. Waits for space as [`loan`](Self::loan) does, for all `max`
    /// bytes: ask for what the message may need, not more (the unused part is free again at once
    /// when the message is published).
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
        let shared: &Shared = &self.shared;
        let mut guard = shared.lock();
        let mut full = FullWait::new(wait, self.stall_bound);
        let mut tokens = [0u64; wake::SPACE_EVENTS];
        loop {
            match guard.try_reserve(len) {
                Ok(res) => {
                    self.stall.end();
                    let ptr = guard.payload_ptr(&res);
                    return Ok(Loan::new(guard, res, shared, ptr, len));
                }
                Err(ReserveError::TooLarge { len, max }) => {
                    return Err(LoanError::TooLarge { len, max });
                }
                // Only drop closes the writer, and drop needs `&mut self`.
                Err(ReserveError::Closed) => unreachable!("publisher closed while borrowed"),
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

    /// One step of an async loan's wait for space (`shmcast::tokio`): `Ok(None)` once `len`
    /// bytes fit now; `Ok(Some(t))` after announcing a wait, to sleep at most `t` on
    /// the space set and end with `full_wait::end_now`.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn space_step(
        &mut self,
        len: usize,
        full: &mut FullWait,
    ) -> Result<Option<Duration>, LoanError> {
        if len > self.max_message {
            return Err(LoanError::TooLarge {
                len,
                max: self.max_message,
            });
        }
        let shared: &Shared = &self.shared;
        let mut guard = shared.lock();
        loop {
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

    /// Lends a buffer for one `T`, to be filled in place.
    pub fn loan_pod<T: bytemuck::Pod>(&mut self) -> Result<PodLoan<'_, T>, LoanError> {
        if align_of::<T>() > 16 {
            return Err(LoanError::Unaligned {
                align: align_of::<T>(),
            });
        }
        Ok(PodLoan::new(self.loan(size_of::<T>())?))
    }

    /// Copies `payload` into the ring and publishes it (waiting for space like `loan`).
    pub fn send(&mut self, payload: &[u8]) -> Result<(), LoanError> {
        let mut loan = self.loan(payload.len())?;
        loan.copy_from_slice(payload);
        loan.publish();
        Ok(())
    }

    /// Publishes one `T`.
    pub fn send_pod<T: bytemuck::Pod>(&mut self, value: &T) -> Result<(), LoanError> {
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
    /// nothing published after this returns is lost to it.
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
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => wake::PARK_RECHECK,
            };
            if left.is_zero() {
                return Err(WaitError {
                    wanted: n,
                    connected,
                    waited: start.elapsed(),
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
