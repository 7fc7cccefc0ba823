//! Subscribers and publishers for tokio (cargo feature `tokio`): they await where the blocking
//! API would block, and never block a runtime thread.
//!
//! * [`AsyncSubscriber`]: [`connect_async`](crate::SubscriberBuilder::connect_async) waits for
//!   a publisher up to its `connect_timeout`, with an async backoff
//!   ([`connect`](AsyncSubscriber::connect), with no timeout, fails at once if there is none);
//!   [`recv`](AsyncSubscriber::recv) returns the in-place [`Sample`] (a view of
//!   the ring for a gating subscriber, exactly as [`Subscriber::recv`] does);
//!   [`recv_timeout`](AsyncSubscriber::recv_timeout); [`into_stream`](AsyncSubscriber::into_stream)
//!   gives a [`Stream`](futures_core::Stream) of owned [`Message`]s.
//! * [`AsyncPublisher`]: [`loan`](AsyncPublisher::loan) awaits space under gating backpressure,
//!   [`wait_for_subscribers`](AsyncPublisher::wait_for_subscribers) awaits subscribers.
//!
//! Both are built on the subscriber's descriptor contract (see [`Subscriber`]'s `AsFd`): the
//! descriptor is readable whenever a receive would not return `Empty`, so a subscriber waits in
//! tokio's reactor ([`AsyncFd`](::tokio::io::unix::AsyncFd)) and a message that is already
//! there costs neither a syscall nor a trip through the reactor. The publisher waits for space
//! on its space set, also registered with the reactor. Every future is `Send`: they run on the
//! multi-thread runtime as well as on a current-thread one (any number of subscribers in one).
//!
//! # The runtime
//!
//! Any tokio runtime, current-thread or multi-thread, with its IO and time drivers: those of
//! `#[tokio::main]` and `#[tokio::test]`, or a `Builder` with `enable_all()`. The waits bounded in
//! time (a loan waiting for space, [`recv_timeout`](AsyncSubscriber::recv_timeout),
//! [`wait_for_subscribers`](AsyncPublisher::wait_for_subscribers), a `connect_async` that waits
//! for a publisher) use tokio's timers, and panic as they do on a runtime built without
//! `enable_time()`. A publish that finds room takes part in tokio's cooperative scheduling, as
//! tokio's own channels do: a loop of sends gives the thread back to other tasks now and then,
//! even when it never has to wait.
//!
//! # Cancellation
//!
//! Every future here can be dropped at any await point (in `tokio::select!`, under
//! `tokio::time::timeout`) without losing a message or leaking anything; each method says so.
//! A receive takes a message only in the same poll that returns it.
//!
//! # Overload and failure
//!
//! As for the blocking API: a stalled runtime is a stalled subscriber, which delays a gating
//! publisher by at most its stall bound and is then demoted ([`RecvError::Demoted`]); a lossy
//! one is told [`RecvError::Lagged`]; the end of the stream is [`RecvError::Disconnected`]
//! (a stream ends with `None`).
//!
//! ```no_run
//! use shmcast::RecvError;
//! use shmcast::tokio::AsyncSubscriber;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut sub = AsyncSubscriber::builder("ticks")
//!     .connect_timeout(Duration::from_secs(5))
//!     .connect_async()
//!     .await?;
//! loop {
//!     match sub.recv().await {
//!         Ok(sample) => println!("message {} of {} bytes", sample.seq(), sample.len()),
//!         Err(RecvError::Lagged(n)) => eprintln!("missed {n}"),
//!         Err(RecvError::Disconnected) => break,
//!         Err(e) => return Err(e.into()),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod publisher;
mod stream;
mod subscriber;

pub use publisher::AsyncPublisher;
pub use stream::{Message, Messages};
pub use subscriber::AsyncSubscriber;

#[cfg(doc)]
use crate::{RecvError, Sample, Subscriber};
