//! Reservations: the space [`Writer::try_reserve`](crate::Writer::try_reserve) hands out, and
//! why it may refuse.
//!
//! A reservation is made for the largest payload the caller may write and can be
//! [truncated](Reservation::truncate) before [`Writer::commit`](crate::Writer::commit), so a
//! message whose length is known only once it is written (a serializer's output, formatted text)
//! is written once, in place, and published with exactly its length.
//!
//! # What a truncated reservation leaves behind
//!
//! The ring's `reserved` word announced the whole reservation before its first byte was written,
//! and the caller may have written anywhere in it. The writer never lowers `reserved` (it keeps
//! the highest end it announced), so a lossy reader that copied bytes of an older frame which the
//! unused part overwrote still finds `reserved` past that frame and discards its copy. The next
//! reservation starts at the end of the truncated frame, so the ring stays contiguous and every
//! frame 16-byte aligned.
//!
//! ```
//! use shmcast_core::{Mode, Reader, Region, RingConfig, Start, Writer};
//!
//! let cfg = RingConfig::new(256, 64)?;
//! let mut writer: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
//! writer.admit(cb.clone(), Mode::Gating, Start::Newest, ())?;
//! let mut reader = Reader::attach(writer.ring().clone(), cb)?;
//!
//! // Up to 64 bytes, of which 5 are used.
//! let mut res = writer.try_reserve(64)?;
//! writer.write_payload(&res, b"hello");
//! res.truncate(5);
//! writer.commit(res, |_| {});
//!
//! let mut buf = Vec::new();
//! let copied = reader.try_copy(&mut buf)?;
//! assert_eq!((copied.len, &buf[..]), (5, &b"hello"[..]));
//! // The next frame starts right after the 5-byte one: 16 bytes of header, 16 of payload.
//! assert_eq!(writer.committed(), 32);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::frame;
use core::fmt;

/// Why a reservation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveError {
    /// The payload is longer than the ring's maximum.
    TooLarge {
        /// Requested length.
        len: usize,
        /// The ring's maximum payload.
        max: usize,
    },
    /// Gating subscribers have not released enough space.
    Full {
        /// Bytes the reservation needs (frame plus any padding at the wrap).
        need: u64,
        /// Bytes free now.
        free: u64,
    },
    /// The stream was closed.
    Closed,
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReserveError::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the maximum of {max}")
            }
            ReserveError::Full { need, free } => {
                write!(
                    f,
                    "ring full: need {need} bytes, {free} free until gating subscribers release"
                )
            }
            ReserveError::Closed => f.write_str("stream closed"),
        }
    }
}

impl std::error::Error for ReserveError {}

/// A reserved, not yet committed payload. Commit it with [`Writer::commit`](crate::Writer::commit)
/// or drop it with [`Writer::abandon`](crate::Writer::abandon); reserving again without either
/// abandons it.
#[derive(Debug)]
#[must_use = "a reservation is published only by Writer::commit"]
pub struct Reservation {
    /// Position of the message frame (after any padding frame at the wrap).
    pub(crate) pos: u64,
    /// End of the frame as it will be committed: `pos + span(len)`.
    pub(crate) end: u64,
    /// Payload length as it will be committed; at most the length reserved.
    pub(crate) len: u32,
}

impl Reservation {
    /// Payload length in bytes: what will be committed.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Shortens the payload to `len` bytes; a `len` not below the current length changes nothing
    /// (as `Vec::truncate`). The committed frame is then `len` bytes long and the next
    /// reservation starts right after it; the bytes written beyond `len` are never delivered.
    pub fn truncate(&mut self, len: usize) {
        if len < self.len as usize {
            self.len = len as u32;
            self.end = self.pos + frame::span(len as u64);
        }
    }
}
