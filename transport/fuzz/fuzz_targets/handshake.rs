//! The handshake decoders (HELLO on the publisher's side, WELCOME and REFUSE on the subscriber's)
//! against any bytes: a message or a typed error, and an accepted message re-encodes to the bytes
//! received (a REFUSE's text excepted: it is decoded lossily and may be shortened).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmcast::__test_support::{decode_hello, decode_reply};

fn kind(p: &[u8]) -> u16 {
    u16::from_le_bytes([p[6], p[7]])
}

fn assert_typed(e: &str) {
    let known = ["Length(", "Magic", "Version(", "Kind(", "Field("];
    assert!(known.iter().any(|k| e.starts_with(k)), "untyped error {e}");
}

fuzz_target!(|p: &[u8]| {
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
            if re != p && kind(p) == 3 {
                // A REFUSE text the encoder would not send: not UTF-8, or too long.
                assert_eq!(re[..10], p[..10], "same header and code");
                let text = String::from_utf8_lossy(&p[12..]);
                assert!(text.as_bytes().starts_with(&re[12..]), "text kept in order");
                assert!(std::str::from_utf8(&p[12..]).is_err() || re.len() < p.len());
            } else if re != p {
                // The WELCOME decoder does not check the bytes after its last field.
                assert_eq!(kind(p), 2, "{p:?}");
                assert_eq!((re.len(), &re[..8]), (p.len(), &p[..8]));
            }
        }
        Err(e) => assert_typed(e),
    }
    assert!(!(hello.is_ok() && reply.is_ok()), "one packet, one kind");
});
