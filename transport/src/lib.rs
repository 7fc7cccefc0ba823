//! Zero-copy one-to-many messaging between processes on one Linux machine.
//!
//! A [`Publisher`] writes each message once into a ring in a sealed memfd; any number of
//! [`Subscriber`] processes read it in place, each with its own cursor. A subscriber with nothing
//! to read parks and is woken with one futex wake for all sleepers (or, in an event loop, through
//! its descriptor); a busy one costs the publisher no syscall. The memfds travel over a unix
//! socket, so nothing is left in `/dev/shm` when a process dies. A *gating* subscriber never misses a message (the publisher waits for it, up to an
//! optional stall bound); a *lossy* one never slows the publisher and is told exactly how many
//! messages it missed.
//!
//! | module | role |
//! |---|---|
//! | `publisher` | [`Publisher`], its builder, loans, statistics |
//! | `subscriber` | [`Subscriber`], its builder, [`Sample`], statistics |
//! | `control` | the publisher's control thread: accept, credentials, handshake, hang-ups |
//! | `handshake` | the versioned control messages |
//! | `topic` | topic names and their private socket directory |
//! | `shm` | sealed memfds and their mappings |
//! | `sys` | every syscall |
//!
//! ```no_run
//! use shmcast::{Publisher, Subscriber};
//! use std::time::Duration;
//!
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Tick { seq: u64, price: f64 }
//!
//! // In one process:
//! let mut publisher = Publisher::bind("ticks")?;
//! publisher.send_pod(&Tick { seq: 1, price: 101.5 })?;
//!
//! // In another:
//! let mut subscriber = Subscriber::builder("ticks").connect_timeout(Duration::from_secs(5)).connect()?;
//! let sample = subscriber.recv()?;
//! let tick: &Tick = sample.as_pod()?;
//! println!("{}", tick.price);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod control;
mod error;
mod handshake;
mod publisher;
mod shm;
mod subscriber;
mod sys;
mod topic;

pub use error::{BindError, ConnectError, LoanError, PodError, RecvError, TopicError};
pub use publisher::{Admission, Loan, PodLoan, Publisher, PublisherBuilder, PublisherStats};
pub use shmcast_core::{FrameError, Mode, Start, SubscriberId, SubscriberInfo};
pub use subscriber::{Sample, Subscriber, SubscriberBuilder, SubscriberStats};

/// How long a parked subscriber or a publisher waiting for space sleeps before re-checking by
/// itself. Wakeups are never lost between correct peers (the loom models check it); this bounds
/// how late a subscriber blocked in `recv` notices a publisher that died without closing (a
/// futex has no hang-up), and what a peer that withholds or floods doorbells can do: delay,
/// never hang.
pub(crate) const PARK_RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// How many times a receive that may not sleep (a lapped lossy subscriber whose resume point is
/// not written yet) looks again at once before it starts to nap for [`STUCK_NAP`] between
/// looks: `recv` in a loop of its own, `try_recv` by arming the descriptor's timer. A writer
/// racing the reader settles within these; a ring that cannot progress (a publisher that died
/// mid-reservation, or a hostile one) then costs a wakeup per nap instead of a spinning core.
pub(crate) const STUCK_SPINS: u32 = 64;

/// The nap of a receive stuck on a ring that does not progress; a hang-up ends it at once.
pub(crate) const STUCK_NAP: std::time::Duration = std::time::Duration::from_millis(1);

/// Test support: counts this process's open descriptors (for leak checks).
#[doc(hidden)]
pub fn open_fd_count() -> std::io::Result<usize> {
    sys::fd_count()
}

/// Support for the crate's own fault tests: a raw handshake that keeps the descriptors a
/// subscriber receives, so a test can try to misuse them. Not part of the API.
#[doc(hidden)]
pub mod __test_support {
    use crate::handshake::{self, Hello, RefuseCode, Reply};
    use crate::sys;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;

    /// Connects to `path`, asks as a lossy subscriber and returns the descriptors of the
    /// welcome (ring, control block) and the socket, or the publisher's refusal text.
    pub fn raw_handshake(path: &Path) -> std::io::Result<Result<(Vec<OwnedFd>, OwnedFd), String>> {
        raw_handshake_as(path, crate::Mode::Lossy)
    }

    /// [`raw_handshake`] asking for `mode`.
    pub fn raw_handshake_as(
        path: &Path,
        mode: crate::Mode,
    ) -> std::io::Result<Result<(Vec<OwnedFd>, OwnedFd), String>> {
        let sock = sys::seqpacket_connect(path, Some(std::time::Duration::from_secs(5)))?;
        let hello = Hello {
            mode,
            start: crate::Start::Newest,
        };
        // A refusing publisher may have closed already; its refusal is still queued.
        let _ = sys::send_packet(sock.as_fd(), &hello.encode());
        sys::set_recv_timeout(sock.as_fd(), Some(std::time::Duration::from_secs(5)))?;
        let mut buf = [0u8; handshake::MAX_PACKET];
        let (n, fds) = sys::recv_with_fds_of(sock.as_fd(), &mut buf, &[0, handshake::WELCOME_FDS])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        match Reply::decode(&buf[..n]) {
            Ok(Reply::Welcome { .. }) => Ok(Ok((fds, sock))),
            Ok(Reply::Refuse { text, .. }) => {
                assert!(fds.is_empty(), "a refusal carries no descriptors");
                Ok(Err(text))
            }
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }

    /// Decodes `bytes` as the publisher decodes a subscriber's HELLO. An accepted request comes
    /// back re-encoded, so a caller can check that it round-trips; a refused one gives the
    /// decoder's error in `Debug` form (`Length(3)`, `Field("mode")`).
    pub fn decode_hello(bytes: &[u8]) -> Result<Vec<u8>, String> {
        Hello::decode(bytes)
            .map(|hello| hello.encode())
            .map_err(|e| format!("{e:?}"))
    }

    /// Decodes `bytes` as a subscriber decodes the publisher's WELCOME or REFUSE; results as for
    /// [`decode_hello`].
    pub fn decode_reply(bytes: &[u8]) -> Result<Vec<u8>, String> {
        Reply::decode(bytes)
            .map(|reply| reply.encode())
            .map_err(|e| format!("{e:?}"))
    }

    /// Checks, by panicking, what both handshake decoders promise about any packet `p`, for the
    /// property tests and the fuzz target alike: a message or a typed error from each, never
    /// both accepting it, and an accepted message re-encodes to the bytes received (a REFUSE's
    /// text excepted: it is only shown, so it is decoded lossily and may be shortened; and a
    /// WELCOME's bytes after its last field, which the decoder does not read). Returns whether
    /// each decoder (HELLO, reply) accepted it.
    pub fn check_decoders(p: &[u8]) -> (bool, bool) {
        fn assert_typed(e: &str) {
            let known = ["Length(", "Magic", "Version(", "Kind(", "Field("];
            assert!(known.iter().any(|k| e.starts_with(k)), "untyped error {e}");
        }
        let hello = decode_hello(p);
        match &hello {
            Ok(re) => assert_eq!(re, p, "an accepted HELLO re-encodes to itself"),
            Err(e) => assert_typed(e),
        }
        let reply = decode_reply(p);
        match &reply {
            Ok(re) => {
                assert_eq!(
                    decode_reply(re).as_ref(),
                    Ok(re),
                    "a re-encoded reply is stable"
                );
                // An accepted reply has a whole header, so its kind field is there.
                let kind = u16::from_le_bytes([p[6], p[7]]);
                if re != p && kind == crate::handshake::KIND_REFUSE {
                    // A text the encoder would not send: not UTF-8, or too long.
                    assert_eq!(re[..10], p[..10], "same header and code");
                    let text = String::from_utf8_lossy(&p[12..]);
                    assert!(text.as_bytes().starts_with(&re[12..]), "text kept in order");
                    assert!(std::str::from_utf8(&p[12..]).is_err() || re.len() < p.len());
                } else if re != p {
                    // Whatever the WELCOME's unread bytes held, the message keeps its length
                    // and header.
                    assert_eq!(kind, crate::handshake::KIND_WELCOME, "{p:?}");
                    assert_eq!((re.len(), &re[..8]), (p.len(), &p[..8]));
                }
            }
            Err(e) => assert_typed(e),
        }
        assert!(!(hello.is_ok() && reply.is_ok()), "one packet, one kind");
        (hello.is_ok(), reply.is_ok())
    }

    /// Valid encodings of every HELLO, for seeding fuzzers and property tests.
    pub fn sample_hellos() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for mode in [crate::Mode::Gating, crate::Mode::Lossy] {
            for start in [crate::Start::Newest, crate::Start::Oldest] {
                out.push(Hello { mode, start }.encode());
            }
        }
        out
    }

    /// Valid encodings of WELCOMEs and REFUSEs (empty, ASCII, multi-byte and over-long texts),
    /// for seeding fuzzers and property tests.
    pub fn sample_replies() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (ring_len, cb_len) in [(512 + 4096, 512), (512 + (1 << 20), 512), (0, u64::MAX)] {
            let welcome = Reply::Welcome {
                flags: 0,
                ring_len,
                cb_len,
            };
            out.push(welcome.encode());
        }
        let refusals = [
            (RefuseCode::PermissionDenied, String::new()),
            (RefuseCode::Version, "protocol version 9".into()),
            (RefuseCode::BadRequest, "é".repeat(200)),
            (RefuseCode::Busy, "x".repeat(1000)),
            (RefuseCode::Internal, "ring full ✓".into()),
        ];
        for (code, text) in refusals {
            out.push(Reply::refuse(code, text).encode());
        }
        out
    }

    /// Connects to `path` and says nothing.
    pub fn raw_connect(path: &Path) -> std::io::Result<OwnedFd> {
        sys::seqpacket_connect(path, Some(std::time::Duration::from_secs(5)))
    }

    /// Sends raw bytes (and optionally descriptors) on a new connection to `path` and returns
    /// the publisher's reply text, if any.
    pub fn raw_send(
        path: &Path,
        bytes: &[u8],
        fds: &[std::os::fd::BorrowedFd<'_>],
    ) -> std::io::Result<Option<String>> {
        let sock = sys::seqpacket_connect(path, Some(std::time::Duration::from_secs(5)))?;
        sys::send_with_fds(sock.as_fd(), bytes, fds)?;
        sys::set_recv_timeout(sock.as_fd(), Some(std::time::Duration::from_secs(5)))?;
        let mut buf = [0u8; handshake::MAX_PACKET];
        match sys::recv_with_fds_of(sock.as_fd(), &mut buf, &[0, handshake::WELCOME_FDS]) {
            Ok((n, _)) => Ok(match Reply::decode(&buf[..n]) {
                Ok(Reply::Refuse { text, .. }) => Some(text),
                Ok(Reply::Welcome { .. }) => Some("welcome".into()),
                Err(e) => Some(format!("undecodable reply: {e}")),
            }),
            Err(_) => Ok(None),
        }
    }

    // The publisher's side of the handshake, played by hand (the hostile-publisher tests).

    /// Encodes a WELCOME announcing a ring of `ring_len` bytes and a control block of `cb_len`.
    pub fn encode_welcome(ring_len: u64, cb_len: u64) -> Vec<u8> {
        Reply::Welcome {
            flags: 0,
            ring_len,
            cb_len,
        }
        .encode()
    }

    /// Plays a publisher for one subscriber: listens at `path`, accepts one connection, reads
    /// its HELLO and answers with `reply` carrying `fds`, whatever they are (at most 8).
    /// Each step waits at most 5 s. The socket file is removed before returning; the
    /// connection is returned open, for doorbells, and dropping it is the publisher's hang-up.
    pub fn serve_one(
        path: &Path,
        reply: &[u8],
        fds: &[std::os::fd::BorrowedFd<'_>],
    ) -> std::io::Result<OwnedFd> {
        let step = Some(std::time::Duration::from_secs(5));
        let listener = sys::seqpacket_listen(path)?;
        let accepted = sys::wait_readable(listener.as_fd(), step).and_then(|ready| {
            if ready {
                sys::seqpacket_accept(listener.as_fd(), false)
            } else {
                Err(std::io::ErrorKind::TimedOut.into())
            }
        });
        let _ = std::fs::remove_file(path);
        let conn = accepted?;
        sys::set_recv_timeout(conn.as_fd(), step)?;
        let mut buf = [0u8; handshake::MAX_PACKET];
        let n = sys::recv_packet(conn.as_fd(), &mut buf)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Hello::decode(&buf[..n]).map_err(|e| std::io::Error::other(e.to_string()))?;
        sys::send_with_fds(conn.as_fd(), reply, fds)?;
        Ok(conn)
    }
}
