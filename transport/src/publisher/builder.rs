//! The publisher's settings: ring and message sizes, admission, stall bound, polling, cache
//! window, handshake limits, contract, where the topic lives.

use std::path::PathBuf;
use std::time::Duration;

use super::{DEFAULT_CACHE_WINDOW, DEFAULT_SPIN_LIMIT, DEFAULT_STALL_BOUND, Publisher};
use crate::contract::MessageType;
use crate::error::BindError;
use crate::policy::Admission;

/// Settings for a [`Publisher`].
#[derive(Clone, Debug)]
pub struct PublisherBuilder {
    pub(super) topic: String,
    pub(super) capacity: u64,
    pub(super) max_message: Option<u64>,
    pub(super) admission: Admission,
    pub(super) stall_bound: Option<Duration>,
    pub(super) spin_limit: Duration,
    pub(super) cache_window: u64,
    pub(super) handshake_timeout: Duration,
    pub(super) max_pending: usize,
    pub(super) max_subscribers: Option<usize>,
    pub(super) message: MessageType,
    pub(super) imported: bool,
    pub(super) directory: Option<PathBuf>,
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

    /// Who may subscribe (default: processes of our own uid), checked against each
    /// subscriber's credentials before anything is sent to it. Admitting other uids also makes
    /// the socket file writable by everyone (mode 0666 instead of 0600), since connecting needs
    /// that; the topic directory stays private, so give such a topic as a socket path in a
    /// directory the other users can enter:
    ///
    /// ```no_run
    /// use shmcast::{Admission, Publisher};
    /// // /srv/feeds: a directory the subscribers' users may enter (mode 0755, say).
    /// let publisher = Publisher::builder("/srv/feeds/ticks")
    ///     .admission(Admission::Uids(vec![1001, 1002]))
    ///     .bind()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Subscribers of another uid must trust this publisher's uid in turn
    /// ([`SubscriberBuilder::publisher`](crate::SubscriberBuilder::publisher)).
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
    /// than [`MAX_SPIN_LIMIT`](crate::MAX_SPIN_LIMIT) (10 ms) counts as that.
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
    /// [`MAX_CONTRACT_NAME`](crate::MAX_CONTRACT_NAME) bytes or holds a control or
    /// direction-override character, an alignment that is not a power of two up to 16, or a Pod
    /// type larger than the maximum message.
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
    /// as given, wherever this points. A relative directory (or socket path) is taken from this
    /// process's working directory when `bind` runs, as any relative path, and kept absolute:
    /// [`Publisher::path`](crate::Publisher::path) names it so, and the publisher removes its
    /// socket there even if the process changes directory later (unlike `SHMCAST_DIR`, which
    /// every process of a session inherits whatever its working directory, and which must be
    /// absolute).
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
