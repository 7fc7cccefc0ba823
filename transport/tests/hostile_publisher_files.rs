//! A hostile publisher's ring file: unsealed, smaller than its header claims, or resized while a
//! subscriber reads it. The real subscriber refuses a file it cannot trust before mapping it,
//! and a sealed one cannot be changed under it (see `common::fake_publisher`).

mod common;

use common::expect::{expect_message, layout, protocol, recv};
use common::fake_publisher::hostile;
use common::image::{BOTH, CAP, Image, message};
use common::memfd::{CONTROL_SEALS, Memfd, RING_SEALS};
use rustix::fs::SealFlags;
use shmcast::test_support::encode_welcome;
use shmcast::{Mode, RecvError};
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, LayoutError};

/// A ring without every seal is refused before it is mapped, so the harness shrinking it right
/// after the welcome (which it can, unsealed) cannot fault the subscriber.
#[test]
fn unsealed_rings_are_refused_before_they_are_mapped() {
    hostile("unsealed", |scene| {
        let partial = [
            SealFlags::empty(),
            SealFlags::SHRINK | SealFlags::GROW,
            RING_SEALS.difference(SealFlags::FUTURE_WRITE),
            RING_SEALS.difference(SealFlags::SEAL),
            RING_SEALS.difference(SealFlags::SHRINK),
        ];
        for seals in partial {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(3);
                image.ring.seal(seals);
                image.cb.seal(CONTROL_SEALS);
                let shrink = || {
                    let shrunk = rustix::fs::ftruncate(image.ring.fd(), 0);
                    assert_eq!(shrunk.is_ok(), !seals.contains(SealFlags::SHRINK));
                };
                let (sub, _conn) = scene.connect_then(&image.welcome(), &image.fds(), mode, shrink);
                let text = protocol(sub);
                assert!(text.contains("missing seals"), "{seals:?}: {text}");
                // Do not touch the harness's own mapping: the file may be empty now.
                drop(image);
            }
        }
    });
}

/// A file too small for a header, or for the ring its header describes, is refused.
#[test]
fn rings_smaller_than_their_header_claims_are_refused() {
    hostile("too-small", |scene| {
        let image = Image::new(Mode::Lossy);
        image.seal();
        for len in [0, 64, HEADER_LEN as u64 - 8] {
            let short = Memfd::new(len);
            short.seal(RING_SEALS);
            let fds = [short.fd(), image.cb.fd()];
            let cb_len = CONTROL_BLOCK_LEN as u64;
            // Announced honestly: the welcome itself is impossible.
            let honest = encode_welcome(len, cb_len);
            let text = protocol(scene.connect(&honest, &fds, Mode::Lossy).0);
            assert!(text.contains("unexpected sizes"), "{len}: {text}");
            // Announced as a whole ring: the descriptor's size gives it away.
            let lying = encode_welcome(image.ring.len, cb_len);
            let text = protocol(scene.connect(&lying, &fds, Mode::Lossy).0);
            assert!(text.contains("fewer than"), "{len}: {text}");
        }

        // A correct header whose data area was cut in half before sealing.
        let mut cut = Image::new(Mode::Lossy);
        cut.publish(3);
        let len = HEADER_LEN as u64 + CAP / 2;
        rustix::fs::ftruncate(cut.ring.fd(), len).unwrap();
        cut.seal();
        let welcome = encode_welcome(len, CONTROL_BLOCK_LEN as u64);
        let (sub, _conn) = scene.connect(&welcome, &cut.fds(), Mode::Lossy);
        let need = HEADER_LEN as u64 + CAP;
        assert_eq!(layout(sub), LayoutError::TooSmall { len, need });
    });
}

/// A ring that is sealed cannot be shrunk, grown, punched or written through its descriptor
/// while a subscriber reads it; the harness's own mapping, made before sealing, still writes.
#[test]
fn a_sealed_ring_cannot_be_shrunk_under_a_subscriber() {
    use rustix::fs::FallocateFlags;
    hostile("sealed", |scene| {
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(2);
            image.seal();
            let (mut sub, conn) = scene.connected(&image, mode);
            expect_message(&mut sub, 0);
            let fd = image.ring.fd();
            let denied = |r: rustix::io::Result<()>| assert_eq!(r, Err(rustix::io::Errno::PERM));
            denied(rustix::fs::ftruncate(fd, 0));
            denied(rustix::fs::ftruncate(fd, HEADER_LEN as u64));
            denied(rustix::fs::ftruncate(fd, 2 * image.ring.len));
            denied(rustix::fs::fallocate(
                fd,
                FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
                0,
                image.ring.len,
            ));
            assert_eq!(
                rustix::io::pwrite(fd, &[0xff; 8], 0),
                Err(rustix::io::Errno::PERM)
            );
            assert_eq!(
                rustix::fs::fstat(fd).unwrap().st_size as u64,
                image.ring.len
            );
            expect_message(&mut sub, 1);
            // Enough to lap a lossy subscriber; all a gating one lets the writer publish.
            image.publish(if mode == Mode::Gating { 30 } else { 40 });
            let mut seq = 2;
            loop {
                match recv(&mut sub) {
                    Ok((s, payload)) => {
                        assert_eq!((s, payload), (seq, message(seq)));
                        seq += 1;
                    }
                    Err(RecvError::Lagged(n)) => seq += n,
                    Err(RecvError::Timeout) => break,
                    Err(e) => panic!("{e:?}"),
                }
            }
            assert_eq!(seq, image.writer.next_seq());
            drop(conn);
            assert!(matches!(recv(&mut sub), Err(RecvError::Disconnected)));
        }
    });
}
