//! The async publisher: a [`Publisher`] whose waits (for space, for subscribers) happen in
//! tokio's reactor.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;

use crate::error::{BindError, LoanError, WaitError};
use crate::full_wait::{self, FullWait, Wait};
use crate::loan::{Loan, PodLoan};
use crate::publisher::{Publisher, PublisherStats};
use crate::shared::Shared;
use crate::sys;
use crate::wake;

/// A descriptor the publisher owns, watched by the reactor. It does not own the descriptor:
/// [`AsyncPublisher`] drops its `AsyncFd`s (deregistering them) before the publisher that
/// holds the descriptors.
#[derive(Debug)]
struct Watched(RawFd);

impl AsRawFd for Watched {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers `fd` (one of the publisher's own descriptors) with the current reactor.
fn watch(fd: RawFd) -> io::Result<AsyncFd<Watched>> {
    // SAFETY: `fd` is a descriptor of the publisher's shared state (its space set or its
    // admission eventfd), open until that state is dropped; AsyncPublisher's field order drops
    // this AsyncFd, deregistering it, before the publisher, and `Watched` always returns `fd`.
    unsafe { AsyncFd::register_with_interest(Watched(fd), Interest::READABLE) }
        .map_err(io::Error::from)
}

/// A [`Publisher`] for tokio: waits for space and for subscribers by awaiting, never blocking
/// a runtime thread.
///
/// Created from a publisher with [`new`](Self::new) (or [`bind`](Self::bind)) inside a tokio
/// runtime. Everything else of the publisher is at [`get_ref`](Self::get_ref) and
/// [`get_mut`](Self::get_mut). A [`Loan`] holds the publisher's writer and is not `Send`:
/// fill and publish it in a block that ends before the next `.await`. The compiler counts a
/// loan as alive to the end of its block even after `publish` consumed it, so a spawned task
/// that awaits after `publish` in the same block does not compile.
///
/// ```no_run
/// use shmcast::Publisher;
/// use shmcast::tokio::AsyncPublisher;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut publisher = AsyncPublisher::new(Publisher::builder("ticks").capacity(1 << 20).bind()?)?;
/// let task = tokio::spawn(async move {
///     publisher.wait_for_subscribers(1).await;
///     for i in 0u64..1000 {
///         {
///             let mut loan = publisher.loan(8).await?;
///             loan.copy_from_slice(&i.to_le_bytes());
///             loan.publish();
///         }
///         tokio::time::sleep(Duration::from_millis(1)).await;
///     }
///     Ok::<_, shmcast::LoanError>(())
/// });
/// task.await??;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncPublisher {
    // Dropped before `inner`, whose descriptors they watch.
    space: AsyncFd<Watched>,
    joined: AsyncFd<Watched>,
    inner: Publisher,
}

impl AsyncPublisher {
    /// Registers a publisher's waits with the current runtime's reactor.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as tokio's `AsyncFd` does).
    pub fn new(publisher: Publisher) -> io::Result<AsyncPublisher> {
        let shared = publisher.shared();
        let space = watch(shared.space.fd().as_raw_fd())?;
        let joined = watch(shared.joined_fd.as_fd().as_raw_fd())?;
        Ok(AsyncPublisher {
            space,
            joined,
            inner: publisher,
        })
    }

    /// A publisher on `topic` with default settings ([`Publisher::bind`]), registered with the
    /// current runtime's reactor.
    pub fn bind(topic: &str) -> Result<AsyncPublisher, BindError> {
        Ok(AsyncPublisher::new(Publisher::bind(topic)?)?)
    }

    /// Lends a writable `len`-byte buffer inside the ring, awaiting space while gating
    /// subscribers hold it (up to the stall bound, if configured, after which the slowest is
    /// demoted), as [`Publisher::loan`] waits.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: nothing is reserved until the poll that returns the loan, and a wait that is
    /// dropped withdraws its announcement (subscribers stop ringing for it).
    pub async fn loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.inner.check_len(len)?;
        self.wait_for_space(len, Wait::Forever).await?;
        self.inner.try_loan(len)
    }

    /// Like [`loan`](Self::loan), giving up with [`LoanError::Timeout`] after `timeout`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`loan`](Self::loan).
    pub async fn loan_timeout(
        &mut self,
        len: usize,
        timeout: Duration,
    ) -> Result<Loan<'_>, LoanError> {
        self.inner.check_len(len)?;
        self.wait_for_space(len, Wait::For(timeout)).await?;
        self.inner.try_loan(len)
    }

    /// Like [`Publisher::loan_up_to`], awaiting space for `max` bytes.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`loan`](Self::loan).
    pub async fn loan_up_to(&mut self, max: usize) -> Result<Loan<'_>, LoanError> {
        self.wait_for_space(max, Wait::Forever).await?;
        self.inner.try_loan_up_to(max)
    }

    /// Lends a buffer if the ring has room now ([`Publisher::try_loan`]).
    pub fn try_loan(&mut self, len: usize) -> Result<Loan<'_>, LoanError> {
        self.inner.try_loan(len)
    }

    /// Copies `payload` into the ring and publishes it, awaiting space like
    /// [`loan`](Self::loan).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future has published nothing; a completed one published the
    /// whole message.
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), LoanError> {
        let mut loan = self.loan(payload.len()).await?;
        loan.copy_from_slice(payload);
        loan.publish();
        Ok(())
    }

    /// Lends a buffer for one `T`, to be filled in place, awaiting space like
    /// [`loan`](Self::loan); checked against the topic's declared Pod type as
    /// [`Publisher::loan_pod`] checks it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`loan`](Self::loan).
    pub async fn loan_pod<T: bytemuck::Pod>(&mut self) -> Result<PodLoan<'_, T>, LoanError> {
        self.inner.check_pod::<T>()?;
        Ok(PodLoan::new(self.loan(size_of::<T>()).await?))
    }

    /// Publishes one `T`, awaiting space like [`loan`](Self::loan); checked against the topic's
    /// declared Pod type as [`Publisher::send_pod`] checks it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`send`](Self::send).
    pub async fn send_pod<T: bytemuck::Pod>(&mut self, value: &T) -> Result<(), LoanError> {
        self.inner.check_pod::<T>()?;
        self.send(bytemuck::bytes_of(value)).await
    }

    /// Awaits at least `n` connected subscribers and returns how many are (see
    /// [`Publisher::wait_for_subscribers`] for why to call it before the first message). Bound it
    /// with `tokio::time::timeout` if needed. If a [`Closer`](crate::Closer) ends the stream
    /// meanwhile, nobody can connect any more: [`WaitError`] with `closed` set, and how many
    /// were connected.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    ///
    /// # Panics
    ///
    /// On a runtime without its time driver (see the [module](super) docs).
    pub async fn wait_for_subscribers(&self, n: usize) -> Result<usize, WaitError> {
        let started = Instant::now();
        loop {
            let connected = self.inner.subscriber_count();
            if connected >= n {
                return Ok(connected);
            }
            if self.inner.shared().closing() {
                return Err(WaitError {
                    wanted: n,
                    connected,
                    waited: started.elapsed(),
                    closed: true,
                });
            }
            // Bounded slices, as the blocking wait: the server thread signals admissions only.
            match ::tokio::time::timeout(wake::PARK_RECHECK, self.joined.readable()).await {
                Ok(Ok(mut ready)) => {
                    let _ = sys::event::eventfd_drain(self.inner.shared().joined_fd.as_fd());
                    ready.clear_ready();
                }
                Ok(Err(_)) => ::tokio::time::sleep(wake::PARK_RECHECK).await,
                Err(_) => {}
            }
        }
    }

    /// Awaits room for `len` bytes as `wait` says, in the reactor.
    async fn wait_for_space(&mut self, len: usize, wait: Wait) -> Result<(), LoanError> {
        // A loop of sends into a ring with room would otherwise never give the thread back:
        // take part in tokio's cooperative budget, as its own channels do (a yield only once the
        // task's budget is spent; nothing is reserved yet, so a future dropped here loses
        // nothing).
        ::tokio::task::coop::consume_budget().await;
        let mut full = FullWait::new(wait, self.inner.stall_bound()).in_event_loop();
        loop {
            let Some(timeout) = self.inner.space_step(len, &mut full)? else {
                return Ok(());
            };
            let announced = Announced(self.inner.shared());
            let woke = ::tokio::time::timeout(timeout, self.space.readable()).await;
            // Takes the doorbells before telling the reactor the set is drained.
            drop(announced);
            match woke {
                Ok(Ok(mut ready)) => ready.clear_ready(),
                Ok(Err(e)) => return Err(LoanError::Io(e)),
                // The slice ended: `space_step` looks again, demotes or gives up.
                Err(_) => {}
            }
        }
    }

    /// The publisher inside.
    pub fn get_ref(&self) -> &Publisher {
        &self.inner
    }

    /// The publisher inside (its blocking loans block the thread: not for a runtime thread).
    pub fn get_mut(&mut self) -> &mut Publisher {
        &mut self.inner
    }

    /// Deregisters from the reactor and returns the publisher.
    pub fn into_inner(self) -> Publisher {
        let AsyncPublisher {
            space,
            joined,
            inner,
        } = self;
        drop((space, joined));
        inner
    }

    /// Number of connected subscribers.
    pub fn subscriber_count(&self) -> usize {
        self.inner.subscriber_count()
    }

    /// A snapshot of the counters and of every subscriber ([`Publisher::stats`]).
    pub fn stats(&self) -> PublisherStats {
        self.inner.stats()
    }
}

/// A wait for space announced to the subscribers; withdrawn when dropped, also when the
/// future waiting is.
struct Announced<'a>(&'a Shared);

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        full_wait::end_now(self.0);
    }
}
