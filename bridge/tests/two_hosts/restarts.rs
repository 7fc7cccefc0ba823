//! Restarts on either side: bridges killed and started again, and the publisher on host A
//! restarting (a new epoch: a reset on host B, whatever its numbers).

use std::time::{Duration, Instant};

use serde_json::json;
use shmcast::{Publisher, RecvError, Subscriber};

use super::common::{self, check, free_port, host, message, serial, until};
use super::{bind, exporter, importer, publish_until};

#[test]
fn bridges_killed_and_restarted_recover_without_cleanup() {
    let _serial = serial();
    let (a, b) = (host("restart", "a"), host("restart", "b"));
    let port = free_port();
    let import = json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096});
    let mut bridge_b = importer(&b, port, import.clone());
    let mut bridge_a = exporter(&a, port, "t", "reliable");
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let bb = b.to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_sub = stop.clone();
    // A subscriber on host B that connects again whenever its publisher (the importer) ends.
    let reader = std::thread::spawn(move || {
        let mut last = None;
        while !stop_sub.load(std::sync::atomic::Ordering::Relaxed) {
            let mut sub = Subscriber::builder("t")
                .directory(&bb)
                .connect_timeout(common::WATCHDOG)
                .connect()
                .unwrap();
            loop {
                match sub.recv_timeout(Duration::from_millis(200)) {
                    Ok(s) => {
                        let i = check(&s);
                        assert!(last.is_none_or(|l| i > l), "{i} after {last:?}");
                        last = Some(i);
                        if tx.send(i).is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Timeout)
                        if stop_sub.load(std::sync::atomic::Ordering::Relaxed) =>
                    {
                        return;
                    }
                    Err(RecvError::Timeout | RecvError::Lagged(_)) => {}
                    Err(RecvError::Disconnected) => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    });
    let aa = a.to_path_buf();
    let stop_pub = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut publisher = Publisher::builder("t")
            .directory(&aa)
            .max_message(4096)
            .stall_bound(Some(Duration::from_millis(200)))
            .bind()
            .unwrap();
        let mut i = 0;
        while !stop_pub.load(std::sync::atomic::Ordering::Relaxed) {
            publisher.send(&message(i)).unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let mut seen = 0u64;
    let mut more = |n: u64, what: &str| {
        let target = seen + n;
        let deadline = Instant::now() + common::WATCHDOG;
        while seen < target {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "watchdog: {what}");
            if rx.recv_timeout(left).is_ok() {
                seen += 1;
            }
        }
    };
    more(100, "messages before any restart");
    bridge_a.kill();
    bridge_a = exporter(&a, port, "t", "reliable");
    more(100, "messages after host A's bridge restarted");
    bridge_b.kill();
    bridge_b = importer(&b, port, import);
    more(100, "messages after host B's bridge restarted");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    drop(rx);
    reader.join().unwrap();
    let b_stats = bridge_b.stop();
    assert_eq!(b_stats[0]["malformed"], 0);
    let a_stats = bridge_a.stop();
    assert!(a_stats[0]["messages"].as_u64() > Some(0));
}

/// The publisher on host A restarts and publishes past the number the importer expects next
/// before the exporter reaches it: a reset, not a gap, and nothing told host B's topic as lost.
#[test]
fn a_restarted_publisher_is_a_reset_whatever_its_first_number() {
    let _serial = serial();
    let (a, b) = (host("epoch", "a"), host("epoch", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
    );
    let bridge_a = exporter(&a, port, "t", "reliable");
    {
        let mut first = bind(&a);
        first.wait_for_subscribers(1, common::WATCHDOG).unwrap();
        for i in 0..50 {
            first.send(&message(i)).unwrap();
        }
        until("the first publisher's messages on host B", || {
            bridge_b.topic(0)["last_seq"] == 49
        });
    }
    bridge_a.wait_event("the local publisher is gone");
    let mut second = bind(&a);
    for i in 0..200 {
        second.send(&message(i)).unwrap();
    }
    second.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    let mut i = 200;
    publish_until(
        &mut second,
        &mut i,
        5,
        "the second publisher on host B",
        |_| bridge_b.topic(0)["messages"].as_u64() > Some(50),
    );
    let t = bridge_b.stop()[0].clone();
    assert_eq!((&t["resets"], &t["gaps"]), (&json!(1), &json!(0)), "{t}");
    assert_eq!(t["sources"], 1, "{t}");
    drop(bridge_a);
}

/// Messages lost at the end of a lossy stream, just before the publisher on host A restarts,
/// are never counted on host B: its next message is the new publisher's, a new epoch, counted
/// as a reset, and counting starts again. Host A's exporter says how far it put (`last_seq`),
/// and host B's `last_seq` stays the last it published: between them is what was lost.
#[test]
fn a_tail_lost_before_the_publisher_restarts_is_not_counted_on_host_b() {
    // Beyond what Zenoh's queue and the loopback's socket buffers hold (about 25 MB).
    const FLOOD: u64 = 50_000;
    // Zenoh decides what it drops: a stream whose last messages it let through shows nothing,
    // and the next stream (a new publisher) tries again.
    const STREAMS: usize = 10;
    let _serial = serial();
    let (a, b) = (host("tail", "a"), host("tail", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "reliability": "lossy", "bytes": true,
               "max_message": 4096}),
    );
    let bridge_a = exporter(&a, port, "t", "lossy");
    let mut streams = 0;
    let (end_of_stream, before) = loop {
        streams += 1;
        let end = {
            let mut publisher = bind(&a);
            publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
            let heard = bridge_b.topic(0)["messages"].as_u64();
            let mut i = 0;
            publish_until(
                &mut publisher,
                &mut i,
                20,
                "host B hearing the stream",
                |_| bridge_b.topic(0)["messages"].as_u64() > heard,
            );
            // Host B's bridge takes nothing for a moment (well within Zenoh's lease): a flood
            // fills every queue on the way, and Zenoh on host A drops what they cannot hold,
            // the tail after it included.
            bridge_b.signal("STOP");
            for (n, pause) in [(FLOOD, 300), (FLOOD / 5, 0)] {
                let put = bridge_a.topic(0)["messages"].as_u64();
                for j in i..i + n {
                    publisher.send(&message(j)).unwrap();
                }
                i += n;
                until("the exporter's last put", || {
                    let t = bridge_a.topic(0);
                    t["last_seq"].as_u64() == Some(i - 1) && t["messages"].as_u64() > put
                });
                std::thread::sleep(Duration::from_millis(pause));
            }
            i - 1
        };
        until("the exporter's end of the stream", || {
            let events = bridge_a.events();
            let gone = events
                .iter()
                .filter(|l| l.contains("the local publisher is gone"));
            gone.count() == streams
        });
        bridge_b.signal("CONT");
        // What Zenoh queued arrives; then nothing more of this stream.
        let mut last = None;
        until("host B's stream to settle", || {
            std::thread::sleep(Duration::from_millis(500));
            let now = bridge_b.topic(0)["messages"].as_u64();
            std::mem::replace(&mut last, now) == now
        });
        let before = bridge_b.topic(0);
        if before["last_seq"].as_u64() < Some(end) {
            break (end, before);
        }
        assert!(streams < STREAMS, "no stream's end was lost: {before}");
    };
    let mut next = bind(&a);
    next.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    let mut i = 0;
    publish_until(
        &mut next,
        &mut i,
        10,
        "the next publisher on host B",
        |_| bridge_b.topic(0)["resets"] == streams,
    );
    let after = bridge_b.stop()[0].clone();
    eprintln!("host A put up to {end_of_stream}; host B before the restart: {before}");
    eprintln!("host B after: {after}");
    // The tail of the stream is in no count of host B's: the restart is a reset.
    assert_eq!(after["gaps"], before["gaps"], "{after}");
    assert_eq!(after["resets"], streams, "{after}");
    drop(bridge_a);
}
