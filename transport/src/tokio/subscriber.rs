//! The async subscriber: a [`Subscriber`] whose descriptor waits in tokio's reactor.

#![allow(unsafe_code)]

use std::io;
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;

use super::stream::Messages;
use crate::connect;
use crate::contract::Contract;
use crate::deadline;
use crate::error::{ConnectError, RecvError};
use crate::subscriber::{Got, Latest, Sample, Subscriber, SubscriberBuilder, SubscriberStats};

/// Longest pause between two attempts to find a publisher (as the blocking connect).
const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// A [`Subscriber`] for tokio: receives by awaiting, never blocking a runtime thread.
///
/// Created by [`SubscriberBuilder::connect_async`], [`AsyncSubscriber::connect`] or, from a
/// connected subscriber, [`AsyncSubscriber::new`], inside a tokio runtime (its descriptor is
/// registered with that runtime's reactor).
///
/// ```no_run
/// use shmcast::tokio::AsyncSubscriber;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut sub = AsyncSubscriber::builder("ticks").connect_async().await?;
/// loop {
///     tokio::select! {
///         got = sub.recv() => println!("message {}", got?.seq()),
///         _ = tokio::time::sleep(Duration::from_secs(1)) => println!("quiet for a second"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncSubscriber {
    fd: AsyncFd<Subscriber>,
}

impl AsyncSubscriber {
    /// Settings for a subscriber of `topic`; finish with
    /// [`connect_async`](SubscriberBuilder::connect_async).
    pub fn builder(topic: impl Into<String>) -> SubscriberBuilder {
        SubscriberBuilder::new(topic)
    }

    /// A gating subscriber of `topic` with default settings (no publisher: fails at once).
    ///
    /// Cancel safety: as [`SubscriberBuilder::connect_async`].
    pub async fn connect(topic: &str) -> Result<AsyncSubscriber, ConnectError> {
        SubscriberBuilder::new(topic).connect_async().await
    }

    /// Registers a connected subscriber with the current runtime's reactor.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as tokio's `AsyncFd` does).
    pub fn new(sub: Subscriber) -> io::Result<AsyncSubscriber> {
        // The descriptor is the subscriber's own epoll set, open until the subscriber is dropped,
        // and `as_raw_fd` returns that same descriptor for the subscriber's whole life.
        // SAFETY: `AsyncFd` owns the subscriber, so it deregisters the descriptor (on drop or
        // `into_inner`) before the subscriber can close it.
        let fd = unsafe { AsyncFd::register_with_interest(sub, Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(AsyncSubscriber { fd })
    }

    /// Receives the next message, awaiting one; the [`Sample`] is the ring itself for a gating
    /// subscriber (released when dropped), a validated copy for a lossy one. Errors as
    /// [`Subscriber::recv`]: `Lagged`, `Demoted`, `Disconnected` at the end of the stream.
    ///
    /// A message already waiting is returned without a syscall or a trip through the reactor.
    ///
    /// A gating sample holds the publisher back for as long as it lives. Do not keep it across
    /// a long `.await` (a write to a slow socket, say): copy what you need and drop it. Held
    /// past the publisher's stall bound, it no longer holds anything back, and the publisher
    /// may write over it; [`Sample::is_intact`] tells whether it did.
    ///
    /// In `tokio::select!` the sample's borrow of the subscriber lasts through every branch,
    /// so the other branches cannot use the subscriber; [`recv_timeout`](Self::recv_timeout)
    /// covers the usual "nothing for a while" branch without one.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a message is taken only in the poll that returns it, so dropping the future
    /// (in `tokio::select!`, under a timeout) loses nothing; the next receive gets it.
    pub async fn recv(&mut self) -> Result<Sample<'_>, RecvError> {
        let got = self.next().await?;
        Ok(self.fd.get_mut().sample(got))
    }

    /// Like [`recv`](Self::recv), giving up with [`RecvError::Timeout`] after `timeout`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`recv`](Self::recv).
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Result<Sample<'_>, RecvError> {
        let got = match ::tokio::time::timeout(timeout, self.next()).await {
            Ok(got) => got?,
            Err(_) => return Err(RecvError::Timeout),
        };
        Ok(self.fd.get_mut().sample(got))
    }

    /// Receives the newest message, awaiting one this subscriber has not received; every older
    /// message not yet received is skipped and counted ([`Latest::skipped`]), as
    /// [`Subscriber::recv_latest`] does: for tasks that want the current value, not the history.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut camera = shmcast::tokio::AsyncSubscriber::builder("camera")
    ///     .lossy()
    ///     .connect_async()
    ///     .await?;
    /// let frame = camera.recv_latest().await?;
    /// println!("frame {} ({} older ones skipped)", frame.seq(), frame.skipped());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a message is taken only in the poll that returns it, so a dropped future
    /// loses nothing that the next latest receive would return.
    pub async fn recv_latest(&mut self) -> Result<Latest<'_>, RecvError> {
        let before = self.fd.get_ref().next_seq();
        let got = loop {
            let mut ready = self.fd.readable_mut().await.map_err(RecvError::Io)?;
            match ready.get_inner_mut().try_next_latest()? {
                Some(got) => break got,
                // `Empty`: parked with its own signal, as for `recv`.
                None => ready.clear_ready(),
            }
        };
        Ok(self.fd.get_mut().latest(got, before))
    }

    /// Receives the next message if one is ready, without waiting ([`Subscriber::try_recv`]).
    pub fn try_recv(&mut self) -> Result<Sample<'_>, RecvError> {
        self.fd.get_mut().try_recv()
    }

    /// The subscriber of an ended [`Messages`] stream, or of one given back by
    /// [`Messages::into_inner`].
    pub(super) fn from_fd(fd: AsyncFd<Subscriber>) -> AsyncSubscriber {
        AsyncSubscriber { fd }
    }

    /// Owned messages as a [`Stream`](futures_core::Stream), for those who want one: each
    /// message is copied out of the ring (use [`recv`](Self::recv) to read in place).
    pub fn into_stream(self) -> Messages {
        Messages::new(self.fd)
    }

    /// Awaits readiness until the subscriber finds something; what it found, not yet lent out.
    async fn next(&mut self) -> Result<Got, RecvError> {
        loop {
            // Tokio caches readiness: while messages keep coming this returns at once and the
            // receive below finds the next one without a syscall.
            let mut ready = self.fd.readable_mut().await.map_err(RecvError::Io)?;
            match ready.get_inner_mut().try_next()? {
                Some(got) => return Ok(got),
                // `Empty`: the subscriber parked with its own signal, so the next message makes
                // the descriptor readable again (a new edge for the reactor).
                None => ready.clear_ready(),
            }
        }
    }

    /// The subscriber inside.
    pub fn get_ref(&self) -> &Subscriber {
        self.fd.get_ref()
    }

    /// The subscriber inside, for what only the blocking API has (latest reads, `for_each_ready`).
    /// Its descriptor contract holds whatever it is used for, so awaiting again afterwards is
    /// correct.
    pub fn get_mut(&mut self) -> &mut Subscriber {
        self.fd.get_mut()
    }

    /// Deregisters from the reactor and returns the subscriber.
    pub fn into_inner(self) -> Subscriber {
        self.fd.into_inner()
    }

    /// What the publisher declared the topic carries.
    pub fn contract(&self) -> &Contract {
        self.fd.get_ref().contract()
    }

    /// How the stream ended, once it has ([`Subscriber::stream_end`]): the publisher ended it,
    /// or its process went away without ending it.
    pub fn stream_end(&self) -> Option<crate::StreamEnd> {
        self.fd.get_ref().stream_end()
    }

    /// Whether the publisher still gates on this subscriber.
    pub fn is_gating(&self) -> bool {
        self.fd.get_ref().is_gating()
    }

    /// Counters.
    pub fn stats(&self) -> SubscriberStats {
        self.fd.get_ref().stats()
    }
}

impl SubscriberBuilder {
    /// Connects without blocking the runtime, then registers the subscriber with the current
    /// runtime's reactor. Waits for a publisher up to the
    /// [`connect_timeout`](Self::connect_timeout) with an async backoff (1 to 50 ms between
    /// attempts, as [`connect`](Self::connect)); each attempt, whose handshake is bounded by the
    /// [`handshake_timeout`](Self::handshake_timeout), runs on tokio's blocking pool. A
    /// publisher that goes away or stops answering during the handshake is waited out as a
    /// missing one, as `connect` does.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the connection: an attempt under way ends on the blocking
    /// pool within the handshake timeout and its subscriber is dropped (the publisher sees it
    /// leave); nothing stays open. Until it ends, it holds up the runtime's shutdown (a runtime
    /// waits for its blocking pool when dropped, as `#[tokio::main]` does when `main` returns):
    /// against a publisher that stopped answering, up to the handshake timeout (5 s by
    /// default). A program that gives up on connects and must exit quickly sets a shorter
    /// [`handshake_timeout`](Self::handshake_timeout), or ends with
    /// `Runtime::shutdown_timeout`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime; when it has to wait for a publisher, on a runtime without its
    /// time driver (see the [module](crate::tokio) docs).
    pub async fn connect_async(self) -> Result<AsyncSubscriber, ConnectError> {
        let (wait, once) = self.split_connect_wait();
        let deadline = wait.map(deadline::after);
        let mut backoff = Duration::from_millis(1);
        loop {
            let attempt = once.clone();
            let got = match ::tokio::task::spawn_blocking(move || attempt.connect()).await {
                Ok(got) => got,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => return Err(ConnectError::from(io::Error::other(e))),
            };
            match got {
                Ok(sub) => return Ok(AsyncSubscriber::new(sub)?),
                // No publisher yet, or one that went away or stopped answering during the
                // handshake: waited out alike, as `connect` does.
                Err(e)
                    if (matches!(e, ConnectError::NoPublisher { .. })
                        || connect::publisher_gone(&e))
                        && deadline.is_some_and(|d| d > Instant::now()) =>
                {
                    let left = deadline.map_or(Duration::ZERO, |d| {
                        d.saturating_duration_since(Instant::now())
                    });
                    ::tokio::time::sleep(backoff.min(left)).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
    }
}
