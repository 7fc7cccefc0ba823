//! The publisher's work alone: how fast one thread writes stream messages ([`payload::fill`])
//! into a buffer the size of a trial's ring, with no transport and no reader.
//!
//! In a stream trial the publisher writes every byte of every message, so no transport can
//! deliver more messages per second to a subscriber than this thread fills. A transport's rate
//! over this ceiling is how much of the publisher's time its overhead leaves to the message; the
//! ceiling over a peer's rate is the most any transport could be ahead of that peer in the same
//! placement. The buffer is private to the thread, so its lines never travel to a reader's
//! cache and back: the ceiling is if anything above what a publisher that shares its ring can
//! reach.

use std::hint::black_box;
use std::time::Duration;

use crate::error::{Result, sys};
use crate::harness::{frame_bytes, ring_holding};
use crate::payload;
use crate::pin::{Pin, Pinned};
use crate::sys::now_ns;

/// Messages of `size` bytes written per second for `duration`, one after the other through a
/// buffer of the ring that holds `in_flight` of them, on the publisher's CPU of `pin` if given.
pub fn fill_rate(
    size: usize,
    in_flight: usize,
    duration: Duration,
    pin: Option<Pin>,
) -> Result<f64> {
    let frame = frame_bytes(size) as usize;
    let frames = (ring_holding(size, in_flight) as usize / frame).max(1);
    let mut ring = vec![0u8; frames * frame];
    let pinned = match pin {
        Some(p) => Some(Pinned::thread(p.publisher()).map_err(sys("pinning the publisher"))?),
        None => None,
    };
    let t0 = now_ns();
    let end = t0 + duration.as_nanos() as u64;
    let mut seq = 0u64;
    let mut now = t0;
    while now < end {
        let at = (seq as usize % frames) * frame;
        payload::fill(&mut ring[at..at + size], seq);
        black_box(&ring[at..at + 8]);
        seq += 1;
        // A clock read costs about as much as a small message: read it every 64 of them.
        if size >= 4096 || seq % 64 == 0 {
            now = now_ns();
        }
    }
    if let Some(p) = &pinned {
        p.check("the filling thread")?;
    }
    Ok(seq as f64 / ((now - t0) as f64 / 1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_at_a_finite_positive_rate() {
        let rate = fill_rate(1 << 16, 16, Duration::from_millis(20), None).unwrap();
        assert!(rate.is_finite() && rate > 0.0, "{rate}");
    }
}
