//! Two "hosts" on this machine, each with its own topic directory and its own bridge process,
//! connected over Zenoh TCP on 127.0.0.1 with scouting off: a publisher on host A, subscribers
//! on host B (and a second bridge process on host B where a loop is tried).

#[path = "two_hosts/binding.rs"]
mod binding;
#[path = "two_hosts/by_hand.rs"]
mod by_hand;
mod common;
#[path = "two_hosts/restarts.rs"]
mod restarts;

use std::path::Path;
use std::time::Duration;

use common::{BridgeProc, check, dir, free_port, host, message, serial, until};
use serde_json::{Value, json};
use shmcast::{Inspector, Publisher, RecvError, Start, Subscriber};

#[test]
fn role_entry() {
    if common::role() {
        std::process::exit(0);
    }
}

/// A host's directory goes when its test ends, with what the processes that used it left
/// there: the socket of an import killed as its guard dropped, files of the test's own.
#[test]
fn a_hosts_directory_is_removed_when_its_test_ends() {
    let _serial = serial();
    let path = {
        let b = host("guard", "b");
        let bridge_b = importer(
            &b,
            free_port(),
            json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
        );
        bridge_b.wait_event("publishing");
        std::fs::create_dir(b.join("sub")).unwrap();
        std::fs::write(b.join("sub").join("file"), b"x").unwrap();
        drop(bridge_b);
        assert!(b.join("t").exists(), "the killed import's socket");
        b.to_path_buf()
    };
    assert!(!path.exists(), "{} left behind", path.display());
}

/// Host A's bridge: exports `topic` with `options`, listening on `port`.
fn exporter(a: &Path, port: u16, topic: &str, reliability: &str) -> BridgeProc {
    BridgeProc::start(&json!({
        "directory": dir(a),
        "listen": [format!("tcp/127.0.0.1:{port}")],
        "scouting": false,
        "topics": [{"topic": topic, "direction": "export", "reliability": reliability}],
    }))
}

/// Host B's bridge: imports `topic` (its fields as given), connecting to `port`.
fn importer(b: &Path, port: u16, topic: Value) -> BridgeProc {
    BridgeProc::start(&json!({
        "directory": dir(b),
        "connect": [format!("tcp/127.0.0.1:{port}")],
        "scouting": false,
        "topics": [topic],
    }))
}

/// Publishes messages `*next`, `*next + 1`, … one every `ms` milliseconds, until `done` (given
/// the number of the next message) holds. A message longer than the publisher's largest is
/// cut to it (a topic of small messages; nobody checks their bytes).
fn publish_until(
    publisher: &mut Publisher,
    next: &mut u64,
    ms: u64,
    what: &str,
    mut done: impl FnMut(u64) -> bool,
) {
    until(what, || {
        let mut m = message(*next);
        m.truncate(publisher.max_message());
        publisher.send(&m).unwrap();
        *next += 1;
        std::thread::sleep(Duration::from_millis(ms));
        done(*next)
    });
}

/// A publisher of topic `t` in `dir`, of messages up to 4 KiB.
fn bind(dir: &Path) -> Publisher {
    Publisher::builder("t")
        .directory(dir)
        .max_message(4096)
        .bind()
        .unwrap()
}

fn subscriber(dir: &Path, topic: &str) -> Subscriber {
    Subscriber::builder(topic)
        .directory(dir)
        .start(Start::Oldest)
        .connect_timeout(common::WATCHDOG)
        .connect()
        .unwrap()
}

#[test]
fn reliable_delivers_every_message_in_order_byte_exact() {
    let _serial = serial();
    const N: u64 = 20_000;
    let (a, b) = (host("reliable", "a"), host("reliable", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
    );
    let bb = b.to_path_buf();
    let subs: Vec<_> = (0..2)
        .map(|_| {
            let mut sub = subscriber(&bb, "t");
            std::thread::spawn(move || {
                for want in 0..N {
                    let s = sub.recv_timeout(common::WATCHDOG).unwrap();
                    assert_eq!(check(&s), want);
                }
            })
        })
        .collect();
    let bridge_a = exporter(&a, port, "t", "reliable");
    let mut publisher = Publisher::builder("t")
        .directory(&a)
        .max_message(4096)
        .stall_bound(None)
        .bind()
        .unwrap();
    // The exporter connects only once host B's subscriber matches its key.
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    for i in 0..N {
        publisher.send(&message(i)).unwrap();
    }
    for s in subs {
        s.join().unwrap();
    }
    let a_stats = bridge_a.stop();
    let b_stats = bridge_b.stop();
    assert_eq!(a_stats[0]["messages"], N);
    assert_eq!(a_stats[0]["demotions"], 0);
    assert_eq!(b_stats[0]["messages"], N);
    assert_eq!(b_stats[0]["gaps"], 0);
    assert_eq!(b_stats[0]["malformed"], 0);
}

#[test]
fn lossy_counts_every_gap_of_an_overloaded_importer() {
    let _serial = serial();
    const N: u64 = 100_000;
    let (a, b) = (host("lossy", "a"), host("lossy", "b"));
    let port = free_port();
    // A small ring on host B and a slow gating reader there: the importer waits for space,
    // Zenoh's reception stalls, and the exporter's dropping queue overflows.
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096,
               "capacity": 65536}),
    );
    let mut sub = subscriber(&b, "t");
    let reader = std::thread::spawn(move || {
        let (mut first, mut last, mut count, mut lagged) = (None, 0u64, 0u64, 0u64);
        loop {
            match sub.recv_timeout(Duration::from_secs(3)) {
                Ok(s) => {
                    let i = check(&s);
                    assert!(first.is_none() || i > last, "{i} after {last}");
                    first.get_or_insert(i);
                    last = i;
                    count += 1;
                    drop(s);
                    if count % 16 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Err(RecvError::Lagged(n)) => lagged += n,
                Err(RecvError::Timeout) if first.is_some() => break,
                Err(RecvError::Timeout) => {}
                Err(e) => panic!("{e}"),
            }
        }
        (first.unwrap(), last, count, lagged)
    });
    let bridge_a = exporter(&a, port, "t", "lossy");
    let mut publisher = bind(&a);
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    // Message `i` is the local topic's message of sequence number `i`. Warm up until the key
    // is routed to host B, then flood.
    let mut i = 0;
    publish_until(&mut publisher, &mut i, 20, "host B's first message", |_| {
        bridge_b.topic(0)["messages"].as_u64() > Some(0)
    });
    for j in i..i + N {
        publisher.send(&message(j)).unwrap();
    }
    i += N;
    // A gap is counted when the message after it arrives: if Zenoh's queue stayed full to the
    // flood's end, everything after what it held was dropped and nothing later shows the jump
    // yet. A trickle after the flood, as a live stream would go on, arrives once the queue has
    // drained and reveals it.
    publish_until(
        &mut publisher,
        &mut i,
        20,
        "host B's tail after the flood",
        |next| bridge_b.topic(0)["last_seq"].as_u64() >= Some(next - 1),
    );
    let (first, last, count, lagged) = reader.join().unwrap();
    // Host B's topic shows the gaps to whoever inspects it there (`shmcast stat`), not only in
    // the bridge's counters.
    let info = Inspector::new("t").directory(&b).inspect().unwrap();
    assert!(info.imported);
    let b_stats = bridge_b.stop();
    let a_stats = bridge_a.stop();
    let t = &b_stats[0];
    eprintln!("host A: {}", a_stats[0]);
    eprintln!("host B: {t}");
    let gaps = t["gaps"].as_u64().unwrap();
    let last_seq = t["last_seq"].as_u64().unwrap();
    assert!(
        gaps > 0,
        "an overloaded importer must have lost messages: {t}"
    );
    assert!(t["gap_events"].as_u64().unwrap() > 0);
    // Dropped on host B before its topic, as gaps are lost on the way: both are lost upstream
    // for host B's subscribers.
    let dropped = t["local_dropped"].as_u64().unwrap();
    assert_eq!(info.counters.upstream_lost, gaps + dropped, "{info:?}");
    assert_eq!(t["resets"], 0);
    assert_eq!(t["messages"].as_u64().unwrap(), count + lagged);
    assert!(last <= last_seq);
    // Every message from the first host B saw to the last is received, or counted as missed
    // on host B (lagged, dropped) or on the way (a gap).
    assert_eq!(
        count + lagged + dropped + gaps,
        last_seq - first + 1,
        "first {first} last {last} received {count} lagged {lagged}: {t}"
    );
}

#[test]
fn a_mismatched_contract_is_refused_with_a_clear_error() {
    let _serial = serial();
    let (a, b) = (host("contract", "a"), host("contract", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "schema": "app.Quote@2",
               "max_message": 4096}),
    );
    let mut sub = subscriber(&b, "t");
    let bridge_a = exporter(&a, port, "t", "reliable");
    let mut publisher = Publisher::builder("t")
        .directory(&a)
        .schema("app.Tick", 1)
        .max_message(4096)
        .bind()
        .unwrap();
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    let line = {
        let mut i = 0;
        let mut found = None;
        publish_until(&mut publisher, &mut i, 10, "the importer's refusal", |_| {
            found = bridge_b
                .events()
                .into_iter()
                .find(|l| l.contains("contract mismatch"));
            found.is_some()
        });
        found.unwrap()
    };
    assert!(line.contains(r#"schema "app.Tick" version 1"#), "{line}");
    assert!(line.contains(r#"schema "app.Quote" version 2"#), "{line}");
    assert_eq!(
        sub.recv_timeout(Duration::from_millis(300)).unwrap_err(),
        RecvError::Timeout
    );
    let b_stats = bridge_b.stop();
    assert_eq!(b_stats[0]["messages"], 0);
    assert!(b_stats[0]["refused"].as_u64() > Some(0));
    // Reported once, however many were refused.
    drop(bridge_a);
}

#[test]
fn an_import_adopts_the_first_contract_and_refuses_another() {
    let _serial = serial();
    let (a, b) = (host("adopt", "a"), host("adopt", "b"));
    let port = free_port();
    let bridge_b = importer(&b, port, json!({"topic": "t", "direction": "import"}));
    let bridge_a = exporter(&a, port, "t", "reliable");
    {
        let mut publisher = Publisher::builder("t")
            .directory(&a)
            .schema("app.Tick", 1)
            .max_message(512)
            .bind()
            .unwrap();
        publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
        let mut i = 0;
        publish_until(&mut publisher, &mut i, 10, "host B's topic", |_| {
            bridge_b.events().iter().any(|l| l.contains("publishing"))
        });
        let sub = Subscriber::builder("t")
            .directory(&b)
            .expect_schema("app.Tick", 1)
            .expect_max_message(512)
            .connect()
            .unwrap();
        assert_eq!(sub.contract().max_message, 512);
    }
    // The publisher on host A restarts with another contract: host B refuses it.
    bridge_a.wait_event("the local publisher is gone");
    let mut publisher = Publisher::builder("t")
        .directory(&a)
        .schema("app.Tick", 2)
        .max_message(512)
        .bind()
        .unwrap();
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    let mut i = 0;
    publish_until(&mut publisher, &mut i, 10, "the importer's refusal", |_| {
        bridge_b
            .events()
            .iter()
            .any(|l| l.contains("contract mismatch") && l.contains("version 2"))
    });
}

/// An import whose configured ring cannot hold two of the remote's largest messages refuses
/// that contract once, with the limit, instead of retrying to bind it for every message; and a
/// configuration that names the contract as well does not start.
#[test]
fn an_import_ring_too_small_for_the_remote_contract_is_refused() {
    let _serial = serial();
    let (a, b) = (host("small", "a"), host("small", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "reliability": "lossy", "capacity": 4096}),
    );
    let bridge_a = exporter(&a, port, "t", "lossy");
    let mut publisher = bind(&a);
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    let mut i = 0;
    publish_until(&mut publisher, &mut i, 10, "the importer's refusal", |_| {
        bridge_b.topic(0)["refused"].as_u64() >= Some(3)
    });
    let line = bridge_b.wait_event("contract mismatch");
    assert!(
        line.contains("what the configured 4096-byte ring holds"),
        "{line}"
    );
    let events = bridge_b.events();
    assert_eq!(
        events
            .iter()
            .filter(|l| l.contains("contract mismatch"))
            .count(),
        1
    );
    assert!(!events.iter().any(|l| l.contains("retrying")), "{events:?}");
    drop(publisher);
    let b_stats = bridge_b.stop();
    assert_eq!(b_stats[0]["local_dropped"], 0, "{}", b_stats[0]);
    assert_eq!(b_stats[0]["messages"], 0, "{}", b_stats[0]);
    drop(bridge_a);
    // Named in the configuration, the maximum message is checked with the configuration: the
    // bridge does not start (exit code 2 in the role, as for any configuration error).
    let named = importer(
        &b,
        free_port(),
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096,
               "capacity": 4096}),
    );
    let line = named.wait_event("error");
    assert!(line.contains("4096-byte ring"), "{line}");
    assert!(line.contains("max_message"), "{line}");
    assert_eq!(named.exit_code(), Some(2));
}

#[test]
fn a_configuration_that_could_loop_does_not_start() {
    let _serial = serial();
    let b = host("loop", "b");
    let both = BridgeProc::start(&json!({
        "directory": dir(&b),
        "topics": [
            {"topic": "t", "direction": "import"},
            {"topic": "t", "direction": "export", "key": "elsewhere/t"}],
    }));
    let line = both.wait_event("error");
    assert!(line.contains("could loop"), "{line}");
    assert_eq!(both.exit_code(), Some(1));
    let own = BridgeProc::start(&json!({
        "directory": dir(&b),
        "topics": [
            {"topic": "a", "direction": "export", "key": "k/x"},
            {"topic": "b", "direction": "import", "key": "k/x"}],
    }));
    let line = own.wait_event("error");
    assert!(line.contains("import its own exports"), "{line}");
    assert_eq!(own.exit_code(), Some(1));
}

#[test]
fn a_second_bridge_on_the_host_refuses_to_export_an_imported_topic() {
    let _serial = serial();
    let (a, b) = (host("reexport", "a"), host("reexport", "b"));
    let (port, elsewhere) = (free_port(), free_port());
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
    );
    let mut sub = subscriber(&b, "t");
    // Another bridge process on host B, which would put the imported topic back on Zenoh.
    let again = BridgeProc::start(&json!({
        "directory": dir(&b),
        "listen": [format!("tcp/127.0.0.1:{elsewhere}")],
        "scouting": false,
        "topics": [{"topic": "t", "direction": "export", "key": "elsewhere/t",
                    "reliability": "lossy"}],
    }));
    let line = again.wait_event("refused");
    assert!(
        line.contains("export t -> elsewhere/t") && line.contains("imported"),
        "{line}"
    );
    assert!(line.contains("could loop"), "{line}");
    // The import itself carries host A's messages to host B's subscribers.
    let bridge_a = exporter(&a, port, "t", "reliable");
    let mut publisher = bind(&a);
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    for i in 0..3 {
        publisher.send(&message(i)).unwrap();
    }
    for want in 0..3 {
        assert_eq!(check(&sub.recv_timeout(common::WATCHDOG).unwrap()), want);
    }
    let info = Inspector::new("t").directory(&b).inspect().unwrap();
    assert!(info.imported);
    // The second bridge may be caught in the moment between its admission and its hang-up on
    // reading the imported flag, every second or so; it never stays.
    until("only host B's own subscriber", || {
        let info = Inspector::new("t").directory(&b).inspect().unwrap();
        info.subscriber_count == 1 && info.subscribers[0].process.pid == Some(std::process::id())
    });
    // Still refused a second later, reported once.
    until("a second refusal", || {
        again.topic(0)["refused"].as_u64() >= Some(2)
    });
    let refusals = again
        .events()
        .iter()
        .filter(|l| l.contains("refused"))
        .count();
    assert_eq!(refusals, 1, "{:?}", again.events());
    assert_eq!(again.topic(0)["messages"], 0);
    // Once a publisher of host B's own serves the topic, the second bridge exports it.
    drop((sub, publisher, bridge_a));
    let b_stats = bridge_b.stop();
    assert_eq!(b_stats[0]["messages"], 3);
    let _own = bind(&b);
    let line = again.wait_event("connected");
    assert!(line.contains("export t -> elsewhere/t"), "{line}");
    drop(again);
}

/// Two hosts export their own topic `t` to the one key `shmcast/t`; one importer hears both.
/// Each host's sequence numbers are followed apart: nothing is counted missing or restarted,
/// and the importer says once that a second source speaks on its key.
#[test]
fn two_exporters_on_one_key_are_counted_apart() {
    let _serial = serial();
    let (a1, a2, b) = (host("fanin", "a1"), host("fanin", "a2"), host("fanin", "b"));
    let (p1, p2) = (free_port(), free_port());
    let bridge_a1 = exporter(&a1, p1, "t", "reliable");
    let bridge_a2 = exporter(&a2, p2, "t", "reliable");
    let bridge_b = BridgeProc::start(&json!({
        "directory": dir(&b),
        "connect": [format!("tcp/127.0.0.1:{p1}"), format!("tcp/127.0.0.1:{p2}")],
        "scouting": false,
        "topics": [{"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}],
    }));
    let (mut one, mut two) = (bind(&a1), bind(&a2));
    one.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    two.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    for i in 0..300u64 {
        one.send(&message(i)).unwrap();
        if i % 3 == 0 {
            two.send(&message(1_000_000 + i)).unwrap();
        }
    }
    until("every message on host B", || {
        bridge_b.topic(0)["messages"].as_u64() == Some(400)
    });
    let (stats, events) = bridge_b.stop_with_events();
    let t = &stats[0];
    assert_eq!(
        (&t["gaps"], &t["gap_events"], &t["resets"], &t["sources"]),
        (&json!(0), &json!(0), &json!(0), &json!(2)),
        "{t}"
    );
    let fan_in: Vec<_> = events
        .iter()
        .filter(|l| l.contains("a second source"))
        .collect();
    assert_eq!(fan_in.len(), 1, "{events:?}");
    assert!(
        fan_in[0].starts_with("import shmcast/t -> t: "),
        "{events:?}"
    );
    drop((bridge_a1, bridge_a2));
}

/// A bridge whose peer is stopped (SIGSTOP) in the middle of a reliable stream stops within
/// `Bridge::STOP_BOUND` all the same: what Zenoh cannot close by then is left to the background,
/// and said.
#[test]
fn a_bridge_stops_within_its_bound_when_its_peer_is_frozen() {
    let _serial = serial();
    let (a, b) = (host("frozen", "a"), host("frozen", "b"));
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
    );
    let bridge_a = exporter(&a, port, "t", "reliable");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let aa = a.to_path_buf();
    let writer = std::thread::spawn(move || {
        let mut publisher = Publisher::builder("t")
            .directory(&aa)
            .max_message(4096)
            .stall_bound(Some(Duration::from_millis(500)))
            .bind()
            .unwrap();
        publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
        let payload = [7u8; 1000];
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            publisher.send(&payload).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    until("host B's first messages", || {
        bridge_b.topic(0)["messages"].as_u64() > Some(100)
    });
    bridge_b.signal("STOP");
    // Until the exporter's puts no longer go anywhere: its count stays still.
    let mut last = None;
    until("the exporter blocked", || {
        std::thread::sleep(Duration::from_millis(500));
        let now = bridge_a.topic(0)["messages"].as_u64();
        std::mem::replace(&mut last, now) == now
    });
    let (_, events) = bridge_a.stop_with_events();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    bridge_b.signal("CONT");
    assert!(
        events.iter().any(|l| l.starts_with("stopping: ")),
        "{events:?}"
    );
    drop(bridge_b);
}
