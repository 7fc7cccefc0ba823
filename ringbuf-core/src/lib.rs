//! The shmcast ring protocol over a memory region: layout, frames, cursors, gating, lag and wake
//! decisions. No syscalls and no I/O: the transport maps it onto a sealed memfd and delivers the
//! wakeups this crate asks for (a signal to one subscriber, a wake of the ring's wake word); tests
//! run it over heap memory, under loom and under Miri.
//!
//! One [`Writer`] appends variable-size frames to a ring; any number of [`Reader`]s follow it, each
//! with its own cursor in its own control block. A *gating* reader is never overwritten before it
//! releases; a *lossy* one never slows the writer and learns exactly how many messages it missed.
//! A reader that finds nothing parks in two steps ([`Reader::prepare_park`] or
//! [`Reader::prepare_park_on_word`], then sleep); a commit tells the transport which parked
//! readers to signal and whether to wake the sleepers on the wake word ([`Wakeups`]).
//!
//! | module | what it holds |
//! |---|---|
//! | [`region`] | the memory region and its atomic/byte accessors |
//! | `racy_copy` | the string copy a lossy read takes on x86-64, and why it is defined |
//! | [`layout`] | the shared ABI (ring header, control block, frame size), its `# Layout` diagram, validation |
//! | [`frame`] | frame encoding and bounds-checked decoding |
//! | [`wake`] | the park/wake protocol: parked flags, the wake word, the wait for space, their fences |
//! | [`reservation`] | a reserved payload, its truncation before commit, why a reservation fails |
//! | [`writer`] | reserve, commit, gating, admission, demotion |
//! | [`reader`] | peek/release, validated copy, lag accounting, the re-check before parking |
//! | `testing` | checkers shared by property tests and fuzz targets (feature `test-support`) |
//!
//! ```
//! use shmcast_core::{Mode, ReadError, Reader, Region, RingConfig, Start, Writer};
//!
//! let cfg = RingConfig::new(4096, 256)?;
//! let mut writer: Writer<&str> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
//! writer.admit(cb.clone(), Mode::Gating, Start::Newest, "subscriber 1")?;
//! let mut reader = Reader::attach(writer.ring().clone(), cb)?;
//!
//! // Nothing to read: the reader may sleep, and the next commit names it for a signal.
//! assert_eq!(reader.try_peek(), Err(ReadError::Empty));
//! assert!(reader.prepare_park());
//! let mut woken = Vec::new();
//! writer.send(b"hello", |who| woken.push(*who))?;
//! assert_eq!(woken, ["subscriber 1"]);
//! reader.unpark();
//!
//! let frame = reader.try_peek()?;
//! let mut buf = Vec::new();
//! reader.read_payload(&frame, &mut buf);
//! assert_eq!(buf, b"hello");
//! reader.release(frame);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod frame;
pub mod latest;
pub mod layout;
#[cfg(all(target_arch = "x86_64", not(miri), not(shmcast_loom)))]
mod racy_copy;
pub mod reader;
pub mod region;
pub mod reservation;
pub mod resume;
mod step;
mod sync;
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub mod testing;
pub mod wake;
pub mod writer;

pub use frame::FrameError;
pub use latest::Skip;
pub use layout::{
    CONTROL_BLOCK_LEN, ConfigError, HEADER_LEN, LayoutError, RingConfig, validate_ring,
};
pub use reader::{Copied, Frame, ReadError, Reader, ReaderStats};
pub use region::Region;
pub use reservation::{Reservation, ReserveError};
pub use resume::Resume;
pub use wake::Wakeups;
pub use writer::{
    DEFAULT_CACHE_WINDOW, Mode, Start, SubscriberId, SubscriberInfo, Writer, WriterStats,
};
