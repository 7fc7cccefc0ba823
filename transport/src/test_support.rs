//! Support for the crate's own tests and fuzz targets (the `test-support` feature; not part of
//! the stable API): a count of open descriptors for leak checks, a raw handshake
//! that keeps the descriptors a subscriber receives (so a test can try to misuse them), a
//! publisher that serves one hand-made reply, and checkers of what the decoders promise whatever
//! their input, shared by property tests and fuzz targets. (The checker of the writer against
//! hostile control blocks is the core's: `shmcast_core::testing`.)

use crate::connect;
use crate::contract::MessageType;
use crate::error::ConnectError;
use crate::handshake::{self, Hello, RefuseReason, Reply};
use crate::sys;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// Counts this process's open descriptors (for leak checks).
pub fn open_fd_count() -> std::io::Result<usize> {
    sys::process::fd_count()
}

/// Connects to `path`, asks as a lossy subscriber and returns the descriptors of the
/// welcome (ring, control block) and the socket, or the publisher's refusal text.
pub fn raw_handshake(path: &Path) -> std::io::Result<Result<(Vec<OwnedFd>, OwnedFd), String>> {
    raw_handshake_as(path, crate::Mode::Lossy)
}

/// [`raw_handshake`] asking for `mode`: the subscriber's own handshake client, stopped before
/// anything is checked or mapped. A refusal comes back as its text; a reply that breaks the
/// protocol as an error.
pub fn raw_handshake_as(
    path: &Path,
    mode: crate::Mode,
) -> std::io::Result<Result<(Vec<OwnedFd>, OwnedFd), String>> {
    let step = std::time::Duration::from_secs(5);
    let sock = sys::net::seqpacket_connect(path, Some(step))?;
    let hello = Hello {
        mode,
        start: crate::Start::Newest,
        expect: crate::Expectation::default(),
    };
    match connect::exchange(&sock, &hello, step) {
        Ok(welcome) => Ok(Ok((
            vec![welcome.ring.keep(), welcome.control_block.keep()],
            sock,
        ))),
        Err(ConnectError::Refused { reason, .. }) => Ok(Err(reason)),
        Err(ConnectError::Io(e)) => Err(e),
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
/// text excepted: it is only shown, so it is decoded lossily and may be shortened). A WELCOME
/// has no byte the decoder does not check, its contract included, so it re-encodes exactly.
/// Returns whether each decoder (HELLO, reply) accepted it.
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
                // A text the encoder would not send: not UTF-8, too long, or holding control
                // characters, which are shown escaped.
                assert_eq!(re[..10], p[..10], "same header and code");
                match Reply::decode(re) {
                    Ok(Reply::Refuse { text, .. } | Reply::Mismatch { text, .. }) => {
                        assert!(!text.chars().any(char::is_control), "printable: {text:?}");
                    }
                    other => panic!("a refusal re-decodes as one: {other:?}"),
                }
            } else {
                assert_eq!(re, p, "an accepted WELCOME re-encodes to itself");
            }
        }
        Err(e) => assert_typed(e),
    }
    assert!(!(hello.is_ok() && reply.is_ok()), "one packet, one kind");
    (hello.is_ok(), reply.is_ok())
}

/// Valid encodings of every HELLO, stating no expectation and each kind of one, for seeding
/// fuzzers and property tests.
pub fn sample_hellos() -> Vec<Vec<u8>> {
    let mut expectations = vec![crate::Expectation::default()];
    for (message, at_least) in [
        (Some(MessageType::pod_named::<[u64; 2]>("Tick")), None),
        (None, Some(4096)),
        (
            Some(MessageType::schema("proto:app.Tick", 7)),
            Some(1 << 20),
        ),
    ] {
        expectations.push(crate::Expectation {
            message,
            max_message_at_least: at_least,
        });
    }
    let mut out = Vec::new();
    for mode in [crate::Mode::Gating, crate::Mode::Lossy] {
        for start in [crate::Start::Newest, crate::Start::Oldest] {
            for expect in &expectations {
                let hello = Hello {
                    mode,
                    start,
                    expect: expect.clone(),
                };
                out.push(hello.encode());
            }
        }
    }
    out
}

/// Valid encodings of WELCOMEs (declaring no type, schemas and Pod types, with names of one
/// byte, of multi-byte characters and of the longest length, some of imported topics) and
/// REFUSEs (empty, ASCII, multi-byte and over-long texts), for seeding fuzzers and property
/// tests.
pub fn sample_replies() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let longest = crate::MAX_CONTRACT_NAME;
    let messages = [
        MessageType::Bytes,
        MessageType::schema("s", 0),
        MessageType::schema("proto:app.Tick", u32::MAX),
        MessageType::schema("é".repeat(longest / 2), 7),
        MessageType::pod_named::<u8>("x".repeat(longest)),
        MessageType::pod_named::<[u64; 2]>("Tick"),
        MessageType::pod_named::<[u128; 4]>("Wide<Tick>"),
    ];
    let sizes = [(512 + 4096, 512), (512 + (1 << 20), 512), (0, u64::MAX)];
    for (i, message) in messages.into_iter().enumerate() {
        let (ring_len, cb_len) = sizes[i % sizes.len()];
        let welcome = Reply::Welcome {
            // Some from a publisher of an imported topic.
            flags: if i % 3 == 1 {
                crate::handshake::FLAG_IMPORTED
            } else {
                0
            },
            ring_len,
            cb_len,
            message,
        };
        out.push(welcome.encode());
    }
    let refusals = [
        (RefuseReason::PermissionDenied, String::new()),
        (RefuseReason::Version, "protocol version 9".into()),
        (RefuseReason::BadRequest, "é".repeat(200)),
        (RefuseReason::Busy, "x".repeat(1000)),
        (RefuseReason::Internal, "ring full ✓".into()),
    ];
    for (code, text) in refusals {
        out.push(Reply::refuse(code, text).encode());
    }
    let expected = crate::Expectation::default();
    for (message, max) in [
        (MessageType::Bytes, 4096),
        (MessageType::pod_named::<u8>("x".repeat(longest)), 1 << 20),
    ] {
        let offered = crate::Contract::new(message, max);
        out.push(Reply::mismatch(&expected, &offered).encode());
    }
    out
}

/// Connects to `path` and says nothing.
pub fn raw_connect(path: &Path) -> std::io::Result<OwnedFd> {
    sys::net::seqpacket_connect(path, Some(std::time::Duration::from_secs(5)))
}

/// Sends raw bytes (and optionally descriptors) on a new connection to `path` and returns
/// the publisher's reply text, if any.
pub fn raw_send(
    path: &Path,
    bytes: &[u8],
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> std::io::Result<Option<String>> {
    let sock = sys::net::seqpacket_connect(path, Some(std::time::Duration::from_secs(5)))?;
    sys::packet::send_with_fds(sock.as_fd(), bytes, fds)?;
    sys::net::set_recv_timeout(sock.as_fd(), Some(std::time::Duration::from_secs(5)))?;
    let mut buf = [0u8; handshake::MAX_PACKET];
    match sys::packet::recv_with_fds_of(sock.as_fd(), &mut buf, &[0, handshake::WELCOME_FDS]) {
        Ok((n, _)) => Ok(match Reply::decode(&buf[..n]) {
            Ok(Reply::Refuse { text, .. } | Reply::Mismatch { text, .. }) => Some(text),
            Ok(Reply::Welcome { .. }) => Some("welcome".into()),
            Err(e) => Some(format!("undecodable reply: {e}")),
        }),
        Err(_) => Ok(None),
    }
}

/// Sends one byte carrying `fds` on `sock` without blocking, whatever the socket's own flags:
/// `Ok(false)` if the peer's queue is full.
pub fn try_send_fds(
    sock: std::os::fd::BorrowedFd<'_>,
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> std::io::Result<bool> {
    sys::packet::try_send_with_fds(sock, b"x", fds)
}

// The publisher's side of the handshake, played by hand (the hostile-publisher tests).

/// Encodes a WELCOME announcing a ring of `ring_len` bytes and a control block of `cb_len`,
/// declaring no message type.
pub fn encode_welcome(ring_len: u64, cb_len: u64) -> Vec<u8> {
    encode_welcome_declaring(ring_len, cb_len, &MessageType::Bytes)
}

/// Encodes a WELCOME as [`encode_welcome`] does, declaring `message`.
pub fn encode_welcome_declaring(ring_len: u64, cb_len: u64, message: &MessageType) -> Vec<u8> {
    Reply::Welcome {
        flags: 0,
        ring_len,
        cb_len,
        message: message.clone(),
    }
    .encode()
}

/// Encodes a WELCOME as [`encode_welcome`] does with raw contract fields, valid or not:
/// `message` (0 bytes, 1 schema, 2 Pod), `a` (schema version, Pod size), `b` (Pod alignment)
/// and `name`, whose length goes into `name_len` (truncated to 16 bits).
pub fn encode_welcome_raw(
    ring_len: u64,
    cb_len: u64,
    message: u8,
    a: u32,
    b: u32,
    name: &[u8],
) -> Vec<u8> {
    let mut out = encode_welcome(ring_len, cb_len);
    out[28] = message;
    out[30..32].copy_from_slice(&(name.len() as u16).to_le_bytes());
    out[32..36].copy_from_slice(&a.to_le_bytes());
    out[36..40].copy_from_slice(&b.to_le_bytes());
    out.extend_from_slice(name);
    out
}

/// Sends `request` on a new connection to `path` and returns the raw bytes of the reply
/// (waiting at most 5 s), whatever version or kind they are: how a peer of another protocol
/// version sees this build's answer.
pub fn raw_reply(path: &Path, request: &[u8]) -> std::io::Result<Vec<u8>> {
    let step = Some(std::time::Duration::from_secs(5));
    let sock = sys::net::seqpacket_connect(path, step)?;
    sys::packet::send_packet(sock.as_fd(), request)?;
    sys::net::set_recv_timeout(sock.as_fd(), step)?;
    let mut buf = [0u8; handshake::MAX_PACKET];
    let n = sys::packet::recv_packet(sock.as_fd(), &mut buf)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(buf[..n].to_vec())
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
    let listener = sys::net::seqpacket_listen(path)?;
    let accepted = sys::event::wait_readable(listener.as_fd(), step).and_then(|ready| {
        if ready {
            sys::net::seqpacket_accept(listener.as_fd(), false)
        } else {
            Err(std::io::ErrorKind::TimedOut.into())
        }
    });
    let _ = std::fs::remove_file(path);
    let conn = accepted?;
    sys::net::set_recv_timeout(conn.as_fd(), step)?;
    let mut buf = [0u8; handshake::MAX_PACKET];
    let n = sys::packet::recv_packet(conn.as_fd(), &mut buf)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Hello::decode(&buf[..n]).map_err(|e| std::io::Error::other(e.to_string()))?;
    sys::packet::send_with_fds(conn.as_fd(), reply, fds)?;
    Ok(conn)
}

/// Checks, by panicking, what the introspection decoders promise about any packet `p`: the
/// publisher's request decoder (HELLO or INSPECT) and the client's INFO decoder give a value or
/// a typed error, never both accept it, and an accepted INSPECT or INFO has no unchecked byte,
/// so it re-encodes to itself. Returns whether each (request, INFO) accepted it.
pub fn check_introspection(p: &[u8]) -> (bool, bool) {
    use crate::handshake::{DecodeError, Request};
    use crate::introspect::{MAX_INFO, TopicInfo};
    let request = Request::decode(p);
    match &request {
        Ok(Request::Inspect) => assert_eq!(Request::inspect(), p, "INSPECT re-encodes"),
        Ok(Request::Hello(h)) => assert_eq!(h.encode(), p, "HELLO re-encodes"),
        Err(_) => {}
    }
    let info = TopicInfo::decode(p);
    if let Ok(info) = &info {
        assert!(p.len() <= MAX_INFO, "an accepted INFO is within its bound");
        assert!(info.subscribers.len() <= info.subscriber_count);
        // Executables are shown escaped: an accepted INFO re-encodes to itself, or to one that
        // decodes to the same record.
        let again = info.encode();
        assert!(
            again == p || TopicInfo::decode(&again).as_ref() == Ok(info),
            "an accepted INFO re-encodes to itself, or to the same record"
        );
    }
    if let Err(e) = &info {
        assert!(!matches!(e, DecodeError::Magic) || p.len() >= 8 && p[..4] != *b"SHMC");
    }
    assert!(!(request.is_ok() && info.is_ok()), "one packet, one kind");
    (request.is_ok(), info.is_ok())
}

/// Valid INSPECT and INFO records (no subscriber, a few with and without pids and executables,
/// every mode, the most rows with the longest executables, imported topics with and without
/// messages lost upstream), for seeding fuzzers and property tests.
pub fn sample_introspection() -> Vec<Vec<u8>> {
    use crate::introspect::{MAX_EXE, MAX_ROWS, ProcessInfo, SubscriberRow, TopicCounters};
    use crate::{Contract, Mode, TopicInfo};
    use std::path::PathBuf;
    let row = |id: u64, exe: Option<PathBuf>| SubscriberRow {
        id,
        process: ProcessInfo {
            pid: (id % 2 == 0).then_some(id as u32 + 7),
            uid: 1000,
            exe,
        },
        requested: if id % 3 == 2 {
            Mode::Lossy
        } else {
            Mode::Gating
        },
        mode: if id % 3 == 0 {
            Mode::Gating
        } else {
            Mode::Lossy
        },
        parked: id % 2 == 1,
        cursor: id << 12,
        lag_bytes: id * 64,
        lag_messages: id,
        received: 10 * id,
        lagged: id / 2,
    };
    let info = |message: MessageType, rows: Vec<SubscriberRow>, count: usize| TopicInfo {
        publisher: ProcessInfo {
            pid: Some(4242),
            uid: 1000,
            exe: Some("/usr/local/bin/ticker".into()),
        },
        uptime: std::time::Duration::from_millis(12_345),
        contract: Contract::new(message, 1 << 16),
        capacity: 1 << 20,
        counters: TopicCounters {
            messages: 99,
            wake_syscalls: 12,
            full: 3,
            demotions: 1,
            admitted: 5,
            refused: 2,
            departed: 1,
            upstream_lost: 0,
            early_wraps: 0,
        },
        imported: false,
        subscriber_count: count,
        subscribers: rows,
    };
    let imported = |info: TopicInfo| TopicInfo {
        imported: true,
        counters: TopicCounters {
            upstream_lost: 1234,
            ..info.counters
        },
        ..info
    };
    let long = PathBuf::from("/".to_owned() + &"e".repeat(MAX_EXE - 1));
    vec![
        crate::handshake::Request::inspect(),
        info(MessageType::Bytes, vec![], 0).encode(),
        imported(info(
            MessageType::schema("proto:app.Tick", 2),
            vec![row(1, None)],
            1,
        ))
        .encode(),
        TopicInfo {
            imported: true,
            ..info(MessageType::Bytes, vec![], 0)
        }
        .encode(),
        {
            let wrapped = info(MessageType::Bytes, vec![row(2, None)], 1);
            TopicInfo {
                counters: TopicCounters {
                    early_wraps: 77,
                    ..wrapped.counters
                },
                ..wrapped
            }
        }
        .encode(),
        info(
            MessageType::schema("proto:app.Tick", 2),
            (1..4).map(|id| row(id, Some("/bin/sub".into()))).collect(),
            3,
        )
        .encode(),
        info(
            MessageType::pod_named::<[u64; 2]>("Tick"),
            (0..MAX_ROWS as u64)
                .map(|id| row(id, (id % 4 != 0).then(|| long.clone())))
                .collect(),
            MAX_ROWS + 5,
        )
        .encode(),
    ]
}
