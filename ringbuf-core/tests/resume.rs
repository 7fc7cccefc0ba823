//! Resume policies and latest reads over heap regions: a writer that laps the reader at every
//! step of its read (through `testing::on_step`), per policy; exact counts, in order, and never
//! a byte the writer overwrote.
#![cfg(not(shmcast_loom))]

use std::cell::RefCell;
use std::rc::Rc;

use shmcast_core::testing::{Rng, on_step};
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, Resume, RingConfig, Start, Writer,
};

fn ring(cap: u64, max: u64) -> Writer<()> {
    let cfg = RingConfig::new(cap, max).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

/// Admits a reader with the given mode and resume policy, starting with the next message.
fn join(w: &mut Writer<()>, mode: Mode, resume: Resume) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, Start::Newest, ()).unwrap();
    let mut r = Reader::attach(w.ring().clone(), cb).unwrap();
    r.set_resume(resume);
    r
}

/// Payload of message `seq`: its length and every byte derive from `seq`.
fn payload(seq: u64) -> Vec<u8> {
    let len = (seq.wrapping_mul(0x9e37_79b9) % 97) as usize;
    (0..len)
        .map(|i| (seq as usize * 31 + i * 7) as u8)
        .collect()
}

fn send(w: &mut Writer<()>, n: u64) {
    for _ in 0..n {
        let seq = w.next_seq();
        w.send(&payload(seq), |_| {}).unwrap();
    }
}

/// What a reader saw: messages received, and messages reported missed or skipped.
#[derive(Default, Debug)]
struct Tally {
    received: u64,
    missed: u64,
    expect: u64,
}

impl Tally {
    /// Checks one read's outcome: in order, the bytes the writer wrote, exact counts.
    fn take(&mut self, got: Result<(u64, &[u8]), ReadError>) -> bool {
        match got {
            Ok((seq, bytes)) => {
                assert_eq!(seq, self.expect, "in order, counts exact");
                assert_eq!(bytes, payload(seq), "never an overwritten byte");
                self.received += 1;
                self.expect += 1;
                true
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0, "Lagged(0) is never reported");
                self.missed += n;
                self.expect += n;
                true
            }
            Err(ReadError::Empty) => false,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Every step of a read, every policy, laps of one message to three rings: the writer sends
/// `laps` messages at step `k` of the first read, then the reader drains.
#[test]
fn writer_laps_the_reader_at_every_step_of_its_read() {
    for resume in [Resume::Oldest, Resume::Newest, Resume::Slack] {
        // Under Miri one short and one multi-ring lap; natively every count.
        let laps_list: &[u64] = if cfg!(miri) {
            &[1, 40]
        } else {
            &[1, 5, 12, 40]
        };
        for &laps in laps_list {
            for k in 0.. {
                let w = Rc::new(RefCell::new(ring(256, 96)));
                let mut r = join(&mut w.borrow_mut(), Mode::Lossy, resume);
                send(&mut w.borrow_mut(), 3);
                let steps = Rc::new(RefCell::new(0u32));
                let hook = {
                    let (w, steps) = (w.clone(), steps.clone());
                    on_step(move || {
                        let mut n = steps.borrow_mut();
                        if *n == k {
                            send(&mut w.borrow_mut(), laps);
                        }
                        *n += 1;
                    })
                };
                let mut t = Tally::default();
                let mut buf = Vec::new();
                let mut lag_then_newest = None;
                loop {
                    let published = w.borrow().next_seq();
                    let got = r.try_copy(&mut buf).map(|c| (c.seq, &buf[..c.len]));
                    if let (Some(after), Ok((seq, _))) = (lag_then_newest.take(), &got) {
                        // Newest resumes with the newest message committed when the read began.
                        assert!(*seq + 1 >= after, "{resume:?} k={k} laps={laps}");
                    }
                    if matches!(got, Err(ReadError::Lagged(_))) && resume == Resume::Newest {
                        lag_then_newest = Some(published);
                    }
                    if !t.take(got) {
                        break;
                    }
                }
                // The hook may have fired after the last read loaded `committed`.
                drop(hook);
                while t.take(r.try_copy(&mut buf).map(|c| (c.seq, &buf[..c.len]))) {}
                if *steps.borrow() <= k {
                    // Every step of these reads has had its turn.
                    assert!(k > 6, "a read has more steps than {k}");
                    break;
                }
                let sent = w.borrow().next_seq();
                assert_eq!(t.received + t.missed, sent, "{resume:?} k={k} laps={laps}");
                assert_eq!(r.stats().lagged, t.missed);
            }
        }
    }
}

/// Latest reads against a writer that laps them at every step: the skipped count is exact, the
/// message returned is the newest committed when the read began or a later one, intact.
#[test]
fn latest_read_under_a_writer_lapping_at_every_step() {
    for mode in [Mode::Lossy, Mode::Gating] {
        let laps_list: &[u64] = if cfg!(miri) { &[1, 40] } else { &[1, 5, 40] };
        for &laps in laps_list {
            for k in 0.. {
                let w = Rc::new(RefCell::new(ring(256, 96)));
                let mut r = join(&mut w.borrow_mut(), mode, Resume::Oldest);
                send(&mut w.borrow_mut(), 3);
                let steps = Rc::new(RefCell::new(0u32));
                let hook = {
                    let (w, steps) = (w.clone(), steps.clone());
                    on_step(move || {
                        let mut n = steps.borrow_mut();
                        // A gating reader holds the writer back: it can only fill the ring.
                        if *n == k {
                            let mut w = w.borrow_mut();
                            for _ in 0..laps {
                                let seq = w.next_seq();
                                if w.send(&payload(seq), |_| {}).is_err() {
                                    break;
                                }
                            }
                        }
                        *n += 1;
                    })
                };
                let newest_at_start = w.borrow().next_seq() - 1;
                let before = r.next_seq();
                let mut buf = Vec::new();
                let (seq, missed) = latest(&mut r, &mut buf);
                assert!(seq >= newest_at_start, "{mode:?} k={k} laps={laps}");
                assert_eq!(buf, payload(seq), "never an overwritten byte");
                let s = r.stats();
                assert_eq!(
                    seq - before,
                    s.skipped + missed,
                    "every message accounted for"
                );
                assert_eq!(s.lagged, missed);
                drop(hook);
                if *steps.borrow() <= k {
                    assert!(k >= 2, "a latest read has more steps than {k}");
                    break;
                }
            }
        }
    }
}

/// A latest read as the transport makes it: skip, read; skip again after a lap.
fn latest(r: &mut Reader, buf: &mut Vec<u8>) -> (u64, u64) {
    let mut missed = 0;
    loop {
        r.skip_to_newest().unwrap();
        match r.try_copy(buf) {
            Ok(c) => return (c.seq, missed),
            Err(ReadError::Lagged(n)) => missed += n,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Random sends, reads and latest reads, per policy: every message is received, missed or
/// skipped, exactly once, in order; a latest read returns the newest committed message.
#[test]
fn random_reads_account_for_every_message() {
    let iterations = if cfg!(miri) { 300 } else { 100_000 };
    for resume in [Resume::Oldest, Resume::Newest, Resume::Slack] {
        let mut rng = Rng(0x5eed_0001 ^ resume as u64);
        let mut w = ring(1024, 200);
        let mut r = join(&mut w, Mode::Lossy, resume);
        let mut t = Tally::default();
        let mut buf = Vec::new();
        for _ in 0..iterations {
            match rng.below(8) {
                0..=3 => send(&mut w, 1 + rng.below(3)),
                4 => {
                    let newest = w.next_seq().checked_sub(1);
                    match r.skip_to_newest() {
                        Ok(s) => {
                            t.missed += s.skipped;
                            t.expect += s.skipped;
                            let c = r.try_copy(&mut buf).unwrap();
                            assert_eq!(Some(c.seq), newest, "the newest message");
                            t.take(Ok((c.seq, &buf[..c.len])));
                        }
                        Err(ReadError::Empty) => assert_eq!(r.next_seq(), w.next_seq()),
                        Err(e) => panic!("{e}"),
                    }
                }
                _ => {
                    let got = r.try_copy(&mut buf).map(|c| (c.seq, &buf[..c.len]));
                    t.take(got);
                }
            }
        }
        while t.take(r.try_copy(&mut buf).map(|c| (c.seq, &buf[..c.len]))) {}
        assert_eq!(t.received + t.missed, w.next_seq(), "{resume:?}");
        let s = r.stats();
        assert_eq!(s.lagged + s.skipped, t.missed);
        assert!(s.lag_events > 0 && s.skipped > 0);
    }
}

/// A reader lapped by padding only reads on in order under either policy.
#[test]
fn newest_resumes_only_when_messages_were_lost() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Lossy, Resume::Newest);
    let mut buf = Vec::new();
    for seq in 0..3 {
        w.send(&[seq as u8; 64], |_| {}).unwrap(); // 80 bytes each: committed = 240
        assert_eq!(r.try_copy(&mut buf).unwrap().seq, seq);
    }
    for len in [64, 64, 80] {
        w.send(&vec![0; len], |_| {}).unwrap();
    }
    for seq in 3..6 {
        assert_eq!(r.try_copy(&mut buf).unwrap().seq, seq);
    }
    // Lapped by messages: resume with the newest, missing all before it.
    send(&mut w, 10);
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Lagged(9)));
    assert_eq!(r.try_copy(&mut buf).unwrap().seq, 15);
    assert_eq!(buf, payload(15));
}

/// A `newest` word that points nowhere useful is not followed: the reader falls back to the
/// oldest intact frame, and a latest read skips nothing.
#[test]
fn unusable_newest_word_falls_back_to_the_tail() {
    for bad in [0u64, 8, 1 << 40, u64::MAX - 15] {
        let mut w = ring(256, 96);
        let mut r = join(&mut w, Mode::Lossy, Resume::Newest);
        send(&mut w, 12);
        let ring = w.ring().clone();
        // SAFETY: heap memory owned by this test; offset 160 is the header's `newest` word.
        unsafe { (ring.as_ptr().add(160) as *mut u64).write_volatile(bad) };
        let mut t = Tally::default();
        let mut buf = Vec::new();
        while t.take(r.try_copy(&mut buf).map(|c| (c.seq, &buf[..c.len]))) {}
        assert_eq!(t.received + t.missed, 12, "newest = {bad:#x}");
        assert!(t.received > 1, "resumed at the oldest intact frame");
        send(&mut w, 2);
        // SAFETY: as above.
        unsafe { (ring.as_ptr().add(160) as *mut u64).write_volatile(bad) };
        assert_eq!(r.skip_to_newest().unwrap().skipped, 0);
        assert_eq!(r.try_copy(&mut buf).unwrap().seq, 12);
    }
}

/// Where each policy resumes, exactly: 100 frames of 64 bytes into a ring of 16. `Oldest` at the
/// tail; `Slack` two of the largest frames (2 × 64 bytes) further on; `Newest` at the last.
#[test]
fn each_policy_resumes_where_it_says() {
    for (resume, missed) in [
        (Resume::Oldest, 84),
        (Resume::Slack, 86),
        (Resume::Newest, 99),
    ] {
        let mut w = ring(1024, 48);
        let mut r = join(&mut w, Mode::Lossy, resume);
        for seq in 0..100u8 {
            w.send(&[seq; 48], |_| {}).unwrap();
        }
        let mut buf = Vec::new();
        assert_eq!(
            r.try_copy(&mut buf),
            Err(ReadError::Lagged(missed)),
            "{resume:?}"
        );
        for seq in missed..100 {
            assert_eq!(r.try_copy(&mut buf).unwrap().seq, seq);
            assert_eq!(buf, [seq as u8; 48]);
        }
        assert_eq!(r.try_copy(&mut buf), Err(ReadError::Empty));
    }
}
