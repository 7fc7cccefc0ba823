//! The handshake records' encodings and decoders, byte by byte.

use super::*;

#[test]
fn round_trips() {
    for mode in [Mode::Gating, Mode::Lossy] {
        for start in [Start::Newest, Start::Oldest] {
            let h = Hello {
                mode,
                start,
                expect: Expectation::default(),
            };
            assert_eq!(h.encode().len(), HELLO_LEN);
            assert_eq!(Hello::decode(&h.encode()), Ok(h));
            for expect in expectations() {
                let h = Hello {
                    mode,
                    start,
                    expect,
                };
                assert_eq!(Hello::decode(&h.encode()), Ok(h));
            }
        }
    }
    let w = Reply::Welcome {
        flags: 0,
        ring_len: 1 << 20,
        cb_len: 512,
        message: MessageType::Bytes,
    };
    let w_bytes = w.encode();
    assert_eq!(w_bytes.len(), WELCOME_FIXED);
    assert_eq!(Reply::decode(&w_bytes), Ok(w));
    let imported = Reply::Welcome {
        flags: FLAG_IMPORTED,
        ring_len: 1 << 20,
        cb_len: 512,
        message: MessageType::Bytes,
    };
    assert_eq!(Reply::decode(&imported.encode()), Ok(imported));
    let mut unknown = w_bytes.clone();
    unknown[8] = 2;
    assert_eq!(Reply::decode(&unknown), Err(DecodeError::Field("flags")));
    let mut reserved = w_bytes;
    reserved[29] = 1;
    assert_eq!(
        Reply::decode(&reserved),
        Err(DecodeError::Field("reserved"))
    );
    for message in [
        MessageType::schema("app.Tick", 7),
        MessageType::schema("é".repeat(64), u32::MAX),
        MessageType::pod_named::<[u64; 2]>("Tick"),
        MessageType::pod_named::<u8>("x".repeat(contract::MAX_CONTRACT_NAME)),
    ] {
        let w = Reply::Welcome {
            flags: 0,
            ring_len: 4096,
            cb_len: 512,
            message,
        };
        assert_eq!(Reply::decode(&w.encode()), Ok(w));
    }
    for message in [
        MessageType::Bytes,
        MessageType::schema("app.Tick", 7),
        MessageType::pod_named::<u8>("x".repeat(contract::MAX_CONTRACT_NAME)),
    ] {
        let offered = Contract::new(message, 1 << 20);
        let m = Reply::mismatch(&expectations()[2], &offered);
        let bytes = m.encode();
        assert!(bytes.len() <= MAX_PACKET);
        let Ok(Reply::Mismatch { offered: got, text }) = Reply::decode(&bytes) else {
            panic!("{bytes:?}")
        };
        assert_eq!(got, offered);
        assert!(text.starts_with("the topic carries"), "{text}");
        assert_eq!(Reply::decode(&bytes).unwrap().encode(), bytes);
    }
    let r = Reply::refuse(RefuseReason::PermissionDenied, "é".repeat(300));
    let Ok(Reply::Refuse { code: 1, text }) = Reply::decode(&r.encode()) else {
        panic!()
    };
    assert!(text.len() <= REFUSE_MAX_TEXT && text.chars().all(|c| c == 'é'));
}

/// Expectations of every shape: a type, a size, both.
fn expectations() -> Vec<Expectation> {
    let mut out = Vec::new();
    for (message, at_least) in [
        (Some(MessageType::pod_named::<[u64; 2]>("Tick")), None),
        (None, Some(4096)),
        (
            Some(MessageType::schema("é".repeat(64), 3)),
            Some(usize::MAX),
        ),
        (Some(MessageType::Bytes), Some(0)),
    ] {
        out.push(Expectation {
            message,
            max_message_at_least: at_least,
        });
    }
    out
}

#[test]
fn rejects_every_truncation_and_bit_flip() {
    let plain = Hello {
        mode: Mode::Lossy,
        start: Start::Oldest,
        expect: Expectation::default(),
    };
    let mut expecting = plain.clone();
    expecting.expect = expectations().remove(2);
    for good in [plain.encode(), expecting.encode()] {
        for len in 0..good.len() {
            assert!(Hello::decode(&good[..len]).is_err());
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(Hello::decode(&longer).is_err());
        for byte in 0..good.len() {
            for bit in 0..8 {
                let mut p = good.clone();
                p[byte] ^= 1 << bit;
                // A flip may turn one valid request into another (its mode, start, or
                // an expected number), never into a panic.
                if let Ok(h) = Hello::decode(&p) {
                    assert!(byte == 8 || byte == 9 || byte >= HELLO_LEN, "{h:?}");
                    assert_eq!(h.encode(), p);
                }
            }
        }
    }
    let good = plain.encode();
    let mut other_version = good.clone();
    other_version[4] = 9;
    assert_eq!(Hello::decode(&other_version), Err(DecodeError::Version(9)));
    assert!(Reply::decode(&[0xff; 300]).is_err());
}

#[test]
fn inspect_requests_decode_and_nothing_else_does() {
    let good = Request::inspect();
    assert_eq!(Request::decode(&good), Ok(Request::Inspect));
    for len in 0..good.len() {
        assert!(Request::decode(&good[..len]).is_err());
    }
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(Request::decode(&longer), Err(DecodeError::Length(17)));
    for byte in 8..good.len() {
        let mut p = good.clone();
        p[byte] = 1;
        assert_eq!(Request::decode(&p), Err(DecodeError::Field("reserved")));
    }
    let hello = Hello {
        mode: Mode::Gating,
        start: Start::Newest,
        expect: Expectation::default(),
    };
    assert_eq!(Request::decode(&hello.encode()), Ok(Request::Hello(hello)));
}

#[test]
fn version_refusals_speak_the_requesters_version_where_they_can() {
    let mut old = Hello {
        mode: Mode::Gating,
        start: Start::Newest,
        expect: Expectation::default(),
    }
    .encode();
    for (version, answered_in) in [(2, 2), (1, VERSION), (9, VERSION)] {
        old[4..6].copy_from_slice(&u16::to_le_bytes(version));
        let error = Hello::decode(&old).unwrap_err();
        assert_eq!(error, DecodeError::Version(version));
        let refusal = Reply::refusal_of(&error);
        assert_eq!(u16::from_le_bytes([refusal[4], refusal[5]]), answered_in);
        // Read as a subscriber of that version would: only the version differs.
        let mut ours = refusal.clone();
        ours[4..6].copy_from_slice(&VERSION.to_le_bytes());
        let Ok(Reply::Refuse { code: 2, text }) = Reply::decode(&ours) else {
            panic!("{refusal:?}")
        };
        assert_eq!(
            text,
            format!("protocol version {version}, this build speaks {VERSION}")
        );
    }
    let garbage = Reply::refusal_of(&DecodeError::Magic);
    assert!(matches!(
        Reply::decode(&garbage),
        Ok(Reply::Refuse { code: 3, .. })
    ));
}

/// What a fake publisher could write to a subscriber's terminal: a title, a clear screen, a C1
/// CSI, DEL, bytes that are not UTF-8.
const HOSTILE: &str = "\x1b]0;owned\x07\x1b[2J\u{9b}31mbusy\x7f, é\r\n";

#[test]
fn refusals_decode_to_printable_text() {
    let shown = r"\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31mbusy\u{7f}, é\r\n";
    let r = Reply::refuse(RefuseReason::Busy, HOSTILE);
    let Ok(Reply::Refuse { code: 4, text }) = Reply::decode(&r.encode()) else {
        panic!()
    };
    assert_eq!(text, shown);
    let mut raw = r.encode();
    raw.extend_from_slice(b"\xff\x9b2J");
    let len = (raw.len() - 12) as u16;
    raw[10..12].copy_from_slice(&len.to_le_bytes());
    let Ok(Reply::Refuse { text, .. }) = Reply::decode(&raw) else {
        panic!()
    };
    assert_eq!(text, format!("{shown}\u{fffd}\u{fffd}2J"));
    let offered = Contract::new(MessageType::schema("app.Tick", 1), 64);
    let m = Reply::Mismatch {
        text: HOSTILE.into(),
        offered: offered.clone(),
    };
    assert_eq!(
        Reply::decode(&m.encode()),
        Ok(Reply::Mismatch {
            text: shown.into(),
            offered
        })
    );
    // Escapes are longer than what they stand for; the text keeps its bound.
    let r = Reply::refuse(RefuseReason::Busy, "\x1b".repeat(REFUSE_MAX_TEXT));
    let Ok(Reply::Refuse { text, .. }) = Reply::decode(&r.encode()) else {
        panic!()
    };
    assert_eq!(text, r"\u{1b}".repeat(REFUSE_MAX_TEXT / 6));
}

#[test]
fn printable_text_is_left_as_it_is() {
    for text in [
        "",
        "protocol version 2, this build speaks 3",
        &"é".repeat(100),
        r"\u{1b}",
    ] {
        assert_eq!(printable(text.as_bytes(), 200), text);
    }
    assert_eq!(printable("aé".as_bytes(), 2), "a");
    assert_eq!(printable(b"a\x1b", 6), "a");
}

/// A direction override or isolate reorders how the rest of a line displays: shown escaped,
/// like a control character, and refused in a contract name.
#[test]
fn direction_overrides_are_shown_escaped_and_refused_in_names() {
    let text = "pid 7 \u{202e}lmth.exe\u{2066}x\u{2069}";
    assert_eq!(
        printable(text.as_bytes(), 200),
        r"pid 7 \u{202e}lmth.exe\u{2066}x\u{2069}"
    );
    assert!(contract::check_name("Tick\u{202e}").is_err());
    assert!(contract::check_name("Tick").is_ok());
}
