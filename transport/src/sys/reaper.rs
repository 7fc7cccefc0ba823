//! Descriptors a peer sent, closed off the receiving thread.
//!
//! Closing a descriptor runs what its file does on its last close, and the peer that sent it
//! chose the file: a TCP socket with `SO_LINGER` and unsent data to a peer that never reads
//! waits out its linger time, however long; a FUSE file waits for its daemon. A descriptor that
//! arrived from a peer ([`Received`]) is therefore closed, unless it is kept, by a thread of its
//! own, so that neither the publisher's server thread nor a connecting subscriber waits for it.
//! The one kind of descriptor the transport keeps, shared memory that passed its seal check,
//! closes at once ([`Received::keep`]).
//!
//! One thread per process, started on first use, closes them in turn. A close that has waited
//! [`STUCK_AFTER`] leaves its thread behind: the next descriptor starts a new one, so one
//! lingering socket holds up no other close (up to [`MAX_STUCK`] such threads at once, beyond
//! which descriptors queue behind the newest). A forked child starts its own. Where no thread
//! can be started, the descriptor is closed where it is dropped.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// A descriptor that arrived from a peer: closed by the reaper thread when dropped.
#[derive(Debug)]
pub(crate) struct Received(Option<OwnedFd>);

impl Received {
    pub(crate) fn new(fd: OwnedFd) -> Self {
        Received(Some(fd))
    }

    /// The descriptor, to keep: only for one found to be shared memory (a memfd whose seals
    /// were checked), whose close never waits.
    pub(crate) fn keep(mut self) -> OwnedFd {
        self.0.take().expect("a received descriptor is kept once")
    }
}

impl AsFd for Received {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0
            .as_ref()
            .expect("a kept descriptor is no longer received")
            .as_fd()
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            close_elsewhere(fd);
        }
    }
}

/// A close that has taken this long marks its reaper stuck: later descriptors go to a new one.
const STUCK_AFTER: Duration = Duration::from_millis(50);
/// The most reapers left stuck at once; beyond it, descriptors queue behind the newest.
const MAX_STUCK: usize = 16;

/// One reaper thread: its queue, and when its current close started.
struct Reaper {
    /// The process that started it (a forked child has no reaper running).
    pid: u32,
    queue: Sender<OwnedFd>,
    /// Nanoseconds from [`epoch`] at which its current close started; 0 while idle.
    busy_since: Arc<AtomicU64>,
}

impl Reaper {
    fn stuck(&self) -> bool {
        match self.busy_since.load(Ordering::Relaxed) {
            0 => false,
            since => now() > since + STUCK_AFTER.as_nanos() as u64,
        }
    }
}

/// The reaper taking descriptors now.
static REAPER: Mutex<Option<Reaper>> = Mutex::new(None);
/// Reapers replaced while stuck in a close, not yet finished.
static STUCK: AtomicUsize = AtomicUsize::new(0);

/// A fixed instant of this process, for [`Reaper::busy_since`].
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`], at least 1 (0 means idle).
fn now() -> u64 {
    (epoch().elapsed().as_nanos() as u64).max(1)
}

/// Hands `fd` to this process's reaper thread, starting one if there is none, or if the one
/// there has been stuck in a close for [`STUCK_AFTER`] (while fewer than [`MAX_STUCK`] are).
fn close_elsewhere(fd: OwnedFd) {
    let pid = std::process::id();
    let mut current = REAPER.lock().unwrap_or_else(PoisonError::into_inner);
    let fd = match current.as_ref() {
        Some(r) if r.pid == pid && (!r.stuck() || STUCK.load(Ordering::Relaxed) >= MAX_STUCK) => {
            match r.queue.send(fd) {
                Ok(()) => return,
                Err(mpsc::SendError(fd)) => fd,
            }
        }
        _ => fd,
    };
    let (queue, closes) = mpsc::channel::<OwnedFd>();
    let busy_since = Arc::new(AtomicU64::new(0));
    let busy = busy_since.clone();
    let started = std::thread::Builder::new()
        .name("shmcast-reaper".into())
        .spawn(move || reap(&closes, &busy));
    match started {
        Ok(_) => {
            let _ = queue.send(fd);
            let replaced = current.replace(Reaper {
                pid,
                queue,
                busy_since,
            });
            // A stuck reaper of this process ends once its close does and its queue is empty.
            if replaced.is_some_and(|r| r.pid == pid) {
                STUCK.fetch_add(1, Ordering::Relaxed);
            }
        }
        // No thread to be had (a thread limit): close here rather than keep it.
        Err(_) => drop(fd),
    }
}

/// A reaper thread: closes what it is handed until it is replaced and has closed everything.
fn reap(closes: &mpsc::Receiver<OwnedFd>, busy_since: &AtomicU64) {
    for fd in closes {
        busy_since.store(now(), Ordering::Relaxed);
        drop(fd);
        busy_since.store(0, Ordering::Relaxed);
    }
    // Its sender went with the replacement: it was counted stuck. (The last reaper of a
    // process never gets here.)
    STUCK.fetch_sub(1, Ordering::Relaxed);
}
