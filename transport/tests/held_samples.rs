//! A gating subscriber's sample is the ring itself: intact however long it is held while the
//! publisher gates on the subscriber, and told apart (`Sample::is_intact`) once a demotion past
//! the stall bound lets the publisher write over it.

mod common;

use common::FdGuard;
use shmcast::{LoanError, Publisher, RecvError, Subscriber};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("held-{}-{name}", std::process::id())
}

/// Sends until the ring takes no more without waiting.
fn fill(publisher: &mut Publisher, byte: u8) {
    loop {
        match publisher.try_loan(200) {
            Ok(mut loan) => {
                loan.fill(byte);
                loan.publish();
            }
            Err(LoanError::Full) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A publisher of 200-byte messages through a 1 KiB ring (four fit) with `stall_bound`, a
/// gating subscriber, and a first message of `a`s waiting for it.
fn publisher_and_subscriber(name: &str, stall_bound: Option<Duration>) -> (Publisher, Subscriber) {
    let t = topic(name);
    let mut publisher = Publisher::builder(&t)
        .capacity(1024)
        .max_message(200)
        .stall_bound(stall_bound)
        .bind()
        .unwrap();
    let sub = Subscriber::connect(&t).unwrap();
    publisher.send(&[b'a'; 200]).unwrap();
    (publisher, sub)
}

#[test]
fn a_sample_held_while_the_publisher_waits_stays_intact() {
    let fds = FdGuard::new();
    let (mut publisher, mut sub) = publisher_and_subscriber("gated", None);
    let sample = sub.recv().unwrap();
    fill(&mut publisher, b'b');
    assert!(matches!(
        publisher.loan_timeout(200, Duration::from_millis(50)),
        Err(LoanError::Timeout)
    ));
    assert!(sample.iter().all(|&b| b == b'a'));
    assert!(sample.is_intact());
    drop(sample);
    assert_eq!(sub.recv().unwrap()[0], b'b');
    drop((sub, publisher));
    fds.check();
}

#[test]
fn a_sample_held_past_the_stall_bound_is_no_longer_intact() {
    let fds = FdGuard::new();
    let (mut publisher, mut sub) =
        publisher_and_subscriber("demoted", Some(Duration::from_millis(50)));
    let sample = sub.recv().unwrap();
    // The ring fills behind the held sample; the loan that waits out the bound demotes the
    // subscriber, and the publisher laps the sample.
    fill(&mut publisher, b'b');
    for _ in 0..8 {
        let mut loan = publisher
            .loan_timeout(200, Duration::from_secs(10))
            .unwrap();
        loan.fill(b'c');
        loan.publish();
    }
    assert_eq!(publisher.stats().demotions, 1);
    assert!(
        !sample.iter().all(|&b| b == b'a'),
        "the publisher wrote over it"
    );
    assert!(!sample.is_intact());
    drop(sample);
    assert!(matches!(sub.recv(), Err(RecvError::Demoted)));
    // A lossy copy is always intact.
    let copy = loop {
        match sub.recv() {
            Ok(s) => break s,
            Err(RecvError::Lagged(_)) => continue,
            Err(e) => panic!("{e}"),
        }
    };
    assert!(copy.is_intact());
    drop(copy);
    drop((sub, publisher));
    fds.check();
}
