//! Loom models of the ring protocol: the `shmcast-core` source under loom's scheduler.
//!
//! 1. one writer, two gating readers, wrap-around with padding: exactly once, in order, never read
//!    before commit (payload bytes live in loom cells: a missing happens-before edge is a race);
//! 2. a lossy reader lapped by the writer: exact missed count, no overwritten frame accepted;
//! 3. park/wake: a reader that parks (on its own signal, or on the ring's wake word) never
//!    sleeps on a committed message, and a writer waiting for space never sleeps on a release;
//! 4. a reader joining and another leaving while the writer commits;
//! 5. gating and lossy readers on one ring;
//! 6. a writer that ends a lap early (the cache window) while a gating reader reads.
#![cfg(shmcast_loom)]

mod support;

use loom::sync::{Arc, Mutex, Notify};
use loom::thread;
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, RingConfig, Start, Writer,
};
use support::WordSleep;

/// The smallest ring: 64 data bytes, payloads up to 16 bytes.
fn ring<A>() -> Writer<A> {
    let cfg = RingConfig::new(64, 16).unwrap();
    Writer::new(Region::heap(cfg.region_len()), cfg).unwrap()
}

fn join<A>(w: &mut Writer<A>, mode: Mode, start: Start, attachment: A) -> Reader {
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), mode, start, attachment).unwrap();
    Reader::attach(w.ring().clone(), cb).unwrap()
}

/// Message `seq`: `len` bytes, each equal to `seq + 1`.
fn msg(seq: u64, len: usize) -> Vec<u8> {
    vec![seq as u8 + 1; len]
}

/// Each reader's own signal (the transport's doorbell on its connection).
type Wake = Arc<Notify>;

/// Sends `payload`; while the ring is full, waits for a releasing reader's signal on `space`.
/// No spinning: a lost wakeup is a deadlock, which loom reports.
fn send_wait(w: &mut Writer<Wake>, payload: &[u8], space: &Notify) {
    loop {
        match w.send(payload, |n| n.notify()) {
            Ok(_) => return,
            Err(ReserveError::Full { .. }) => {
                if w.prepare_wait_for_space(payload.len()).unwrap() {
                    space.wait();
                }
                w.end_wait_for_space();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Parks a reader that found nothing, as the transport does.
fn park(r: &mut Reader, wake: &Notify) {
    if r.prepare_park() {
        wake.wait();
    }
    r.unpark();
}

/// Reads every message as a gating reader until the stream closes; checks order and bytes.
fn drain_gating(r: &mut Reader, lens: &[usize], first: u64, wake: &Notify, space: &Notify) -> u64 {
    let mut expect = first;
    let mut buf = Vec::new();
    loop {
        match r.try_peek() {
            Ok(f) => {
                assert_eq!(f.seq(), expect, "in order, exactly once");
                r.read_payload(&f, &mut buf);
                assert_eq!(buf, msg(expect, lens[expect as usize]), "committed bytes");
                if r.release(f) {
                    space.notify();
                }
                expect += 1;
            }
            Err(ReadError::Empty) => park(r, wake),
            Err(ReadError::Closed) => return expect - first,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Reads as a lossy reader until the stream closes; returns (received, missed).
fn drain_lossy(r: &mut Reader, lens: &[usize], first: u64, wake: &Notify) -> (u64, u64) {
    let (mut got, mut missed, mut expect) = (0, 0, first);
    let mut buf = Vec::new();
    loop {
        match r.try_copy(&mut buf) {
            Ok(c) => {
                assert_eq!(c.seq, expect, "in order");
                assert_eq!(
                    buf,
                    msg(c.seq, lens[c.seq as usize]),
                    "never an overwritten frame"
                );
                got += 1;
                expect += 1;
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0);
                missed += n;
                expect += n;
            }
            Err(ReadError::Empty) => park(r, wake),
            Err(ReadError::Closed) => return (got, missed),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Message sizes: the first two are sent before the readers join and leave the write position
/// 16 bytes before the end of the data area; the third then needs a padding frame and wraps onto
/// the first, and the fourth can only be written once the readers released the third.
const WRAP: [usize; 4] = [16, 0, 8, 16];
/// Messages sent before the readers join.
const PREFILL: u64 = 2;

/// Sends the prefill messages of `WRAP` (nobody reads them).
fn prefill(w: &mut Writer<Wake>) {
    for seq in 0..PREFILL {
        w.send(&msg(seq, WRAP[seq as usize]), |_| {}).unwrap();
    }
}

/// Sends the rest of `WRAP`, waiting for space as needed, then closes.
fn send_wrap(mut w: Writer<Wake>, space: &Notify) {
    for seq in PREFILL..WRAP.len() as u64 {
        send_wait(&mut w, &msg(seq, WRAP[seq as usize]), space);
    }
    w.close(|n| n.notify());
}

fn notify() -> Wake {
    Arc::new(Notify::new())
}

/// Reads `lens.len()` messages as a gating reader, calling `park` on every empty read, then
/// notifies `done`. Its only way forward after an empty read is a wakeup for a commit: a writer
/// that waits for `done` before closing turns a lost wakeup into a deadlock, which loom reports.
fn read_all_then_notify(
    r: &mut Reader,
    lens: &[usize],
    done: &Notify,
    mut park: impl FnMut(&mut Reader),
) {
    let mut buf = Vec::new();
    let mut got = 0;
    while got < lens.len() as u64 {
        match r.try_peek() {
            Ok(f) => {
                assert_eq!(f.seq(), got);
                r.read_payload(&f, &mut buf);
                assert_eq!(buf, msg(got, lens[got as usize]));
                r.release(f);
                got += 1;
            }
            Err(ReadError::Empty) => park(r),
            Err(e) => panic!("{e}"),
        }
    }
    done.notify();
}

#[test]
fn model1_two_gating_readers_wrap() {
    support::three_threads(|| {
        let mut w = ring::<Wake>();
        prefill(&mut w);
        let (wa, wb, space) = (notify(), notify(), notify());
        let mut a = join(&mut w, Mode::Gating, Start::Newest, wa.clone());
        let mut b = join(&mut w, Mode::Gating, Start::Newest, wb.clone());
        let (sa, sb) = (space.clone(), space.clone());
        let ta = thread::spawn(move || drain_gating(&mut a, &WRAP, PREFILL, &wa, &sa));
        let tb = thread::spawn(move || drain_gating(&mut b, &WRAP, PREFILL, &wb, &sb));
        send_wrap(w, &space);
        assert_eq!(ta.join().unwrap(), 2);
        assert_eq!(tb.join().unwrap(), 2);
    });
}

#[test]
fn model2_lossy_reader_lapped() {
    const LENS: [usize; 3] = [16, 16, 16];
    loom::model(|| {
        let mut w = ring::<Wake>();
        let wake = notify();
        let mut r = join(&mut w, Mode::Lossy, Start::Newest, wake.clone());
        let t = thread::spawn(move || drain_lossy(&mut r, &LENS, 0, &wake));
        for (seq, &len) in LENS.iter().enumerate() {
            w.send(&msg(seq as u64, len), |n| n.notify()).unwrap();
        }
        w.close(|n| n.notify());
        let (got, missed) = t.join().unwrap();
        assert_eq!(
            got + missed,
            3,
            "every message received or counted as missed"
        );
    });
}

#[test]
fn model3a_reader_park_no_lost_wakeup() {
    const LENS: [usize; 2] = [8, 8];
    loom::model(|| {
        let mut w = ring::<Wake>();
        let (wake, done) = (notify(), notify());
        let mut r = join(&mut w, Mode::Gating, Start::Newest, wake.clone());
        let done2 = done.clone();
        // The reader's only way forward after an empty read is a signal for a commit: the
        // writer does not close (closing signals everyone) until the reader has everything.
        // A lost wakeup leaves both asleep, which loom reports as a deadlock.
        let t = thread::spawn(move || {
            read_all_then_notify(&mut r, &LENS, &done2, |r| park(r, &wake));
        });
        for (seq, &len) in LENS.iter().enumerate() {
            w.send(&msg(seq as u64, len), |n| n.notify()).unwrap();
        }
        done.wait();
        t.join().unwrap();
    });
}

#[test]
fn model3c_wake_word_park_no_lost_wakeup() {
    // As model 3a, with the reader asleep on the ring's wake word (what `recv` does) instead of
    // its own signal: the word must be read before the park announcement.
    const LENS: [usize; 2] = [8, 8];
    loom::model(|| {
        let mut w = ring::<()>();
        let sleep = Arc::new(WordSleep::new());
        let done = notify();
        let mut r = join(&mut w, Mode::Gating, Start::Newest, ());
        let (sleep2, done2) = (sleep.clone(), done.clone());
        let t = thread::spawn(move || {
            read_all_then_notify(&mut r, &LENS, &done2, |r| {
                if let Some(expected) = r.prepare_park_on_word() {
                    sleep2.wait(r.wake_word(), expected);
                }
                r.unpark();
            });
        });
        for (seq, &len) in LENS.iter().enumerate() {
            let wakeups = w
                .send(&msg(seq as u64, len), |_| panic!("no signal parker"))
                .unwrap();
            if wakeups.wake_word {
                sleep.wake_all();
            }
        }
        done.wait();
        t.join().unwrap();
    });
}

#[test]
fn model3b_writer_waits_for_space_no_lost_wakeup() {
    // Three 32-byte frames into 64 bytes: the writer must wait for releases at least once.
    const LENS: [usize; 3] = [16, 16, 16];
    loom::model(|| {
        let mut w = ring::<Wake>();
        let (wake, space) = (notify(), notify());
        let mut r = join(&mut w, Mode::Gating, Start::Newest, wake.clone());
        let s2 = space.clone();
        let t = thread::spawn(move || drain_gating(&mut r, &LENS, 0, &wake, &s2));
        for (seq, &len) in LENS.iter().enumerate() {
            send_wait(&mut w, &msg(seq as u64, len), &space);
        }
        w.close(|n| n.notify());
        assert_eq!(t.join().unwrap(), 3);
    });
}

#[test]
fn model4_join_and_leave_during_commits() {
    const LENS: [usize; 3] = [16, 16, 16];
    loom::model(|| {
        let mut w = ring::<Wake>();
        let space = notify();
        let leaver_wake = notify();
        let mut leaver = join(&mut w, Mode::Gating, Start::Newest, leaver_wake.clone());
        let leaver_id = w.slowest_gating().unwrap();
        let w = Arc::new(Mutex::new(w));

        // Reads one message, then leaves; as the transport does on a hang-up, it signals the
        // writer, which must then stop waiting for it.
        let (w1, s1) = (w.clone(), space.clone());
        let t_leave = thread::spawn(move || {
            loop {
                match leaver.try_peek() {
                    Ok(f) => {
                        if leaver.release(f) {
                            s1.notify();
                        }
                        break;
                    }
                    Err(ReadError::Empty) => park(&mut leaver, &leaver_wake),
                    Err(e) => panic!("{e}"),
                }
            }
            w1.lock().unwrap().remove(leaver_id);
            s1.notify();
        });

        // Joins as a gating reader at some point during the commits.
        let (w2, s2) = (w.clone(), space.clone());
        let t_join = thread::spawn(move || {
            let wake = notify();
            let (mut r, first) = {
                let mut w = w2.lock().unwrap();
                let first = w.next_seq();
                (
                    join(&mut w, Mode::Gating, Start::Newest, wake.clone()),
                    first,
                )
            };
            (first, drain_gating(&mut r, &LENS, first, &wake, &s2))
        });

        for (seq, &len) in LENS.iter().enumerate() {
            let payload = msg(seq as u64, len);
            loop {
                let mut guard = w.lock().unwrap();
                match guard.send(&payload, |n| n.notify()) {
                    Ok(_) => break,
                    Err(ReserveError::Full { .. }) => {
                        let sleep = guard.prepare_wait_for_space(len).unwrap();
                        drop(guard);
                        if sleep {
                            space.wait();
                        }
                        w.lock().unwrap().end_wait_for_space();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        w.lock().unwrap().close(|n| n.notify());
        t_leave.join().unwrap();
        let (first, got) = t_join.join().unwrap();
        assert_eq!(
            first + got,
            3,
            "the joiner gets every message from its start"
        );
    });
}

#[test]
fn model5_gating_and_lossy_on_one_ring() {
    support::three_threads(|| {
        let mut w = ring::<Wake>();
        prefill(&mut w);
        let (wg, wl, space) = (notify(), notify(), notify());
        let mut g = join(&mut w, Mode::Gating, Start::Newest, wg.clone());
        let mut l = join(&mut w, Mode::Lossy, Start::Newest, wl.clone());
        let sg = space.clone();
        let tg = thread::spawn(move || drain_gating(&mut g, &WRAP, PREFILL, &wg, &sg));
        let tl = thread::spawn(move || drain_lossy(&mut l, &WRAP, PREFILL, &wl));
        send_wrap(w, &space);
        assert_eq!(tg.join().unwrap(), 2);
        let (got, missed) = tl.join().unwrap();
        assert_eq!(got + missed, 2);
    });
}

/// Set once an execution of model 6 took the early wrap (outside loom: it spans executions).
static EARLY_WRAP_SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[test]
fn model6_early_wrap_while_reading() {
    // 32-byte frames in a 128-byte ring: at offset 64 the writer starts the next lap early if
    // the reader has released the lap's first message, and fills the ring otherwise.
    const LENS: [usize; 5] = [8, 8, 8, 8, 8];
    loom::model(|| {
        let cfg = RingConfig::new(128, 16).unwrap();
        let mut w = Writer::<Wake>::new(Region::heap(cfg.region_len()), cfg).unwrap();
        w.set_cache_window(32);
        let (wake, space) = (notify(), notify());
        let mut r = join(&mut w, Mode::Gating, Start::Newest, wake.clone());
        let s = space.clone();
        let t = thread::spawn(move || drain_gating(&mut r, &LENS, 0, &wake, &s));
        for (seq, &len) in LENS.iter().enumerate() {
            send_wait(&mut w, &msg(seq as u64, len), &space);
        }
        if w.stats().early_wraps > 0 {
            EARLY_WRAP_SEEN.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        w.close(|n| n.notify());
        assert_eq!(t.join().unwrap(), 5, "every message, in order, once");
    });
    assert!(
        EARLY_WRAP_SEEN.load(std::sync::atomic::Ordering::Relaxed),
        "no execution wrapped early"
    );
}
