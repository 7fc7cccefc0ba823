//! The protocol over heap regions: wrap-around, gating, lag accounting, end of stream, hostile
//! cursors, late joiners and park decisions.
#![cfg(not(shmcast_loom))]

use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, Resume, RingConfig, Start,
    Writer,
};

use shmcast_core::testing::{Rng, spawn_random_writer};

fn ring(cap: u64, max: u64) -> Writer<u32> {
    let cfg = RingConfig::new(cap, max).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

fn join(w: &mut Writer<u32>, mode: Mode, start: Start, tag: u32) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, start, tag).unwrap();
    Reader::attach(w.ring().clone(), cb).unwrap()
}

/// Payload for message `seq` of length `len`: every byte derived from both.
fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq as usize * 31 + i * 7) as u8)
        .collect()
}

#[test]
fn wrap_at_every_offset() {
    for shift in (0..256).step_by(16) {
        for len in [0usize, 1, 15, 16, 17, 40, 96] {
            let mut w = ring(256, 96);
            // Move the write position to `shift` with messages nobody reads.
            let mut left = shift;
            while left > 0 {
                let span = left.min(112);
                let res = w.try_reserve(span - 16).unwrap();
                w.commit(res, |_| {});
                left -= span;
            }
            let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
            let first = w.next_seq();
            let mut buf = Vec::new();
            for seq in first..first + 12 {
                w.send(&payload(seq, len), |_| {}).unwrap();
                let f = r.try_peek().unwrap();
                assert_eq!(f.seq(), seq);
                r.read_payload(&f, &mut buf);
                assert_eq!(buf, payload(seq, len), "shift {shift} len {len} seq {seq}");
                // SAFETY: gating reader, slice dropped before release.
                let in_place = unsafe { r.payload(&f) }.to_vec();
                assert_eq!(in_place, buf);
                assert_eq!(f.pos() % 16, 0);
                r.release(f);
            }
            assert_eq!(r.try_peek(), Err(ReadError::Empty));
        }
    }
}

#[test]
fn gating_reader_is_never_overwritten() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    let mut sent = 0u64;
    loop {
        match w.try_reserve(40) {
            Ok(res) => {
                w.write_payload(&res, &payload(sent, 40));
                w.commit(res, |_| {});
                sent += 1;
            }
            Err(ReserveError::Full { need, free }) => {
                assert!(need > free);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(sent, 4, "four 64-byte frames fill a 256-byte ring");
    let mut buf = Vec::new();
    for seq in 0..sent {
        let got = r.try_copy(&mut buf).unwrap();
        assert_eq!((got.seq, &buf), (seq, &payload(seq, 40)));
        // Every release frees space for exactly one more.
        w.send(&payload(sent + seq, 40), |_| {}).unwrap();
    }
    assert_eq!(w.stats().full, 1);
}

#[test]
fn lossy_lag_is_exact_with_random_sizes() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let iterations = if cfg!(miri) { 100 } else { 200_000 };
    let mut w = ring(1024, 200);
    let mut r = join(&mut w, Mode::Lossy, Start::Newest, 0);
    let mut buf = Vec::new();
    let (mut received, mut lagged, mut expect) = (0u64, 0u64, 0u64);
    for _ in 0..iterations {
        if rng.below(3) != 0 {
            let seq = w.next_seq();
            w.send(&payload(seq, rng.below(201) as usize), |_| {})
                .unwrap();
        } else {
            match r.try_copy(&mut buf) {
                Ok(c) => {
                    assert_eq!(c.seq, expect, "in order");
                    assert_eq!(buf, payload(c.seq, c.len));
                    received += 1;
                    expect += 1;
                }
                Err(ReadError::Lagged(n)) => {
                    assert!(n > 0);
                    lagged += n;
                    expect += n;
                }
                Err(ReadError::Empty) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
    loop {
        match r.try_copy(&mut buf) {
            Ok(_) => received += 1,
            Err(ReadError::Lagged(n)) => lagged += n,
            Err(ReadError::Empty) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(received + lagged, w.next_seq());
    assert!(lagged > 0 && received > 0);
    assert_eq!(r.stats().lagged, lagged);
}

#[test]
fn closed_after_drain() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 7);
    for i in 0..3u8 {
        w.send(&[i], |_| {}).unwrap();
    }
    let mut woken = Vec::new();
    w.close(|t| woken.push(*t));
    assert_eq!(woken, [7]);
    assert_eq!(w.try_reserve(1).unwrap_err(), ReserveError::Closed);
    let mut buf = Vec::new();
    for i in 0..3u8 {
        r.try_copy(&mut buf).unwrap();
        assert_eq!(buf, [i]);
    }
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Closed));
    assert!(!r.prepare_park(), "a closed stream never sleeps");
}

#[test]
fn writer_gone_ends_the_stream_after_drain() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Lossy, Start::Newest, 0);
    w.send(b"last words", |_| {}).unwrap();
    let res = w.try_reserve(8).unwrap(); // never committed: the writer "dies" mid-loan
    w.write_payload(&res, b"partial!");
    r.set_writer_gone();
    let mut buf = Vec::new();
    assert_eq!(r.try_copy(&mut buf).unwrap().len, 10);
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Closed));
}

#[test]
fn hostile_cursor_is_demoted_not_trusted() {
    let mut w = ring(256, 96);
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), Mode::Gating, Start::Newest, 0).unwrap();
    let mut honest = join(&mut w, Mode::Gating, Start::Newest, 1);
    let mut victim = Reader::attach(w.ring().clone(), cb.clone()).unwrap();
    victim.set_resume(Resume::Oldest);
    // The hostile subscriber claims to have released far beyond the writer.
    // SAFETY: offset 128 is the control block's cursor word; heap memory we own.
    unsafe { (cb.as_ptr().add(128) as *mut u64).write_volatile(1 << 50) };
    for i in 0..4u64 {
        w.send(&payload(i, 40), |_| {}).unwrap();
    }
    honest.try_copy(&mut Vec::new()).unwrap();
    w.send(&payload(4, 40), |_| {}).unwrap(); // needs a refresh: the hostile cursor is seen
    assert_eq!(w.stats().demotions, 1);
    assert_eq!(victim.try_peek(), Err(ReadError::Demoted));
    assert!(!victim.is_gating());
    let mut buf = Vec::new();
    assert_eq!(victim.try_copy(&mut buf), Err(ReadError::Lagged(1)));
    // The honest reader lost nothing.
    for i in 1..5 {
        assert_eq!(honest.try_copy(&mut buf).unwrap().seq, i);
    }
}

#[test]
fn eviction_is_reported() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    let id = w.slowest_gating().unwrap();
    assert_eq!(w.evict(id), Some(0));
    assert_eq!(r.try_peek(), Err(ReadError::Evicted));
    assert_eq!(w.subscriber_count(), 0);
}

#[test]
fn late_joiner_gets_history_from_oldest() {
    let mut w = ring(256, 96);
    for i in 0..10u64 {
        w.send(&payload(i, 40), |_| {}).unwrap();
    }
    let mut r = join(&mut w, Mode::Gating, Start::Oldest, 0);
    let mut buf = Vec::new();
    let first = r.try_copy(&mut buf).unwrap().seq;
    assert_eq!(first, 6, "frames 6..10 are still intact");
    assert_eq!(buf, payload(6, 40));
    let mut newest = join(&mut w, Mode::Gating, Start::Newest, 1);
    assert_eq!(newest.try_copy(&mut buf), Err(ReadError::Empty));
    // The oldest-joiner gates: the writer may not overwrite frame 7 yet.
    let sent = (0..10)
        .take_while(|_| w.send(&[0; 40], |_| {}).is_ok())
        .count();
    assert_eq!(sent, 1);
}

#[test]
fn commits_wake_only_parked_readers() {
    let mut w = ring(256, 96);
    let mut a = join(&mut w, Mode::Gating, Start::Newest, 1);
    let mut b = join(&mut w, Mode::Lossy, Start::Newest, 2);
    let mut woken = Vec::new();
    w.send(b"x", |t| woken.push(*t)).unwrap();
    assert!(woken.is_empty(), "busy readers cost the writer nothing");
    assert!(!a.prepare_park(), "data is waiting");
    a.try_copy(&mut Vec::new()).unwrap();
    b.try_copy(&mut Vec::new()).unwrap();
    assert!(a.prepare_park());
    assert!(b.prepare_park());
    w.send(b"y", |t| woken.push(*t)).unwrap();
    woken.sort();
    assert_eq!(woken, [1, 2]);
    w.send(b"z", |t| woken.push(*t)).unwrap();
    assert_eq!(woken.len(), 2, "one signal per park");
    assert_eq!(w.stats().wakeups, 2);
}

#[test]
fn wake_word_parkers_share_one_wakeup() {
    let mut w = ring(256, 96);
    let mut a = join(&mut w, Mode::Gating, Start::Newest, 1);
    let mut b = join(&mut w, Mode::Lossy, Start::Newest, 2);
    let mut c = join(&mut w, Mode::Lossy, Start::Newest, 3);
    let word = |r: &Reader| r.wake_word().load(std::sync::atomic::Ordering::Relaxed);
    let before = word(&a);
    let wa = a
        .prepare_park_on_word()
        .expect("nothing to read: may sleep");
    let wb = b
        .prepare_park_on_word()
        .expect("nothing to read: may sleep");
    assert_eq!(
        (wa, wb),
        (before, before),
        "the value to wait for is the current word"
    );
    assert!(c.prepare_park());
    let mut woken = Vec::new();
    let wakeups = w.send(b"x", |t| woken.push(*t)).unwrap();
    assert_eq!(woken, [3], "only the signal parker is called");
    assert_eq!(wakeups.signals, 1);
    assert!(
        wakeups.wake_word,
        "the word parkers need one wake of the word"
    );
    assert_eq!(wakeups.syscalls(), 2);
    assert_eq!(
        word(&a),
        before.wrapping_add(1),
        "a sleep on the old value returns"
    );
    for r in [&a, &b, &c] {
        r.unpark();
    }
    let quiet = w.send(b"y", |t| woken.push(*t)).unwrap();
    assert_eq!(quiet, Default::default(), "nobody parked: nothing to do");
    assert_eq!(
        word(&a),
        before.wrapping_add(1),
        "the word moves only for word parkers"
    );
    // With data waiting, a park on the word is refused and leaves the word alone.
    assert_eq!(a.prepare_park_on_word(), None);
    a.try_copy(&mut Vec::new()).unwrap();
    a.try_copy(&mut Vec::new()).unwrap();
    let wa = a.prepare_park_on_word().expect("drained: may sleep");
    let closing = w.close(|_| {});
    assert!(
        closing.wake_word && closing.signals == 3,
        "close wakes everyone both ways"
    );
    assert_ne!(word(&a), wa, "a sleeper on the old value wakes at close");
}

#[test]
fn release_reports_a_waiting_writer() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    for i in 0..4 {
        w.send(&payload(i, 40), |_| {}).unwrap();
    }
    assert_eq!(w.prepare_wait_for_space(40), Ok(true));
    let f = r.try_peek().unwrap();
    assert!(r.release(f), "the writer announced it waits");
    assert_eq!(w.prepare_wait_for_space(40), Ok(false));
    w.end_wait_for_space();
    w.send(&payload(4, 40), |_| {}).unwrap();
    let f = r.try_peek().unwrap();
    assert!(!r.release(f));
}

#[test]
fn a_reader_signals_each_wait_for_space_once() {
    let mut w = ring(256, 112);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    for i in 0..8 {
        w.send(&payload(i, 16), |_| {}).unwrap();
    }
    // Eight 32-byte frames fill the ring; a 112-byte frame needs four of them released.
    assert_eq!(w.prepare_wait_for_space(96), Ok(true));
    let f = r.try_peek().unwrap();
    assert!(r.release(f), "first release during the wait signals");
    let f = r.try_peek().unwrap();
    assert!(!r.release(f), "the writer was already told of this wait");
    // The writer woke, found too little space and waits again: a new wait, a new signal.
    assert_eq!(w.prepare_wait_for_space(96), Ok(true));
    let f = r.try_peek().unwrap();
    assert!(r.release(f), "a new wait is signalled again");
    let f = r.try_peek().unwrap();
    assert!(!r.release(f));
    assert_eq!(w.prepare_wait_for_space(96), Ok(false));
    w.end_wait_for_space();
}

#[test]
fn removed_reader_stops_gating() {
    let mut w = ring(256, 96);
    let _r = join(&mut w, Mode::Gating, Start::Newest, 0);
    for i in 0..4 {
        w.send(&payload(i, 40), |_| {}).unwrap();
    }
    assert!(w.try_reserve(40).is_err());
    let id = w.slowest_gating().unwrap();
    w.remove(id);
    w.send(&payload(4, 40), |_| {}).unwrap();
}

/// Race witness: a writer thread and two reader threads over real atomics. A gating reader
/// checks every payload byte; the lossy reader checks payloads and exact lag accounting.
#[test]
fn threads_gating_and_lossy() {
    let total: u64 = if cfg!(miri) { 60 } else { 200_000 };
    let mut w = ring(4096, 512);
    let gating = join(&mut w, Mode::Gating, Start::Newest, 0);
    let lossy = join(&mut w, Mode::Lossy, Start::Newest, 1);
    let writer = spawn_random_writer(w, total, 42, 512, payload);
    let gating = std::thread::spawn(move || {
        let mut r = gating;
        let mut expect = 0;
        loop {
            match r.try_peek() {
                Ok(f) => {
                    assert_eq!(f.seq(), expect);
                    // SAFETY: gating reader, slice dropped before release.
                    assert_eq!(unsafe { r.payload(&f) }, payload(f.seq(), f.len()));
                    r.release(f);
                    expect += 1;
                }
                Err(ReadError::Empty) => std::thread::yield_now(),
                Err(ReadError::Closed) => return expect,
                Err(e) => panic!("{e}"),
            }
        }
    });
    let lossy = std::thread::spawn(move || {
        let mut r = lossy;
        let (mut got, mut missed, mut expect) = (0u64, 0u64, 0u64);
        let mut buf = Vec::new();
        loop {
            match r.try_copy(&mut buf) {
                Ok(c) => {
                    assert_eq!(c.seq, expect);
                    assert_eq!(buf, payload(c.seq, c.len));
                    got += 1;
                    expect += 1;
                }
                Err(ReadError::Lagged(n)) => {
                    missed += n;
                    expect += n;
                }
                Err(ReadError::Empty) => std::thread::yield_now(),
                Err(ReadError::Closed) => return got + missed,
                Err(e) => panic!("{e}"),
            }
        }
    });
    writer.join().unwrap();
    assert_eq!(gating.join().unwrap(), total);
    assert_eq!(lossy.join().unwrap(), total);
}

/// Race witness for the lossy copy of large messages (the string copy on x86-64): a writer
/// flat out over a ring of four of the largest frames laps a lossy reader while it copies; every
/// copy it returns is intact, and every message is received or counted as missed.
#[test]
fn threads_lossy_reader_lapped_while_copying_large_messages() {
    // Under Miri (which copies word by word) smaller messages keep it to seconds.
    let (total, max): (u64, usize) = if cfg!(miri) {
        (10, 512)
    } else {
        (50_000, 4096)
    };
    let mut w = ring(4 * max as u64, max as u64);
    let lossy = join(&mut w, Mode::Lossy, Start::Newest, 0);
    let messages: Vec<Vec<u8>> = (0..16)
        .map(|seq| payload(seq, max - 8 * seq as usize))
        .collect();
    let expected = messages.clone();
    let writer = std::thread::spawn(move || {
        for seq in 0..total {
            let body = &messages[seq as usize % messages.len()];
            let res = w
                .try_reserve(body.len())
                .expect("no gating reader: never full");
            w.write_payload(&res, body);
            w.commit(res, |_| {});
        }
        w.close(|_| {});
    });
    let mut r = lossy;
    let (mut got, mut missed, mut expect) = (0u64, 0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        match r.try_copy(&mut buf) {
            Ok(c) => {
                assert_eq!(c.seq, expect, "in order");
                assert!(
                    buf == expected[c.seq as usize % expected.len()],
                    "copy of {} torn",
                    c.seq
                );
                got += 1;
                expect += 1;
            }
            Err(ReadError::Lagged(n)) => {
                missed += n;
                expect += n;
            }
            Err(ReadError::Empty) => std::thread::yield_now(),
            Err(ReadError::Closed) => break,
            Err(e) => panic!("{e}"),
        }
    }
    writer.join().unwrap();
    assert_eq!(
        got + missed,
        total,
        "every message received or counted as missed"
    );
    assert!(got > 0, "the reader received nothing");
}

#[test]
fn lapped_reader_waits_for_an_open_reservation_instead_of_failing() {
    let mut w = ring(64, 16);
    let mut r = join(&mut w, Mode::Lossy, Start::Newest, 0);
    w.send(&[], |_| {}).unwrap(); // 16 bytes
    w.send(&[1; 16], |_| {}).unwrap(); // 32 bytes, committed = 48
    // Needs a padding frame and overwrites everything committed: tail == committed until commit.
    let res = w.try_reserve(16).unwrap();
    let mut buf = Vec::new();
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Empty), "not Corrupt");
    assert!(
        r.prepare_park(),
        "nothing readable: the commit will wake us"
    );
    w.write_payload(&res, &[2; 16]);
    let mut woken = 0;
    w.commit(res, |_| woken += 1);
    assert_eq!(woken, 1);
    r.unpark();
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Lagged(2)));
    assert_eq!(r.try_copy(&mut buf).unwrap().seq, 2);
    assert_eq!(buf, [2; 16]);
}

#[test]
fn positions_near_the_top_of_u64_are_errors_not_overflows() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Lossy, Start::Newest, 0);
    let ring = w.ring().clone();
    // SAFETY: heap memory owned by this test; offsets 128/144/152 are committed/reserved/tail.
    let word =
        |off: usize, v: u64| unsafe { (ring.as_ptr().add(off) as *mut u64).write_volatile(v) };
    let mut buf = Vec::new();
    for (committed, reserved, tail) in [
        (!15u64, u64::MAX, !15u64),
        (256, u64::MAX, 0),
        (64, u64::MAX, u64::MAX - 15),
    ] {
        word(128, committed);
        word(144, reserved);
        word(152, tail);
        for _ in 0..4 {
            let _ = r.try_copy(&mut buf);
            let _ = r.prepare_park();
        }
    }
}

#[test]
fn gating_copy_reports_a_waiting_writer() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    for i in 0..4 {
        w.send(&payload(i, 40), |_| {}).unwrap();
    }
    assert_eq!(w.prepare_wait_for_space(40), Ok(true));
    assert!(r.try_copy(&mut Vec::new()).unwrap().writer_waiting);
}

#[test]
fn lossy_reader_lapped_before_it_attaches_learns_its_lag() {
    for start in [Start::Newest, Start::Oldest] {
        let mut w = ring(256, 96);
        w.send(&payload(0, 40), |_| {}).unwrap();
        let cb = Region::heap(CONTROL_BLOCK_LEN);
        w.admit(cb.clone(), Mode::Lossy, start, 0).unwrap();
        // A fast publisher laps the subscriber while its handshake is still in flight.
        for seq in 1..10 {
            w.send(&payload(seq, 40), |_| {}).unwrap();
        }
        let mut r = Reader::attach(w.ring().clone(), cb).expect("lapped, not corrupt");
        r.set_resume(Resume::Oldest);
        let first = if start == Start::Newest { 1 } else { 0 };
        let mut buf = Vec::new();
        assert_eq!(r.try_copy(&mut buf), Err(ReadError::Lagged(6 - first)));
        for seq in 6..10 {
            assert_eq!(r.try_copy(&mut buf).unwrap().seq, seq);
            assert_eq!(buf, payload(seq, 40));
        }
        assert_eq!(r.try_copy(&mut buf), Err(ReadError::Empty));
    }
}

#[test]
fn gating_reader_demoted_and_lapped_before_it_attaches_reads_as_lossy() {
    let mut w = ring(256, 96);
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    let id = w.admit(cb.clone(), Mode::Gating, Start::Newest, 0).unwrap();
    assert!(w.demote(id));
    for seq in 0..10 {
        w.send(&payload(seq, 40), |_| {}).unwrap();
    }
    let mut r = Reader::attach(w.ring().clone(), cb).expect("demoted, then lapped");
    r.set_resume(Resume::Oldest);
    assert!(!r.is_gating());
    assert_eq!(r.try_copy(&mut Vec::new()), Err(ReadError::Lagged(6)));
    // Without the demotion the same distance is corruption: the writer never laps a gating reader.
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), Mode::Gating, Start::Newest, 1).unwrap();
    let ring = w.ring().clone();
    // SAFETY: heap memory owned by this test; offset 128 is `committed`, nobody else accesses it.
    unsafe { (ring.as_ptr().add(128) as *mut u64).write_volatile(w.committed() + 512) };
    assert!(Reader::attach(ring, cb).is_err());
}

#[test]
fn a_held_frame_stays_intact_until_a_demotion_lets_the_writer_lap_it() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    w.send(&payload(0, 40), |_| {}).unwrap();
    let held = r.try_peek().unwrap();
    // Gated: the writer fills the rest of the ring and then waits, the frame untouched.
    while w.send(&payload(1, 40), |_| {}).is_ok() {}
    assert!(r.frame_intact(&held));
    let mut bytes = Vec::new();
    r.read_payload(&held, &mut bytes);
    assert_eq!(bytes, payload(0, 40));
    // Demoted while holding it: the writer laps the frame, and the check says so.
    let id = w.subscribers().next().unwrap().id;
    assert!(w.demote(id));
    w.send(&payload(2, 40), |_| {}).unwrap();
    w.send(&payload(3, 40), |_| {}).unwrap();
    assert!(!r.frame_intact(&held));
}

#[test]
fn lapping_only_a_padding_frame_is_no_lag_and_not_empty() {
    let mut w = ring(256, 96);
    let mut r = join(&mut w, Mode::Lossy, Start::Newest, 0);
    let mut buf = Vec::new();
    for seq in 0..3 {
        w.send(&payload(seq, 64), |_| {}).unwrap(); // 80 bytes each: committed = 240
        assert_eq!(r.try_copy(&mut buf).unwrap().seq, seq);
    }
    // A padding frame at 240, then messages ending exactly at 512: the writer reuses the
    // padding's 16 bytes and nothing else the reader has not read.
    for (seq, len) in [(3, 64), (4, 64), (5, 80)] {
        w.send(&payload(seq, len), |_| {}).unwrap();
    }
    assert_eq!(w.committed(), 512);
    for (seq, len) in [(3, 64), (4, 64), (5, 80)] {
        assert_eq!(
            r.try_copy(&mut buf).unwrap().seq,
            seq,
            "no Empty, no Lagged(0)"
        );
        assert_eq!(buf, payload(seq, len));
    }
    assert_eq!(r.stats().lag_events, 0);
    assert_eq!(r.try_copy(&mut buf), Err(ReadError::Empty));
}

/// The backlog hint counts what a reader has not read, in 256ths of the ring, up to a full
/// ring, and falls as it reads.
#[test]
fn the_backlog_is_the_unread_share_of_the_ring() {
    let mut w = ring(1024, 112);
    let mut r = join(&mut w, Mode::Gating, Start::Newest, 0);
    assert_eq!(r.backlog_256ths(), 0);
    // 48-byte payloads make 64-byte frames: a sixteenth of the ring each.
    for seq in 0..8 {
        w.send(&payload(seq, 48), |_| {}).unwrap();
        assert_eq!(r.backlog_256ths(), (seq as u32 + 1) * 16);
    }
    while w.send(&payload(w.next_seq(), 48), |_| {}).is_ok() {}
    assert_eq!(r.backlog_256ths(), 256, "a full ring");
    for _ in 0..4 {
        let f = r.try_peek().unwrap();
        r.release(f);
    }
    assert_eq!(r.backlog_256ths(), 256 - 4 * 16);
}
