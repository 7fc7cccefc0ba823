//! A hostile publisher's stream state: the words that evict, demote and close, written at the
//! wrong time or with values no publisher writes; and a ring that cannot progress, which
//! receives wait on without spinning until the publisher's hang-up ends the stream (see
//! `common::fake_publisher`).

mod common;

use common::abi::{ctl, hdr};
use common::expect::{RECV, expect_message, recv};
use common::fake_publisher::hostile;
use common::image::{BOTH, CAP, Image, MAX, SPAN, message};
use common::memfd::{CONTROL_SEALS, Memfd, RING_SEALS};
use shmcast::test_support::encode_welcome;
use shmcast::{Mode, RecvError, Start, Subscriber};
use shmcast_core::layout::{MODE_GATING, MODE_LOSSY, STATE_ACTIVE, STATE_EVICTED};
use shmcast_core::{CONTROL_BLOCK_LEN, RingConfig, Writer};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Words of the ring and the control block a publisher legitimately writes, written at the
/// wrong time or with values it never writes.
#[test]
fn publisher_written_words_make_typed_outcomes() {
    hostile("publisher-words", |scene| {
        // Evicted, whatever non-active value the state holds, for as long as it holds it.
        for state in [STATE_EVICTED, 0, 77] {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(2);
                let (mut sub, _conn) = scene.connected(&image, mode);
                expect_message(&mut sub, 0);
                image.cb.store32(ctl::STATE, state);
                for _ in 0..3 {
                    assert!(matches!(recv(&mut sub), Err(RecvError::Evicted)));
                }
                image.cb.store32(ctl::STATE, STATE_ACTIVE);
                expect_message(&mut sub, 1);
            }
        }
        // Demoted by any mode but gating: told once, then reading on as a lossy subscriber.
        for mode_word in [MODE_LOSSY, 0, 99] {
            let mut image = Image::new(Mode::Gating);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Gating);
            expect_message(&mut sub, 0);
            image.cb.store32(ctl::MODE, mode_word);
            assert!(matches!(recv(&mut sub), Err(RecvError::Demoted)));
            assert!(!sub.is_gating());
            expect_message(&mut sub, 1);
            image.cb.store32(ctl::MODE, MODE_GATING);
            expect_message(&mut sub, 2);
            assert!(!sub.is_gating(), "a demotion is final");
        }
        // Closed: what is committed is received, then the stream has ended, while the
        // connection stays open. Waking words and flags hold anything: receives time out.
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(2);
            let (mut sub, _conn) = scene.connected(&image, mode);
            for (off, value) in [(hdr::WAKE, u32::MAX), (hdr::WRITER_WAITING, 7)] {
                image.ring.store32(off, value);
            }
            expect_message(&mut sub, 0);
            image.ring.store32(hdr::CLOSED, u32::MAX);
            expect_message(&mut sub, 1);
            assert!(matches!(recv(&mut sub), Err(RecvError::Disconnected)));
            image.ring.store32(hdr::CLOSED, 0);
            assert!(matches!(recv(&mut sub), Err(RecvError::Timeout)));
        }
    });
}

/// Waits up to `timeout` for a subscriber's descriptor to become readable, as an event loop
/// would.
fn wait_readable(sub: &Subscriber, timeout: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(sub, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: timeout.subsec_nanos().into(),
    };
    rustix::event::poll(&mut fds, Some(&timeout)).expect("poll");
}

/// A ring left where a lossy subscriber can read nothing but may not sleep either (it was
/// lapped, yet the tail is not past it): a receive waits out its timeout napping, not spinning.
/// Then the publisher hangs up: with no writer left the ring never changes, so receives end with
/// `Disconnected` instead of waiting on it.
#[test]
fn a_hang_up_ends_receives_on_a_ring_that_cannot_progress() {
    hostile("stuck-then-gone", |scene| {
        // (a) Hostile: committed more than a ring ahead of the subscriber, the tail not moved.
        // (b) A correct writer that dies mid-reservation: a message that needs the whole ring
        //     has moved the tail up to the committed position (everything committed may be
        //     overwritten), and is never committed.
        for dies_mid_reservation in [false, true] {
            for blocking in [true, false] {
                let cfg = if dies_mid_reservation {
                    RingConfig::new(CAP, RingConfig::payload_limit(CAP)).unwrap()
                } else {
                    RingConfig::new(CAP, MAX).unwrap()
                };
                let ring = Memfd::new(cfg.region_len() as u64);
                let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
                let mut writer: Writer<()> = Writer::new(ring.region(), cfg).unwrap();
                writer
                    .admit(cb.region(), Mode::Lossy, Start::Newest, ())
                    .unwrap();
                for seq in 0..3 {
                    writer.send(&message(seq), |_| {}).unwrap();
                }
                ring.seal(RING_SEALS);
                cb.seal(CONTROL_SEALS);
                let welcome = encode_welcome(ring.len, CONTROL_BLOCK_LEN as u64);
                let (sub, conn) = scene.connect(&welcome, &[ring.fd(), cb.fd()], Mode::Lossy);
                let mut sub = sub.unwrap();
                expect_message(&mut sub, 0);
                expect_message(&mut sub, 1);
                if dies_mid_reservation {
                    // 15 frames of 128 bytes, then one of 256 that spans the middle of the data
                    // area: the 2048-byte frame that follows pads to the end first, and the tail
                    // it needs is the first frame boundary past the middle, the committed end.
                    for seq in 3..15 {
                        writer.send(&message(seq), |_| {}).unwrap();
                    }
                    writer.send(&[15; 240], |_| {}).unwrap();
                    let res = writer.try_reserve(cfg.max_payload()).unwrap();
                    let tail = ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
                    assert_eq!(
                        tail,
                        writer.committed(),
                        "the scenario needs tail == committed"
                    );
                    writer.abandon(res);
                } else {
                    ring.store64(hdr::COMMITTED, 2 * SPAN + CAP + 16);
                }
                let cpu_before = common::thread_cpu();
                if blocking {
                    let got = sub.recv_timeout(RECV).map(|_| ());
                    assert!(matches!(got, Err(RecvError::Timeout)), "{got:?}");
                } else {
                    // An event loop: wait for the descriptor, try, for as long as `recv` waits.
                    let end = Instant::now() + RECV;
                    while let Some(left) = end.checked_duration_since(Instant::now()) {
                        let got = sub.try_recv().map(|_| ());
                        assert!(matches!(got, Err(RecvError::Empty)), "{got:?}");
                        wait_readable(&sub, left);
                    }
                }
                // While the publisher is connected the wait lasts its whole timeout, napping
                // between looks rather than spinning on a core: a bound of a quarter of the
                // wait, where a spinning receive takes all of it.
                let cpu = common::thread_cpu() - cpu_before;
                assert!(
                    cpu < RECV / 4,
                    "dies mid-reservation: {dies_mid_reservation}, blocking: {blocking}: \
                     {cpu:?} of CPU in a {RECV:?} wait"
                );
                drop(conn);
                let got = if blocking {
                    sub.recv_timeout(Duration::from_secs(10)).map(|_| ())
                } else {
                    // The hang-up makes the descriptor readable; the next try ends the stream.
                    wait_readable(&sub, Duration::from_secs(10));
                    sub.try_recv().map(|_| ())
                };
                assert!(
                    matches!(got, Err(RecvError::Disconnected)),
                    "dies mid-reservation: {dies_mid_reservation}, blocking: {blocking}: {got:?}"
                );
            }
        }
    });
}
