//! Zero-copy one-to-many messaging between processes on one Linux machine.
//!
//! A [`Publisher`] writes each message once into a ring in a sealed memfd; any number of
//! [`Subscriber`] processes read it in place, each with its own cursor. A subscriber with nothing
//! to read parks and is woken with one futex wake for all sleepers (or, in an event loop, through
//! its descriptor); a busy one costs the publisher no syscall. The memfds travel over a unix
//! socket, so nothing is left in `/dev/shm` when a process dies. A *gating* subscriber never misses a message (the publisher waits for it, up to an
//! optional stall bound); a *lossy* one never slows the publisher and is told exactly how many
//! messages it missed.
//!
//! | module | role |
//! |---|---|
//! | `publisher` | [`Publisher`], its builder, loans, statistics |
//! | `subscriber` | [`Subscriber`], its builder, [`Sample`], statistics |
//! | `control` | the publisher's control thread: accept, credentials, handshake, hang-ups |
//! | `handshake` | the versioned control messages |
//! | `topic` | topic names and their private socket directory |
//! | `shm` | sealed memfds and their mappings |
//! | `sys` | every syscall |
//!
//! ```no_run
//! use shmcast::{Publisher, Subscriber};
//! use std::time::Duration;
//!
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Tick { seq: u64, price: f64 }
//!
//! // In one process:
//! let mut publisher = Publisher::bind("ticks")?;
//! publisher.send_pod(&Tick { seq: 1, price: 101.5 })?;
//!
//! // In another:
//! let mut subscriber = Subscriber::builder("ticks").connect_timeout(Duration::from_secs(5)).connect()?;
//! let sample = subscriber.recv()?;
//! let tick: &Tick = sample.as_pod()?;
//! println!("{}", tick.price);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod control;
mod error;
mod handshake;
mod publisher;
mod shm;
mod subscriber;
mod sys;
mod topic;

pub use error::{BindError, ConnectError, LoanError, PodError, RecvError, TopicError};
pub use publisher::{Admission, Loan, PodLoan, Publisher, PublisherBuilder, PublisherStats};
pub use shmcast_core::{FrameError, Mode, Start, SubscriberId, SubscriberInfo};
pub use subscriber::{Sample, Subscriber, SubscriberBuilder, SubscriberStats};

/// How long a parked subscriber or a publisher waiting for space sleeps before re-checking by
/// itself. Wakeups are never lost between correct peers (the loom models check it); this bounds
/// how late a subscriber blocked in `recv` notices a publisher that died without closing (a
/// futex has no hang-up), and what a peer that withholds or floods doorbells can do: delay,
/// never hang.
pub(crate) const PARK_RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// How many times a receive that may not sleep (a lapped lossy subscriber whose resume point is
/// not written yet) looks again at once before it starts to nap for [`STUCK_NAP`] between
/// looks: `recv` in a loop of its own, `try_recv` by arming the descriptor's timer. A writer
/// racing the reader settles within these; a ring that cannot progress (a publisher that died
/// mid-reservation, or a hostile one) then costs a wakeup per nap instead of a spinning core.
pub(crate) const STUCK_SPINS: u32 = 64;

/// The nap of a receive stuck on a ring that does not progress; a hang-up ends it at once.
pub(crate) const STUCK_NAP: std::time::Duration = std::time::Duration::from_millis(1);

#[cfg(feature = "test-support")]
pub mod test_support;
