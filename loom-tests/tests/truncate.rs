//! Loom models of truncated commits: a reservation of up to N bytes, filled with garbage, written
//! with k ≤ N bytes and committed with k.
//!
//! T1. a lossy reader at a frame that the unused part of a truncated reservation overwrote, while
//!     the next reservation ends no further than a ring after that frame: the reader must count
//!     the frame as missed, never return the garbage (the announced `reserved` never goes down);
//! T2. a gating and a lossy reader on one ring while the writer commits truncated frames across
//!     the wrap and waits for space: the gating reader gets every message with its exact length,
//!     the lossy one receives or counts every message exactly.
#![cfg(shmcast_loom)]

mod support;

use loom::sync::{Arc, Notify};
use loom::thread;
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, RingConfig, Start, Writer,
};

/// What the writer leaves in the unused part of a reservation.
const GARBAGE: u8 = 0xEE;

type Wake = Arc<Notify>;

fn writer(cap: u64, max: u64) -> Writer<Wake> {
    let cfg = RingConfig::new(cap, max).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

fn subscribe(w: &mut Writer<Wake>, mode: Mode) -> (Reader, Wake) {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    let wake = Arc::new(Notify::new());
    w.admit(cb.clone(), mode, Start::Newest, wake.clone())
        .unwrap();
    (Reader::attach(w.ring().clone(), cb).unwrap(), wake)
}

/// Message `seq`: `len` bytes, each `seq + 1` (never the garbage byte).
fn body(seq: u64, len: usize) -> Vec<u8> {
    vec![seq as u8 + 1; len]
}

/// Reserves `max` bytes, fills them with garbage, writes message `seq` of `len` bytes and commits
/// it truncated to `len`. While the ring is full, waits for a releasing reader's signal on
/// `space` (no spinning: a lost wakeup is a deadlock, which loom reports).
fn send_truncated(w: &mut Writer<Wake>, max: usize, len: usize, space: &Notify) {
    loop {
        match w.try_reserve(max) {
            Ok(mut res) => {
                w.write_payload(&res, &vec![GARBAGE; max]);
                w.write_payload(&res, &body(w.next_seq(), len));
                res.truncate(len);
                w.commit(res, |n| n.notify());
                return;
            }
            Err(ReserveError::Full { .. }) => {
                if w.prepare_wait_for_space(max).unwrap() {
                    space.wait();
                }
                w.end_wait_for_space();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Reads with `try_copy` (a gating reader peeks, copies and releases) until the stream closes,
/// parking on `wake` when there is nothing, signalling `space` when a release finds the writer
/// waiting. Checks order, length and bytes; returns (received, missed).
fn drain(r: &mut Reader, lens: &[usize], first: u64, wake: &Notify, space: &Notify) -> (u64, u64) {
    let (mut got, mut missed, mut expect) = (0, 0, first);
    let mut buf = Vec::new();
    loop {
        match r.try_copy(&mut buf) {
            Ok(c) => {
                assert_eq!(c.seq, expect, "in order");
                assert_eq!(
                    buf,
                    body(c.seq, lens[c.seq as usize]),
                    "exact length and bytes"
                );
                if c.writer_waiting {
                    space.notify();
                }
                got += 1;
                expect += 1;
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0);
                missed += n;
                expect += n;
            }
            Err(ReadError::Empty) => {
                if r.prepare_park() {
                    wake.wait();
                }
                r.unpark();
            }
            Err(ReadError::Closed) => return (got, missed),
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn t1_lossy_reader_never_reads_what_a_truncated_reservation_overwrote() {
    // Ring of 128, payloads up to 32. Message 0 fills [0, 32); the reader starts at message 1,
    // [32, 80); message 2 fills [80, 128). Then, racing the reader: message 3 reserves
    // [128, 176), whose garbage covers message 1's header, and is committed empty
    // as [128, 144); message 4 is [144, 160), which ends exactly a ring after message 1.
    const LENS: [usize; 5] = [16, 32, 32, 0, 0];
    const RESERVE: [usize; 5] = [16, 32, 32, 32, 0];
    loom::model(|| {
        let mut w = writer(128, 32);
        let space = Notify::new();
        send_truncated(&mut w, RESERVE[0], LENS[0], &space);
        let (mut r, wake) = subscribe(&mut w, Mode::Lossy);
        for seq in 1..3 {
            send_truncated(&mut w, RESERVE[seq], LENS[seq], &space);
        }
        let t = thread::spawn(move || drain(&mut r, &LENS, 1, &wake, &Notify::new()));
        for seq in 3..LENS.len() {
            send_truncated(&mut w, RESERVE[seq], LENS[seq], &space);
        }
        w.close(|n| n.notify());
        let (got, missed) = t.join().unwrap();
        assert_eq!(
            got + missed,
            4,
            "every message received or counted as missed"
        );
    });
}

#[test]
fn t2_gating_and_lossy_readers_with_truncated_commits() {
    // Ring of 64, payloads up to 16: every reservation asks for 32 bytes. Message 0 is committed
    // as [0, 16) before the readers run, message 1 as [16, 48); message 2 needs a padding frame
    // at 48, waits until the gating reader released message 1, overwrites messages 0 and 1 with
    // its garbage and is committed as [64, 80).
    const LENS: [usize; 3] = [0, 16, 0];
    support::three_threads(|| {
        let mut w = writer(64, 16);
        let (mut g, wg) = subscribe(&mut w, Mode::Gating);
        let (mut l, wl) = subscribe(&mut w, Mode::Lossy);
        let space = Arc::new(Notify::new());
        send_truncated(&mut w, 16, LENS[0], &space);
        let sg = space.clone();
        let tg = thread::spawn(move || drain(&mut g, &LENS, 0, &wg, &sg));
        let tl = thread::spawn(move || drain(&mut l, &LENS, 0, &wl, &Notify::new()));
        for len in &LENS[1..] {
            send_truncated(&mut w, 16, *len, &space);
        }
        w.close(|n| n.notify());
        assert_eq!(
            tg.join().unwrap(),
            (3, 0),
            "the gating reader gets everything"
        );
        let (got, missed) = tl.join().unwrap();
        assert_eq!(
            got + missed,
            3,
            "every message received or counted as missed"
        );
    });
}
