//! A hostile publisher's headers: a ring header, a control block or an admission (start
//! position) that no correct publisher writes, handed over in a well-formed welcome. The real
//! subscriber validates them at connect and refuses each with a typed error, the
//! [`LayoutError`] naming the field, or a protocol error for a descriptor that is no control
//! block at all; only a lossy start a lap behind connects, as it may be lapped in flight (see
//! `common::fake_publisher`).

mod common;

use common::abi::{ctl, hdr};
use common::expect::{layout, protocol, recv};
use common::fake_publisher::hostile;
use common::image::{BOTH, CAP, Image, MAX, SPAN, TOP};
use common::memfd::{CONTROL_SEALS, Memfd, Patch, apply};
use rustix::fs::SealFlags;
use shmcast::{Mode, RecvError, Start};
use shmcast_core::layout::{CONTROL_MAGIC, LAYOUT_VERSION, STATE_EVICTED};
use shmcast_core::testing::Rng;
use shmcast_core::{
    CONTROL_BLOCK_LEN, ConfigError, HEADER_LEN, LayoutError, Region, RingConfig, Writer,
};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;

/// Every static header field, wrong in each way the validator names.
#[test]
fn corrupt_ring_headers_are_refused() {
    use Patch::{U32, U64};
    let len = HEADER_LEN as u64 + CAP;
    let field = |field, value| LayoutError::Field { field, value };
    let capacity = |c| LayoutError::Config(ConfigError::Capacity(c));
    let limit = RingConfig::payload_limit(CAP);
    let max_payload = |m| {
        LayoutError::Config(ConfigError::MaxPayload {
            max_payload: m,
            limit,
        })
    };
    let cases: Vec<(Vec<Patch>, LayoutError)> = vec![
        (vec![U64(hdr::MAGIC, 0)], LayoutError::BadMagic(0)),
        (
            vec![U64(hdr::MAGIC, CONTROL_MAGIC)],
            LayoutError::BadMagic(CONTROL_MAGIC),
        ),
        (
            vec![U32(hdr::VERSION, LAYOUT_VERSION + 1)],
            LayoutError::Version {
                found: LAYOUT_VERSION + 1,
                expected: LAYOUT_VERSION,
            },
        ),
        (
            vec![U32(hdr::HEADER_LEN_FIELD, 2 * HEADER_LEN as u32)],
            field("header_len", 2 * HEADER_LEN as u64),
        ),
        (vec![U32(hdr::HEADER_LEN_FIELD, 0)], field("header_len", 0)),
        (vec![U32(hdr::FRAME_ALIGN, 8)], field("frame_align", 8)),
        (vec![U64(hdr::CAPACITY, CAP - 1)], capacity(CAP - 1)),
        (vec![U64(hdr::CAPACITY, 0)], capacity(0)),
        (vec![U64(hdr::CAPACITY, 32)], capacity(32)),
        (vec![U64(hdr::CAPACITY, 1 << 41)], capacity(1 << 41)),
        (vec![U64(hdr::CAPACITY, u64::MAX)], capacity(u64::MAX)),
        (
            vec![U32(hdr::MAX_PAYLOAD, CAP as u32 / 2)],
            max_payload(CAP / 2),
        ),
        (
            vec![U32(hdr::MAX_PAYLOAD, u32::MAX)],
            max_payload(u32::MAX.into()),
        ),
        (
            vec![U64(hdr::TOTAL_LEN, len + 16)],
            field("total_len", len + 16),
        ),
        (
            vec![U64(hdr::TOTAL_LEN, len - 16)],
            field("total_len", len - 16),
        ),
        (vec![U64(hdr::TOTAL_LEN, 0)], field("total_len", 0)),
        (
            vec![U64(hdr::TOTAL_LEN, u64::MAX)],
            field("total_len", u64::MAX),
        ),
        // Consistent, but for a ring twice the size of the file.
        (
            vec![
                U64(hdr::CAPACITY, 2 * CAP),
                U64(hdr::TOTAL_LEN, HEADER_LEN as u64 + 2 * CAP),
            ],
            LayoutError::TooSmall {
                len,
                need: HEADER_LEN as u64 + 2 * CAP,
            },
        ),
    ];
    hostile("headers", |scene| {
        for (patches, expected) in cases {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(2);
                apply(&image.ring, &patches);
                image.seal();
                let (sub, _conn) = scene.connect(&image.welcome(), &image.fds(), mode);
                assert_eq!(layout(sub), expected, "{patches:?}");
            }
        }
    });
}

/// Control blocks that are not one: wrong size, missing seals, not a memfd, not writable, or
/// holding garbage, another version or impossible admission fields.
#[test]
fn wrong_control_blocks_are_refused() {
    hostile("control-blocks", |scene| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let welcome = image.welcome();
        let with_cb = |cb: BorrowedFd<'_>| {
            scene
                .connect(&welcome, &[image.ring.fd(), cb], Mode::Gating)
                .0
        };

        for len in [0, 256, CONTROL_BLOCK_LEN as u64 - 8, 4096] {
            let cb = Memfd::new(len);
            cb.seal(CONTROL_SEALS);
            let text = protocol(with_cb(cb.fd()));
            assert!(
                text.contains(&format!("not {CONTROL_BLOCK_LEN}")),
                "{len}: {text}"
            );
        }
        for seals in [
            SealFlags::empty(),
            CONTROL_SEALS.difference(SealFlags::SEAL),
        ] {
            let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
            cb.seal(seals);
            let text = protocol(with_cb(cb.fd()));
            assert!(text.contains("missing seals"), "{seals:?}: {text}");
        }
        // Sealed against writing: the subscriber cannot map it read-write.
        let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
        cb.seal(CONTROL_SEALS | SealFlags::FUTURE_WRITE);
        protocol(with_cb(cb.fd()));
        // The ring itself as the control block, and a descriptor that is no memfd at all.
        let text = protocol(with_cb(image.ring.fd()));
        assert!(text.contains("refused"), "{text}");
        let (pipe_r, _pipe_w) = rustix::pipe::pipe().unwrap();
        let text = protocol(with_cb(pipe_r.as_fd()));
        assert!(text.contains("missing seals"), "{text}");

        // Sealed, the right size, but not an admitted control block.
        let garbage = |fill: &dyn Fn(&Memfd)| {
            let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
            fill(&cb);
            cb.seal(CONTROL_SEALS);
            layout(with_cb(cb.fd()))
        };
        assert_eq!(garbage(&|_| {}), LayoutError::BadMagic(0));
        let mut rng = Rng(7);
        let words: Vec<u64> = (0..CONTROL_BLOCK_LEN / 8).map(|_| rng.next() | 1).collect();
        let e = garbage(&|cb| {
            for (i, w) in words.iter().enumerate() {
                cb.u64_at(8 * i).store(*w, Ordering::Relaxed);
            }
        });
        assert!(matches!(e, LayoutError::BadMagic(m) if m != 0), "{e:?}");
        // A correct one, then one field wrong.
        let admitted = |patches: &[Patch]| {
            garbage(&|cb| {
                let cfg = RingConfig::new(CAP, MAX).unwrap();
                let mut w: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
                w.admit(cb.region(), Mode::Gating, Start::Newest, ())
                    .unwrap();
                apply(cb, patches);
            })
        };
        use Patch::{U32, U64};
        assert_eq!(
            admitted(&[U64(ctl::MAGIC, !CONTROL_MAGIC)]),
            LayoutError::BadMagic(!CONTROL_MAGIC)
        );
        assert_eq!(
            admitted(&[U32(ctl::VERSION, 1)]),
            LayoutError::Version {
                found: 1,
                expected: LAYOUT_VERSION
            }
        );
        for state in [0, STATE_EVICTED, 99] {
            assert_eq!(
                admitted(&[U32(ctl::STATE, state)]),
                LayoutError::Field {
                    field: "state",
                    value: state.into()
                }
            );
        }
        for mode in [0, 3, u32::MAX] {
            assert_eq!(
                admitted(&[U32(ctl::MODE, mode)]),
                LayoutError::Field {
                    field: "mode",
                    value: mode.into()
                }
            );
        }
    });
}

/// Start positions the admitted control block names, against the ring's committed position. A
/// start more than a ring behind `committed` is impossible for a gating subscriber (the writer
/// waits for it from admission on) but only a lap for a lossy one, which may be lapped between
/// admission and attach: that one connects, and its receives give typed outcomes.
#[test]
fn impossible_start_positions_are_refused() {
    use Patch::U64;
    hostile("start", |scene| {
        for mode in BOTH {
            // The subscriber starts at 128 (one message before it), the ring is committed to 512.
            let committed = 4 * SPAN;
            // (control block patch, ring patch, refused value, a lap for a lossy subscriber)
            let cases: [(&[Patch], &[Patch], u64, bool); 6] = [
                (&[U64(ctl::START_POS, SPAN + 8)], &[], SPAN + 8, false),
                (
                    &[U64(ctl::START_POS, committed + 16)],
                    &[],
                    committed + 16,
                    false,
                ),
                (&[U64(ctl::START_POS, u64::MAX)], &[], u64::MAX, false),
                (&[], &[U64(hdr::COMMITTED, 0)], SPAN, false),
                (&[], &[U64(hdr::COMMITTED, SPAN + CAP + 16)], SPAN, true),
                (&[], &[U64(hdr::COMMITTED, TOP)], SPAN, true),
            ];
            for (cb_patch, ring_patch, value, lap) in cases {
                let mut image = Image::after(mode, 1);
                image.publish(3);
                assert_eq!(image.writer.committed(), committed);
                apply(&image.cb, cb_patch);
                apply(&image.ring, ring_patch);
                image.seal();
                let (sub, _conn) = scene.connect(&image.welcome(), &image.fds(), mode);
                if lap && mode == Mode::Lossy {
                    let mut sub = sub.expect("a lapped lossy start connects");
                    for _ in 0..3 {
                        match recv(&mut sub) {
                            Err(
                                RecvError::Timeout | RecvError::Lagged(_) | RecvError::Corrupt(_),
                            ) => {}
                            other => panic!("{ring_patch:?}: {other:?}"),
                        }
                    }
                    continue;
                }
                let expected = LayoutError::Field {
                    field: "start_pos",
                    value,
                };
                assert_eq!(layout(sub), expected, "{cb_patch:?} {ring_patch:?}");
            }
        }
    });
}
