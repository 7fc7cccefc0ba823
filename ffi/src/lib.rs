//! The C ABI of shmcast: `libshmcast.so`, `libshmcast.a` and `include/shmcast.h`.
//!
//! A C program that knows nothing of Rust publishes and subscribes with the same guarantees as
//! the Rust API. Every symbol starts with `shmcast_`; publishers and subscribers are opaque
//! handles; every fallible function returns `0` or a negative `SHMCAST_E*` code, with
//! [`shmcast_strerror`] for a static description and [`shmcast_last_error_message`] for the
//! detail of the calling thread's last failure. No panic unwinds into C: each export catches it
//! and returns [`SHMCAST_EPANIC`]. Null pointers and out-of-range arguments are
//! [`SHMCAST_EINVAL`], never a crash.
//!
//! Zero-copy on both sides needs a borrow that outlives the call that made it: a publisher's
//! loan and a subscriber's sample stay inside their handle until the caller ends them, and the
//! handle refuses every other call that would touch the borrowed state ([`SHMCAST_EBUSY`]).
//!
//! | module | role |
//! |---|---|
//! | `contract` | the topic contract's option fields and the description a subscriber reads |
//! | `error` | error codes, messages, the thread's last error, the panic barrier |
//! | `options` | the option structs and their defaults |
//! | `publisher` | the publisher handle: create, loan, publish, send, statistics |
//! | `publisher_wait` | the publisher's waits: for subscribers, and for space in an event loop |
//! | `subscriber` | the subscriber handle: connect, receive in place or by copy, descriptor, statistics |
//! | `translate` | what a caller passes turned into the transport's types: options into builders, timeouts, topics |
//! | `version` | the library's version |
//!
//! The header is generated from these sources with cbindgen (`cbindgen.toml`); the test
//! `header` fails when the checked-in copy is out of date, and `SHMCAST_BLESS=1` rewrites it.
// The C names (`shmcast_publisher`, `shmcast_sample`, ...) are the ABI.
#![allow(non_camel_case_types)]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(clippy::missing_safety_doc)]

mod contract;
mod error;
mod options;
mod publisher;
mod publisher_wait;
mod subscriber;
mod translate;
mod version;

pub use contract::*;
pub use error::*;
pub use options::*;
pub use publisher::*;
pub use publisher_wait::*;
pub use subscriber::*;
pub use version::*;
