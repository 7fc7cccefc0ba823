//! The shared layout: ring header, frames' place and size in the data area, per-subscriber
//! control blocks, and the validation of all of them when they come from a peer.
//!
//! The structs here are the ABI. They are never instantiated: they fix offsets and sizes (checked
//! at compile time) and document each field's encoding. Protocol code reaches the fields through
//! [`Region`] at the offsets derived from them.
//!
//! # Layout
//!
//! ```text
//!  ring (publisher maps read-write, subscribers read-only; sealed)
//!  0     +--------------------------------------------------------------+
//!        | line 0  static     magic version header_len capacity         |  written before
//!        |                    max_payload frame_align total_len         |  the first admit
//!  128   | line 1  writer-hot committed next_seq reserved tail newest   |  every message
//!        |                    slack                                     |
//!  256   | line 2  writer-cold closed writer_waiting wake               |  rarely
//!  384   | line 3  spare                                                |
//!  512   +--------------------------------------------------------------+
//!        | data area: `capacity` bytes, a power of two                  |
//!        |  [hdr|payload..|pad][hdr|payload|pad] ... [PAD frame to end] |
//!        +--------------------------------------------------------------+
//!
//!  frame (16-byte aligned, in the data area)
//!        +------------------------+------------------------+-----------------+
//!        | meta: len | kind | tag  | seq                    | payload, padded |
//!        +------------------------+------------------------+-----------------+
//!
//!  control block (one per subscriber; publisher and that subscriber map it read-write)
//!  0     | line 0  publisher-written  magic version state mode start_pos start_seq
//!  128   | line 1  subscriber-hot     cursor next_seq
//!  256   | line 2  subscriber-cold    parked
//!  384   | line 3  subscriber stats   received lagged lag_events
//!  512   +
//! ```
//!
//! Positions (`committed`, `reserved`, `tail`, cursors) are byte counts since the ring was created;
//! they only grow and never wrap in practice (2^64 bytes). The data offset of a position is
//! `HEADER_LEN + (pos & (capacity - 1))`.

use crate::region::Region;
use crate::sync::Ordering;
use core::fmt;
use core::mem::{offset_of, size_of};

/// One cache-line pair: words owned by different sides never share one.
pub const LINE: usize = 128;
/// Ring header length; the data area starts here.
pub const HEADER_LEN: usize = 512;
/// Control block length.
pub const CONTROL_BLOCK_LEN: usize = 512;
/// `b"SHMCASTR"` little-endian: marks a ring header.
pub const RING_MAGIC: u64 = u64::from_le_bytes(*b"SHMCASTR");
/// `b"SHMCASTC"` little-endian: marks a control block.
pub const CONTROL_MAGIC: u64 = u64::from_le_bytes(*b"SHMCASTC");
/// Version of this layout; bumped on any incompatible change.
pub const LAYOUT_VERSION: u32 = 2;
/// Smallest data area.
pub const MIN_CAPACITY: u64 = 64;
/// Largest data area (1 TiB): keeps every position sum far from overflow.
pub const MAX_CAPACITY: u64 = 1 << 40;
/// Frame header length in bytes (`meta`, `seq`); the payload follows it. The words' encoding is
/// the `frame` module's.
pub const FRAME_HEADER_LEN: usize = 16;
/// Alignment of every frame in the data area, and so of every payload.
pub const FRAME_ALIGN: usize = 16;

/// The ring header (ABI only; accessed through [`Region`] at the derived offsets).
#[repr(C, align(128))]
pub struct RingHeader {
    /// [`RING_MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// [`HEADER_LEN`]: where the data area starts.
    pub header_len: u32,
    /// Data area size in bytes: a power of two in `MIN_CAPACITY..=MAX_CAPACITY`.
    pub capacity: u64,
    /// Largest payload in bytes; two frames of this size fit in the data area.
    pub max_payload: u32,
    /// [`FRAME_ALIGN`].
    pub frame_align: u32,
    /// `header_len + capacity`: the size the ring's file must have at least.
    pub total_len: u64,
    _line0: [u8; LINE - 40],
    /// Writer-owned. Every frame below this position is committed. Release-stored per commit.
    pub committed: u64,
    /// Writer-owned. Sequence number the next committed message will carry (0-based).
    pub next_seq: u64,
    /// Writer-owned. The writer may be writing anywhere below this position; bytes below
    /// `reserved - capacity` have been overwritten. Stored before each reservation is written.
    pub reserved: u64,
    /// Writer-owned. Start of the oldest frame still intact. Release-stored.
    pub tail: u64,
    /// Writer-owned. Start of the newest committed message frame (0 before the first commit).
    /// Stored Relaxed before the Release store of `committed` that publishes the frame, so a
    /// reader that loaded `committed` finds here that frame's start or a later one. Where a
    /// lapped or "latest" reader resumes; a reader that finds it unusable falls back to `tail`.
    pub newest: u64,
    /// Writer-owned. Start of the oldest frame at least half the data area ahead of the bytes
    /// the writer overwrites next: the first frame boundary at or after
    /// `reserved - capacity/2`, at most `committed` (0 until the first wrap). Release-stored
    /// when the writer moves `tail`. Where a lapped reader resumes with the default policy: a
    /// read that starts there has half a ring of slack before the writer reaches it.
    pub slack: u64,
    _line1: [u8; LINE - 48],
    /// Writer-owned. Non-zero once the stream has ended (no more commits).
    pub closed: u32,
    /// Writer-owned. Non-zero while the writer waits for gating subscribers to release space:
    /// the number of this wait (it never repeats between two consecutive waits). A reader
    /// signals once per wait number, so a waiting writer costs each reader one signal, not one
    /// per release.
    pub writer_waiting: u32,
    /// Writer-owned wake word. Incremented (Release, wrapping) whenever the writer wakes
    /// subscribers that parked on it, and at close; those subscribers sleep until it differs
    /// from the value they read before parking (the transport sleeps on it, e.g. with a futex).
    /// Readers only ever load it. The protocol is the `wake` module's.
    pub wake: u32,
    _line2: [u8; LINE - 12],
    _line3: [u8; LINE],
}

/// A subscriber's control block (ABI only).
#[repr(C, align(128))]
pub struct ControlBlock {
    /// [`CONTROL_MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// Publisher-written: [`STATE_ACTIVE`] or [`STATE_EVICTED`].
    pub state: u32,
    /// Publisher-written: [`MODE_GATING`] or [`MODE_LOSSY`]; gating may be demoted to lossy.
    pub mode: u32,
    _pad: u32,
    /// Publisher-written at admission: the position the subscriber starts reading at.
    pub start_pos: u64,
    /// Publisher-written at admission: the sequence number of the first message at `start_pos`.
    pub start_seq: u64,
    _line0: [u8; LINE - 40],
    /// Subscriber-written. Everything below it is released. Release-stored; for gating
    /// subscribers the writer never writes at or past `cursor + capacity`.
    pub cursor: u64,
    /// Subscriber-written. Sequence number of the next message it expects (statistics only).
    pub next_seq: u64,
    _line1: [u8; LINE - 16],
    /// Subscriber-written (set) and writer-written (cleared when it wakes the subscriber):
    /// non-zero while the subscriber is parked or about to park, saying how it sleeps: on its
    /// own signal, or on the ring's `wake` word. The values and what the writer does with each
    /// are the `wake` module's.
    pub parked: u32,
    _line2: [u8; LINE - 4],
    /// Subscriber-written statistics: messages received.
    pub received: u64,
    /// Subscriber-written statistics: messages missed (sum of reported lags).
    pub lagged: u64,
    /// Subscriber-written statistics: lag events reported.
    pub lag_events: u64,
    _line3: [u8; LINE - 24],
}

/// Control-block state: admitted and reading.
pub const STATE_ACTIVE: u32 = 1;
/// Control-block state: evicted by the publisher ([`Writer::evict`](crate::Writer::evict)).
pub const STATE_EVICTED: u32 = 2;
/// Control-block mode: the writer never overwrites what this subscriber has not released.
pub const MODE_GATING: u32 = 1;
/// Control-block mode: the writer never waits for this subscriber.
pub const MODE_LOSSY: u32 = 2;

pub(crate) mod hdr {
    use super::*;
    pub const MAGIC: usize = offset_of!(RingHeader, magic);
    pub const VERSION: usize = offset_of!(RingHeader, version);
    pub const HEADER_LEN_: usize = offset_of!(RingHeader, header_len);
    pub const CAPACITY: usize = offset_of!(RingHeader, capacity);
    pub const MAX_PAYLOAD: usize = offset_of!(RingHeader, max_payload);
    pub const FRAME_ALIGN: usize = offset_of!(RingHeader, frame_align);
    pub const TOTAL_LEN: usize = offset_of!(RingHeader, total_len);
    pub const COMMITTED: usize = offset_of!(RingHeader, committed);
    pub const NEXT_SEQ: usize = offset_of!(RingHeader, next_seq);
    pub const RESERVED: usize = offset_of!(RingHeader, reserved);
    pub const TAIL: usize = offset_of!(RingHeader, tail);
    pub const NEWEST: usize = offset_of!(RingHeader, newest);
    pub const SLACK: usize = offset_of!(RingHeader, slack);
    pub const CLOSED: usize = offset_of!(RingHeader, closed);
    pub const WRITER_WAITING: usize = offset_of!(RingHeader, writer_waiting);
    pub const WAKE: usize = offset_of!(RingHeader, wake);
}

pub(crate) mod cb {
    use super::*;
    pub const MAGIC: usize = offset_of!(ControlBlock, magic);
    pub const VERSION: usize = offset_of!(ControlBlock, version);
    pub const STATE: usize = offset_of!(ControlBlock, state);
    pub const MODE: usize = offset_of!(ControlBlock, mode);
    pub const START_POS: usize = offset_of!(ControlBlock, start_pos);
    pub const START_SEQ: usize = offset_of!(ControlBlock, start_seq);
    pub const CURSOR: usize = offset_of!(ControlBlock, cursor);
    pub const NEXT_SEQ: usize = offset_of!(ControlBlock, next_seq);
    pub const PARKED: usize = offset_of!(ControlBlock, parked);
    pub const RECEIVED: usize = offset_of!(ControlBlock, received);
    pub const LAGGED: usize = offset_of!(ControlBlock, lagged);
    pub const LAG_EVENTS: usize = offset_of!(ControlBlock, lag_events);
}

// The ABI, checked at compile time: sizes, and which line each side's words live on.
const _: () = {
    assert!(size_of::<RingHeader>() == HEADER_LEN);
    assert!(size_of::<ControlBlock>() == CONTROL_BLOCK_LEN);
    assert!(hdr::TOTAL_LEN + 8 <= LINE);
    assert!(hdr::COMMITTED == LINE && hdr::SLACK + 8 <= 2 * LINE);
    assert!(hdr::CLOSED == 2 * LINE && hdr::WAKE + 4 <= 3 * LINE);
    assert!(cb::START_SEQ + 8 <= LINE);
    assert!(cb::CURSOR == LINE && cb::NEXT_SEQ + 8 <= 2 * LINE);
    assert!(cb::PARKED == 2 * LINE);
    assert!(cb::RECEIVED == 3 * LINE && cb::LAG_EVENTS + 8 <= 4 * LINE);
    assert!(HEADER_LEN % FRAME_ALIGN == 0);
};

/// The ring's geometry: what a writer creates and what a reader validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    capacity: u64,
    max_payload: u32,
}

/// A ring geometry that cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Capacity is not a power of two in `MIN_CAPACITY..=MAX_CAPACITY`.
    Capacity(u64),
    /// Two frames of the largest payload must fit in the data area.
    MaxPayload {
        /// The requested maximum payload.
        max_payload: u64,
        /// The largest allowed for this capacity.
        limit: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Capacity(c) => write!(
                f,
                "ring capacity {c} is not a power of two between {MIN_CAPACITY} and {MAX_CAPACITY}"
            ),
            ConfigError::MaxPayload { max_payload, limit } => write!(
                f,
                "maximum payload {max_payload} is too large for the ring (at most {limit}: two frames must fit)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl RingConfig {
    /// A geometry with `capacity` data bytes and messages up to `max_payload` bytes.
    pub fn new(capacity: u64, max_payload: u64) -> Result<RingConfig, ConfigError> {
        if !capacity.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
            return Err(ConfigError::Capacity(capacity));
        }
        let limit = Self::payload_limit(capacity);
        if max_payload > limit {
            return Err(ConfigError::MaxPayload { max_payload, limit });
        }
        Ok(RingConfig {
            capacity,
            max_payload: max_payload as u32,
        })
    }

    /// The `max_payload` a ring of `capacity` bytes gets when none is chosen: a quarter of the
    /// ring, within [`payload_limit`](Self::payload_limit).
    pub fn default_max_payload(capacity: u64) -> u64 {
        (capacity / 4).min(Self::payload_limit(capacity))
    }

    /// The largest `max_payload` a ring of `capacity` bytes accepts.
    pub fn payload_limit(capacity: u64) -> u64 {
        (capacity / 2)
            .saturating_sub(FRAME_HEADER_LEN as u64)
            .min(u32::MAX as u64 & !15)
    }

    /// Data area size in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Largest payload in bytes.
    pub fn max_payload(&self) -> usize {
        self.max_payload as usize
    }

    /// Bytes the whole ring region needs.
    pub fn region_len(&self) -> usize {
        HEADER_LEN + self.capacity as usize
    }
}

/// Why a region received from a peer was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The region is smaller than its header says, or than a header.
    TooSmall {
        /// Bytes present.
        len: u64,
        /// Bytes required.
        need: u64,
    },
    /// Not a shmcast ring or control block.
    BadMagic(u64),
    /// Made by an incompatible version of shmcast.
    Version {
        /// Version found.
        found: u32,
        /// Version this build speaks.
        expected: u32,
    },
    /// A header field is out of range.
    Field {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The geometry is impossible.
    Config(ConfigError),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::TooSmall { len, need } => {
                write!(f, "shared region is {len} bytes but needs {need}")
            }
            LayoutError::BadMagic(m) => write!(f, "not a shmcast region (magic {m:#018x})"),
            LayoutError::Version { found, expected } => {
                write!(f, "layout version {found}, this build speaks {expected}")
            }
            LayoutError::Field { field, value } => {
                write!(f, "header field `{field}` has invalid value {value}")
            }
            LayoutError::Config(e) => write!(f, "invalid ring geometry: {e}"),
        }
    }
}

impl std::error::Error for LayoutError {}

impl From<ConfigError> for LayoutError {
    fn from(e: ConfigError) -> Self {
        LayoutError::Config(e)
    }
}

/// Writes the static header of a fresh ring. The region must be zeroed and at least
/// `cfg.region_len()` long (the writer checks).
pub(crate) fn init_ring(ring: &Region, cfg: &RingConfig) {
    ring.u64_at(hdr::MAGIC).store(RING_MAGIC, Ordering::Relaxed);
    ring.u32_at(hdr::VERSION)
        .store(LAYOUT_VERSION, Ordering::Relaxed);
    ring.u32_at(hdr::HEADER_LEN_)
        .store(HEADER_LEN as u32, Ordering::Relaxed);
    ring.u64_at(hdr::CAPACITY)
        .store(cfg.capacity, Ordering::Relaxed);
    ring.u32_at(hdr::MAX_PAYLOAD)
        .store(cfg.max_payload, Ordering::Relaxed);
    ring.u32_at(hdr::FRAME_ALIGN)
        .store(FRAME_ALIGN as u32, Ordering::Relaxed);
    ring.u64_at(hdr::TOTAL_LEN)
        .store(cfg.region_len() as u64, Ordering::Relaxed);
}

/// Validates a ring header received from a peer: every field is read once, then checked.
pub fn validate_ring(ring: &Region) -> Result<RingConfig, LayoutError> {
    let len = ring.len() as u64;
    if len < HEADER_LEN as u64 {
        return Err(LayoutError::TooSmall {
            len,
            need: HEADER_LEN as u64,
        });
    }
    let magic = ring.u64_at(hdr::MAGIC).load(Ordering::Relaxed);
    if magic != RING_MAGIC {
        return Err(LayoutError::BadMagic(magic));
    }
    let version = ring.u32_at(hdr::VERSION).load(Ordering::Relaxed);
    if version != LAYOUT_VERSION {
        return Err(LayoutError::Version {
            found: version,
            expected: LAYOUT_VERSION,
        });
    }
    let header_len = ring.u32_at(hdr::HEADER_LEN_).load(Ordering::Relaxed);
    if header_len as usize != HEADER_LEN {
        return Err(LayoutError::Field {
            field: "header_len",
            value: header_len.into(),
        });
    }
    let frame_align = ring.u32_at(hdr::FRAME_ALIGN).load(Ordering::Relaxed);
    if frame_align as usize != FRAME_ALIGN {
        return Err(LayoutError::Field {
            field: "frame_align",
            value: frame_align.into(),
        });
    }
    let capacity = ring.u64_at(hdr::CAPACITY).load(Ordering::Relaxed);
    let max_payload = ring.u32_at(hdr::MAX_PAYLOAD).load(Ordering::Relaxed);
    let cfg = RingConfig::new(capacity, max_payload.into())?;
    let total_len = ring.u64_at(hdr::TOTAL_LEN).load(Ordering::Relaxed);
    if total_len != cfg.region_len() as u64 {
        return Err(LayoutError::Field {
            field: "total_len",
            value: total_len,
        });
    }
    if len < total_len {
        return Err(LayoutError::TooSmall {
            len,
            need: total_len,
        });
    }
    Ok(cfg)
}

/// Validates a control block's static fields (length, magic, version).
pub(crate) fn validate_control_block(cb: &Region) -> Result<(), LayoutError> {
    let len = cb.len() as u64;
    if len < CONTROL_BLOCK_LEN as u64 {
        return Err(LayoutError::TooSmall {
            len,
            need: CONTROL_BLOCK_LEN as u64,
        });
    }
    let magic = cb.u64_at(cb::MAGIC).load(Ordering::Relaxed);
    if magic != CONTROL_MAGIC {
        return Err(LayoutError::BadMagic(magic));
    }
    let version = cb.u32_at(cb::VERSION).load(Ordering::Relaxed);
    if version != LAYOUT_VERSION {
        return Err(LayoutError::Version {
            found: version,
            expected: LAYOUT_VERSION,
        });
    }
    Ok(())
}

/// The data-area offset (from the region base) of position `pos`.
#[inline]
pub(crate) fn data_off(pos: u64, mask: u64) -> usize {
    HEADER_LEN + (pos & mask) as usize
}
