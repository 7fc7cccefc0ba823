//! The handshake decoders against every truncation and extension of valid packets, every header
//! fault, and a few hundred thousand random and mutated packets: each input gives a message or a
//! typed error, never a panic, and an accepted message re-encodes to the bytes received (a
//! REFUSE's text excepted: it is only shown, so it is decoded lossily and may be shortened).

mod common;

use shmcast::test_support::{
    check_decoders as check, decode_hello, decode_reply, sample_hellos, sample_replies,
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
    for at in 10..good.len() {
        let mut p = good.clone();
        p[at] = 1;
        assert_eq!(decode_hello(&p), Err("Field(\"reserved\")".into()));
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
