//! A publisher under attack: this process publishes to a good gating subscriber process while a
//! hostile process attacks, and the test passes only if the attack demonstrably reached its
//! target and the good subscriber still received every message in order.
//!
//! The binary's `role_entry` must dispatch `subscriber` to [`roles::subscriber`](super::roles)
//! and the attacker's role, which prints `attacking` once it has started.

use super::FdGuard;
use super::child::{self, Proc, WATCHDOG};
use super::message::message;
use shmcast::{Publisher, PublisherStats};
use std::time::{Duration, Instant};

/// Messages published at least.
pub const MESSAGES: u64 = 20_000;
/// Largest message.
pub const MAX: usize = 200;
/// The ring's capacity in bytes.
pub const RING: u64 = 1 << 14;
/// [`MESSAGES`] messages, as fast as the good subscriber takes them.
pub const FLAT_OUT: (u64, Duration) = (MESSAGES, Duration::ZERO);

/// How an attack went.
#[derive(Debug)]
pub struct Attacked {
    /// The publisher's statistics at the end.
    pub stats: PublisherStats,
    /// The longest a loan of the publisher waited.
    pub longest_loan: Duration,
    /// The longest a receive of the good subscriber waited for a message.
    pub longest_wait: Duration,
}

/// Publishes at least `messages` messages with blocking loans, `pace` apart (a good gating
/// subscriber process paces them too), while a child process in `role` runs `attack`
/// (`admitted` is how many subscribers the publisher admits with it, the good one included),
/// and goes on until `reached` holds: the attack demonstrably reached its target (so no
/// scheduling can make the test pass without one).
pub fn publish_under_attack(
    topic: &str,
    (role, attack): (&str, &str),
    admitted: usize,
    (messages, pace): (u64, Duration),
    mut reached: impl FnMut(&Publisher, &mut Proc) -> bool,
) -> Attacked {
    let fds = FdGuard::new();
    let mut publisher = Publisher::builder(topic).capacity(RING).bind().unwrap();
    let path = publisher.path().to_str().unwrap().to_owned();
    let mut good = child::spawn(
        "subscriber",
        &[path.clone(), "gating".into(), MAX.to_string(), "any".into()],
    );
    good.expect_line("ready");
    let mut hostile = child::spawn(role, &[path, attack.into()]);
    hostile.expect_line("attacking");
    super::until("the subscribers admitted", || {
        publisher.subscriber_count() == admitted
    });
    let deadline = Instant::now() + WATCHDOG;
    let mut proven = false;
    let mut m = Vec::new();
    let mut seq = 0;
    let mut longest_loan = Duration::ZERO;
    while seq < messages || !proven {
        assert!(
            Instant::now() < deadline,
            "watchdog: the attack had not reached the publisher after {seq} messages: {:?}",
            publisher.stats()
        );
        message(seq, MAX, &mut m);
        // A loan that never comes back is the hang this test exists to catch.
        let asked = Instant::now();
        let mut loan = publisher
            .loan_timeout(m.len(), WATCHDOG)
            .unwrap_or_else(|e| panic!("message {seq}: {e}"));
        longest_loan = longest_loan.max(asked.elapsed());
        loan.copy_from_slice(&m);
        loan.publish();
        seq += 1;
        if !pace.is_zero() {
            std::thread::sleep(pace);
        }
        proven = proven || reached(&publisher, &mut hostile);
    }
    let stats = publisher.stats();
    assert_eq!(stats.messages, seq);
    drop(publisher);
    let out = good.finish();
    assert!(
        out.contains(&format!("summary received={seq} lagged=0")),
        "{seq} published: {out}"
    );
    // Still attacking when killed: nothing stopped it, and nothing it did stopped us.
    hostile.kill();
    fds.check();
    let longest_wait = out
        .split("longest_wait_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or_else(|| panic!("no longest wait in {out}"));
    println!("{attack}: longest loan {longest_loan:?}, longest receive {longest_wait:?}");
    Attacked {
        stats,
        longest_loan,
        longest_wait,
    }
}
