//! The words of the shared layout, for tests that forge or damage a ring or a control block word
//! by word: where each word is, and how a frame's `meta` word is encoded.
//!
//! The header and control-block offsets are derived from the core's public ABI structs
//! ([`RingHeader`], [`ControlBlock`]), so they follow any change of the layout; the core's own
//! table of them is private to it. The frame's words are not described by any public item, so
//! their offsets and the `meta` encoding are written out here, once, from the core's `frame`
//! module docs: a change of the frame layout breaks the tests that forge frames, as it should.

use shmcast_core::frame::{FRAME_TAG, Kind};
use shmcast_core::layout::{ControlBlock, RingHeader};
use std::mem::offset_of;

/// Offsets of the ring header's words.
pub mod hdr {
    use super::*;
    pub const MAGIC: usize = offset_of!(RingHeader, magic);
    pub const VERSION: usize = offset_of!(RingHeader, version);
    pub const HEADER_LEN_FIELD: usize = offset_of!(RingHeader, header_len);
    pub const CAPACITY: usize = offset_of!(RingHeader, capacity);
    pub const MAX_PAYLOAD: usize = offset_of!(RingHeader, max_payload);
    pub const FRAME_ALIGN: usize = offset_of!(RingHeader, frame_align);
    pub const TOTAL_LEN: usize = offset_of!(RingHeader, total_len);
    pub const COMMITTED: usize = offset_of!(RingHeader, committed);
    pub const NEXT_SEQ: usize = offset_of!(RingHeader, next_seq);
    pub const RESERVED: usize = offset_of!(RingHeader, reserved);
    pub const TAIL: usize = offset_of!(RingHeader, tail);
    pub const SLACK: usize = offset_of!(RingHeader, slack);
    pub const CLOSED: usize = offset_of!(RingHeader, closed);
    pub const WRITER_WAITING: usize = offset_of!(RingHeader, writer_waiting);
    pub const WAKE: usize = offset_of!(RingHeader, wake);
}

/// Offsets of the control block's words.
pub mod ctl {
    use super::*;
    pub const MAGIC: usize = offset_of!(ControlBlock, magic);
    pub const VERSION: usize = offset_of!(ControlBlock, version);
    pub const STATE: usize = offset_of!(ControlBlock, state);
    pub const MODE: usize = offset_of!(ControlBlock, mode);
    pub const START_POS: usize = offset_of!(ControlBlock, start_pos);
    pub const START_SEQ: usize = offset_of!(ControlBlock, start_seq);
    pub const CURSOR: usize = offset_of!(ControlBlock, cursor);
    pub const PARKED: usize = offset_of!(ControlBlock, parked);
}

/// Offsets of a frame header's words, from the frame's start.
pub mod frame {
    /// The `meta` word (see [`meta`](super::meta)).
    pub const META: usize = 0;
    /// The sequence number.
    pub const SEQ: usize = 8;
}

/// The `kind` of a message frame.
pub const MESSAGE: u64 = Kind::Message as u64;
/// The `kind` of a padding frame.
pub const PADDING: u64 = Kind::Padding as u64;

/// A frame's `meta` word as the writer encodes it, for any `kind` and `len` the caller likes:
/// the length in bits 0..32, the kind in bits 32..40 and the tag in bits 40..48.
pub fn meta(kind: u64, len: u32) -> u64 {
    u64::from(len) | kind << 32 | FRAME_TAG << 40
}
