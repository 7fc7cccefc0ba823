//! Loom models of where a lapped lossy reader resumes and of latest reads, racing a writer:
//!
//! 6. a lossy reader lapped by the writer, per resume policy: exact missed count, in order, never
//!    an overwritten frame (payload bytes live in loom cells; the lossy copy reads their mirror
//!    and must be rejected by the seqlock when the writer got there first);
//! 7. latest reads (skip to the newest, then copy) racing a writer, for a lossy and a gating
//!    reader: every message received, skipped or missed exactly once, none torn, and each skip
//!    count exactly the distance to the message then read.
#![cfg(shmcast_loom)]

use loom::sync::{Arc, Notify};
use loom::thread;
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, Resume, RingConfig, Start,
    Writer,
};

type Wake = Arc<Notify>;

/// The smallest ring: 64 data bytes, payloads up to 16 bytes (two 32-byte frames).
fn ring() -> Writer<Wake> {
    let cfg = RingConfig::new(64, 16).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

fn join(w: &mut Writer<Wake>, mode: Mode, resume: Resume, wake: Wake) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, Start::Newest, wake).unwrap();
    let mut r = Reader::attach(w.ring().clone(), cb).unwrap();
    r.set_resume(resume);
    r
}

/// Message `seq`: 16 bytes, each equal to `seq + 1`.
fn msg(seq: u64) -> Vec<u8> {
    vec![seq as u8 + 1; 16]
}

fn park(r: &mut Reader, wake: &Notify) {
    if r.prepare_park() {
        wake.wait();
    }
    r.unpark();
}

/// Three messages into a ring that holds two: the reader is lapped whenever it falls behind.
const MESSAGES: u64 = 3;

/// Sends every message, waiting for a gating reader's signal on `space` while the ring is
/// full (never spinning: a lost wakeup is a deadlock, which loom reports), then closes.
fn send_all(mut w: Writer<Wake>, space: &Notify) {
    for seq in 0..MESSAGES {
        loop {
            match w.send(&msg(seq), |n| n.notify()) {
                Ok(_) => break,
                Err(ReserveError::Full { .. }) => {
                    if w.prepare_wait_for_space(16).unwrap() {
                        space.wait();
                    }
                    w.end_wait_for_space();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    w.close(|n| n.notify());
}

#[test]
fn model6_lapped_reader_resumes_per_policy() {
    for resume in [Resume::Oldest, Resume::Newest, Resume::Slack] {
        loom::model(move || {
            let mut w = ring();
            let wake: Wake = Arc::new(Notify::new());
            let mut r = join(&mut w, Mode::Lossy, resume, wake.clone());
            let t = thread::spawn(move || {
                let (mut got, mut missed, mut expect) = (0, 0, 0);
                let mut buf = Vec::new();
                loop {
                    match r.try_copy(&mut buf) {
                        Ok(c) => {
                            assert_eq!(c.seq, expect, "in order");
                            assert_eq!(buf, msg(c.seq), "never an overwritten frame");
                            got += 1;
                            expect += 1;
                        }
                        Err(ReadError::Lagged(n)) => {
                            assert!(n > 0);
                            missed += n;
                            expect += n;
                        }
                        Err(ReadError::Empty) => park(&mut r, &wake),
                        Err(ReadError::Closed) => return (got, missed, r.stats()),
                        Err(e) => panic!("{e}"),
                    }
                }
            });
            send_all(w, &Notify::new());
            let (got, missed, stats) = t.join().unwrap();
            assert_eq!(got + missed, MESSAGES, "{resume:?}: received or counted");
            assert_eq!(stats.lagged, missed);
            assert!(got >= 1, "the last message is never overwritten");
        });
    }
}

#[test]
fn model7_latest_reads_race_the_writer() {
    for mode in [Mode::Lossy, Mode::Gating] {
        loom::model(move || {
            let mut w = ring();
            let wake: Wake = Arc::new(Notify::new());
            let mut r = join(&mut w, mode, Resume::Oldest, wake.clone());
            let space: Wake = Arc::new(Notify::new());
            let signal = space.clone();
            let t = thread::spawn(move || {
                let mut buf = Vec::new();
                let (mut got, mut missed, mut last) = (0u64, 0u64, None::<u64>);
                loop {
                    let before = r.next_seq();
                    let skip = match r.skip_to_newest() {
                        Ok(s) => s,
                        Err(ReadError::Empty) => {
                            park(&mut r, &wake);
                            continue;
                        }
                        Err(ReadError::Closed) => return (got, missed, r.stats()),
                        Err(e) => panic!("{e}"),
                    };
                    if skip.writer_waiting {
                        signal.notify();
                    }
                    match r.try_copy(&mut buf) {
                        Ok(c) => {
                            if c.writer_waiting {
                                signal.notify();
                            }
                            assert_eq!(buf, msg(c.seq), "never a torn or overwritten message");
                            assert!(last.is_none_or(|l| c.seq > l), "in order");
                            assert_eq!(c.seq - before, skip.skipped, "the skip count is exact");
                            last = Some(c.seq);
                            got += 1;
                        }
                        Err(ReadError::Lagged(n)) => missed += n,
                        Err(ReadError::Empty) => park(&mut r, &wake),
                        Err(ReadError::Closed) => return (got, missed, r.stats()),
                        Err(e) => panic!("{e}"),
                    }
                }
            });
            send_all(w, &space);
            let (got, missed, stats) = t.join().unwrap();
            assert_eq!(
                got + missed + stats.skipped,
                MESSAGES,
                "{mode:?}: exact counts"
            );
            assert_eq!(stats.lagged, missed);
            assert!(got >= 1, "the last message is always read");
        });
    }
}
