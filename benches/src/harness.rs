//! What every trial shares, whatever its scenario (and the soak): how long it waits for its
//! children to start and for progress, a topic name of its own, the shmcast ring for a message
//! size, waiting until shmcast has admitted the subscribers, the publisher's syscall count, and the
//! runtime every tokio transport runs in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shmcast::{Publisher, PublisherStats};

use crate::error::{BenchError, Result, sys};

/// Longest a publisher waits for a subscriber to make room, or a subscriber for a message,
/// before the trial fails as stalled.
pub const STALL: Duration = Duration::from_secs(10);

/// Longest the children of a trial may take to start and connect.
pub const STARTUP: Duration = Duration::from_secs(20);

/// A topic name no other trial or run uses.
pub fn unique_topic(kind: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "shmcast-bench-{}-{kind}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// shmcast ring size for messages of `size` bytes: room for several in flight.
pub fn ring_capacity(size: usize) -> u64 {
    ((size as u64 + 16).next_power_of_two() * 4).max(1 << 20)
}

/// Bytes a message of `size` bytes takes in a ring: its 16-byte header and the message,
/// rounded up to 16.
pub fn frame_bytes(size: usize) -> u64 {
    (size as u64 + 16).next_multiple_of(16)
}

/// The power-of-two shmcast ring closest to holding `frames` messages of `size` bytes (each
/// frame is the message and a 16-byte header, rounded up to 16 bytes): the largest that holds
/// at most `frames`, unless it holds fewer than `frames - 1`; then the smallest that holds at
/// least `frames`. Power-of-two messages fill a power-of-two ring one frame short (16 MiB hold
/// 15 frames of 1 MiB); smaller ones would lose more (1 KiB holds 12 frames of 64 B, so 64 B
/// messages get 2 KiB, 25 frames).
pub fn ring_holding(size: usize, frames: usize) -> u64 {
    let frame = frame_bytes(size);
    let most = frame * frames as u64;
    // The largest power of two not above `most`.
    let below = 1 << (63 - most.leading_zeros());
    if below / frame + 1 >= frames as u64 {
        below
    } else {
        most.next_power_of_two()
    }
}

/// Waits until the publisher has admitted `n` subscribers.
pub fn wait_for_subscribers(publisher: &Publisher, n: usize) -> Result<()> {
    let deadline = Instant::now() + STARTUP;
    while publisher.subscriber_count() < n {
        if Instant::now() >= deadline {
            return Err(BenchError::Child {
                who: "shmcast subscribers".into(),
                what: format!(
                    "only {} of {n} admitted within {STARTUP:?}",
                    publisher.subscriber_count()
                ),
            });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Syscalls a shmcast publisher made between two snapshots: one per wake, and a `poll` plus a
/// `read` per wait for space. Committing makes none.
pub fn shmcast_syscalls(before: &PublisherStats, after: &PublisherStats) -> u64 {
    (after.wake_syscalls - before.wake_syscalls) + 2 * (after.space_waits - before.space_waits)
}

/// The error of a subscriber that waited [`STALL`] for a message.
pub fn stalled(transport: &str) -> BenchError {
    BenchError::Child {
        who: format!("{transport} subscriber"),
        what: format!("no message for {STALL:?}"),
    }
}

/// The runtime of every tokio side of a trial: current-thread, with I/O and timers.
pub fn tokio_runtime() -> Result<::tokio::runtime::Runtime> {
    ::tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(sys("building a tokio runtime"))
}

#[cfg(test)]
mod tests {
    use super::ring_holding;

    #[test]
    fn rings_hold_about_the_frames_asked_for() {
        assert_eq!(ring_holding(64, 16), 2 << 10, "1 KiB would hold 12 frames");
        assert_eq!(ring_holding(1 << 20, 16), 16 << 20, "15 frames: one short");
        assert_eq!(ring_holding(1 << 20, 64), 64 << 20);
        assert_eq!(
            ring_holding(48, 16),
            1 << 10,
            "exactly 16 frames of 64 bytes"
        );
    }
}
