//! Frames: a 16-byte header (`meta`, `seq`) followed by the payload, padded to 16 bytes.
//!
//! `meta` packs the payload length (bits 0..32), the kind (bits 32..40) and a tag byte
//! (bits 40..48, [`FRAME_TAG`]) so that zeroed or random memory is unlikely to decode as a frame.
//! `seq` is the message's sequence number; a padding frame carries the sequence number of the
//! message that follows it.
//!
//! A padding frame fills the data area from its position to the end, so that every message is
//! contiguous. Frames start at 16-byte offsets, so payloads are 16-byte aligned for typed access.

use crate::layout::{HEADER_LEN, RingConfig};
use core::fmt;

// The frame's size and alignment are the layout's (the ring header records the alignment); they
// are re-exported here, where a reader of frames looks for them.
pub use crate::layout::{FRAME_ALIGN, FRAME_HEADER_LEN};

/// Tag byte in bits 40..48 of `meta`.
pub const FRAME_TAG: u64 = 0x5c;

/// What a frame holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A message.
    Message = 1,
    /// Padding up to the end of the data area.
    Padding = 2,
}

/// Encodes a frame's `meta` word.
#[inline]
pub(crate) fn encode_meta(kind: Kind, len: u32) -> u64 {
    u64::from(len) | (kind as u64) << 32 | FRAME_TAG << 40
}

/// Bytes a frame with a `len`-byte payload occupies.
#[inline]
pub(crate) fn span(len: u64) -> u64 {
    FRAME_HEADER_LEN as u64 + len.next_multiple_of(FRAME_ALIGN as u64)
}

/// A frame header that cannot be right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Tag or kind bits are not a frame's.
    BadMeta(u64),
    /// Payload longer than the ring's maximum.
    TooLong {
        /// Claimed length.
        len: u32,
        /// The ring's maximum payload.
        max: u32,
    },
    /// The frame would cross the end of the data area.
    CrossesEnd,
    /// A padding frame that does not end exactly at the end of the data area.
    BadPadding,
    /// The frame extends past the committed position.
    BeyondCommit,
    /// A sequence number other than the one expected.
    Sequence {
        /// Expected sequence number.
        expected: u64,
        /// Found sequence number.
        found: u64,
    },
    /// A position the writer published is impossible (misaligned, ahead of the writer, or more
    /// than one ring behind it).
    Position(u64),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::BadMeta(m) => write!(f, "corrupt frame header {m:#018x}"),
            FrameError::TooLong { len, max } => {
                write!(f, "frame claims {len} payload bytes, maximum is {max}")
            }
            FrameError::CrossesEnd => f.write_str("frame crosses the end of the ring"),
            FrameError::BadPadding => f.write_str("padding frame does not end at the ring's end"),
            FrameError::BeyondCommit => f.write_str("frame extends past the committed position"),
            FrameError::Sequence { expected, found } => {
                write!(f, "frame sequence {found}, expected {expected}")
            }
            FrameError::Position(p) => write!(f, "impossible ring position {p}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// A decoded, bounds-checked frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub kind: Kind,
    pub len: u32,
    /// Bytes from this frame's start to the next frame's.
    pub span: u64,
}

/// Decodes `meta` for a frame at `pos` in a ring of `capacity` bytes, with messages up to
/// `max_payload`, that must end at or before `committed`. Pure arithmetic over untrusted words.
pub(crate) fn decode(
    meta: u64,
    pos: u64,
    committed: u64,
    capacity: u64,
    max_payload: u32,
) -> Result<Geometry, FrameError> {
    if meta >> 40 != FRAME_TAG {
        return Err(FrameError::BadMeta(meta));
    }
    let len = meta as u32;
    let off = pos & (capacity - 1);
    let room = capacity - off;
    let (kind, span) = match (meta >> 32) as u8 {
        1 => {
            if len > max_payload {
                return Err(FrameError::TooLong {
                    len,
                    max: max_payload,
                });
            }
            let span = span(len.into());
            if span > room {
                return Err(FrameError::CrossesEnd);
            }
            (Kind::Message, span)
        }
        2 => {
            if FRAME_HEADER_LEN as u64 + u64::from(len) != room {
                return Err(FrameError::BadPadding);
            }
            (Kind::Padding, room)
        }
        _ => return Err(FrameError::BadMeta(meta)),
    };
    match pos.checked_add(span) {
        Some(end) if end <= committed => Ok(Geometry { kind, len, span }),
        _ => Err(FrameError::BeyondCommit),
    }
}

/// Decodes the frame header `meta` at `pos` exactly as a reader does, in a ring of geometry `cfg`
/// committed up to `committed`: the frame's kind, payload length and span (bytes to the next
/// frame). For fuzz targets and property tests outside this crate, which check the result against
/// the bounds the reader relies on. Any words give a geometry or a [`FrameError`], never a panic.
#[doc(hidden)]
pub fn decode_header(
    cfg: &RingConfig,
    meta: u64,
    pos: u64,
    committed: u64,
) -> Result<(Kind, u32, u64), FrameError> {
    // A validated geometry is what `decode` assumes: a power-of-two capacity, a u32 maximum.
    let max_payload = cfg.max_payload() as u32;
    decode(meta, pos, committed, cfg.capacity(), max_payload).map(|g| (g.kind, g.len, g.span))
}

/// Region offset of the payload of the frame at `pos`.
#[inline]
pub(crate) fn payload_off(pos: u64, mask: u64) -> usize {
    HEADER_LEN + (pos & mask) as usize + FRAME_HEADER_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_at_every_offset() {
        let cap = 256u64;
        for len in 0..=96u32 {
            for pos in (0..cap * 2).step_by(16) {
                let g = decode(encode_meta(Kind::Message, len), pos, u64::MAX, cap, 96);
                let span = span(len.into());
                if (pos % cap) + span <= cap {
                    let g = g.unwrap();
                    assert_eq!((g.kind, g.len, g.span), (Kind::Message, len, span));
                } else {
                    assert_eq!(g, Err(FrameError::CrossesEnd));
                }
            }
        }
    }

    #[test]
    fn padding_must_reach_the_end() {
        let cap = 256;
        let pad = encode_meta(Kind::Padding, 256 - 192 - 16);
        assert_eq!(decode(pad, 192, 1000, cap, 96).unwrap().span, 64);
        assert_eq!(decode(pad, 176, 1000, cap, 96), Err(FrameError::BadPadding));
    }

    #[test]
    fn rejects_garbage() {
        assert!(matches!(
            decode(0, 0, 1000, 256, 96),
            Err(FrameError::BadMeta(0))
        ));
        let m = encode_meta(Kind::Message, 97);
        assert_eq!(
            decode(m, 0, 1000, 256, 96),
            Err(FrameError::TooLong { len: 97, max: 96 })
        );
        let m = encode_meta(Kind::Message, 16);
        assert_eq!(decode(m, 0, 16, 256, 96), Err(FrameError::BeyondCommit));
        let empty = encode_meta(Kind::Message, 0);
        assert_eq!(
            decode(empty, !15u64, u64::MAX, 256, 96),
            Err(FrameError::BeyondCommit)
        );
        let bad_kind = m & !(0xff << 32) | (7 << 32);
        assert!(matches!(
            decode(bad_kind, 0, 1000, 256, 96),
            Err(FrameError::BadMeta(_))
        ));
    }
}
