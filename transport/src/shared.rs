//! What the publisher and its server thread share: the writer behind a lock, the descriptors
//! handed to subscribers, the settings the server applies, and the counters both update.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use shmcast_core::{Wakeups, Writer};

use crate::policy::Admission;
use crate::wake::{self, Link, SpaceWait};

/// State shared by the publisher and its server thread.
pub(crate) struct Shared {
    /// The topic socket's path, as events name it.
    pub(crate) topic: PathBuf,
    pub(crate) writer: Mutex<Writer<Link>>,
    /// Signalled (with `writer`) each time the server thread admits a subscriber.
    pub(crate) joined: Condvar,
    /// Signalled (an eventfd of this process only) each time the server thread admits a
    /// subscriber, for waits on a reactor (`shmcast::tokio`); nobody need drain it.
    pub(crate) joined_fd: OwnedFd,
    /// Read-only descriptor of the ring, handed to subscribers.
    pub(crate) ring_ro: OwnedFd,
    /// Where the publisher waits for space; the server thread adds and removes connections.
    pub(crate) space: SpaceWait,
    pub(crate) admission: Admission,
    pub(crate) handshake_timeout: Duration,
    pub(crate) max_pending: usize,
    pub(crate) max_subscribers: Option<usize>,
    /// The publisher republishes messages imported from elsewhere (every WELCOME and INFO says so).
    pub(crate) imported: bool,
    pub(crate) wake_syscalls: AtomicU64,
    pub(crate) admitted: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) departed: AtomicU64,
    /// Messages the publisher's source lost before they reached it, as the publisher reports
    /// them ([`Publisher::note_upstream_lost`](crate::Publisher::note_upstream_lost)).
    pub(crate) upstream_lost: AtomicU64,
    /// A [`Closer`](crate::Closer) asked for the end of the stream: no loan starts any more,
    /// and a loan in progress closes the ring when it ends.
    pub(crate) closing: AtomicBool,
}

impl Shared {
    /// Whether a [`Closer`](crate::Closer) asked for the end of the stream.
    pub(crate) fn closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// The writer; a panic while it was held poisons nothing the writer relies on.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Writer<Link>> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `event` (a commit, a close, a demotion), delivers the wakeups it asks for and counts
    /// their syscalls.
    pub(crate) fn wake(
        &self,
        writer: &mut Writer<Link>,
        event: impl FnOnce(&mut Writer<Link>, &mut dyn FnMut(&Link)) -> Wakeups,
    ) {
        let calls = wake::deliver(writer, event);
        if calls > 0 {
            self.wake_syscalls.fetch_add(calls, Ordering::Relaxed);
        }
    }
}
