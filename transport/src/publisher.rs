//! The publisher: owns the ring, lends writable buffers inside it, and wakes parked subscribers.

use crate::claim::Claim;
use crate::error::{BindError, LoanError};
use crate::loan::{Loan, PodLoan};
use crate::policy::Admission;
use crate::server;
use crate::shared::Shared;
use crate::shm::SharedMemory;
use crate::sys;
use crate::topic;
use crate::wake::{self, Link, SpaceWait};
use shmcast_core::{ReserveError, RingConfig, SubscriberId, SubscriberInfo, Writer};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Settings for a [`Publisher`].
#[derive(Clone, Debug)]
pub struct PublisherBuilder {
    topic: String,
    capacity: u64,
    max_message: Option<u64>,
    admission: Admission,
    stall_bound: Option<Duration>,
    handshake_timeout: Duration,
    max_pending: usize,
    max_subscribers: Option<usize>,
}

impl PublisherBuilder {
    /// Defaults: a 1 MiB ring, messages up to a quarter of it, same-uid admission, no stall
    /// bound, 2 s handshake timeout, no limit on subscribers but the descriptor reserve (see
    /// [`max_subscribers`](Self::max_subscribers)).
    pub fn new(topic: impl Into<String>) -> Self {
        PublisherBuilder {
            topic: topic.into(),
            capacity: 1 << 20,
            max_message: None,
            admission: Admission::SameUid,
            stall_bound: None,
            handshake_timeout: Duration::from_secs(2),
            max_pending: 64,
            max_subscribers: None,
        }
    }

    /// Ring data size in bytes (a power of two, at least 64).
    pub fn capacity(mut self, bytes: u64) -> Self {
        self.capacity = bytes;
        self
    }

    /// Largest message in bytes (at most half the capacity minus 16). Default: a quarter of
    /// the capacity.
    pub fn max_message(mut self, bytes: u64) -> Self {
        self.max_message = Some(bytes);
        self
    }

    /// Who may subscribe.
    pub fn admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// How long a blocking `loan` waits on a stalled gating subscriber before demoting it to
    /// lossy. `None` (the default): wait as long as the caller's own timeout.
    pub fn stall_bound(mut self, bound: Option<Duration>) -> Self {
        self.stall_bound = bound;
        self
    }

    /// How long a connecting client may take to send its request before it is dropped.
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

    /// Creates the ring and starts serving the topic.
    pub fn bind(self) -> Result<Publisher, BindError> {
        Publisher::create(self)
    }
}

/// Publisher statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublisherStats {
    /// Messages published.
    pub messages: u64,
    /// Wake syscalls made (doorbell sends and futex wakes). Zero while no subscriber is parked.
    pub wake_syscalls: u64,
    /// Times a loan found the ring full.
    pub full: u64,
    /// Times the publisher slept waiting for space.
    pub space_waits: u64,
    /// Gating subscribers demoted to lossy.
    pub demotions: u64,
    /// Subscribers admitted so far.
    pub admitted: u64,
    /// Connections refused (policy, protocol, overload, timeout).
    pub refused: u64,
    /// Subscribers that left or died.
    pub departed: u64,
    /// Every current subscriber.
    pub subscribers: Vec<SubscriberInfo>,
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
///   [`RecvError::Disconnected`](crate::RecvError::Disconnected). The socket file is removed.
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
    /// The topic socket; dropped (and its file removed) after the server thread ended.
    claim: Claim,
    stall_bound: Option<Duration>,
    space_waits: u64,
    max_message: usize,
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
        let max = b.max_message.unwrap_or(b.capacity / 4);
        let cfg = RingConfig::new(b.capacity, max).map_err(BindError::Config)?;
        let path = topic::resolve(&b.topic, true)?;

        let ring = Arc::new(SharedMemory::create_sealed_ring(
            "shmcast-ring",
            cfg.region_len(),
        )?);
        let ring_ro = sys::fs::reopen_readonly(ring.fd())?;
        let region = ring
            .region()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let writer = Writer::new(region, cfg).map_err(|e| std::io::Error::other(e.to_string()))?;
        drop(ring);

        let shared = Arc::new(Shared {
            writer: Mutex::new(writer),
            ring_ro,
            space: SpaceWait::new()?,
            admission: b.admission,
            handshake_timeout: b.handshake_timeout,
            max_pending: b.max_pending,
            max_subscribers: b.max_subscribers,
            wake_syscalls: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            departed: AtomicU64::new(0),
        });

        let (claim, listener) = Claim::bind(&path)?;
        let shutdown = Arc::new(sys::event::eventfd_create(true)?);
        let server = server::spawn(listener, shared.clone(), shutdown.clone())?;
        Ok(Publisher {
            shared,
            server: Some(server),
            shutdown,
            claim,
            stall_bound: b.stall_bound,
            space_waits: 0,
            max_message: cfg.max_payload(),
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

    /// Reserves `len` bytes, waiting for space as `wait` says. Deadlines count from the moment
    /// the ring is first found full, which is the call itself up to one reservation attempt.
    fn loan_until(&mut self, len: usize, wait: Wait) -> Result<Loan<'_>, LoanError> {
        let shared: &Shared = &self.shared;
        let mut guard = shared.lock();
        // The clock is read only once the ring is found full: a loan that fits at once (the
        // common case) makes no clock read. The wait and the stall count from then; a demotion
        // restarts the stall.
        let mut first_full: Option<Instant> = None;
        let mut stalled_since: Option<Instant> = None;
        let mut tokens = [0u64; wake::SPACE_EVENTS];
        loop {
            let err = match guard.try_reserve(len) {
                Ok(res) => {
                    let ptr = guard.payload_ptr(&res);
                    return Ok(Loan::new(guard, res, shared, ptr, len));
                }
                Err(e) => e,
            };
            match err {
                ReserveError::TooLarge { len, max } => {
                    return Err(LoanError::TooLarge { len, max });
                }
                // Only drop closes the writer, and drop needs `&mut self`.
                ReserveError::Closed => unreachable!("publisher closed while borrowed"),
                ReserveError::Full { .. } => {}
            }
            if wait == Wait::Never {
                return Err(LoanError::Full);
            }
            let now = Instant::now();
            let first = *first_full.get_or_insert(now);
            let deadline = match wait {
                Wait::For(timeout) => first.checked_add(timeout),
                _ => None,
            };
            if deadline.is_some_and(|d| now >= d) {
                return Err(LoanError::Timeout);
            }
            let stall_at = self.stall_bound.map(|b| stalled_since.unwrap_or(first) + b);
            if stall_at.is_some_and(|t| now >= t) {
                if let Some(id) = guard.slowest_gating() {
                    demote(shared, &mut guard, id);
                }
                stalled_since = Some(now);
                continue;
            }
            // Cannot fail: try_reserve accepted `len`.
            let sleep = guard
                .prepare_wait_for_space(len)
                .map_err(|_| LoanError::Full)?;
            drop(guard);
            let waited = if sleep {
                let until = match (deadline, stall_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let timeout = until
                    .map(|t| t.saturating_duration_since(Instant::now()))
                    .map_or(wake::PARK_RECHECK, |t| t.min(wake::PARK_RECHECK));
                self.space_waits += 1;
                shared.space.wait(&mut tokens, timeout)
            } else {
                Ok(0)
            };
            guard = shared.lock();
            guard.end_wait_for_space();
            let ready = waited.map_err(LoanError::Io)?;
            shared.space.drain(&guard, &tokens[..ready]);
        }
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

    /// A snapshot of the counters and of every subscriber.
    pub fn stats(&self) -> PublisherStats {
        let w = self.shared.lock();
        let ws = w.stats();
        PublisherStats {
            messages: ws.messages,
            wake_syscalls: self.shared.wake_syscalls.load(Ordering::Relaxed),
            full: ws.full,
            space_waits: self.space_waits,
            demotions: ws.demotions,
            admitted: self.shared.admitted.load(Ordering::Relaxed),
            refused: self.shared.refused.load(Ordering::Relaxed),
            departed: self.shared.departed.load(Ordering::Relaxed),
            subscribers: w.subscribers().collect(),
        }
    }
}

/// How long a loan waits for space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    Never,
    Forever,
    For(Duration),
}

/// Demotes `id` and wakes it so a parked subscriber learns of it.
fn demote(shared: &Shared, writer: &mut Writer<Link>, id: SubscriberId) {
    if writer.demote(id) {
        shared.wake(writer, |w, wake| w.wake_one(id, wake));
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        {
            let mut w = self.shared.lock();
            self.shared.wake(&mut w, |w, wake| w.close(wake));
        }
        let _ = sys::event::eventfd_signal(self.shutdown.as_fd());
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
        // `claim` removes the socket file when it drops, after this.
    }
}
