//! Cancellation of `shmcast::tokio` futures: receives and loans dropped at random points (lost
//! races in `tokio::select!` against a timer, and futures polled once and dropped) lose no
//! message and leak nothing. Real processes on the other side; every message checked.

mod common;

use common::FdGuard;
use common::child::{WATCHDOG, spawn};
use common::message::{message, verify};
use common::roles;
use shmcast::tokio::{AsyncPublisher, AsyncSubscriber};
use shmcast::{Publisher, RecvError};
use shmcast_core::testing::Rng;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const CAPACITY: u64 = 8192;
const MAX: usize = 200;
const COUNT: u64 = 20_000;

fn topic(name: &str) -> String {
    format!("tokio-cancel-{}-{name}", std::process::id())
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "publisher" => role_publisher(&args),
        "slow-subscriber" => role_slow_subscriber(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic count. Waits for one subscriber, publishes `count` messages in bursts with
/// pauses of up to a millisecond, exits.
fn role_publisher(args: &[String]) {
    let count: u64 = args[1].parse().unwrap();
    let mut publisher = Publisher::builder(&args[0])
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .stall_bound(None)
        .bind()
        .unwrap();
    println!("bound");
    publisher.wait_for_subscribers(1, WATCHDOG).unwrap();
    let mut rng = Rng(count);
    let mut buf = Vec::new();
    for seq in 0..count {
        message(seq, MAX, &mut buf);
        publisher.send(&buf).unwrap();
        if rng.below(50) == 0 {
            std::thread::sleep(Duration::from_micros(rng.below(1000)));
        }
    }
    println!("published");
}

/// The descriptor guard, taken once tokio's process-wide descriptors exist: the first runtime
/// of a process opens its signal globals (a socket pair) for the rest of the process's life.
/// Each test drops its runtime before checking the guard.
fn guard() -> FdGuard {
    static GLOBALS: std::sync::Once = std::sync::Once::new();
    GLOBALS.call_once(|| drop(current_thread()));
    FdGuard::new()
}

/// args: topic. A gating subscriber that pauses a millisecond every 50 messages, so that the
/// publisher often waits for space; checks every message, prints `summary received=N lagged=0`.
fn role_slow_subscriber(args: &[String]) {
    let fds = common::FdGuard::new();
    let mut sub = common::connect(&args[0]);
    println!("ready");
    let mut scratch = Vec::new();
    let mut next = 0u64;
    loop {
        match sub.recv_timeout(WATCHDOG) {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order, none lost to a dropped loan");
                verify(m.seq(), &m, MAX, &mut scratch);
                next += 1;
                if next % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("message {next}: {e}"),
        }
    }
    drop(sub);
    fds.check();
    println!("summary received={next} lagged=0 ");
}

/// A current-thread runtime.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap()
}

/// Polls `fut` once, with a waker that does nothing; drops it if it is pending.
fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

#[test]
fn dropped_receives_lose_nothing() {
    let fds = guard();
    let rt = current_thread();
    let mut publisher = spawn("publisher", &[topic("recv"), COUNT.to_string()]);
    publisher.expect_line("bound");
    let (cancelled, once) = rt.block_on(async {
        let mut sub = AsyncSubscriber::builder(topic("recv"))
            .connect_timeout(Duration::from_secs(30))
            .connect_async()
            .await
            .unwrap();
        let mut rng = Rng(7);
        let (mut next, mut cancelled, mut once) = (0u64, 0u64, 0u64);
        let mut scratch = Vec::new();
        loop {
            let got = match rng.below(3) {
                // A receive that loses a race against a timer of 0 to 300 µs.
                0 | 1 => {
                    let timer = tokio::time::sleep(Duration::from_micros(rng.below(300)));
                    tokio::select! {
                        got = sub.recv() => Some(got.map(|m| {
                            verify(m.seq(), &m, MAX, &mut scratch);
                            m.seq()
                        })),
                        _ = timer => None,
                    }
                }
                // A receive polled once and dropped if it is pending.
                _ => {
                    let got = poll_once(sub.recv()).map(|got| {
                        got.map(|m| {
                            verify(m.seq(), &m, MAX, &mut scratch);
                            m.seq()
                        })
                    });
                    if got.is_none() {
                        once += 1;
                        // Let the reactor run before the next look.
                        tokio::task::yield_now().await;
                    }
                    got
                }
            };
            match got {
                Some(Ok(seq)) => {
                    assert_eq!(seq, next, "in order, none lost to a dropped receive");
                    next += 1;
                }
                Some(Err(RecvError::Disconnected)) => break,
                Some(Err(e)) => panic!("message {next}: {e}"),
                None => cancelled += 1,
            }
        }
        assert_eq!(next, COUNT, "every message before the end");
        (cancelled, once)
    });
    assert!(
        cancelled > 0 && once > 0,
        "no receive was dropped ({cancelled}, {once} polled once): the test tested nothing"
    );
    publisher.finish();
    drop(rt);
    fds.check();
}

#[test]
fn dropped_stream_polls_lose_nothing() {
    let fds = guard();
    let rt = current_thread();
    let mut publisher = spawn("publisher", &[topic("stream"), COUNT.to_string()]);
    publisher.expect_line("bound");
    rt.block_on(async {
        let sub = AsyncSubscriber::builder(topic("stream"))
            .connect_timeout(Duration::from_secs(30))
            .connect_async()
            .await
            .unwrap();
        let mut stream = sub.into_stream();
        let mut rng = Rng(11);
        let (mut next, mut cancelled) = (0u64, 0u64);
        let mut scratch = Vec::new();
        loop {
            let timer = tokio::time::sleep(Duration::from_micros(rng.below(300)));
            let item = tokio::select! {
                item = std::future::poll_fn(|cx| {
                    futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), cx)
                }) => item,
                _ = timer => {
                    cancelled += 1;
                    continue;
                }
            };
            match item {
                Some(Ok(m)) => {
                    assert_eq!(m.seq(), next, "in order");
                    verify(m.seq(), &m, MAX, &mut scratch);
                    next += 1;
                }
                Some(Err(e)) => panic!("message {next}: {e}"),
                None => break,
            }
        }
        assert_eq!(next, COUNT);
        assert!(
            cancelled > 0,
            "no poll was dropped: the test tested nothing"
        );
    });
    publisher.finish();
    drop(rt);
    fds.check();
}

/// Loans that lose races against timers while a gating subscriber process holds the ring full:
/// the subscriber receives every message once, in order, and nothing is left behind.
#[test]
fn dropped_loans_lose_nothing_and_publish_nothing() {
    let fds = guard();
    let rt = current_thread();
    let name = topic("loan");
    let (cancelled, once) = rt.block_on(async {
        let mut publisher = AsyncPublisher::new(
            Publisher::builder(&name)
                .capacity(CAPACITY)
                .max_message(MAX as u64)
                .stall_bound(None)
                .bind()
                .unwrap(),
        )
        .unwrap();
        let mut sub = spawn("slow-subscriber", std::slice::from_ref(&name));
        sub.expect_line("ready");
        assert_eq!(publisher.wait_for_subscribers(1).await.unwrap(), 1);
        let mut rng = Rng(5);
        let (mut cancelled, mut once) = (0u64, 0u64);
        let mut buf = Vec::new();
        for seq in 0..COUNT {
            message(seq, MAX, &mut buf);
            loop {
                if rng.below(4) == 0 {
                    // Polled once, dropped if it has to wait.
                    match poll_once(publisher.loan(buf.len())) {
                        Some(loan) => {
                            let mut loan = loan.unwrap();
                            loan.copy_from_slice(&buf);
                            loan.publish();
                            break;
                        }
                        None => {
                            once += 1;
                            tokio::task::yield_now().await;
                            continue;
                        }
                    }
                }
                let timer = tokio::time::sleep(Duration::from_micros(rng.below(200)));
                tokio::select! {
                    loan = publisher.loan(buf.len()) => {
                        let mut loan = loan.unwrap();
                        loan.copy_from_slice(&buf);
                        loan.publish();
                        break;
                    }
                    _ = timer => cancelled += 1,
                }
            }
        }
        let stats = publisher.stats();
        assert_eq!(stats.messages, COUNT, "a dropped loan published nothing");
        drop(publisher);
        roles::received_all(sub, COUNT);
        (cancelled, once)
    });
    assert!(
        cancelled > 0 && once > 0,
        "no loan was dropped ({cancelled}, {once} polled once): the test tested nothing"
    );
    drop(rt);
    fds.check();
}

/// Loans that lose a `select!` against a timer while a stopped gating subscriber process holds
/// the ring full: the stall bound counts across them, so the subscriber is demoted once the
/// ring has been full that long, and publishing goes on.
#[test]
fn loans_dropped_in_select_are_held_back_only_by_the_stall_bound() {
    const BOUND: Duration = Duration::from_millis(300);
    let fds = guard();
    let rt = current_thread();
    let name = topic("stall");
    let mut sub = spawn("slow-subscriber", std::slice::from_ref(&name));
    let (lost_races, stats) = rt.block_on(async {
        let mut publisher = AsyncPublisher::new(
            Publisher::builder(&name)
                .capacity(CAPACITY)
                .max_message(MAX as u64)
                .stall_bound(Some(BOUND))
                .bind()
                .unwrap(),
        )
        .unwrap();
        sub.expect_line("ready");
        assert_eq!(publisher.wait_for_subscribers(1).await.unwrap(), 1);
        sub.stop();
        let deadline = tokio::time::Instant::now() + WATCHDOG;
        let (mut buf, mut lost_races) = (Vec::new(), 0u64);
        for seq in 0..500 {
            message(seq, MAX, &mut buf);
            loop {
                tokio::select! {
                    loan = publisher.loan(buf.len()) => {
                        let mut loan = loan.unwrap();
                        loan.copy_from_slice(&buf);
                        loan.publish();
                        break;
                    }
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {
                        lost_races += 1;
                        assert!(tokio::time::Instant::now() < deadline, "held back for good");
                    }
                }
            }
        }
        (lost_races, publisher.stats())
    });
    assert!(lost_races > 0, "the ring never filled");
    assert_eq!(stats.demotions, 1, "{stats:?}");
    sub.kill();
    drop(rt);
    fds.check();
}
