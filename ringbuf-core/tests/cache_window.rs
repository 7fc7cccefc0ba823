//! The cache window: a stream whose gating subscribers keep up stays in the front of the ring,
//! and one that falls behind, or has a lossy subscriber, or nobody, gets the whole ring.
#![cfg(not(shmcast_loom))]

use shmcast_core::{
    CONTROL_BLOCK_LEN, DEFAULT_CACHE_WINDOW, Mode, ReadError, Reader, Region, ReserveError,
    RingConfig, Start, Writer,
};

use shmcast_core::testing::{Rng, spawn_random_writer};

const CAP: u64 = 4096;
const WINDOW: u64 = 1024;
/// Messages of 100 bytes (128-byte frames) that reach the ring's end: a lap and a quarter.
const PAST_THE_END: u64 = CAP / 128 + 8;

fn ring(window: u64) -> Writer<u32> {
    let cfg = RingConfig::new(CAP, 512).unwrap();
    let mut w = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
    w.set_cache_window(window);
    w
}

fn join(w: &mut Writer<u32>, mode: Mode, start: Start) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, start, 0).unwrap();
    Reader::attach(w.ring().clone(), cb).unwrap()
}

fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq as usize * 13 + i * 5) as u8)
        .collect()
}

/// Sends `n` messages of `len` bytes, each read and released by `r` at once; returns the highest
/// offset into the ring at which a message started.
fn send_read(w: &mut Writer<u32>, r: &mut Reader, n: u64, len: usize) -> u64 {
    let mut top = 0;
    let mut buf = Vec::new();
    for _ in 0..n {
        let seq = w.next_seq();
        w.send(&payload(seq, len), |_| {}).unwrap();
        let f = r.try_peek().unwrap();
        assert_eq!(f.seq(), seq);
        r.read_payload(&f, &mut buf);
        assert_eq!(buf, payload(seq, len));
        top = top.max(f.pos() % CAP);
        r.release(f);
    }
    assert_eq!(r.try_peek(), Err(ReadError::Empty));
    top
}

#[test]
fn the_default_window_is_four_mib() {
    assert_eq!(DEFAULT_CACHE_WINDOW, 4 << 20);
}

#[test]
fn a_subscriber_that_keeps_up_keeps_the_stream_in_the_window() {
    for len in [0usize, 1, 100, 200, 496] {
        let mut w = ring(WINDOW);
        let mut r = join(&mut w, Mode::Gating, Start::Newest);
        let span = 16 + (len as u64).next_multiple_of(16);
        // Twice the ring under Miri, whose interpreter is slow; many times it natively.
        let n = if cfg!(miri) { 2 * CAP / span + 1 } else { 1000 };
        let top = send_read(&mut w, &mut r, n, len);
        // A frame starts below the window, or (a large one) below two of its own spans.
        assert!(top < WINDOW.max(2 * span), "len {len}: a frame at {top}");
        assert!(w.stats().early_wraps > 0, "len {len}");
        // Every wrap in that stream was early: the writer never reached the ring's end.
        assert!(w.committed() > 2 * CAP);
    }
}

#[test]
fn without_a_window_the_whole_ring_is_used() {
    let mut w = ring(0);
    let mut r = join(&mut w, Mode::Gating, Start::Newest);
    let top = send_read(&mut w, &mut r, PAST_THE_END, 100);
    assert!(top >= CAP - 128, "a frame at {top}");
    assert_eq!(w.stats().early_wraps, 0);
}

#[test]
fn a_subscriber_that_falls_behind_gets_the_whole_ring() {
    let mut w = ring(WINDOW);
    let mut r = join(&mut w, Mode::Gating, Start::Newest);
    // Fill the ring while the subscriber reads nothing: it holds the first message of the lap,
    // so the writer never wraps early and the whole ring fills.
    let mut sent = 0u64;
    loop {
        match w.try_reserve(100) {
            Ok(res) => {
                w.write_payload(&res, &payload(sent, 100));
                w.commit(res, |_| {});
                sent += 1;
            }
            Err(ReserveError::Full { .. }) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(sent, CAP / 128);
    assert_eq!(w.stats().early_wraps, 0);
    let mut buf = Vec::new();
    for seq in 0..sent {
        let f = r.try_peek().unwrap();
        assert_eq!(f.seq(), seq);
        r.read_payload(&f, &mut buf);
        assert_eq!(buf, payload(seq, 100));
        r.release(f);
    }
}

#[test]
fn a_lossy_subscriber_keeps_the_whole_ring_as_history() {
    let mut w = ring(WINDOW);
    let mut gating = join(&mut w, Mode::Gating, Start::Newest);
    let _lossy = join(&mut w, Mode::Lossy, Start::Newest);
    let top = send_read(&mut w, &mut gating, PAST_THE_END, 100);
    assert!(top >= CAP - 128, "a frame at {top}");
    assert_eq!(w.stats().early_wraps, 0);
}

#[test]
fn with_nobody_subscribed_the_ring_keeps_its_history() {
    let mut w = ring(WINDOW);
    for seq in 0..100 {
        w.send(&payload(seq, 100), |_| {}).unwrap();
    }
    assert_eq!(w.stats().early_wraps, 0);
    // A late joiner finds a whole ring of history.
    let mut r = join(&mut w, Mode::Gating, Start::Oldest);
    let first = r.try_peek().unwrap().seq();
    assert_eq!(first, 100 - CAP / 128);
}

#[test]
fn a_late_joiner_from_the_oldest_reads_the_window_in_order() {
    let mut w = ring(WINDOW);
    let mut a = join(&mut w, Mode::Gating, Start::Newest);
    send_read(&mut w, &mut a, 100, 100);
    let mut late = join(&mut w, Mode::Gating, Start::Oldest);
    let mut expect = late.try_peek().unwrap().seq();
    assert!(expect < 100);
    let mut buf = Vec::new();
    while let Ok(f) = late.try_peek() {
        assert_eq!(f.seq(), expect);
        late.read_payload(&f, &mut buf);
        assert_eq!(buf, payload(expect, 100));
        late.release(f);
        expect += 1;
    }
    assert_eq!(expect, 100);
}

/// A writer and a gating reader on two threads, random sizes, a reader that sometimes dawdles:
/// early and end-of-ring wraps mixed, every message in order and intact.
#[test]
fn threads_mix_early_and_full_laps() {
    let total: u64 = if cfg!(miri) { 80 } else { 200_000 };
    let mut w = ring(WINDOW);
    let r = join(&mut w, Mode::Gating, Start::Newest);
    let writer = spawn_random_writer(w, total, 7, 512, payload);
    let reader = std::thread::spawn(move || {
        let mut r = r;
        let mut rng = Rng(11);
        let mut expect = 0;
        loop {
            match r.try_peek() {
                Ok(f) => {
                    assert_eq!(f.seq(), expect);
                    // SAFETY: gating reader, slice dropped before release.
                    assert_eq!(unsafe { r.payload(&f) }, payload(f.seq(), f.len()));
                    r.release(f);
                    expect += 1;
                    if rng.below(64) == 0 {
                        std::thread::yield_now();
                    }
                }
                Err(ReadError::Empty) => std::thread::yield_now(),
                Err(ReadError::Closed) => return expect,
                Err(e) => panic!("{e}"),
            }
        }
    });
    let early = writer.join().unwrap().stats().early_wraps;
    assert_eq!(reader.join().unwrap(), total);
    if !cfg!(miri) {
        assert!(early > 0, "no early wrap in {total} messages");
    }
}
