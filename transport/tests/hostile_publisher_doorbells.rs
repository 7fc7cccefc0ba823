//! A hostile publisher's doorbells: packets carrying descriptors on the subscriber's connection,
//! and a publisher that never reads the subscriber's doorbells or shuts its end. The subscriber
//! closes what arrives, never blocks on its own doorbells, and still ends the stream at the
//! hang-up (see `common::fake_publisher`).

mod common;

use common::abi::hdr;
use common::expect::expect_message;
use common::fake_publisher::hostile;
use common::image::{BOTH, Image};
use common::memfd::Memfd;
use shmcast::{Mode, RecvError};
use std::time::Duration;

/// Doorbells are one byte without descriptors; a publisher flooding the connection with packets
/// of any size carrying descriptors gets them refused by the kernel where it can (Linux 6.16)
/// or closed, and its hang-up still ends the stream.
#[test]
fn doorbells_carrying_descriptors_are_closed() {
    use rustix::event::{PollFd, PollFlags};
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::mem::MaybeUninit;
    hostile("doorbells", |scene| {
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(1);
            image.seal();
            let (mut sub, conn) = scene.connected(&image, mode);
            let stray = Memfd::new(4096);
            let (mut sent, mut refused) = (0, 0);
            for i in 0..512usize {
                let fds = [stray.fd(), image.ring.fd(), image.cb.fd(), stray.fd()];
                let fds = &fds[..i % fds.len() + 1];
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
                let bytes = vec![1u8; 1 + i % 40];
                let iov = [rustix::io::IoSlice::new(&bytes)];
                let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
                match rustix::net::sendmsg(&conn, &iov, &mut control, flags) {
                    Ok(_) => sent += 1,
                    Err(rustix::io::Errno::AGAIN) => break,
                    // The subscriber's end takes no descriptors where the kernel can refuse them
                    // (`SO_PASSRIGHTS`, Linux 6.16): nothing arrives, nothing is left to close.
                    Err(rustix::io::Errno::PERM) => refused += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(sent > 0 || refused == 512, "sent {sent}, refused {refused}");
            expect_message(&mut sub, 0);
            // try_recv takes the doorbells when it finds nothing to read.
            for _ in 0..sent / 8 + 2 {
                assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
            }
            // Its descriptor is quiet again: every packet was taken (and what it carried closed).
            let mut pollfd = [PollFd::new(&sub, PollFlags::IN)];
            let zero = rustix::event::Timespec::default();
            assert_eq!(rustix::event::poll(&mut pollfd, Some(&zero)), Ok(0));
            image.publish(1);
            expect_message(&mut sub, 1);
            drop(conn);
            let mut outcome = sub.try_recv().map(|_| ());
            for _ in 0..sent / 8 + 2 {
                if !matches!(outcome, Err(RecvError::Empty)) {
                    break;
                }
                outcome = sub.try_recv().map(|_| ());
            }
            assert!(
                matches!(outcome, Err(RecvError::Disconnected)),
                "{outcome:?}"
            );
        }
    });
}

/// A publisher that never reads the subscriber's doorbells, or shuts the reading side of its end,
/// cannot block the subscriber: every release rings the doorbell (the harness announces a new
/// wait for space before each message), the doorbells that find the queue full or shut are
/// dropped, and every message still arrives, in order, until the hang-up ends the stream.
#[test]
fn a_publisher_that_never_takes_its_doorbells_does_not_block_the_subscriber() {
    use rustix::net::{RecvFlags, Shutdown};
    hostile("unread-doorbells", |scene| {
        for shut in [false, true] {
            let mut image = Image::new(Mode::Gating);
            let (mut sub, conn) = scene.connected(&image, Mode::Gating);
            if shut {
                rustix::net::shutdown(&conn, Shutdown::Read).unwrap();
            }
            // More doorbells than any default queue limit (`net.unix.max_dgram_qlen`, the
            // send buffer) lets through.
            const ROUNDS: u64 = 4096;
            for seq in 0..ROUNDS {
                image.publish(1);
                image.ring.store32(hdr::WRITER_WAITING, seq as u32 + 1);
                expect_message(&mut sub, seq);
            }
            let mut queued = 0u64;
            let mut byte = [0u8; 16];
            while let Ok(n) = rustix::net::recv(&conn, &mut byte, RecvFlags::DONTWAIT) {
                if n.0 == 0 {
                    break;
                }
                queued += 1;
            }
            if shut {
                assert_eq!(queued, 0, "a shut end takes no doorbells");
            } else {
                // Rung on every release, queued until the queue was full, the rest dropped.
                assert!(
                    0 < queued && queued < ROUNDS,
                    "{queued} doorbells queued of {ROUNDS} rung"
                );
            }
            drop(conn);
            let end = sub.recv_timeout(Duration::from_secs(10)).map(|s| s.seq());
            assert!(
                matches!(end, Err(RecvError::Disconnected)),
                "shut: {shut}: {end:?}"
            );
        }
    });
}
