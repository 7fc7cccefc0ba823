//! The handshake decoders against every truncation and extension of valid packets, every header
//! fault, every WELCOME flag, every value of the WELCOME's contract fields (message kind,
//! alignment, names that are empty, too long, not UTF-8 or hold control characters, a name
//! length that disagrees with the packet), and a few hundred thousand random and mutated
//! packets: each input gives a message or a typed error, never a panic, and an accepted message
//! re-encodes to the bytes received (a REFUSE's text excepted: it is only shown, so it is
//! decoded lossily and may be shortened).

mod common;

use shmcast::MAX_CONTRACT_NAME;
use shmcast::test_support::{
    check_decoders as check, decode_hello, decode_reply, encode_welcome_raw, sample_hellos,
    sample_replies,
};
use shmcast_core::testing::Rng;

fn iterations() -> u64 {
    std::env::var("SHMCAST_DECODER_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400_000)
}

/// The wire's kind field (bytes 6..8).
fn kind(p: &[u8]) -> u16 {
    u16::from_le_bytes([p[6], p[7]])
}

const KIND_HELLO: u16 = 1;

fn samples() -> Vec<Vec<u8>> {
    let mut all = sample_hellos();
    all.extend(sample_replies());
    all
}

/// The decoder a sample is meant for.
fn own_decoder(p: &[u8]) -> fn(&[u8]) -> Result<Vec<u8>, String> {
    if kind(p) == KIND_HELLO {
        decode_hello
    } else {
        decode_reply
    }
}

#[test]
fn valid_packets_round_trip_and_the_other_side_refuses_them() {
    for p in sample_hellos() {
        assert_eq!(decode_hello(&p), Ok(p.clone()));
        assert_eq!(decode_reply(&p), Err(format!("Kind({KIND_HELLO})")));
    }
    for p in sample_replies() {
        assert_eq!(decode_reply(&p), Ok(p.clone()));
        assert_eq!(decode_hello(&p), Err(format!("Kind({})", kind(&p))));
    }
}

#[test]
fn every_truncation_and_extension_is_a_length_error() {
    let mut rng = Rng(0x5eed_dec0_0000_0001);
    for p in samples() {
        let decode = own_decoder(&p);
        for len in 0..p.len() {
            assert_eq!(decode(&p[..len]), Err(format!("Length({len})")), "{p:?}");
            check(&p[..len]);
        }
        for extra in 1..=300 {
            let mut longer = p.clone();
            longer.extend(rng.bytes(extra));
            assert_eq!(decode(&longer), Err(format!("Length({})", longer.len())));
            check(&longer);
        }
    }
}

#[test]
fn header_faults_are_typed() {
    for p in samples() {
        let decode = own_decoder(&p);
        for byte in 0..4 {
            for bit in 0..8 {
                let mut q = p.clone();
                q[byte] ^= 1 << bit;
                assert_eq!(decode(&q), Err("Magic".into()));
            }
        }
        let own = u16::from_le_bytes([p[4], p[5]]);
        for version in (0..=u16::MAX).filter(|&v| v != own) {
            let mut q = p.clone();
            q[4..6].copy_from_slice(&version.to_le_bytes());
            assert_eq!(decode(&q), Err(format!("Version({version})")));
        }
        for k in (0..=u16::MAX).filter(|&k| !(1..=3).contains(&k)) {
            let mut q = p.clone();
            q[6..8].copy_from_slice(&k.to_le_bytes());
            assert_eq!(decode(&q), Err(format!("Kind({k})")));
            check(&q);
        }
    }
}

#[test]
fn hello_fields_accept_exactly_the_defined_values() {
    let good = sample_hellos().remove(0);
    for mode in 0..=255u8 {
        for start in 0..=255u8 {
            let mut p = good.clone();
            (p[8], p[9]) = (mode, start);
            let expected = match (mode, start) {
                (1 | 2, 0 | 1) => Ok(p.clone()),
                (1 | 2, _) => Err("Field(\"start\")".to_string()),
                _ => Err("Field(\"mode\")".to_string()),
            };
            assert_eq!(decode_hello(&p), expected);
        }
    }
    // Flag 1 announces an expectation record, which is not there; no other flag exists.
    let mut p = good.clone();
    p[10] = 1;
    assert_eq!(decode_hello(&p), Err("Length(16)".into()));
    for flag in [2u8, 0x80] {
        for at in [10, 11] {
            let mut p = good.clone();
            p[at] = flag;
            assert_eq!(decode_hello(&p), Err("Field(\"flags\")".into()));
        }
    }
    for at in 12..good.len() {
        let mut p = good.clone();
        p[at] = 1;
        assert_eq!(decode_hello(&p), Err("Field(\"reserved\")".into()));
    }
}

/// A WELCOME with raw contract fields (see `encode_welcome_raw`).
fn welcome(message: u8, a: u32, b: u32, name: &[u8]) -> Vec<u8> {
    encode_welcome_raw(4096 + 512, 512, message, a, b, name)
}

/// A valid `b` for `message`: a Pod alignment, or zero.
fn align_of(message: u8) -> u32 {
    if message == 2 { 4 } else { 0 }
}

fn field(name: &str) -> Result<Vec<u8>, String> {
    Err(format!("Field({name:?})"))
}

#[test]
fn welcome_flags_accept_exactly_the_imported_bit() {
    let good = welcome(0, 0, 0, b"");
    for bit in 0..32 {
        let mut p = good.clone();
        p[8..12].copy_from_slice(&(1u32 << bit).to_le_bytes());
        let expected = if bit == 0 {
            Ok(p.clone())
        } else {
            field("flags")
        };
        assert_eq!(decode_reply(&p), expected, "bit {bit}");
        check(&p);
    }
}

#[test]
fn welcome_contract_fields_accept_exactly_the_defined_values() {
    for message in 0..=255u8 {
        // (a, b, name, then what message kinds 0, 1 and 2 make of them)
        let cases: [(u32, u32, &[u8], [&str; 3]); 3] = [
            (0, 0, b"", ["ok", "name", "name"]),
            (7, 0, b"Tick", ["name", "ok", "align"]),
            (16, 8, b"Tick", ["name", "reserved", "ok"]),
        ];
        for (a, b, name, outcomes) in cases {
            let p = welcome(message, a, b, name);
            let expected = match outcomes.get(message as usize) {
                Some(&"ok") => Ok(p.clone()),
                Some(f) => field(f),
                None => field("message"),
            };
            assert_eq!(
                decode_reply(&p),
                expected,
                "message {message}, {a} {b} {name:?}"
            );
            check(&p);
        }
    }
    for align in 0..=64u32 {
        let p = welcome(2, 64, align, b"Tick");
        let expected = match align {
            1 | 2 | 4 | 8 | 16 => Ok(p.clone()),
            _ => field("align"),
        };
        assert_eq!(decode_reply(&p), expected, "align {align}");
    }
    for b in [1, 2, u32::MAX] {
        assert_eq!(decode_reply(&welcome(1, 3, b, b"s")), field("reserved"));
        assert_eq!(decode_reply(&welcome(0, 0, b, b"")), field("reserved"));
    }
    // Every name length a packet can carry: 1 to MAX_CONTRACT_NAME bytes are names.
    for len in 0..=(256 - 40) {
        for message in [1, 2] {
            let p = welcome(message, 4, align_of(message), &vec![b'n'; len]);
            let valid = (1..=MAX_CONTRACT_NAME).contains(&len);
            let expected = if valid { Ok(p.clone()) } else { field("name") };
            assert_eq!(decode_reply(&p), expected, "a name of {len} bytes");
            check(&p);
        }
    }
    // Not UTF-8, or holding a control character, anywhere in the name.
    let mut rng = Rng(0x5eed_dec0_0000_0003);
    let bad: [&[u8]; 6] = [
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\n",
        b"\xc2\x85",
    ];
    for piece in bad {
        for at in 0..8 {
            let mut name = rng
                .bytes(8)
                .iter()
                .map(|b| b'a' + b % 26)
                .collect::<Vec<u8>>();
            name.splice(at..at, piece.iter().copied());
            for message in [1, 2] {
                let p = welcome(message, 4, align_of(message), &name);
                assert_eq!(decode_reply(&p), field("name"), "{name:?}");
                check(&p);
            }
        }
    }
    for c in (0..32u8).chain([127]) {
        assert_eq!(decode_reply(&welcome(1, 1, 0, &[b'a', c])), field("name"));
    }
    assert!(decode_reply(&welcome(1, 1, 0, "é✓".as_bytes())).is_ok());
    // A name length that disagrees with the packet.
    let good = welcome(2, 16, 8, b"Tick");
    for name_len in (0..=u16::MAX).filter(|&n| n != 4) {
        let mut p = good.clone();
        p[30..32].copy_from_slice(&name_len.to_le_bytes());
        assert_eq!(decode_reply(&p), Err(format!("Length({})", p.len())));
    }
}

#[test]
fn random_and_mutated_packets_give_a_message_or_a_typed_error() {
    let samples = samples();
    let mut rng = Rng(0x5eed_dec0_0000_0002);
    let n = iterations();
    let mut accepted = [0u64; 2];
    for _ in 0..n {
        let base = &samples[rng.below(samples.len() as u64) as usize];
        let mut p = base.clone();
        match rng.below(8) {
            // Noise of any length a socket could deliver, and longer.
            0 => {
                let len = rng.below(300) as usize;
                p = rng.bytes(len);
            }
            // A valid header, then noise.
            1 => {
                let len = rng.below(300) as usize;
                p.truncate(8);
                p.extend(rng.bytes(len));
            }
            // Bit flips anywhere.
            2 | 3 => {
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(p.len() as u64) as usize;
                    p[at] ^= 1 << rng.below(8);
                }
            }
            // Bytes overwritten past the header.
            4 => {
                for _ in 0..1 + rng.below(3) {
                    let at = 8 + rng.below(p.len() as u64 - 8) as usize;
                    p[at] = rng.next() as u8;
                }
            }
            // A REFUSE's text length disagreeing with its text.
            5 => {
                let mut q = sample_replies().pop().unwrap();
                let len = rng.below(300) as u16;
                q[10..12].copy_from_slice(&len.to_le_bytes());
                q.resize(
                    12 + [len as usize, rng.below(300) as usize][rng.below(2) as usize],
                    0xff,
                );
                p = q;
            }
            // A WELCOME's name length disagreeing with its name.
            6 if kind(&p) == 2 => {
                let len = rng.below(MAX_CONTRACT_NAME as u64 + 40) as u16;
                p[30..32].copy_from_slice(&len.to_le_bytes());
                if rng.below(2) == 0 {
                    p.resize(40 + len as usize, b'n');
                }
            }
            // Truncated or extended.
            6 => {
                let len = rng.below(p.len() as u64 + 40) as usize;
                p.resize(len, rng.next() as u8);
            }
            // One packet's head on another's tail.
            _ => {
                let other = &samples[rng.below(samples.len() as u64) as usize];
                let cut = rng.below(p.len().min(other.len()) as u64) as usize;
                p.truncate(cut);
                p.extend_from_slice(&other[cut..]);
            }
        }
        let (hello, reply) = check(&p);
        accepted[0] += hello as u64;
        accepted[1] += reply as u64;
    }
    eprintln!("{n} packets: {accepted:?} accepted as HELLO and as a reply");
    assert!(
        accepted.iter().all(|&a| a > 0 && a < n),
        "mutations both kept and broke packets: {accepted:?}"
    );
}
