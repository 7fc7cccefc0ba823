//! Host B's importer and its local topic: a topic it cannot bind (another publisher serves
//! it) is retried, said once, and never ends the bridge or its other topics.

use std::time::{Duration, Instant};

use serde_json::json;
use shmcast::{Inspector, Publisher};

use super::by_hand::{batch, encoder, sender};
use super::common::{self, BridgeProc, check, dir, free_port, host, message, serial, until};
use super::{bind, exporter, importer, subscriber};

/// While the importer cannot bind its topic (a program of host B's own publishes it), a batch
/// of 100 messages is 100 dropped, the failure is reported once with the import's name however
/// often it is retried, and once bound the topic learns what was dropped as lost upstream; a
/// batch of another contract is 100 refused.
#[test]
fn dropped_and_refused_batches_count_their_messages_and_a_bind_failure_is_said_once() {
    use zenoh::Wait;
    let _serial = serial();
    let b = host("bindretry", "b");
    let port = free_port();
    let occupier = bind(&b);
    let bridge_b = importer(&b, port, json!({"topic": "t", "direction": "import"}));
    let (_session, publisher) = common::raw_publisher(port, "shmcast/t");
    let enc = encoder(sender(1, 0));
    publisher.put(batch(&enc, 0..100)).wait().unwrap();
    until("100 dropped", || {
        bridge_b.topic(0)["local_dropped"].as_u64() >= Some(100)
    });
    assert_eq!(bridge_b.topic(0)["local_dropped"], 100);
    // Retried every second: give it three tries.
    let mut seq = 100;
    let end = Instant::now() + Duration::from_millis(3200);
    while Instant::now() < end {
        publisher
            .put(enc.encode(seq, &message(seq)))
            .wait()
            .unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    until("every message counted", || {
        bridge_b.topic(0)["local_dropped"].as_u64() == Some(seq)
    });
    let failures: Vec<_> = bridge_b
        .events()
        .into_iter()
        .filter(|l| l.contains("cannot bind"))
        .collect();
    assert_eq!(failures.len(), 1, "{:?}", bridge_b.events());
    assert!(
        failures[0].starts_with("import shmcast/t -> t: cannot bind the local topic: "),
        "{failures:?}"
    );
    drop(occupier);
    until("the import's own topic", || {
        publisher
            .put(enc.encode(seq, &message(seq)))
            .wait()
            .unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(20));
        bridge_b.events().iter().any(|l| l.contains("publishing"))
    });
    until("its counters", || {
        bridge_b.topic(0)["messages"].as_u64() > Some(0)
    });
    let t = bridge_b.topic(0);
    let info = Inspector::new("t").directory(&b).inspect().unwrap();
    let (gaps, dropped) = (
        t["gaps"].as_u64().unwrap(),
        t["local_dropped"].as_u64().unwrap(),
    );
    assert_eq!(info.counters.upstream_lost, gaps + dropped, "{t}");
    assert!(dropped >= 100, "{t}");
    // Another contract, in one batch of 100.
    let other = shmcast_zenoh::wire::Encoder::new(
        sender(1, 0),
        &shmcast_zenoh::wire::WireContract {
            message: shmcast::MessageType::schema("app.Other", 1),
            max_message: 4096,
        },
    )
    .unwrap();
    publisher.put(batch(&other, seq..seq + 100)).wait().unwrap();
    until("100 refused", || {
        bridge_b.topic(0)["refused"].as_u64() >= Some(100)
    });
    let t = bridge_b.stop()[0].clone();
    assert_eq!(t["refused"], 100, "{t}");
}

/// An import configured with its whole contract binds its topic at start; when another
/// publisher serves that topic then, the bridge says so once and carries on: its other import
/// delivers, and the topic is bound about a second after it is free, with no message to
/// trigger it. The bridge ends as it always does.
#[test]
fn a_configured_import_whose_topic_is_in_use_is_retried_and_the_others_carry_on() {
    let _serial = serial();
    let (a, b) = (host("inuse", "a"), host("inuse", "b"));
    let port = free_port();
    let occupier = bind(&b);
    let bridge_b = BridgeProc::start(&json!({
        "directory": dir(&b),
        "connect": [format!("tcp/127.0.0.1:{port}")],
        "scouting": false,
        "topics": [
            {"topic": "t", "direction": "import", "schema": "app.Order@3", "max_message": 4096},
            {"topic": "u", "direction": "import", "bytes": true, "max_message": 4096}],
    }));
    let line = bridge_b.wait_event("cannot bind");
    assert!(
        line.starts_with("import shmcast/t -> t: cannot bind the local topic: topic in use: ")
            && line.contains("retrying every second"),
        "{line}"
    );
    // The other import carries host A's messages meanwhile.
    let mut sub = subscriber(&b, "u");
    let bridge_a = exporter(&a, port, "u", "reliable");
    let mut publisher = Publisher::builder("u")
        .directory(&a)
        .max_message(4096)
        .bind()
        .unwrap();
    publisher.wait_for_subscribers(1, common::WATCHDOG).unwrap();
    for i in 0..3 {
        publisher.send(&message(i)).unwrap();
    }
    for want in 0..3 {
        assert_eq!(check(&sub.recv_timeout(common::WATCHDOG).unwrap()), want);
    }
    // Nothing arrives for `t`: the retry alone binds it once the topic is free.
    drop(occupier);
    let line = bridge_b.wait_event("import shmcast/t -> t: publishing");
    assert!(line.contains(r#"schema "app.Order" version 3"#), "{line}");
    let info = Inspector::new("t").directory(&b).inspect().unwrap();
    assert!(info.imported, "{info:?}");
    assert_eq!(info.contract.max_message, 4096);
    let (stats, events) = bridge_b.stop_with_events();
    let failures = events.iter().filter(|l| l.contains("cannot bind")).count();
    assert_eq!(failures, 1, "{events:?}");
    assert_eq!(stats[1]["messages"], 3, "{}", stats[1]);
    assert_eq!(stats[0]["local_dropped"], 0, "{}", stats[0]);
    assert!(!b.join("t").exists(), "the import's topic is left behind");
    drop(bridge_a);
}
