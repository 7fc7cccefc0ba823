//! Deterministic messages: any process can rebuild message `seq` and check what it received,
//! one message at a time or a whole stream.

use super::child::WATCHDOG;
use shmcast::{Publisher, RecvError, Subscriber};

/// Writes message `seq` into `buf`: a length from 0 to `max`, a header [seq, checksum] when it
/// fits, a pattern otherwise.
pub fn message(seq: u64, max: usize, buf: &mut Vec<u8>) {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    x ^= x >> 29;
    let len = (x % (max as u64 + 1)) as usize;
    buf.clear();
    buf.resize(len, 0);
    for (i, b) in buf.iter_mut().enumerate().skip(16) {
        *b = (x as usize).wrapping_add(i * 131) as u8;
    }
    if len >= 16 {
        let sum = checksum(&buf[16..]);
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        buf[8..16].copy_from_slice(&sum.to_le_bytes());
    } else {
        buf.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (seq as u8).wrapping_add(i as u8));
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut words = bytes.chunks_exact(8);
    for w in words.by_ref() {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x100_0000_01b3);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Checks a received payload against what message `seq` must be.
pub fn verify(seq: u64, payload: &[u8], max: usize, scratch: &mut Vec<u8>) {
    message(seq, max, scratch);
    assert_eq!(payload.len(), scratch.len(), "length of message {seq}");
    if payload.len() >= 16 {
        assert_eq!(
            u64::from_le_bytes(payload[..8].try_into().unwrap()),
            seq,
            "seq field"
        );
        let sum = u64::from_le_bytes(payload[8..16].try_into().unwrap());
        assert_eq!(checksum(&payload[16..]), sum, "checksum of message {seq}");
    } else {
        assert_eq!(payload, &scratch[..], "bytes of message {seq}");
    }
}

/// Receives until the publisher is gone, checking that message `n` is the `n`th to arrive and is
/// message `n` (of up to `max` bytes); returns how many arrived.
pub fn drain(sub: &mut Subscriber, max: usize) -> u64 {
    let mut scratch = Vec::new();
    let mut next = 0;
    loop {
        match sub.recv_timeout(WATCHDOG) {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                verify(m.seq(), &m, max, &mut scratch);
                next += 1;
            }
            Err(RecvError::Disconnected) => return next,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Publishes messages `seqs` (of up to `max` bytes), each loan bounded by the watchdog.
pub fn publish(publisher: &mut Publisher, seqs: std::ops::Range<u64>, max: usize) {
    let mut buf = Vec::new();
    for seq in seqs {
        message(seq, max, &mut buf);
        let mut loan = publisher
            .loan_timeout(buf.len(), WATCHDOG)
            .expect("watchdog: publisher stuck");
        loan.copy_from_slice(&buf);
        loan.publish();
    }
}
