//! Child roles that more than one test binary starts (see [`super::child`]).

use super::FdGuard;
use super::child::Proc;
use super::message::{message, verify};
use shmcast::{Mode, Publisher, RecvError};
use std::time::{Duration, Instant};

/// args: topic mode max expected, where mode is `gating`, `lossy` or `demotable` (gating, and
/// told of a demotion at most once) and expected is a count or `any` (the parent checks the
/// summary). Receives until disconnected, checking every message, every
/// gap and its own descriptors; prints `ready` once connected, `demoted after N` and
/// `lagged N` as they happen, and `summary received=… lagged=… lag_events=… demoted=…
/// longest_wait_ms=…` last, the last field the longest a receive took to return a message.
pub fn subscriber(args: &[String]) {
    let fds = FdGuard::new();
    let (topic, mode, max, expected) = (
        &args[0],
        args[1].as_str(),
        args[2].parse().unwrap(),
        (args[3] != "any").then(|| args[3].parse::<u64>().unwrap()),
    );
    let gating = mode != "lossy";
    let mut sub = super::connect_as(topic, if gating { Mode::Gating } else { Mode::Lossy });
    println!("ready");
    let (mut received, mut lagged, mut lag_events, mut next) = (0u64, 0u64, 0u64, 0u64);
    let mut demoted = false;
    let mut scratch = Vec::new();
    let mut longest_wait = Duration::ZERO;
    loop {
        let asked = Instant::now();
        let error = match sub.recv_timeout(Duration::from_secs(60)) {
            Ok(m) => {
                longest_wait = longest_wait.max(asked.elapsed());
                assert_eq!(
                    m.seq(),
                    next,
                    "in order, and after a lag exactly `n` further"
                );
                verify(m.seq(), &m, max, &mut scratch);
                received += 1;
                next += 1;
                continue;
            }
            Err(e) => e,
        };
        match error {
            RecvError::Lagged(n) => {
                assert!(
                    !gating || demoted,
                    "a gating subscriber lags only after its demotion"
                );
                assert!(n > 0, "Lagged(0)");
                lagged += n;
                lag_events += 1;
                next += n;
                println!("lagged {n}");
            }
            RecvError::Demoted => {
                assert!(mode == "demotable" && !demoted, "unexpected demotion");
                assert!(!sub.is_gating());
                demoted = true;
                println!("demoted after {received}");
            }
            RecvError::Disconnected => break,
            e => panic!("subscriber: {e}"),
        }
    }
    if let Some(expected) = expected {
        assert_eq!(
            received + lagged,
            expected,
            "every message received or counted as missed"
        );
    }
    let stats = sub.stats();
    assert_eq!(
        (stats.received, stats.lagged, stats.lag_events),
        (received, lagged, lag_events),
        "the subscriber's own counters"
    );
    drop(sub);
    fds.check();
    println!(
        "summary received={received} lagged={lagged} lag_events={lag_events} demoted={demoted} \
         longest_wait_ms={}",
        longest_wait.as_millis()
    );
}

/// Waits for a [`subscriber`] process to end and asserts it received all `count` messages,
/// missing none.
pub fn received_all(child: Proc, count: u64) {
    let out = child.finish();
    assert!(
        out.contains(&format!("received={count} lagged=0 ")),
        "{out}"
    );
}

/// args: topic count subscribers. Binds (printing `bound PATH`), publishes `count` messages (of
/// up to 4096 bytes) once `subscribers` are connected, leaves a loan open, prints `published`
/// and waits to be killed.
pub fn publisher(args: &[String]) {
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    // Room for every message: the test may read only after the publisher is killed.
    let mut publisher = Publisher::builder(&args[0])
        .capacity(1 << 22)
        .max_message(4096)
        .bind()
        .unwrap();
    println!("bound {}", publisher.path().display());
    super::until("subscribers never came", || {
        publisher.subscriber_count() >= subs
    });
    let mut buf = Vec::new();
    for seq in 0..count {
        message(seq, 4096, &mut buf);
        publisher.send(&buf).unwrap();
    }
    // A loan left open when the process dies: nobody may ever see it.
    let mut loan = publisher.loan(64).unwrap();
    loan.fill(0xee);
    println!("published {count}");
    std::thread::sleep(Duration::from_secs(3600));
}
