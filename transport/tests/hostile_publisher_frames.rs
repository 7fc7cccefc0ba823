//! A hostile publisher's frames and positions, damaged after the subscriber connected: frame
//! headers pointing outside the ring, sequence numbers out of order, and impossible `committed`,
//! `tail` and `reserved` positions. Every receive gives a message, a typed
//! [`RecvError::Corrupt`], `Lagged` or a timeout, and a corrupt frame is reported again rather
//! than skipped (see `common::fake_publisher`).

mod common;

use common::abi::{MESSAGE, PADDING, ctl, hdr, meta};
use common::expect::{expect_corrupt, expect_message, recv};
use common::fake_publisher::hostile;
use common::image::{BOTH, CAP, Image, MAX, SPAN, TOP};
use common::memfd::{Patch, apply};
use shmcast::{FrameError, Mode, RecvError};
use std::sync::atomic::Ordering;

/// Frame headers that point outside the data area, past the committed position or past the
/// largest payload, or that are not frames at all.
#[test]
fn frames_pointing_outside_the_ring_are_corrupt() {
    hostile("frames", |scene| {
        for mode in BOTH {
            let too_long = |len| FrameError::TooLong {
                len,
                max: MAX as u32,
            };
            let bad_tag = meta(MESSAGE, 16) ^ 1 << 41;
            // The last frame slot: 128 bytes of room, reached after 31 messages.
            let last = CAP - SPAN;
            // (messages before the subscriber's start, position of the damaged frame (the
            // subscriber receives the messages before it first), its meta, the error)
            let cases = [
                (0, 0, 0, FrameError::BadMeta(0)),
                (0, 0, bad_tag, FrameError::BadMeta(bad_tag)),
                (0, 0, meta(7, 16), FrameError::BadMeta(meta(7, 16))),
                (
                    0,
                    0,
                    meta(MESSAGE, MAX as u32 + 16),
                    too_long(MAX as u32 + 16),
                ),
                (0, 0, meta(MESSAGE, u32::MAX), too_long(u32::MAX)),
                (31, last, meta(MESSAGE, 200), FrameError::CrossesEnd),
                (31, last, meta(MESSAGE, MAX as u32), FrameError::CrossesEnd),
                (0, 0, meta(PADDING, 0), FrameError::BadPadding),
                (31, last, meta(PADDING, 200), FrameError::BadPadding),
                // Three messages are committed up to 384: these would end at 416 and 480.
                (0, 0, meta(MESSAGE, 400), FrameError::BeyondCommit),
                (0, 2 * SPAN, meta(MESSAGE, 200), FrameError::BeyondCommit),
            ];
            for (before, pos, bad, expected) in cases {
                let mut image = Image::after(mode, before);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                for seq in before..before + (pos - before * SPAN) / SPAN {
                    expect_message(&mut sub, seq);
                }
                image.frame(pos).0.store(bad, Ordering::Relaxed);
                expect_corrupt(&mut sub, expected);
            }
        }
    });
}

/// Sequence numbers that go backwards or jump, in messages, padding and after a lap; and that
/// wrap at `u64::MAX`.
#[test]
fn sequence_numbers_out_of_order_are_corrupt() {
    hostile("sequence", |scene| {
        for mode in BOTH {
            // (frame, its new sequence number, messages received before, expected seq)
            let cases = [
                (SPAN, 0, 1, 1),
                (SPAN, 7, 1, 1),
                (0, u64::MAX, 0, 0),
                (2 * SPAN, 1, 2, 2),
            ];
            for (pos, bad, good, expected) in cases {
                let mut image = Image::new(mode);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                for seq in 0..good {
                    expect_message(&mut sub, seq);
                }
                image.frame(pos).1.store(bad, Ordering::Relaxed);
                expect_corrupt(
                    &mut sub,
                    FrameError::Sequence {
                        expected,
                        found: bad,
                    },
                );
            }

            // A padding frame (at the end of the data area) whose number goes backwards.
            let mut image = Image::after(mode, 31);
            image.writer.send(&[5; 200], |_| {}).unwrap(); // pads 3968..4096 first
            let (mut sub, _conn) = scene.connected(&image, mode);
            image.frame(31 * SPAN).1.store(30, Ordering::Relaxed);
            expect_corrupt(
                &mut sub,
                FrameError::Sequence {
                    expected: 31,
                    found: 30,
                },
            );
        }

        // A lossy subscriber that was lapped resumes (by default) at the writer's slack frame:
        // exactly the messages before it are reported missing, unless its number lies.
        for lie in [None, Some(1), Some(0)] {
            let mut image = Image::new(Mode::Lossy);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
            expect_message(&mut sub, 0);
            expect_message(&mut sub, 1);
            image.publish(40);
            let tail = image.ring.u64_at(hdr::SLACK).load(Ordering::Relaxed);
            assert!(tail > image.ring.u64_at(hdr::TAIL).load(Ordering::Relaxed));
            let tail_seq = image.frame(tail).1.load(Ordering::Relaxed);
            match lie {
                None => {
                    match recv(&mut sub) {
                        Err(RecvError::Lagged(n)) => assert_eq!(n, tail_seq - 2),
                        other => panic!("expected Lagged, got {other:?}"),
                    }
                    expect_message(&mut sub, tail_seq);
                }
                Some(found) => {
                    image.frame(tail).1.store(found, Ordering::Relaxed);
                    expect_corrupt(&mut sub, FrameError::Sequence { expected: 2, found });
                }
            }
        }

        // Numbers wrap instead of overflowing: a stream the admission says starts at u64::MAX,
        // and a lap onto a frame numbered u64::MAX.
        let seq_of = |got: Result<(u64, Vec<u8>), RecvError>| match got {
            Ok((seq, _)) => seq,
            Err(e) => panic!("expected a message, got {e:?}"),
        };
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(3);
            image.cb.store64(ctl::START_SEQ, u64::MAX);
            for (i, seq) in [u64::MAX, 0, 1].into_iter().enumerate() {
                image.frame(i as u64 * SPAN).1.store(seq, Ordering::Relaxed);
            }
            let (mut sub, _conn) = scene.connected(&image, mode);
            for expected in [u64::MAX, 0, 1] {
                assert_eq!(seq_of(recv(&mut sub)), expected);
            }
        }
        let mut image = Image::new(Mode::Lossy);
        image.publish(3);
        let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
        expect_message(&mut sub, 0);
        image.publish(40);
        // Where a lapped subscriber resumes by default.
        let tail = image.ring.u64_at(hdr::SLACK).load(Ordering::Relaxed);
        image.frame(tail).1.store(u64::MAX, Ordering::Relaxed);
        image.frame(tail + SPAN).1.store(0, Ordering::Relaxed);
        assert!(matches!(recv(&mut sub), Err(RecvError::Lagged(n)) if n == u64::MAX - 1));
        assert_eq!(seq_of(recv(&mut sub)), u64::MAX);
        assert_eq!(seq_of(recv(&mut sub)), 0);
        assert_eq!(sub.stats().lagged, u64::MAX - 1);
    });
}

/// `committed`, `tail` and `reserved` set to impossible values after the subscriber read two of
/// three messages (its position is 256, the ring is committed to 384).
#[test]
fn impossible_positions_are_corrupt_or_time_out() {
    use Patch::U64;
    #[derive(Debug)]
    enum Expect {
        Corrupt(FrameError),
        /// Message 2 first: a gating subscriber saw it committed before the patch, and gating
        /// frames stay put until released, so it reads it without reloading `committed`.
        MessageThen(FrameError),
        Message,
        Timeout,
    }
    use Expect::{Corrupt, Message, MessageThen, Timeout};
    use FrameError::{BadMeta, Position};
    let pos = 2 * SPAN;
    let far = pos + CAP + 16;
    // (patch, expected for a gating subscriber, for a lossy one)
    let cases = [
        (
            U64(hdr::COMMITTED, SPAN),
            MessageThen(Position(SPAN)),
            Corrupt(Position(SPAN)),
        ),
        (
            U64(hdr::COMMITTED, 0),
            MessageThen(Position(0)),
            Corrupt(Position(0)),
        ),
        (
            U64(hdr::COMMITTED, pos + 8),
            MessageThen(Position(pos + 8)),
            Corrupt(Position(pos + 8)),
        ),
        // More than a ring ahead of message 2. The gating subscriber, once past message 2, is
        // less than a ring behind it and finds no frame there; the lossy one takes it for a
        // lap, finds the tail not past it and waits (it may be a lap in flight).
        (U64(hdr::COMMITTED, far), MessageThen(BadMeta(0)), Timeout),
        (
            U64(hdr::COMMITTED, TOP),
            MessageThen(Position(TOP)),
            Timeout,
        ),
        // A reservation more than a ring ahead: only lossy subscribers look, and wait too.
        (U64(hdr::RESERVED, u64::MAX), Message, Timeout),
        (U64(hdr::RESERVED, 0), Message, Message),
        // Only a lapped lossy subscriber reads the tail; nobody reads `next_seq`.
        (U64(hdr::TAIL, TOP), Message, Message),
        (U64(hdr::NEXT_SEQ, 0), Message, Message),
    ];
    hostile("positions", |scene| {
        for (patch, gating, lossy) in &cases {
            for (mode, expect) in [(Mode::Gating, gating), (Mode::Lossy, lossy)] {
                let mut image = Image::new(mode);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                expect_message(&mut sub, 0);
                expect_message(&mut sub, 1);
                apply(&image.ring, &[*patch]);
                match expect {
                    Corrupt(e) => expect_corrupt(&mut sub, *e),
                    MessageThen(e) => {
                        expect_message(&mut sub, 2);
                        expect_corrupt(&mut sub, *e);
                    }
                    Message => expect_message(&mut sub, 2),
                    Timeout => {
                        for _ in 0..2 {
                            let got = recv(&mut sub);
                            assert!(matches!(got, Err(RecvError::Timeout)), "{patch:?}: {got:?}");
                        }
                    }
                }
            }
        }

        // A lossy subscriber lapped for real, then the tail moved somewhere impossible.
        // Given the committed position and the true tail: past the committed position,
        // misaligned, or near the end of the position space.
        let bad_tails: [fn(u64, u64) -> u64; 3] = [|c, _| c + 16, |_, t| t + 8, |_, _| TOP];
        for bad_tail in bad_tails {
            let mut image = Image::new(Mode::Lossy);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
            expect_message(&mut sub, 0);
            expect_message(&mut sub, 1);
            image.publish(40);
            let committed = image.writer.committed();
            let real = image.ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
            let bad = bad_tail(committed, real);
            image.ring.store64(hdr::TAIL, bad);
            expect_corrupt(&mut sub, FrameError::Position(bad));
        }
    });
}
