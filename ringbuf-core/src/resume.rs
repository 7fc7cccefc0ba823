//! Where a lossy reader continues after the writer lapped it, and where a "latest" read goes:
//! the resume policy ([`Resume`]) and the search for its resume point.
//!
//! The writer keeps two frame positions in the ring header besides `tail`. `newest`: the start
//! of each committed message, stored before it publishes `committed`, so a reader that loaded
//! `committed` finds there the newest message below it or a later one (which it recognises:
//! that frame starts at or after `committed`). `slack`: moved with `tail`, the first frame
//! boundary two of the largest frames (at most half a ring) ahead of the bytes the writer
//! overwrites next, so a read that starts there has time to finish. A reader reads the header
//! at either, then validates it against `reserved` with the same seqlock as a lossy copy, so a
//! header the writer overwrote meanwhile is never trusted. Every frame carries the sequence
//! number of its message, so the number of messages skipped on the way there is exact.
//!
//! # Overload and failure
//!
//! * A writer that keeps overwriting the newest message while it is being looked at (only an
//!   open reservation with a padding frame can do that) makes the search give up after a bounded
//!   number of attempts; the reader then resumes as [`Resume::Oldest`] does.
//! * A `slack` word that points at no usable frame falls back to the newest message; a `newest`
//!   word that points at no message below `committed` (a corrupt ring, or a writer that does
//!   not maintain it) to the oldest intact frame.
//!
//! ```
//! use shmcast_core::{Region, RingConfig, Writer, Reader, Mode, Start, ReadError, Resume};
//!
//! let cfg = RingConfig::new(256, 64)?;
//! let mut writer: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
//! writer.admit(cb.clone(), Mode::Lossy, Start::Newest, ())?;
//! let mut reader = Reader::attach(writer.ring().clone(), cb)?;
//! reader.set_resume(Resume::Newest);
//!
//! // Ten 48-byte messages into a 256-byte ring: the reader was lapped, and resumes with the
//! // newest message, having missed the nine before it.
//! for i in 0..10u8 {
//!     writer.send(&[i; 48], |_| {})?;
//! }
//! let mut buf = Vec::new();
//! assert_eq!(reader.try_copy(&mut buf), Err(ReadError::Lagged(9)));
//! let next = reader.try_copy(&mut buf)?;
//! assert_eq!((next.seq, buf[0]), (9, 9));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::frame::{self, Kind};
use crate::layout::{self, hdr};
use crate::region::Region;
use crate::step;
use crate::sync::{Ordering, fence};

/// Where a lossy reader continues after the writer lapped it. The lag it reports is exact
/// whatever the policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Resume {
    /// The first message two of the largest messages (at most half a ring) ahead of the bytes
    /// the writer overwrites next: enough slack for a read of the largest message to finish,
    /// and as much history as that allows.
    /// The default, chosen by measurement (`docs/performance.md`, "Decisions").
    #[default]
    Slack,
    /// The newest committed message: the reader skips the whole backlog, and the writer must
    /// write about a ring's worth before it can overwrite what the reader reads next.
    Newest,
    /// The oldest intact message: the most history, but the writer overwrites that message
    /// next, so a reader slower than the writer is lapped again soon, often while it reads.
    Oldest,
}

/// What the search for a resume point found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The frame below `committed` starts at `pos` and carries `seq`; its header was intact
    /// when read.
    At {
        /// Its position.
        pos: u64,
        /// Its sequence number.
        seq: u64,
        /// A message, or padding before the message that carries `seq`.
        kind: Kind,
    },
    /// The writer moved on while we looked: the word was from a later commit, or the frame was
    /// overwritten before the header was validated.
    Moved,
    /// The word points at no frame below `committed` that the reader can use.
    Unusable,
}

/// The writer's `slack` position, to be checked by [`frame_at`] against a `committed` loaded
/// after it.
pub(crate) fn slack(ring: &Region) -> u64 {
    // SYNC(slack): Acquire; pairs with the Release store in Writer::advance_tail: the header
    // of the frame there is visible, and a `committed` loaded afterwards is beyond it.
    ring.u64_at(hdr::SLACK).load(Ordering::Acquire)
}

/// The ring's geometry, as a reader validated it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub(crate) cap: u64,
    pub(crate) mask: u64,
    pub(crate) max_payload: u32,
}

/// Finds the newest committed message below `committed` (which the caller loaded with
/// Acquire, so the header of every frame below it is visible).
pub(crate) fn newest(ring: &Region, g: Geometry, committed: u64) -> Found {
    // Relaxed: stored before the Release store of `committed` that the caller's Acquire load
    // saw, so it is that commit's value or a later one.
    let pos = ring.u64_at(hdr::NEWEST).load(Ordering::Relaxed);
    step::point();
    if pos >= committed {
        return Found::Moved;
    }
    match frame_at(ring, g, pos, committed) {
        Found::At {
            kind: Kind::Padding,
            ..
        } => Found::Unusable,
        found => found,
    }
}

/// The frame at `pos` (a message or padding), validated: below `committed`, within a ring of
/// it, its header intact when read and well formed.
pub(crate) fn frame_at(ring: &Region, g: Geometry, pos: u64, committed: u64) -> Found {
    if pos >= committed || pos % frame::FRAME_ALIGN as u64 != 0 || committed - pos > g.cap {
        return Found::Unusable;
    }
    let off = layout::data_off(pos, g.mask);
    let meta = ring.u64_at(off).load(Ordering::Relaxed);
    let seq = ring.u64_at(off + 8).load(Ordering::Relaxed);
    step::point();
    // SYNC(seqlock): Acquire fence after reading the header, before loading `reserved`; pairs
    // with the Release fence in Writer::try_reserve, as in Reader::try_copy.
    fence(Ordering::Acquire);
    let reserved = ring.u64_at(hdr::RESERVED).load(Ordering::Relaxed);
    if reserved > pos.saturating_add(g.cap) {
        return Found::Moved;
    }
    match frame::decode(meta, pos, committed, g.cap, g.max_payload) {
        Ok(f) => Found::At {
            pos,
            seq,
            kind: f.kind,
        },
        Err(_) => Found::Unusable,
    }
}
