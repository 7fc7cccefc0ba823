//! Host B's importer against an exporter written by hand (a Zenoh session of the test's own,
//! `common::raw_publisher`): payloads that are not bridge messages, and the epochs and origins
//! that decide between a reset and a gap, put exactly.

use serde_json::json;

use super::common::{self, free_port, host, message, serial, until};
use super::{importer, subscriber};

#[test]
fn messages_that_are_not_bridge_messages_are_counted_and_skipped() {
    use zenoh::Wait;
    let _serial = serial();
    let b = host("malformed", "b");
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 64}),
    );
    let mut sub = subscriber(&b, "t");
    let (_session, publisher) = common::raw_publisher(port, "shmcast/t");
    // Garbage, then a bridge message too large for the topic, then good ones.
    let contract = shmcast_zenoh::wire::WireContract {
        message: shmcast::MessageType::Bytes,
        max_message: 64,
    };
    let enc = shmcast_zenoh::wire::Encoder::new(sender(1, 0), &contract).unwrap();
    publisher
        .put(b"not a bridge message".to_vec())
        .wait()
        .unwrap();
    publisher.put(enc.encode(0, &[7u8; 65])).wait().unwrap();
    // A batch whose second record is cut short: the first is delivered, the rest skipped.
    let mut batch = shmcast_zenoh::wire::Batch::default();
    batch.push(&enc, 1, b"first-record");
    batch.push(&enc, 2, b"cut-record");
    let (mut cut, ..) = batch.take();
    cut.pop();
    publisher.put(cut).wait().unwrap();
    publisher.put(enc.encode(3, b"ok-message")).wait().unwrap();
    for want in [&b"first-record"[..], b"ok-message"] {
        let s = sub.recv_timeout(common::WATCHDOG).unwrap();
        assert_eq!(&*s, want);
    }
    until("the counters", || bridge_b.topic(0)["malformed"] == 3);
    bridge_b.wait_event("malformed");
    let stats = bridge_b.stop();
    assert_eq!(stats[0]["messages"], 2);
}

/// What an exporter with bridge id `origin` writes into its header while reading its topic's
/// `epoch`-th publisher (of one source).
pub(super) fn sender(origin: u64, epoch: u32) -> shmcast_zenoh::wire::Sender {
    shmcast_zenoh::wire::Sender {
        origin,
        source: 0x50c4ce,
        epoch,
    }
}

/// The contract of plain bytes up to 4 KiB, and its encoder for `sender`.
pub(super) fn encoder(sender: shmcast_zenoh::wire::Sender) -> shmcast_zenoh::wire::Encoder {
    let contract = shmcast_zenoh::wire::WireContract {
        message: shmcast::MessageType::Bytes,
        max_message: 4096,
    };
    shmcast_zenoh::wire::Encoder::new(sender, &contract).unwrap()
}

/// Messages `seqs` of one batch (one Zenoh put) from `enc`.
pub(super) fn batch(enc: &shmcast_zenoh::wire::Encoder, seqs: std::ops::Range<u64>) -> Vec<u8> {
    let mut b = shmcast_zenoh::wire::Batch::default();
    for seq in seqs {
        b.push(enc, seq, &message(seq));
    }
    b.take().0
}

/// The same, exactly, with an exporter written by hand: a new epoch from the same exporter is
/// a reset wherever its numbers start; a restarted exporter (another origin) goes on with its
/// source's numbers, so what it did not read is a gap.
#[test]
fn epochs_and_origins_decide_between_reset_and_gap() {
    use zenoh::Wait;
    let _serial = serial();
    let b = host("epochs", "b");
    let port = free_port();
    let bridge_b = importer(
        &b,
        port,
        json!({"topic": "t", "direction": "import", "bytes": true, "max_message": 4096}),
    );
    let (_session, publisher) = common::raw_publisher(port, "shmcast/t");
    publisher
        .put(batch(&encoder(sender(1, 0)), 0..50))
        .wait()
        .unwrap();
    publisher
        .put(batch(&encoder(sender(1, 1)), 200..210))
        .wait()
        .unwrap();
    publisher
        .put(batch(&encoder(sender(2, 0)), 215..220))
        .wait()
        .unwrap();
    until("every message", || {
        bridge_b.topic(0)["messages"].as_u64() == Some(65)
    });
    let t = bridge_b.stop()[0].clone();
    assert_eq!(
        (&t["resets"], &t["gaps"], &t["gap_events"]),
        (&json!(1), &json!(5), &json!(1)),
        "{t}"
    );
}
