//! The rings a hostile publisher hands out: built by the real protocol (`shmcast_core::Writer`
//! over a [`Memfd`] the test keeps a writable mapping of), sealed as a correct publisher seals
//! them, and damaged afterwards at the offsets of [`super::abi`].
//!
//! The geometry is small and fixed, so that a test can name positions: every test message
//! makes a frame of [`SPAN`] bytes, and the `n`th message after the subscriber's start sits
//! `SPAN * n` bytes after it.

use super::memfd::{CONTROL_SEALS, Memfd, RING_SEALS};
use shmcast::test_support::encode_welcome;
use shmcast::{Mode, Start};
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, RingConfig, Writer};
use std::os::fd::BorrowedFd;
use std::sync::atomic::AtomicU64;

/// Data area of the test rings.
pub const CAP: u64 = 4096;
/// Largest payload of the test rings.
pub const MAX: u64 = 1024;
/// Payload of the test messages: 112 bytes make a frame of [`SPAN`] bytes.
pub const MSG: usize = 112;
/// The frame of a test message.
pub const SPAN: u64 = 128;
/// The highest frame-aligned position.
pub const TOP: u64 = !15;
/// Both delivery modes, for tests that run in each.
pub const BOTH: [Mode; 2] = [Mode::Gating, Mode::Lossy];

/// The payload of test message `seq`.
pub fn message(seq: u64) -> Vec<u8> {
    (0..MSG)
        .map(|i| (seq as u8).wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

/// A ring built by the real writer, and one subscriber's control block admitted by it.
pub struct Image {
    pub ring: Memfd,
    pub cb: Memfd,
    pub writer: Writer<()>,
}

impl Image {
    /// A ring of [`CAP`] bytes with a control block admitted in `mode` at position 0.
    pub fn new(mode: Mode) -> Image {
        Image::after(mode, 0)
    }

    /// As [`new`](Self::new), but `before` messages are published before the admission, so the
    /// subscriber starts at position `SPAN * before`.
    pub fn after(mode: Mode, before: u64) -> Image {
        let cfg = RingConfig::new(CAP, MAX).unwrap();
        let ring = Memfd::new(cfg.region_len() as u64);
        let writer = Writer::new(ring.region(), cfg).unwrap();
        let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
        let mut image = Image { ring, cb, writer };
        image.publish(before);
        image
            .writer
            .admit(image.cb.region(), mode, Start::Newest, ())
            .unwrap();
        image
    }

    /// Publishes the next `n` test messages.
    pub fn publish(&mut self, n: u64) {
        for _ in 0..n {
            let seq = self.writer.next_seq();
            self.writer.send(&message(seq), |_| {}).unwrap();
        }
    }

    /// Seals both memfds as a correct publisher does.
    pub fn seal(&self) {
        self.ring.seal(RING_SEALS);
        self.cb.seal(CONTROL_SEALS);
    }

    /// An honest welcome.
    pub fn welcome(&self) -> Vec<u8> {
        encode_welcome(self.ring.len, CONTROL_BLOCK_LEN as u64)
    }

    /// The descriptors an honest welcome carries: the ring, then the control block.
    pub fn fds(&self) -> [BorrowedFd<'_>; 2] {
        [self.ring.fd(), self.cb.fd()]
    }

    /// The meta and sequence words of the frame at position `pos`.
    pub fn frame(&self, pos: u64) -> (&AtomicU64, &AtomicU64) {
        let off = HEADER_LEN + (pos % CAP) as usize;
        (
            self.ring.u64_at(off + super::abi::frame::META),
            self.ring.u64_at(off + super::abi::frame::SEQ),
        )
    }
}
