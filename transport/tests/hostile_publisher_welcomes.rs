//! A hostile publisher's welcome: packets that lie about the sizes they announce or are not
//! welcomes, and welcomes with too few, too many or swapped descriptors. The real subscriber
//! refuses each with a typed error and closes every descriptor it received (see
//! `common::fake_publisher`).

mod common;

use common::expect::{protocol, refused};
use common::fake_publisher::hostile;
use common::image::Image;
use shmcast::test_support::encode_welcome;
use shmcast::{ConnectError, Mode};
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN};
use std::os::fd::BorrowedFd;

/// A welcome must carry exactly the ring and the control block; whatever else arrives is closed.
#[test]
fn wrong_descriptor_counts_are_refused_and_closed() {
    hostile("descriptor-counts", |scene| {
        let image = Image::new(Mode::Lossy);
        image.seal();
        let (ring, cb) = (image.ring.fd(), image.cb.fd());
        let welcome = image.welcome();
        // (descriptors, what the refusal says: any of these)
        let cases: [(&[BorrowedFd<'_>], &[&str]); 6] = [
            (&[], &["welcome without descriptors"]),
            (&[ring], &["expected 2 file descriptors, got 1"]),
            (&[ring, cb, cb], &["expected 2 file descriptors, got 3"]),
            (&[ring, cb, ring, cb, ring, cb], &["got 6"]),
            // As many as a packet may carry: received and closed, or cut off by the kernel
            // (depending on the room the receive makes).
            (
                &[ring, cb, ring, cb, ring, cb, ring, cb],
                &["got 8", "truncated"],
            ),
            // Swapped: the control block offered as the ring lacks F_SEAL_FUTURE_WRITE.
            (&[cb, ring], &["missing seals: F_SEAL_FUTURE_WRITE"]),
        ];
        for (fds, needles) in cases {
            let text = protocol(scene.connect(&welcome, fds, Mode::Lossy).0);
            assert!(
                needles.iter().any(|n| text.contains(n)),
                "{} descriptors: {text}",
                fds.len()
            );
        }
        // A refusal that carries descriptors anyway: refused, and they are closed.
        let mut refusal = welcome[..6].to_vec(); // magic and version
        refusal.extend_from_slice(&3u16.to_le_bytes()); // REFUSE
        // code: permission denied (a busy refusal would be tried again)
        refusal.extend_from_slice(&1u16.to_le_bytes());
        refusal.extend_from_slice(&2u16.to_le_bytes()); // text length
        refusal.extend_from_slice(b"no");
        match refused(scene.connect(&refusal, &[ring, cb], Mode::Lossy).0) {
            ConnectError::Refused { reason, .. } => assert_eq!(reason, "no"),
            e => panic!("expected a refusal, got {e:?}"),
        }
    });
}

/// Welcomes that lie about the sizes they announce, or are not welcomes.
#[test]
fn lying_welcomes_are_refused() {
    hostile("welcomes", |scene| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let fds = image.fds();
        let ring_len = image.ring.len;
        let cb_len = CONTROL_BLOCK_LEN as u64;
        let refuse = |reply: &[u8], needle: &str| {
            let text = protocol(scene.connect(reply, &fds, Mode::Gating).0);
            assert!(text.contains(needle), "{reply:?}: {text}");
        };
        for cb_len in [0, cb_len - 1, cb_len + 1, 4096, u64::MAX] {
            refuse(&encode_welcome(ring_len, cb_len), "unexpected sizes");
        }
        for ring_len in [0, HEADER_LEN as u64 - 1] {
            refuse(&encode_welcome(ring_len, cb_len), "unexpected sizes");
        }
        for lie in [HEADER_LEN as u64, ring_len - 16, ring_len + 4096, u64::MAX] {
            refuse(&encode_welcome(lie, cb_len), "announces a ring");
        }

        let good = image.welcome();
        let with = |at: usize, bytes: &[u8]| {
            let mut w = good.clone();
            w[at..at + bytes.len()].copy_from_slice(bytes);
            w
        };
        refuse(&with(0, b"SHMX"), "not a shmcast packet");
        let version = u16::from_le_bytes([good[4], good[5]]);
        refuse(&with(4, &(version + 1).to_le_bytes()), "protocol version");
        refuse(&with(6, &1u16.to_le_bytes()), "unexpected packet kind");
        refuse(&with(6, &9u16.to_le_bytes()), "unexpected packet kind");
        // Bit 0 declares the topic imported; no other is defined.
        for flag in [2u32, 1 << 31, u32::MAX] {
            refuse(&with(8, &flag.to_le_bytes()), "invalid field `flags`");
        }
        refuse(&good[..good.len() - 1], "wrong length");
        let mut longer = good.clone();
        longer.push(0);
        refuse(&longer, "wrong length");
        // A doorbell instead of a welcome, and a packet larger than any control packet.
        refuse(&[1], "wrong length");
        refuse(&[0u8; 300], "truncated");
    });
}
