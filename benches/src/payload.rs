//! What a stream message holds, how a publisher writes it and how a receiver checks it.
//!
//! A message is `len / 8` native-endian `u64` words: word 0 is the sequence number, word 1 the
//! wrapping sum of words 2.. (the checksum), and word `i ≥ 2` is `seq · K + i`. The publisher
//! writes every word; a receiver sums every word it is handed and compares, so both sides touch
//! every byte on every transport alike.

use crate::error::{BenchError, Result};

/// Multiplier that makes every message's words differ from the previous message's.
pub const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Smallest message of a stream scenario: sequence number and checksum.
pub const MIN_LEN: usize = 16;

/// Writes message `seq` into `buf` (`buf.len()` a multiple of 8, at least [`MIN_LEN`]).
pub fn fill(buf: &mut [u8], seq: u64) {
    debug_assert!(buf.len() >= MIN_LEN && buf.len() % 8 == 0);
    let base = seq.wrapping_mul(K);
    let (head, body) = buf.split_at_mut(MIN_LEN);
    let mut sum = 0u64;
    for (i, word) in body.chunks_exact_mut(8).enumerate() {
        let value = base.wrapping_add(i as u64 + 2);
        sum = sum.wrapping_add(value);
        word.copy_from_slice(&value.to_ne_bytes());
    }
    head[..8].copy_from_slice(&seq.to_ne_bytes());
    head[8..].copy_from_slice(&sum.to_ne_bytes());
}

/// The wrapping sum of the `u64` words of `bytes` (a trailing partial word is ignored).
pub fn sum_words(bytes: &[u8]) -> u64 {
    // Four independent sums let the compiler keep several vector lanes busy.
    let mut lanes = [0u64; 4];
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        for (lane, word) in lanes.iter_mut().zip(chunk.chunks_exact(8)) {
            *lane = lane.wrapping_add(u64::from_ne_bytes(word.try_into().expect("8 bytes")));
        }
    }
    let mut sum = lanes.iter().fold(0u64, |a, &b| a.wrapping_add(b));
    for word in chunks.remainder().chunks_exact(8) {
        sum = sum.wrapping_add(u64::from_ne_bytes(word.try_into().expect("8 bytes")));
    }
    sum
}

/// The wrapping sum of `words`.
pub fn sum_u64s(words: &[u64]) -> u64 {
    let mut lanes = [0u64; 4];
    let mut chunks = words.chunks_exact(4);
    for chunk in &mut chunks {
        for (lane, &w) in lanes.iter_mut().zip(chunk) {
            *lane = lane.wrapping_add(w);
        }
    }
    let sum = lanes.iter().fold(0u64, |a, &b| a.wrapping_add(b));
    chunks
        .remainder()
        .iter()
        .fold(sum, |a, &b| a.wrapping_add(b))
}

/// Word `i` of message `seq` of `words` words, for transports that lend a `[u64]` to fill
/// element by element, and for messages cut short. The same message as [`fill`] writes, with the
/// checksum in closed form.
pub fn word_of(seq: u64, i: usize, words: usize) -> u64 {
    let base = seq.wrapping_mul(K);
    match i {
        0 => seq,
        1 => {
            // Sum of base + j for j in 2..words.
            let n = words.saturating_sub(2) as u64;
            let js = (words as u64)
                .wrapping_mul(words as u64 - 1)
                .wrapping_div(2)
                .wrapping_sub(1);
            base.wrapping_mul(n)
                .wrapping_add(if words > 2 { js } else { 0 })
        }
        _ => base.wrapping_add(i as u64),
    }
}

fn word(bytes: &[u8], index: usize) -> u64 {
    u64::from_ne_bytes(bytes[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
}

/// Checks messages as a receiver gets them: whole (message transports) or as a byte stream cut
/// anywhere (stream sockets).
pub struct Verifier {
    len: usize,
    /// Sequence number the next message must carry (at least, when gaps are allowed).
    next_seq: u64,
    allow_gaps: bool,
    /// Bytes of the current message consumed so far (stream mode).
    at: usize,
    seq: u64,
    checksum: u64,
    sum: u64,
    /// Messages checked.
    pub messages: u64,
    /// Messages skipped (gaps in the sequence).
    pub skipped: u64,
    /// Extra work after each message, ns of busy waiting: a consumer slower than its producer.
    work_ns: u64,
    /// Sum over checked messages of how many newer ones were committed when each was received,
    /// for receivers that can tell (shmcast's lossy ones); 0 otherwise.
    pub behind: u64,
}

impl Verifier {
    /// A verifier for messages of `len` bytes. With `allow_gaps` (lossy receivers) a sequence
    /// number may jump forward; otherwise every message must follow the previous one.
    pub fn new(len: usize, allow_gaps: bool) -> Verifier {
        Verifier {
            len,
            next_seq: 0,
            allow_gaps,
            at: 0,
            seq: 0,
            checksum: 0,
            sum: 0,
            messages: 0,
            skipped: 0,
            work_ns: 0,
            behind: 0,
        }
    }

    /// Makes this receiver spend `ns` more on each message (busy, as processing would).
    pub fn with_work(mut self, ns: u64) -> Verifier {
        self.work_ns = ns;
        self
    }

    /// Checks one whole message.
    pub fn message(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() != self.len {
            return Err(BenchError::Corrupt(format!(
                "message of {} bytes, expected {}",
                bytes.len(),
                self.len
            )));
        }
        let seq = word(bytes, 0);
        let checksum = word(bytes, 1);
        let sum = sum_words(&bytes[MIN_LEN..]);
        self.done(seq, checksum, sum)
    }

    /// Checks one whole message lent as `u64` words.
    pub fn message_words(&mut self, words: &[u64]) -> Result<()> {
        if words.len() * 8 != self.len || words.len() < 2 {
            return Err(BenchError::Corrupt(format!(
                "message of {} words, expected {} bytes",
                words.len(),
                self.len
            )));
        }
        self.done(words[0], words[1], sum_u64s(&words[2..]))
    }

    /// Checks the next bytes of a stream of messages, cut anywhere. `bytes.len()` must be a
    /// multiple of 8.
    pub fn stream(&mut self, mut bytes: &[u8]) -> Result<()> {
        debug_assert!(bytes.len() % 8 == 0);
        while !bytes.is_empty() {
            if self.at < MIN_LEN {
                let word = word(bytes, 0);
                if self.at == 0 {
                    self.seq = word;
                } else {
                    self.checksum = word;
                }
                self.at += 8;
                bytes = &bytes[8..];
            } else {
                let take = (self.len - self.at).min(bytes.len());
                self.sum = self.sum.wrapping_add(sum_words(&bytes[..take]));
                self.at += take;
                bytes = &bytes[take..];
            }
            if self.at == self.len {
                let (seq, checksum, sum) = (self.seq, self.checksum, self.sum);
                self.at = 0;
                self.sum = 0;
                self.done(seq, checksum, sum)?;
            }
        }
        Ok(())
    }

    fn done(&mut self, seq: u64, checksum: u64, sum: u64) -> Result<()> {
        if sum != checksum {
            return Err(BenchError::Corrupt(format!(
                "message {seq}: checksum {checksum:#x}, words sum to {sum:#x}"
            )));
        }
        if seq != self.next_seq && !(self.allow_gaps && seq > self.next_seq) {
            return Err(BenchError::Corrupt(format!(
                "message {seq} where {} was due",
                self.next_seq
            )));
        }
        self.skipped += seq - self.next_seq;
        self.next_seq = seq + 1;
        self.messages += 1;
        if self.work_ns > 0 {
            let until = crate::sys::now_ns() + self.work_ns;
            while crate::sys::now_ns() < until {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_and_streamed_messages_check() {
        let len = 64;
        let mut bytes = vec![0u8; len * 3];
        for (seq, msg) in bytes.chunks_exact_mut(len).enumerate() {
            fill(msg, seq as u64);
        }
        let mut whole = Verifier::new(len, false);
        for msg in bytes.chunks_exact(len) {
            whole.message(msg).unwrap();
        }
        assert_eq!(whole.messages, 3);
        let mut streamed = Verifier::new(len, false);
        for piece in bytes.chunks(24) {
            streamed.stream(piece).unwrap();
        }
        assert_eq!(streamed.messages, 3);
    }

    #[test]
    fn word_by_word_messages_match_filled_ones() {
        for len in [16, 24, 64, 4096] {
            let mut bytes = vec![0u8; len];
            fill(&mut bytes, 7);
            let words: Vec<u64> = (0..len / 8).map(|i| word_of(7, i, len / 8)).collect();
            let from_bytes: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|w| u64::from_ne_bytes(w.try_into().unwrap()))
                .collect();
            assert_eq!(words, from_bytes, "len {len}");
            Verifier::new(len, true).message_words(&words).unwrap();
        }
    }

    #[test]
    fn corruption_and_gaps_are_caught() {
        let len = 32;
        let mut msg = vec![0u8; len];
        fill(&mut msg, 0);
        msg[20] ^= 1;
        assert!(Verifier::new(len, false).message(&msg).is_err());
        fill(&mut msg, 5);
        assert!(Verifier::new(len, false).message(&msg).is_err());
        let mut lossy = Verifier::new(len, true);
        lossy.message(&msg).unwrap();
        assert_eq!(lossy.skipped, 5);
    }
}
