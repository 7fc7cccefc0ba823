//! Latest reads and resume policies between real processes: subscriber processes that receive
//! only the newest message (lossy and gating) from a publisher going flat out, and lossy
//! subscribers stopped while the publisher laps them, resuming with the newest or the oldest
//! message. Every message is received, skipped or counted as missed exactly once, and every
//! one received is checked byte for byte.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`).
//! Every wait is bounded by a watchdog; nothing here asserts on time.

mod common;

use common::child::{WATCHDOG, spawn_ready};
use common::message::{publish, verify};
use common::{FdGuard, until};
use shmcast::{Mode, Publisher, RecvError, Resume, Subscriber};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("latest-{}-{name}", std::process::id())
}

fn connect(topic: &str, mode: Mode, resume: Resume) -> Subscriber {
    Subscriber::builder(topic)
        .mode(mode)
        .resume(resume)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap()
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "latest" => latest_reader(&args),
        "resume" => resuming_reader(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic mode(gating|lossy|lossy-try) max count. Receives with `recv_latest` until
/// disconnected (`lossy-try`: with `try_recv_latest`, waiting in `poll()` on the descriptor
/// after `Empty`, as an event loop does); checks every message, that each skip count is the
/// distance from the previous one, that the last message is received, and the counters; prints
/// `summary received=… skipped=…`.
fn latest_reader(args: &[String]) {
    let fds = FdGuard::new();
    let mode = if args[1] == "gating" {
        Mode::Gating
    } else {
        Mode::Lossy
    };
    let polling = args[1] == "lossy-try";
    let (max, count): (usize, u64) = (args[2].parse().unwrap(), args[3].parse().unwrap());
    let mut sub = connect(&args[0], mode, Resume::Newest);
    println!("ready");
    let (mut received, mut skipped, mut next) = (0u64, 0u64, 0u64);
    let mut scratch = Vec::new();
    loop {
        // Whether to wait in `poll()`, once the receive's borrow has ended.
        let wait = match if polling {
            sub.try_recv_latest()
        } else {
            sub.recv_latest_timeout(WATCHDOG)
        } {
            Ok(m) => {
                assert_eq!(m.seq(), next + m.skipped(), "the skip count is exact");
                verify(m.seq(), &m, max, &mut scratch);
                received += 1;
                skipped += m.skipped();
                next = m.seq() + 1;
                false
            }
            Err(RecvError::Disconnected) => break,
            Err(RecvError::Empty) if polling => true,
            Err(e) => panic!("latest reader: {e}"),
        };
        if wait {
            let mut fd = [rustix::event::PollFd::new(
                &sub,
                rustix::event::PollFlags::IN,
            )];
            let within = rustix::time::Timespec::try_from(WATCHDOG).unwrap();
            let n = rustix::event::poll(&mut fd, Some(&within)).unwrap();
            assert_eq!(n, 1, "the descriptor became readable within the watchdog");
        }
    }
    assert_eq!(next, count, "the last message is always received");
    assert_eq!(received + skipped, count);
    let s = sub.stats();
    assert_eq!((s.received, s.lagged + s.skipped), (received, skipped));
    if mode == Mode::Gating {
        assert_eq!(s.lagged, 0, "nothing overwritten under a gating subscriber");
    }
    drop(sub);
    fds.check();
    println!("summary received={received} skipped={skipped}");
}

/// args: topic resume(newest|oldest) max. Receives message 0, says `got 0`, then (stopped by
/// the parent while the publisher laps it) receives until disconnected and prints
/// `summary lagged=… first=… received=…`: the lag, the first message after it, how many.
fn resuming_reader(args: &[String]) {
    let fds = FdGuard::new();
    let resume = if args[1] == "oldest" {
        Resume::Oldest
    } else {
        Resume::Newest
    };
    let max: usize = args[2].parse().unwrap();
    let mut sub = connect(&args[0], Mode::Lossy, resume);
    println!("ready");
    let mut scratch = Vec::new();
    let m = sub.recv_timeout(WATCHDOG).unwrap();
    verify(m.seq(), &m, max, &mut scratch);
    assert_eq!(m.seq(), 0);
    drop(m);
    println!("got 0");
    let lagged = match sub.recv_timeout(WATCHDOG) {
        Err(RecvError::Lagged(n)) => n,
        other => panic!("expected a lag, got {other:?}"),
    };
    let (mut first, mut received, mut next) = (None, 0u64, 1 + lagged);
    loop {
        match sub.recv_timeout(WATCHDOG) {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order after the lag");
                verify(m.seq(), &m, max, &mut scratch);
                first.get_or_insert(m.seq());
                received += 1;
                next += 1;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("resuming reader: {e}"),
        }
    }
    drop(sub);
    fds.check();
    println!(
        "summary lagged={lagged} first={} received={received}",
        first.unwrap()
    );
}

fn field(out: &str, name: &str) -> u64 {
    out.split(&format!("{name}="))
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {name} in {out:?}"))
        .parse()
        .unwrap()
}

#[test]
fn latest_readers_account_for_every_message_of_a_flat_out_publisher() {
    let fds = FdGuard::new();
    let (max, count) = (4096, 200_000u64);
    let t = topic("flat-out");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 16)
        .max_message(max as u64)
        .bind()
        .unwrap();
    let modes = ["lossy", "gating", "lossy-try"];
    let children: Vec<_> = modes
        .iter()
        .map(|mode| {
            let args = [
                t.clone(),
                mode.to_string(),
                max.to_string(),
                count.to_string(),
            ];
            spawn_ready("latest", &args)
        })
        .collect();
    until("subscribers never admitted", || {
        publisher.subscriber_count() == 3
    });
    publish(&mut publisher, 0..count, max);
    drop(publisher);
    for (c, mode) in children.into_iter().zip(modes) {
        let out = c.finish();
        eprintln!("{mode} latest reader: {}", out.trim());
        assert_eq!(field(&out, "received") + field(&out, "skipped"), count);
    }
    fds.check();
}

#[test]
fn a_lapped_subscriber_resumes_with_the_newest_or_the_oldest_message() {
    let fds = FdGuard::new();
    let max = 256;
    // 64 KiB of messages of up to 256 bytes: 1000 messages lap the ring several times.
    let lap = 1000u64;
    for resume in ["newest", "oldest"] {
        let t = topic(resume);
        let mut publisher = Publisher::builder(&t)
            .capacity(1 << 16)
            .max_message(max as u64)
            .bind()
            .unwrap();
        let mut c = spawn_ready("resume", &[t.clone(), resume.into(), max.to_string()]);
        until("subscriber never admitted", || {
            publisher.subscriber_count() == 1
        });
        publish(&mut publisher, 0..1, max);
        c.expect_line("got 0");
        c.stop();
        publish(&mut publisher, 1..1 + lap, max);
        c.resume();
        // Let it read what is there before the stream ends, so nothing moves under it.
        drop(publisher);
        let out = c.finish();
        eprintln!("resume {resume}: {}", out.trim());
        let (lagged, first, received) = (
            field(&out, "lagged"),
            field(&out, "first"),
            field(&out, "received"),
        );
        assert_eq!(first, 1 + lagged, "in order after the lag");
        assert_eq!(lagged + received, lap, "every message received or counted");
        if resume == "newest" {
            assert_eq!(
                (lagged, received),
                (lap - 1, 1),
                "only the newest is left to read"
            );
        } else {
            assert!(received > 100, "a ring's worth of history: {received}");
        }
    }
    fds.check();
}
