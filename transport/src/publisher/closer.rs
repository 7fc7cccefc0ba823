//! Ending a publisher's stream from another thread: for a process that leaves on a signal,
//! whose main thread may be busy (blocked reading its input, or waiting for space) and never
//! gets to drop the publisher.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, TryLockError, Weak};
use std::time::{Duration, Instant};

use crate::claim::Claim;
use crate::shared::Shared;

/// Ends a [`Publisher`](crate::Publisher)'s stream from any thread
/// ([`Publisher::closer`](crate::Publisher::closer)), as dropping the publisher would: the
/// socket file goes, then every subscriber receives what was committed and then
/// [`Disconnected`](crate::RecvError::Disconnected), with
/// [`StreamEnd::Closed`](crate::StreamEnd::Closed) rather than `Vanished`. Meant for a process
/// about to exit on a signal. No loan starts after it ([`LoanError::Closed`](crate::LoanError::Closed)),
/// waits for space and for subscribers end at once, and a loan in progress (which holds the
/// writer) ends the stream when it is published or dropped: what it publishes is the last
/// message subscribers receive.
///
/// ```no_run
/// let mut publisher = shmcast::Publisher::bind("ticks")?;
/// let closer = publisher.closer();
/// std::thread::spawn(move || {
///     // ... wait for SIGTERM (for instance with `sigwait` in this thread) ...
///     closer.close(std::time::Duration::from_millis(100));
///     std::process::exit(0);
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Closer {
    /// Weak: a closer does not keep a dropped publisher's ring and descriptors alive.
    shared: Weak<Shared>,
    claim: Arc<Mutex<Claim>>,
    /// The process the publisher belongs to: a copy inherited across `fork` closes nothing.
    pid: u32,
}

impl Closer {
    pub(crate) fn new(shared: &Arc<Shared>, claim: Claim) -> Closer {
        Closer {
            shared: Arc::downgrade(shared),
            claim: Arc::new(Mutex::new(claim)),
            pid: std::process::id(),
        }
    }

    /// Ends the stream, waiting at most `within` for the publisher's writer, which a loan in
    /// progress holds (a loan waiting for space does not). Returns whether the stream is ended
    /// now (also when the publisher was dropped already); `false` if a loan in progress kept
    /// the writer that long: the stream then ends when that loan is published or dropped. The
    /// socket file is removed either way. In a child forked from the publisher's process it
    /// does nothing and returns `false`: the stream is the parent's.
    pub fn close(&self, within: Duration) -> bool {
        if std::process::id() != self.pid {
            return false;
        }
        if let Ok(mut claim) = self.claim.lock() {
            claim.release();
        }
        let Some(shared) = self.shared.upgrade() else {
            return true;
        };
        shared.closing.store(true, Ordering::Release);
        // Waits for space and for subscribers look again, and find the stream ending.
        shared.space.kick();
        shared.joined.notify_all();
        let _ = crate::sys::event::eventfd_signal(shared.joined_fd.as_fd());
        let deadline = Instant::now() + within;
        loop {
            match shared.writer.try_lock() {
                Ok(mut w) => {
                    shared.wake(&mut w, |w, wake| w.close(wake));
                    return true;
                }
                Err(TryLockError::Poisoned(p)) => {
                    let mut w = p.into_inner();
                    shared.wake(&mut w, |w, wake| w.close(wake));
                    return true;
                }
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(TryLockError::WouldBlock) => return false,
            }
        }
    }
}

impl std::fmt::Debug for Closer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Closer")
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}
