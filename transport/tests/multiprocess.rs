//! The stream between real processes, at volume: a million checksummed messages from a
//! publisher to two gating and two lossy subscriber processes (`SHMCAST_MP_MESSAGES` sets the
//! count). The gating ones receive every message in order, the lossy ones every message they
//! receive intact, and each counts exactly what it missed. And a stream whose gating subscribers
//! keep up, kept in the front of its ring by the cache window, delivered whole to two processes.
//! And a subscriber whose sleeps let a small ring fill turning patient, then hasty again.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`).
//! Every wait is bounded by a watchdog; nothing here asserts on time. The test holds a
//! `FdGuard`: it ends with the process's descriptors as they were.

mod common;

use common::child::spawn_ready;
use common::message::publish;
use common::{FdGuard, roles, until};
use shmcast::{Mode, Publisher, RecvError, Subscriber};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("mp-{}-{name}", std::process::id())
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "subscriber" => roles::subscriber(&args),
        "flood_then_trickle" => flood_then_trickle(&args),
        r => panic!("unknown role {r}"),
    }
}

#[test]
fn million_messages_to_two_gating_and_two_lossy_processes() {
    let count: u64 = std::env::var("SHMCAST_MP_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let fds = FdGuard::new();
    let max = 64 * 1024;
    let t = topic("million");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 22)
        .max_message(max as u64)
        .bind()
        .unwrap();
    let mut children: Vec<_> = ["gating", "gating", "lossy", "lossy"]
        .iter()
        .map(|mode| {
            let args = [
                t.clone(),
                mode.to_string(),
                max.to_string(),
                count.to_string(),
            ];
            spawn_ready("subscriber", &args)
        })
        .collect();
    until("subscribers never admitted", || {
        publisher.subscriber_count() == 4
    });
    publish(&mut publisher, 0..count, max);
    let stats = publisher.stats();
    drop(publisher);
    let mut lossy_received = 0;
    for (i, c) in children.drain(..).enumerate() {
        let out = c.finish();
        eprintln!("subscriber {i}: {}", out.trim());
        if i < 2 {
            assert!(out.contains(&format!("received={count} lagged=0")), "{out}");
        } else {
            lossy_received += out
                .split("received=")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    }
    eprintln!(
        "published {count}: {} wake syscalls ({:.4} per message), lossy received {lossy_received}",
        stats.wake_syscalls,
        stats.wake_syscalls as f64 / count as f64
    );
    fds.check();
}

#[test]
fn a_stream_kept_in_the_cache_window_reaches_two_gating_processes_whole() {
    let count: u64 = 8_000;
    let fds = FdGuard::new();
    let (max, window) = (4096usize, 64 << 10);
    let t = topic("window");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 20)
        .max_message(max as u64)
        .cache_window(window)
        .bind()
        .unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            let args = [
                t.clone(),
                "gating".into(),
                max.to_string(),
                count.to_string(),
            ];
            spawn_ready("subscriber", &args)
        })
        .collect();
    until("subscribers never admitted", || {
        publisher.subscriber_count() == 2
    });
    for from in (0..count).step_by(16) {
        publish(&mut publisher, from..(from + 16).min(count), max);
        // Let them catch up now and then, so that the window applies whatever the speeds.
        until("subscribers never caught up", || {
            publisher
                .stats()
                .subscribers
                .iter()
                .all(|s| s.lag_bytes == 0)
        });
    }
    let stats = publisher.stats();
    drop(publisher);
    for c in children {
        roles::received_all(c, count);
    }
    // About 2 KiB a message on average: the stream would fill the 1 MiB ring about 16 times, the window 250.
    assert!(
        stats.early_wraps > 100,
        "{} early wraps in {count} messages",
        stats.early_wraps
    );
    fds.check();
}

/// args: topic flood trickle. Publishes `flood` messages of 64 bytes as fast as its gating
/// subscriber lets it through a 2 KiB ring, then `trickle` more 5 ms apart, then ends.
fn flood_then_trickle(args: &[String]) {
    let (t, flood, trickle): (&str, u64, u64) =
        (&args[0], args[1].parse().unwrap(), args[2].parse().unwrap());
    let max = 64;
    let mut publisher = Publisher::builder(t)
        .capacity(2048)
        .max_message(max as u64)
        .bind()
        .unwrap();
    println!("ready");
    publisher
        .wait_for_subscribers(1, common::child::WATCHDOG)
        .unwrap();
    publish(&mut publisher, 0..flood, max);
    for seq in flood..flood + trickle {
        std::thread::sleep(Duration::from_millis(5));
        publish(&mut publisher, seq..seq + 1, max);
    }
}

/// A gating subscriber that parks whenever its ring is empty, fed by a publisher process that
/// fills the ring while it wakes: some woken sleep finds the ring nearly full and the
/// subscriber turns patient (its stats say so). Fed a message every 5 ms afterwards, its sleeps
/// find the ring nearly empty, and it is hasty again. Every message arrives in order either way.
#[test]
fn a_subscriber_whose_sleeps_fill_its_small_ring_turns_patient_and_back() {
    let (flood, trickle) = (20_000u64, 40u64);
    let fds = FdGuard::new();
    let t = topic("patient");
    let publisher = spawn_ready(
        "flood_then_trickle",
        &[t.clone(), flood.to_string(), trickle.to_string()],
    );
    // No polling before a park: every wait is a sleep that the publisher's first commit ends,
    // and a ring of about 25 frames is full long before the woken subscriber runs.
    let mut sub = Subscriber::builder(&t)
        .mode(Mode::Gating)
        .spin_limit(Duration::ZERO)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap();
    let mut scratch = Vec::new();
    let (mut next, mut patient_in_flood) = (0u64, 0u64);
    loop {
        match sub.recv_timeout(common::child::WATCHDOG) {
            Ok(m) => {
                assert_eq!(m.seq(), next);
                common::message::verify(m.seq(), &m, 64, &mut scratch);
                next += 1;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("{e}"),
        }
        if next <= flood && sub.stats().patient {
            patient_in_flood += 1;
        }
    }
    assert_eq!(next, flood + trickle, "every message, in order");
    let stats = sub.stats();
    assert!(
        patient_in_flood > 0,
        "never patient in a flood through a small ring: {stats:?}"
    );
    assert!(!stats.patient, "still patient after the trickle: {stats:?}");
    assert!(stats.parks > trickle, "{stats:?}");
    drop(sub);
    drop(publisher);
    fds.check();
}
