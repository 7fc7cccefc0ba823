//! Loom model of the waits as the transport runs them since both sides poll before they sleep:
//! a gating reader blocked in a receive polls for a message before it parks on the ring's wake
//! word, and the writer, finding the ring full, polls the gating cursors
//! (`Writer::has_space_for`) before it announces a wait for space. Polling announces nothing,
//! so a poll that fails must leave the sleep that follows exactly as safe as one without it: the
//! reader never sleeps on a committed message, the writer never sleeps on a release, and the
//! polls' refreshes of what each side caches (the reader's `committed`, the writer's gating
//! minimum) never hide the other side's progress from the re-check after the announcement.
//!
//! The ring holds two of the three messages, so the writer waits for space at least once while
//! the reader may wait for data. The writer never closes (closing wakes everyone): the reader's
//! only way forward after an empty read is a wake for a commit, the writer's after a full ring a
//! release. A lost wakeup leaves a side asleep, which loom reports as a deadlock.
#![cfg(shmcast_loom)]

mod support;

use loom::sync::{Arc, Notify};
use loom::thread;
use shmcast_core::{
    CONTROL_BLOCK_LEN, Mode, ReadError, Reader, Region, ReserveError, RingConfig, Start, Writer,
};
use support::WordSleep;

/// Message `seq`: `len` bytes, each equal to `seq + 1`.
fn msg(seq: u64, len: usize) -> Vec<u8> {
    vec![seq as u8 + 1; len]
}

/// The polls of a spin: a bounded stand-in for the transport's time budget (loom has no clock).
const POLLS: usize = 1;

#[test]
fn model8_both_sides_poll_then_sleep_no_lost_wakeup() {
    // Three 32-byte frames into 64 bytes.
    const LENS: [usize; 3] = [16, 16, 16];
    loom::model(|| {
        let cfg = RingConfig::new(64, 16).unwrap();
        let mut w: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
        let cb = Region::heap(CONTROL_BLOCK_LEN);
        w.admit(cb.clone(), Mode::Gating, Start::Newest, ())
            .unwrap();
        let mut r = Reader::attach(w.ring().clone(), cb).unwrap();
        let words = Arc::new(WordSleep::new());
        let space = Arc::new(Notify::new());
        let (words2, space2) = (words.clone(), space.clone());

        // The reader, as `Subscriber::recv`: look, poll, then park on the word.
        let t = thread::spawn(move || {
            let mut buf = Vec::new();
            let mut got = 0u64;
            while got < LENS.len() as u64 {
                let mut peeked = r.try_peek();
                for _ in 0..POLLS {
                    if !matches!(peeked, Err(ReadError::Empty)) {
                        break;
                    }
                    peeked = r.try_peek();
                }
                match peeked {
                    Ok(f) => {
                        assert_eq!(f.seq(), got, "in order, exactly once");
                        r.read_payload(&f, &mut buf);
                        assert_eq!(buf, msg(got, LENS[got as usize]), "committed bytes");
                        if r.release(f) {
                            space2.notify();
                        }
                        got += 1;
                    }
                    Err(ReadError::Empty) => {
                        if let Some(expected) = r.prepare_park_on_word() {
                            words2.wait(r.wake_word(), expected);
                        }
                        r.unpark();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        });

        // The writer, as `Publisher::loan`: on a full ring, poll for space, then announce and
        // sleep until a release signals.
        for (seq, &len) in LENS.iter().enumerate() {
            let payload = msg(seq as u64, len);
            loop {
                match w.send(&payload, |_| panic!("no signal parker")) {
                    Ok(wakeups) => {
                        if wakeups.wake_word {
                            words.wake_all();
                        }
                        break;
                    }
                    Err(ReserveError::Full { .. }) => {
                        if (0..POLLS).any(|_| w.has_space_for(len)) {
                            continue;
                        }
                        if w.prepare_wait_for_space(len).unwrap() {
                            space.wait();
                        }
                        w.end_wait_for_space();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        t.join().unwrap();
    });
}
