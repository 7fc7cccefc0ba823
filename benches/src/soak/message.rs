//! What a soak message holds. A soak message may have any length, from 0 bytes up: message `seq`
//! of `len` bytes is the first `len` bytes of the stream message ([`shmcast_bench::payload`]) of
//! [`words`]`(len)` words, and `len` itself follows from the seed and `seq` ([`len`]). A
//! subscriber regenerates what was sent and compares every byte, the length included.

use shmcast_bench::error::{BenchError, Result};
use shmcast_bench::payload::{K, MIN_LEN, word_of};
use shmcast_bench::rng::mix;

/// Length of message `seq` in a run of `seed` whose messages go up to `max` bytes. One in
/// sixteen is at most [`MIN_LEN`] bytes (the header cut short, down to nothing), one in sixteen
/// is exactly `max`, the rest spread evenly over `0..=max`.
pub fn len(seed: u64, seq: u64, max: usize) -> usize {
    let h = mix(seed ^ seq.wrapping_mul(K));
    let n = (h >> 8) as usize;
    match h & 15 {
        0 => n % (MIN_LEN.min(max) + 1),
        1 => max,
        _ => n % (max + 1),
    }
}

/// Words of the stream message a message of `len` bytes is cut from: enough to cover it, and at
/// least the sequence number and the checksum.
pub fn words(len: usize) -> usize {
    len.div_ceil(8).max(2)
}

/// Writes message `seq` into `buf`, whatever its length.
pub fn fill(buf: &mut [u8], seq: u64) {
    let words = words(buf.len());
    let (body, tail) = buf.split_at_mut(buf.len() / 8 * 8);
    for (i, chunk) in body.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&word_of(seq, i, words).to_ne_bytes());
    }
    let last = word_of(seq, body.len() / 8, words).to_ne_bytes();
    tail.copy_from_slice(&last[..tail.len()]);
}

/// Checks that `bytes` is message `seq` of a run of `seed` and `max`: its length, its sequence
/// number, its checksum and every other byte.
pub fn check(bytes: &[u8], seq: u64, seed: u64, max: usize) -> Result<()> {
    let len = len(seed, seq, max);
    if bytes.len() != len {
        return Err(BenchError::Corrupt(format!(
            "message {seq} has {} bytes, {len} were sent",
            bytes.len()
        )));
    }
    let words = words(len);
    let differs = |i: usize, found: &[u8]| {
        let sent = word_of(seq, i, words).to_ne_bytes();
        let what = match i {
            0 => "sequence number",
            1 => "checksum",
            _ => "pattern",
        };
        BenchError::Corrupt(format!(
            "message {seq} of {len} bytes: word {i} ({what}) is {found:02x?}, {:02x?} was sent",
            &sent[..found.len()]
        ))
    };
    let (body, tail) = bytes.split_at(len / 8 * 8);
    for (i, chunk) in body.chunks_exact(8).enumerate() {
        if u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) != word_of(seq, i, words) {
            return Err(differs(i, chunk));
        }
    }
    let i = body.len() / 8;
    if tail != &word_of(seq, i, words).to_ne_bytes()[..tail.len()] {
        return Err(differs(i, tail));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmcast_bench::payload::Verifier;

    #[test]
    fn messages_of_every_length_check() {
        let max = 300;
        let mut lens = std::collections::BTreeSet::new();
        for seq in 0..4000u64 {
            let len = len(42, seq, max);
            assert!(len <= max);
            lens.insert(len);
            let mut msg = vec![0u8; len];
            fill(&mut msg, seq);
            check(&msg, seq, 42, max).unwrap();
            if len >= MIN_LEN && len % 8 == 0 {
                // Whole-word soak messages are stream messages.
                Verifier::new(len, true).message(&msg).unwrap();
            }
            if len > 0 {
                assert!(check(&msg[..len - 1], seq, 42, max).is_err());
                msg[len - 1] ^= 0x40;
                assert!(check(&msg, seq, 42, max).is_err());
            }
        }
        assert!(lens.contains(&0) && lens.contains(&max) && lens.contains(&7));
    }
}
