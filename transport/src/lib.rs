//! Zero-copy one-to-many messaging between processes on one Linux machine.
//!
//! A [`Publisher`] writes each message once into a ring in a sealed memfd; any number of
//! [`Subscriber`] processes read it in place, each with its own cursor. A subscriber with nothing
//! to read parks and is woken with one futex wake for all sleepers (or, in an event loop, through
//! its descriptor); a busy one costs the publisher no syscall. The memfds travel over a unix
//! socket, so nothing is left in `/dev/shm` when a process dies.
//!
//! # Delivery: gating and lossy subscribers
//!
//! Each subscriber chooses its contract when it connects
//! ([`SubscriberBuilder::mode`], [`Mode`]):
//!
//! * **Gating** (the default, reliable): the publisher never overwrites a message this subscriber
//!   has not released. When the ring is full, [`Publisher::loan`] waits,
//!   [`Publisher::loan_timeout`] waits up to its timeout, and [`Publisher::try_loan`] returns
//!   [`LoanError::Full`]. Messages are handed out in place: a [`Sample`] is a view of the ring,
//!   released when dropped.
//! * **Lossy**: never slows the publisher. A lossy subscriber that falls a ring behind receives
//!   [`RecvError::Lagged`] with the exact number of messages it missed, then continues in order.
//!   It reads by validated copy, so it is never handed bytes that were overwritten while it read.
//!
//! # Overload and failure
//!
//! * **Stall bound.** A gating subscriber that stops releasing holds the publisher back. With
//!   [`PublisherBuilder::stall_bound`] (5 s by default), once the ring has stayed full that long
//!   (counted across loans: one that waits, timed ones that give up, async ones dropped in a
//!   `select!`, tried ones) the next loan demotes the slowest gating subscriber to lossy and
//!   continues; the demoted subscriber receives [`RecvError::Demoted`] once, then receives as a
//!   lossy one. A [`Sample`] it held meanwhile may be written over: [`Sample::is_intact`],
//!   called after using the bytes, says whether they were all the message's.
//! * **A subscriber dies or leaves:** its connection hangs up and the publisher removes it at
//!   once; a publisher waiting on it continues immediately.
//! * **The publisher ends or dies:** every subscriber first receives everything committed, then
//!   [`RecvError::Disconnected`]. A subscriber can wait for a publisher that does not exist yet
//!   ([`SubscriberBuilder::connect_timeout`]) and connect again to a restarted one.
//! * **Hostile or corrupt peers:** a corrupt ring gives [`RecvError::Corrupt`]; a publisher that
//!   breaks the handshake gives [`ConnectError::Protocol`]; a refusal carries its
//!   [`RefuseReason`] (for instance [`RefuseReason::Busy`], worth retrying). Nothing a peer
//!   writes into shared memory can crash this process or hang it without a bound.
//! * **`fork` without `exec`:** a child holds none of the topic's connections (they are
//!   replaced in the child at the fork), so a subscriber dropped in the parent leaves at once
//!   and a publisher process that dies is seen gone, however long its children live. The child
//!   must not use the handles it inherited; dropping them (or exiting) closes only its own
//!   descriptors and leaves the parent's stream alone.
//!
//! # The descriptor: event loops
//!
//! A [`Subscriber`] implements [`AsFd`](std::os::fd::AsFd) and
//! [`AsRawFd`](std::os::fd::AsRawFd), for `poll`, epoll, mio or tokio's `AsyncFd`. The
//! descriptor is readable whenever [`Subscriber::try_recv`] would not return
//! [`RecvError::Empty`] (a message, a lag, a demotion or the end of the stream), from the moment
//! `connect` returns, with no prior call: wait for it first or receive first; level-triggered
//! with one receive per wakeup or until `Empty`, edge-triggered until `Empty` (as epoll asks of
//! every descriptor: an edge is not repeated while messages wait). A receive that finds a message makes
//! no syscall. With the cargo feature `tokio`, `shmcast::tokio` builds async
//! subscribers and publishers on it.
//!
//! ```no_run
//! use rustix::event::{PollFd, PollFlags, poll};
//! use shmcast::{RecvError, Subscriber};
//! use std::time::Duration;
//!
//! let mut sub = Subscriber::builder("ticks")
//!     .connect_timeout(Duration::from_secs(5))
//!     .connect()?;
//! loop {
//!     // Take everything there is, until `Empty`...
//!     let empty = match sub.try_recv() {
//!         Ok(sample) => {
//!             println!("message {} of {} bytes", sample.seq(), sample.len());
//!             false
//!         }
//!         Err(RecvError::Empty) => true,
//!         Err(RecvError::Lagged(n)) => {
//!             eprintln!("missed {n} messages");
//!             false
//!         }
//!         Err(RecvError::Demoted) => {
//!             eprintln!("too slow: now lossy");
//!             false
//!         }
//!         Err(RecvError::Disconnected) => break,
//!         Err(e) => return Err(e.into()),
//!     };
//!     // ...then wait until the descriptor is readable (here with poll(2)). A sample borrows
//!     // the subscriber, so wait after the `match`, not inside it.
//!     if empty {
//!         poll(&mut [PollFd::new(&sub, PollFlags::IN)], None)?;
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Typed messages
//!
//! Any `bytemuck::Pod` type travels as is; shmcast re-exports bytemuck, so a program needs no
//! dependency of its own to derive it.
//!
//! ```no_run
//! use shmcast::{Publisher, Subscriber};
//! use std::time::Duration;
//!
//! #[derive(Clone, Copy, shmcast::Pod, shmcast::Zeroable)]
//! #[bytemuck(crate = "shmcast::bytemuck")]
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
//!
//! # Events for operators
//!
//! With the cargo feature `tracing` (off by default; without it the calls compile to nothing),
//! the publisher reports what happens to its topic through [`tracing`](https://docs.rs/tracing)
//! events of target `shmcast`, each naming the topic and the peer's pid and uid: a subscriber
//! admitted (info), a connection refused and why (warn), a subscriber hung up (info), the
//! publisher stalled by a gating subscriber (warn: when the stall bound ends a wait, or once per
//! wait after 5 s without a bound), a subscriber demoted (warn), a stale socket replaced (info).
//! Install any tracing subscriber to see them:
//!
//! ```text
//! WARN shmcast: publisher stalled topic=/run/user/1000/shmcast/ticks waited_ms=5000 pid=4242 uid=1000 demoting=true
//! WARN shmcast: subscriber demoted topic=/run/user/1000/shmcast/ticks pid=4242 uid=1000 subscriber=3
//! ```
//!
//! (`cargo run -p shmcast --example events --features tracing` shows a stall and a demotion.)
//!
//! # Modules
//!
//! The public API is re-exported at the crate root; the modules behind it are private rooms,
//! one idea each:
//!
//! | module | role |
//! |---|---|
//! | `publisher`, `loan` | [`Publisher`], its builder and statistics; [`Loan`], [`PodLoan`] |
//! | `subscriber` | [`Subscriber`], its builder and statistics, the [`Sample`]s it lends |
//! | `policy` | [`Admission`]: whom each side trusts; subscriber limits, descriptor reserve |
//! | `contract` | the topic [`Contract`]: the [`MessageType`] a publisher declares, a subscriber's [`Expectation`] |
//! | `connect` | the subscriber's half of the handshake |
//! | `server` | the publisher's server thread: accept, credentials, handshake, hang-ups |
//! | `shared` | what the publisher and its server thread share |
//! | `handshake` | the versioned control records (codec only) |
//! | `introspect` | a topic's snapshot ([`TopicInfo`]) and its INFO record (codec only) |
//! | `introspect_serve` | the publisher's answer to an INSPECT request, and its rate bound |
//! | `inspect` | asking a publisher for its snapshot: [`inspect`], [`Inspector`] |
//! | `spin` | how long a waiter polls before it sleeps (a publisher for space, a subscriber in a blocking receive for a message), learned per waiter: continuously while a core is free, between yields while none is |
//! | `wake` | wake delivery, sleeping on the wake word, doorbells, the recheck and nap tuning |
//! | `readiness` | the subscriber's descriptor for event loops |
//! | `full_wait` | a loan's wait for space: its deadline, the stall bound, the announcement |
//! | `tokio` | async subscribers and publishers (feature `tokio`) |
//! | `claim` | binding the topic socket, stale-socket recovery, its removal; [`remove_stale`], [`stale_topics`] |
//! | `topic` | topic names, their directory ([`TopicDir`]) and its checks, [`TopicError`] |
//! | `shm` | sealed memfds and their mappings, handed out as core regions |
//! | `error` | one error type per operation |
//! | `events` | the structured events of the `tracing` feature |
//! | `sys` | every syscall, split by kernel domain |
//! | `test_support` | helpers for tests and fuzz targets (feature `test-support`) |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod claim;
mod connect;
mod contract;
mod deadline;
mod error;
mod events;
mod full_wait;
mod handshake;
mod inspect;
mod introspect;
mod introspect_serve;
mod loan;
mod policy;
mod publisher;
mod publisher_stats;
mod readiness;
mod server;
mod shared;
mod shm;
mod spin;
mod subscriber;
mod sys;
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub mod test_support;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
mod topic;
mod wake;

/// The `bytemuck` this crate is built with, so that typed messages need no dependency of their
/// own: derive with `#[derive(shmcast::Pod, shmcast::Zeroable)]` and
/// `#[bytemuck(crate = "shmcast::bytemuck")]`.
pub use bytemuck;
pub use bytemuck::{Pod, Zeroable};
pub use claim::{remove_stale, stale_topics};
pub use contract::{Contract, Expectation, InvalidContract, MAX_CONTRACT_NAME, MessageType};
pub use error::{
    BindError, CleanError, ConnectError, LoanError, MapError, PodError, ProtocolError, RecvError,
    WaitError,
};
pub use handshake::{DecodeError, RefuseReason};
pub use inspect::{InspectError, Inspector, inspect, socket_owner};
pub use introspect::{MAX_EXE, MAX_ROWS, ProcessInfo, SubscriberRow, TopicCounters, TopicInfo};
pub use loan::{Loan, LoanFull, PodLoan};
pub use policy::Admission;
pub use publisher::{
    Closer, DEFAULT_CACHE_WINDOW, DEFAULT_SPIN_LIMIT, DEFAULT_STALL_BOUND, MAX_SPIN_LIMIT,
    Publisher, PublisherBuilder, PublisherStats,
};
pub use shmcast_core::Resume;
pub use shmcast_core::layout::{MAX_CAPACITY, MIN_CAPACITY};
pub use shmcast_core::{
    ConfigError, FrameError, LayoutError, Mode, RingConfig, Start, SubscriberId, SubscriberInfo,
};
pub use subscriber::Latest;
pub use subscriber::{Sample, StreamEnd, Subscriber, SubscriberBuilder, SubscriberStats};
pub use topic::{DirSource, FileKind, MAX_SOCKET_PATH, TopicDir, TopicError, check_topic};

/// The workspace README's Rust examples, compiled by the doc tests so that what a new user
/// copies from it builds (they need the `tokio` feature, as the README says).
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
