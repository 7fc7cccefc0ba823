//! The input formats. Each maps any bytes to regions, so no input is wasted on framing, and has an
//! inverse that turns a real ring into an input for the seed corpora.
#![allow(unsafe_code)]

use core::mem::offset_of;
use shmcast_core::layout::{ControlBlock, RingHeader};
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, Mode, Region, RingConfig, Start, Writer};

/// A heap region holding a copy of `bytes`.
pub fn region_from(bytes: &[u8]) -> Region {
    let region = Region::heap(bytes.len());
    put(&region, 0, bytes);
    region
}

/// A copy of a region's bytes.
pub fn bytes_of(region: &Region) -> Vec<u8> {
    // SAFETY: the fuzz targets are single-threaded: nobody writes the region during the copy.
    unsafe { core::slice::from_raw_parts(region.as_ptr(), region.len()) }.to_vec()
}

/// The native-endian word at `off` of `bytes` (0 past the end).
pub fn word(bytes: &[u8], off: usize) -> u64 {
    let mut w = [0; 8];
    if let Some(b) = bytes.get(off..off + 8) {
        w.copy_from_slice(b);
    }
    u64::from_ne_bytes(w)
}

/// The native-endian 32-bit word at `off` of `bytes` (0 past the end).
pub fn word32(bytes: &[u8], off: usize) -> u32 {
    let mut w = [0; 4];
    if let Some(b) = bytes.get(off..off + 4) {
        w.copy_from_slice(b);
    }
    u32::from_ne_bytes(w)
}

fn put(region: &Region, off: usize, v: &[u8]) {
    assert!(off + v.len() <= region.len());
    // SAFETY: in bounds (checked above); the region is not shared with another thread.
    unsafe { core::ptr::copy_nonoverlapping(v.as_ptr(), region.as_ptr().add(off), v.len()) }
}

fn put_word(region: &Region, off: usize, v: u64) {
    put(region, off, &v.to_ne_bytes());
}

/// `ring_validator`: a control block (the first `CONTROL_BLOCK_LEN` bytes, or fewer), then a
/// ring of any length.
pub fn split_ring_input(data: &[u8]) -> (&[u8], &[u8]) {
    data.split_at(data.len().min(CONTROL_BLOCK_LEN))
}

/// The inverse of [`split_ring_input`] for a whole control block.
pub fn join_ring_input(cb: &[u8], ring: &[u8]) -> Vec<u8> {
    assert_eq!(cb.len(), CONTROL_BLOCK_LEN);
    [cb, ring].concat()
}

/// Where `ring_validator` takes its read schedule from: spare bytes of the control block's first
/// line, which no validator looks at.
pub const SCHEDULE_OFF: usize = 64;

/// `frame_reader`: a ring whose static header is valid, with fuzzed positions, control block
/// and data area. Little-endian fields in this order, then the data area; missing bytes are 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInput {
    /// Bits 0..2: the ring's capacity, `64 << n` bytes. The bits above: the capacity of the
    /// decoder-only case, `64 << (n % 35)` (up to the largest ring).
    pub geometry: u8,
    /// Bit 0: gating reader; bit 1: stream closed; bit 2: writer gone.
    pub flags: u8,
    /// Largest payload, reduced modulo the capacity's limit plus one.
    pub max_payload: u32,
    /// Control block: where the reader starts.
    pub start_pos: u64,
    /// Control block: the sequence number it expects there.
    pub start_seq: u64,
    /// Ring header: `committed`.
    pub committed: u64,
    /// Ring header: `reserved`.
    pub reserved: u64,
    /// Ring header: `tail`.
    pub tail: u64,
    /// Bit `i % 64` chooses `try_peek` (1) or `try_copy` (0) for the `i`-th read of a gating
    /// reader.
    pub schedule: u64,
    /// The data area (cut or zero-filled to the capacity).
    pub data: Vec<u8>,
}

const FIXED_LEN: usize = 1 + 1 + 4 + 6 * 8;

impl FrameInput {
    /// Reads any bytes as an input.
    pub fn parse(data: &[u8]) -> FrameInput {
        let mut fixed = [0u8; FIXED_LEN];
        let n = data.len().min(FIXED_LEN);
        fixed[..n].copy_from_slice(&data[..n]);
        let u64_at = |at: usize| u64::from_le_bytes(fixed[at..at + 8].try_into().unwrap());
        FrameInput {
            geometry: fixed[0],
            flags: fixed[1],
            max_payload: u32::from_le_bytes(fixed[2..6].try_into().unwrap()),
            start_pos: u64_at(6),
            start_seq: u64_at(14),
            committed: u64_at(22),
            reserved: u64_at(30),
            tail: u64_at(38),
            schedule: u64_at(46),
            data: data[n..].to_vec(),
        }
    }

    /// The bytes [`parse`](Self::parse) reads back as this input.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.geometry, self.flags];
        out.extend_from_slice(&self.max_payload.to_le_bytes());
        for w in [
            self.start_pos,
            self.start_seq,
            self.committed,
            self.reserved,
            self.tail,
            self.schedule,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.data);
        out
    }

    /// Whether the reader is admitted as gating.
    pub fn gating(&self) -> bool {
        self.flags & 1 != 0
    }

    /// Whether the reader is told its writer is gone.
    pub fn writer_gone(&self) -> bool {
        self.flags & 4 != 0
    }

    /// The ring's geometry.
    pub fn config(&self) -> RingConfig {
        config(64 << (self.geometry % 4), self.max_payload)
    }

    /// The decoder-only case: a geometry of any size, the data area's first word as a frame
    /// header, `start_pos` as its position and `committed` as the commit bound.
    pub fn decode_case(&self) -> (RingConfig, u64, u64, u64) {
        let cfg = config(64 << ((self.geometry >> 2) % 35), self.max_payload);
        (cfg, word(&self.data, 0), self.start_pos, self.committed)
    }

    /// The ring and control block this input describes. A writer lays out the static header
    /// and admits the control block, so they are valid; the fuzzed words are then stored over
    /// them.
    pub fn regions(&self) -> (Region, Region) {
        let cfg = self.config();
        let mut writer: Writer<()> =
            Writer::new(Region::heap(cfg.region_len()), cfg).expect("a fresh ring");
        let cb = Region::heap(CONTROL_BLOCK_LEN);
        let mode = if self.gating() {
            Mode::Gating
        } else {
            Mode::Lossy
        };
        writer
            .admit(cb.clone(), mode, Start::Newest, ())
            .expect("a whole control block");
        let ring = writer.ring().clone();
        drop(writer);
        put_word(&ring, offset_of!(RingHeader, committed), self.committed);
        put_word(&ring, offset_of!(RingHeader, reserved), self.reserved);
        put_word(&ring, offset_of!(RingHeader, tail), self.tail);
        let closed = u32::from(self.flags >> 1 & 1);
        put(&ring, offset_of!(RingHeader, closed), &closed.to_ne_bytes());
        let n = self.data.len().min(cfg.capacity() as usize);
        put(&ring, HEADER_LEN, &self.data[..n]);
        put_word(&cb, offset_of!(ControlBlock, start_pos), self.start_pos);
        put_word(&cb, offset_of!(ControlBlock, start_seq), self.start_seq);
        put_word(&cb, offset_of!(ControlBlock, cursor), self.start_pos);
        put_word(&cb, offset_of!(ControlBlock, next_seq), self.start_seq);
        (ring, cb)
    }

    /// The input that describes a ring a writer made and one of its control blocks.
    pub fn from_regions(ring: &Region, cb: &Region, schedule: u64) -> FrameInput {
        let (ring, cb) = (bytes_of(ring), bytes_of(cb));
        let capacity = word(&ring, offset_of!(RingHeader, capacity));
        let max_payload = word32(&ring, offset_of!(RingHeader, max_payload));
        let gating =
            word32(&cb, offset_of!(ControlBlock, mode)) == shmcast_core::layout::MODE_GATING;
        let closed = word32(&ring, offset_of!(RingHeader, closed)) != 0;
        FrameInput {
            geometry: (capacity.trailing_zeros() - 6) as u8,
            flags: u8::from(gating) | u8::from(closed) << 1,
            max_payload,
            start_pos: word(&cb, offset_of!(ControlBlock, start_pos)),
            start_seq: word(&cb, offset_of!(ControlBlock, start_seq)),
            committed: word(&ring, offset_of!(RingHeader, committed)),
            reserved: word(&ring, offset_of!(RingHeader, reserved)),
            tail: word(&ring, offset_of!(RingHeader, tail)),
            schedule,
            data: ring[HEADER_LEN..].to_vec(),
        }
    }
}

fn config(capacity: u64, max_payload: u32) -> RingConfig {
    let max = u64::from(max_payload) % (RingConfig::payload_limit(capacity) + 1);
    RingConfig::new(capacity, max).expect("a power of two in range, a payload within its limit")
}
