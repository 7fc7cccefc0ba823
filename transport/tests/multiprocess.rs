//! The stream between real processes, at volume: a million checksummed messages from a
//! publisher to two gating and two lossy subscriber processes (`SHMCAST_MP_MESSAGES` sets the
//! count). The gating ones receive every message in order, the lossy ones every message they
//! receive intact, and each counts exactly what it missed. And a stream whose gating subscribers
//! keep up, kept in the front of its ring by the cache window, delivered whole to two processes.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`).
//! Every wait is bounded by a watchdog; nothing here asserts on time. The test holds a
//! `FdGuard`: it ends with the process's descriptors as they were.

mod common;

use common::child::spawn_ready;
use common::message::publish;
use common::{FdGuard, roles, until};
use shmcast::Publisher;

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
