//! One trial of a stream of fixed-size messages from this process to N subscriber processes, as
//! fast as the transport goes: the engine behind `throughput` and `small`.
//!
//! The publisher fills every byte of every message ([`crate::payload::fill`]) for a fixed time,
//! then ends the stream; every subscriber checks every byte ([`crate::payload::Verifier`]) until
//! the end of the stream and reports when it got there. Elapsed time runs from the publisher's
//! first message to the last subscriber's end of stream.
//!
//! * `memcpy`: the single-process reference. The publisher fills one buffer and copies it into
//!   one buffer per subscriber, each of which is then checked, all on one thread.
//! * `unix-stream`: one `socketpair(AF_UNIX, SOCK_STREAM)` per subscriber. The publisher sends
//!   each message to every socket with non-blocking `send`s and `poll`s only when every
//!   unfinished socket is full, so a slow subscriber never idles the others. One `send` per
//!   message and socket at least, never batched: messages go out as they are produced.
//! * `shmcast-gating` / `shmcast-lossy`: one ring; the publisher loans each message in place;
//!   gating subscribers check it in place, lossy ones check their validated copy.
//! * `shmcast-tokio`, `tokio-unix`, `tokio-broadcast`: the same through tokio; see the `tokio`
//!   module.
//! * `iceoryx2` (feature `iceoryx2`): see the `iceoryx` module.
//!
//! | module | holds |
//! |---|---|
//! | `trial` | what a trial runs and what it measured |
//! | `subscribers` | spawning the subscriber processes and collecting their reports |
//! | `memcpy`, `unix_stream`, `shmcast`, `tokio`, `iceoryx` | each transport's publisher and subscriber side |
//! | `run` | the dispatch to the transport, in the parent and in a child |

#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod memcpy;
mod run;
mod shmcast;
mod subscribers;
mod tokio;
mod trial;
mod unix_stream;

pub use run::{child, run};
pub use subscribers::ROLE;
pub use trial::{Outcome, Transport, Trial, Wait};
