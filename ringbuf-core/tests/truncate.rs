//! Reservations of up to N bytes committed with fewer: every message arrives with exactly its
//! written length and bytes, frames stay contiguous and aligned, and the bytes written beyond the
//! committed length (which may overwrite older frames) never reach a lossy reader.
#![cfg(not(shmcast_loom))]

use shmcast_core::testing::Rng;
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, Resume, RingConfig, Start,
    Writer,
};

fn ring(cap: u64, max: u64) -> Writer<()> {
    let cfg = RingConfig::new(cap, max).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

fn join(w: &mut Writer<()>, mode: Mode, start: Start) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, start, ()).unwrap();
    Reader::attach(w.ring().clone(), cb).unwrap()
}

/// Payload of message `seq` with length `len`: every byte derived from both, never 0xEE.
fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((seq as usize * 31 + i * 7) % 0xEE) as u8)
        .collect()
}

/// What a writer leaves in the unused part of a reservation.
const GARBAGE: u8 = 0xEE;

/// Reserves `max` bytes, fills all of them with garbage, writes message `seq` of `len` bytes,
/// truncates to `len` and commits. `Err` only for a full ring.
fn send_truncated(w: &mut Writer<()>, max: usize, len: usize) -> Result<(), ReserveError> {
    let mut res = w.try_reserve(max)?;
    w.write_payload(&res, &vec![GARBAGE; max]);
    w.write_payload(&res, &payload(w.next_seq(), len));
    res.truncate(len);
    assert_eq!(res.len(), len);
    w.commit(res, |_| {});
    Ok(())
}

#[test]
fn truncate_never_lengthens() {
    let mut w = ring(256, 64);
    let mut res = w.try_reserve(10).unwrap();
    res.truncate(64);
    assert_eq!(res.len(), 10, "a longer length changes nothing");
    res.truncate(10);
    assert_eq!(res.len(), 10);
    res.truncate(0);
    assert!(res.is_empty());
    w.commit(res, |_| {});
    assert_eq!(w.committed(), 16, "an empty message is a bare header");
}

#[test]
fn the_next_frame_starts_after_the_truncated_one() {
    for (max, len, end) in [
        (64, 0, 16),
        (64, 1, 32),
        (64, 16, 32),
        (64, 17, 48),
        (64, 64, 80),
    ] {
        let mut w = ring(256, 64);
        let mut r = join(&mut w, Mode::Gating, Start::Newest);
        send_truncated(&mut w, max, len).unwrap();
        assert_eq!(w.committed(), end, "max {max} len {len}");
        w.send(&payload(1, 3), |_| {}).unwrap();
        let mut buf = Vec::new();
        for seq in 0..2 {
            let f = r.try_peek().unwrap();
            assert_eq!(f.pos() % 16, 0);
            r.read_payload(&f, &mut buf);
            let want = if seq == 0 { len } else { 3 };
            assert_eq!(buf, payload(seq, want), "max {max} len {len} seq {seq}");
            r.release(f);
        }
        assert_eq!(r.try_peek(), Err(ReadError::Empty));
    }
}

/// A lossy reader at frame P; a reservation whose unused part overwrites P's bytes, then
/// committed truncated to nothing or abandoned; then a small reservation that ends no further than
/// a ring after P. The announced `reserved` must still cover the first reservation's writes, or
/// the reader accepts garbage as P.
fn overwritten_frame_is_lag(commit_first: bool) {
    let mut w = ring(128, 48);
    w.send(&payload(0, 16), |_| {}).unwrap(); // [0, 32)
    let mut r = join(&mut w, Mode::Lossy, Start::Newest);
    // Resumes with the oldest intact frame, so that the lag counts exactly the frame P.
    r.set_resume(Resume::Oldest);
    w.send(&payload(1, 16), |_| {}).unwrap(); // P: [32, 64)
    w.send(&payload(2, 48), |_| {}).unwrap(); // [64, 128)
    // [128, 192): its payload [144, 192) is P's old bytes.
    let mut res = w.try_reserve(48).unwrap();
    w.write_payload(&res, &[GARBAGE; 48]);
    if commit_first {
        res.truncate(0);
        w.commit(res, |_| {});
    } else {
        w.abandon(res);
    }
    // Ends at 160 (after the truncated commit) or 144 (after the abandon): at most P + 128.
    let last = w.next_seq();
    w.send(&payload(last, 0), |_| {}).unwrap();
    let mut buf = Vec::new();
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Lagged(1)), "P is lost");
    let c = r.try_copy(&mut buf).unwrap();
    assert_eq!((c.seq, &buf), (2, &payload(2, 48)));
    for seq in 3..=last {
        let c = r.try_copy(&mut buf).unwrap();
        assert_eq!((c.seq, c.len), (seq, 0));
    }
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Empty));
}

#[test]
fn a_truncated_reservation_keeps_what_it_announced() {
    overwritten_frame_is_lag(true);
}

#[test]
fn an_abandoned_reservation_keeps_what_it_announced() {
    overwritten_frame_is_lag(false);
}

/// The readers' side of a property run: every message in order with its exact length and bytes,
/// every lag exact.
#[derive(Default)]
struct Tally {
    expect: u64,
    received: u64,
    lagged: u64,
}

impl Tally {
    fn check(&mut self, got: Result<shmcast_core::Copied, ReadError>, buf: &[u8], lens: &[usize]) {
        match got {
            Ok(c) => {
                assert_eq!(c.seq, self.expect, "in order");
                assert_eq!(c.len, lens[c.seq as usize], "the written length");
                assert_eq!(buf, payload(c.seq, c.len), "the written bytes");
                self.received += 1;
                self.expect += 1;
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0);
                self.lagged += n;
                self.expect += n;
            }
            Err(ReadError::Empty) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

/// Random reservations of up to N bytes, filled with garbage, then written with k ≤ N bytes and
/// committed with k (some abandoned, some exact), interleaved with a gating and a lossy reader.
#[test]
fn random_truncated_commits_arrive_exactly() {
    let steps = if cfg!(miri) { 400 } else { 100_000 };
    for (seed, cap, max) in [(1u64, 64u64, 16u64), (7, 256, 96), (0x9e37, 1024, 200)] {
        let mut rng = Rng(seed.wrapping_mul(0x9e3779b97f4a7c15) | 1);
        let mut w = ring(cap, max);
        let mut gating = join(&mut w, Mode::Gating, Start::Newest);
        let mut lossy = join(&mut w, Mode::Lossy, Start::Newest);
        let (mut g, mut l) = (Tally::default(), Tally::default());
        let mut lens = Vec::new();
        let mut buf = Vec::new();
        for _ in 0..steps {
            match rng.below(8) {
                0..=3 => {
                    let reserve = rng.below(max + 1) as usize;
                    let len = rng.below(reserve as u64 + 1) as usize;
                    let abandon = rng.below(16) == 0;
                    match w.try_reserve(reserve) {
                        Ok(mut res) => {
                            w.write_payload(&res, &rng.bytes(reserve));
                            if abandon {
                                w.abandon(res);
                                continue;
                            }
                            w.write_payload(&res, &payload(w.next_seq(), len));
                            res.truncate(len);
                            w.commit(res, |_| {});
                            lens.push(len);
                        }
                        Err(ReserveError::Full { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                4..=5 => {
                    let got = gating.try_copy(&mut buf);
                    g.check(got, &buf, &lens);
                }
                _ => {
                    let got = lossy.try_copy(&mut buf);
                    l.check(got, &buf, &lens);
                }
            }
        }
        w.close(|_| {});
        loop {
            match gating.try_copy(&mut buf) {
                Err(ReadError::Closed) => break,
                got => g.check(got, &buf, &lens),
            }
        }
        loop {
            match lossy.try_copy(&mut buf) {
                Err(ReadError::Closed) => break,
                got => l.check(got, &buf, &lens),
            }
        }
        let sent = lens.len() as u64;
        assert_eq!(
            (g.received, g.lagged),
            (sent, 0),
            "ring {cap}: gating gets all"
        );
        assert_eq!(
            l.received + l.lagged,
            sent,
            "ring {cap}: lossy counts every message"
        );
        assert!(l.lagged > 0, "ring {cap}: the lossy reader was lapped");
    }
}

/// Race witness over real threads: a writer truncating every reservation after filling it with
/// garbage, a gating and a lossy reader checking every length and byte.
#[test]
fn threads_truncated_commits() {
    let total: u64 = if cfg!(miri) { 200 } else { 200_000 };
    let mut w = ring(4096, 512);
    let gating = join(&mut w, Mode::Gating, Start::Newest);
    let lossy = join(&mut w, Mode::Lossy, Start::Newest);
    let mut rng = Rng(42);
    let lens: Vec<usize> = (0..total).map(|_| rng.below(513) as usize).collect();
    let lens = std::sync::Arc::new(lens);
    let writer = {
        let lens = lens.clone();
        std::thread::spawn(move || {
            let mut seq = 0;
            while seq < total {
                let len = lens[seq as usize];
                match send_truncated(&mut w, 512, len) {
                    Ok(()) => seq += 1,
                    Err(ReserveError::Full { .. }) => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            w.close(|_| {});
        })
    };
    let readers = [gating, lossy].map(|mut r| {
        let lens = lens.clone();
        std::thread::spawn(move || {
            let mut t = Tally::default();
            let mut buf = Vec::new();
            loop {
                match r.try_copy(&mut buf) {
                    Err(ReadError::Closed) => return (t.received, t.lagged),
                    Err(ReadError::Empty) => std::thread::yield_now(),
                    got => t.check(got, &buf, &lens),
                }
            }
        })
    });
    writer.join().unwrap();
    let [g, l] = readers.map(|t| t.join().unwrap());
    assert_eq!(g, (total, 0), "the gating reader gets everything");
    assert_eq!(
        l.0 + l.1,
        total,
        "the lossy reader receives or counts everything"
    );
}
