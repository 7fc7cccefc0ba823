//! `shmcast::tokio` with real processes: tokio subscribers (`recv`, `recv_timeout`, the
//! `Stream`) receiving a publisher process's gating stream, every message checked in order, then
//! the end; an async publisher process under gating backpressure; a hundred subscribers in one
//! current-thread runtime; the multi-thread runtime; a late connect that awaits its publisher;
//! a stalled runtime, which delays the publisher only by its stall bound; the stream's end on
//! an error it cannot go on from, and the subscriber taken back out of it.

mod common;

use common::FdGuard;
use common::child::{Proc, WATCHDOG, spawn};
use common::message::{message, verify};
use futures_util::StreamExt;
use shmcast::tokio::{AsyncPublisher, AsyncSubscriber, Message};
use shmcast::{ConnectError, Mode, Publisher, RecvError};
use std::time::{Duration, Instant};

/// Ring and messages: a few dozen frames fit, so the publisher waits for space often.
const CAPACITY: u64 = 8192;
const MAX: usize = 200;

/// Longest any loan may wait while a stalled subscriber is demoted after `STALL_BOUND`:
/// generous, so that a loaded machine cannot trip it; a publisher blocked by the stalled runtime
/// would wait for the whole stall (`STALL`) instead.
const STALL_BOUND: Duration = Duration::from_secs(2);
const STALL: Duration = Duration::from_secs(6);
const PUBLISH_BOUND: Duration = Duration::from_secs(5);

fn topic(name: &str) -> String {
    format!("tokio-{}-{name}", std::process::id())
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
        "async-publisher" => role_async_publisher(&args),
        "stalled" => role_stalled(&args),
        r => panic!("unknown role {r}"),
    }
}

fn bind(topic: &str, stall_bound: Option<Duration>) -> Publisher {
    Publisher::builder(topic)
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .stall_bound(stall_bound)
        .bind()
        .unwrap()
}

/// args: topic count subscribers. A blocking publisher: waits for `subscribers`, publishes
/// `count` messages in bursts with pauses, exits.
fn role_publisher(args: &[String]) {
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    let mut publisher = bind(&args[0], None);
    println!("bound");
    publisher.wait_for_subscribers(subs, WATCHDOG).unwrap();
    let mut buf = Vec::new();
    for seq in 0..count {
        message(seq, MAX, &mut buf);
        publisher.send(&buf).unwrap();
        if seq % 500 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    println!("published");
}

/// args: topic count subscribers stall_bound_ms (`none`: no bound). An async publisher in a
/// current-thread runtime: awaits `subscribers`, publishes `count` messages with `loan().await`
/// and prints `longest_loan_ms=… demotions=…` before it exits.
fn role_async_publisher(args: &[String]) {
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    let bound = (args[3] != "none").then(|| Duration::from_millis(args[3].parse().unwrap()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut publisher = AsyncPublisher::new(bind(&args[0], bound)).unwrap();
        println!("bound");
        assert!(publisher.wait_for_subscribers(subs).await.unwrap() >= subs);
        let mut buf = Vec::new();
        let mut longest = Duration::ZERO;
        for seq in 0..count {
            message(seq, MAX, &mut buf);
            let asked = Instant::now();
            let mut loan = publisher.loan(buf.len()).await.unwrap();
            longest = longest.max(asked.elapsed());
            loan.copy_from_slice(&buf);
            loan.publish();
        }
        let stats = publisher.stats();
        assert_eq!(stats.messages, count);
        println!(
            "longest_loan_ms={} demotions={}",
            longest.as_millis(),
            stats.demotions
        );
    });
}

/// args: topic. A tokio subscriber whose runtime stops: after 10 messages its task blocks the
/// runtime's only thread for `STALL`; then it receives on, told of its demotion and its lag,
/// until the end.
fn role_stalled(args: &[String]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut sub = connect(&args[0], Mode::Gating).await;
        println!("ready");
        let (mut next, mut demoted, mut lagged) = (0u64, false, 0u64);
        let mut scratch = Vec::new();
        loop {
            match sub.recv().await {
                Ok(m) => {
                    assert_eq!(
                        m.seq(),
                        next,
                        "in order, and after a lag exactly `n` further"
                    );
                    verify(m.seq(), &m, MAX, &mut scratch);
                    next += 1;
                    if next == 10 {
                        drop(m);
                        println!("stalling");
                        // A runtime that stops: nothing of this process runs for the stall.
                        std::thread::sleep(STALL);
                    }
                }
                Err(RecvError::Demoted) => {
                    assert!(!demoted, "one demotion");
                    demoted = true;
                }
                Err(RecvError::Lagged(n)) => {
                    assert!(demoted, "a gating subscriber lags only after its demotion");
                    lagged += n;
                    next += n;
                }
                Err(RecvError::Disconnected) => break,
                Err(e) => panic!("{e}"),
            }
        }
        println!("summary demoted={demoted} lagged={lagged} next={next}");
    });
}

async fn connect(topic: &str, mode: Mode) -> AsyncSubscriber {
    AsyncSubscriber::builder(topic)
        .mode(mode)
        .connect_timeout(Duration::from_secs(30))
        .connect_async()
        .await
        .unwrap()
}

fn publisher(role: &str, name: &str, count: u64, subs: usize, extra: &[&str]) -> Proc {
    let mut args = vec![topic(name), count.to_string(), subs.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut p = spawn(role, &args);
    p.expect_line("bound");
    p
}

/// Receives with `recv` until the end, checking every message; returns how many.
async fn receive_all(mut sub: AsyncSubscriber) -> u64 {
    let mut scratch = Vec::new();
    let mut next = 0;
    loop {
        match sub.recv().await {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                verify(m.seq(), &m, MAX, &mut scratch);
                next += 1;
            }
            Err(RecvError::Disconnected) => return next,
            Err(e) => panic!("message {next}: {e}"),
        }
    }
}

/// Receives with `recv_timeout` until the end; timeouts are only waits.
async fn receive_all_timed(mut sub: AsyncSubscriber) -> u64 {
    let mut scratch = Vec::new();
    let mut next = 0;
    loop {
        match sub.recv_timeout(Duration::from_micros(300)).await {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                verify(m.seq(), &m, MAX, &mut scratch);
                next += 1;
            }
            Err(RecvError::Timeout) => {}
            Err(RecvError::Disconnected) => return next,
            Err(e) => panic!("message {next}: {e}"),
        }
    }
}

/// Takes the stream until it ends; every item an in-order message.
async fn stream_all(sub: AsyncSubscriber) -> u64 {
    let mut stream = sub.into_stream();
    let mut scratch = Vec::new();
    let mut next = 0;
    while let Some(item) = next_item(&mut stream).await {
        let m: Message = item.unwrap();
        assert_eq!(m.seq(), next, "in order");
        verify(m.seq(), &m, MAX, &mut scratch);
        next += 1;
    }
    assert!(next_item(&mut stream).await.is_none(), "ended for good");
    next
}

async fn next_item(s: &mut shmcast::tokio::Messages) -> Option<Result<Message, RecvError>> {
    s.next().await
}

/// The descriptor guard, taken once tokio's process-wide descriptors exist: the first runtime
/// of a process opens its signal globals (a socket pair) for the rest of the process's life.
/// Each test drops its runtime before checking the guard.
fn guard() -> FdGuard {
    static GLOBALS: std::sync::Once = std::sync::Once::new();
    GLOBALS.call_once(|| drop(current_thread()));
    FdGuard::new()
}

/// A current-thread runtime.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn tokio_subscribers_receive_a_publisher_process_in_order() {
    let fds = guard();
    let rt = current_thread();
    let count = 20_000;
    let publisher = publisher("publisher", "order", count, 3, &[]);
    rt.block_on(async {
        let a = connect(&topic("order"), Mode::Gating).await;
        let b = connect(&topic("order"), Mode::Gating).await;
        let c = connect(&topic("order"), Mode::Gating).await;
        let (a, b, c) = tokio::join!(receive_all(a), receive_all_timed(b), stream_all(c));
        assert_eq!((a, b, c), (count, count, count));
    });
    publisher.finish();
    drop(rt);
    fds.check();
}

#[test]
fn async_publisher_process_under_backpressure() {
    let fds = guard();
    let rt = current_thread();
    let count = 20_000;
    let publisher = publisher("async-publisher", "async-pub", count, 2, &["none"]);
    rt.block_on(async {
        let a = connect(&topic("async-pub"), Mode::Gating).await;
        let b = connect(&topic("async-pub"), Mode::Gating).await;
        let (a, b) = tokio::join!(receive_all(a), stream_all(b));
        assert_eq!((a, b), (count, count));
    });
    let out = publisher.finish();
    assert!(out.contains("demotions=0"), "{out}");
    drop(rt);
    fds.check();
}

#[test]
fn a_hundred_subscribers_in_one_current_thread_runtime() {
    let fds = guard();
    let rt = current_thread();
    let (count, subs) = (2_000, 100);
    let publisher = publisher("publisher", "hundred", count, subs, &[]);
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..subs {
            let sub = connect(&topic("hundred"), Mode::Gating).await;
            tasks.push(tokio::spawn(receive_all(sub)));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), count);
        }
    });
    publisher.finish();
    drop(rt);
    fds.check();
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn futures_are_send_and_run_on_the_multi_thread_runtime() {
    let fds = guard();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .unwrap();
    let count = 20_000;
    let publisher = publisher("async-publisher", "multi", count, 3, &["none"]);
    rt.block_on(async {
        let t = topic("multi");
        let a = tokio::spawn(assert_send(async move {
            let sub = assert_send(connect_owned(t)).await;
            assert_send(receive_all(sub)).await
        }));
        let t = topic("multi");
        let b = tokio::spawn(async move { receive_all_timed(connect_owned(t).await).await });
        let t = topic("multi");
        let c = tokio::spawn(async move { stream_all(connect_owned(t).await).await });
        assert_eq!(a.await.unwrap(), count);
        assert_eq!(b.await.unwrap(), count);
        assert_eq!(c.await.unwrap(), count);
    });
    publisher.finish();
    drop(rt);
    fds.check();
    // The publisher's futures too (a compile-time check; never polled).
    fn _publisher_futures_are_send(p: &mut AsyncPublisher) {
        drop(assert_send(p.loan(8)));
        drop(assert_send(p.send(b"x")));
        drop(assert_send(p.wait_for_subscribers(1)));
    }
}

async fn connect_owned(topic: String) -> AsyncSubscriber {
    connect(&topic, Mode::Gating).await
}

/// `connect_async` awaits a publisher that binds later, while the runtime goes on (a ticking
/// task counts), and fails after its timeout naming the topic when none comes.
#[test]
fn connect_awaits_a_late_publisher_without_blocking_the_runtime() {
    let fds = guard();
    let rt = current_thread();
    rt.block_on(async {
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let missing = AsyncSubscriber::builder(topic("nobody"))
            .connect_timeout(Duration::from_millis(300))
            .connect_async()
            .await;
        assert!(
            matches!(missing, Err(ConnectError::NoPublisher { .. })),
            "{missing:?}"
        );
        assert!(
            ticks.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the runtime ran while connect waited"
        );
        let name = topic("late");
        let connecting = tokio::spawn(async move { connect_owned(name).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let publisher = publisher("publisher", "late", 100, 1, &[]);
        let sub = connecting.await.unwrap();
        assert_eq!(receive_all(sub).await, 100);
        publisher.finish();
        ticker.abort();
    });
    drop(rt);
    fds.check();
}

/// `connect_async` waits out a publisher that goes away during the handshake (silent past the
/// handshake timeout, then closing a connection unanswered), as `connect` does, and connects
/// to the topic's next publisher within its connect timeout.
#[test]
fn connect_async_waits_out_a_publisher_gone_during_the_handshake() {
    let fds = guard();
    let rt = current_thread();
    let t = topic("gone-in-handshake");
    let dying = common::dying::Dying::at(&t);
    rt.block_on(async {
        let name = t.clone();
        let connecting = tokio::spawn(async move {
            AsyncSubscriber::builder(name)
                .connect_timeout(WATCHDOG)
                .handshake_timeout(Duration::from_millis(100))
                .connect_async()
                .await
        });
        let dying = tokio::task::spawn_blocking(move || {
            let silent = dying.accept("connect_async never connected");
            let closed = dying.accept("connect_async did not try again after the timeout");
            drop((closed, silent));
            dying.gone();
        });
        dying.await.unwrap();
        let mut publisher = Publisher::bind(&t).unwrap();
        let mut sub = connecting
            .await
            .unwrap()
            .expect("connected to the next publisher");
        publisher.wait_for_subscribers(1, WATCHDOG).unwrap();
        publisher.send(b"next").unwrap();
        assert_eq!(&*sub.recv().await.unwrap(), b"next");
    });
    drop(rt);
    fds.check();
}

/// A subscriber process whose runtime stops delays an async publisher process only by its
/// stall bound: demoted, told so, then lagged, while a healthy tokio subscriber here receives
/// everything.
#[test]
fn a_stalled_runtime_delays_the_publisher_only_by_its_stall_bound() {
    let fds = guard();
    let rt = current_thread();
    let count = 5_000;
    let bound = STALL_BOUND.as_millis().to_string();
    let publisher = publisher("async-publisher", "stall", count, 2, &[&bound]);
    let mut stalled = spawn("stalled", &[topic("stall")]);
    stalled.expect_line("ready");
    rt.block_on(async {
        let healthy = connect(&topic("stall"), Mode::Gating).await;
        assert_eq!(receive_all(healthy).await, count);
    });
    let out = publisher.finish();
    let longest: u64 = out
        .split("longest_loan_ms=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(out.contains("demotions=1"), "{out}");
    assert!(
        Duration::from_millis(longest) < PUBLISH_BOUND,
        "a loan waited {longest} ms: the stalled runtime held the publisher"
    );
    let summary = stalled.finish();
    assert!(summary.contains("demoted=true"), "{summary}");
    assert!(summary.contains(&format!("next={count}")), "{summary}");
    drop(rt);
    fds.check();
}

/// The stream goes on after a lag or a demotion, ends (for good) after an error it cannot go
/// on from, and gives its subscriber back.
#[test]
fn the_stream_ends_after_a_final_error_and_gives_its_subscriber_back() {
    use common::abi::ctl;
    use common::fake_publisher::hostile;
    use common::image::Image;
    use futures_core::FusedStream;
    use shmcast_core::layout::{STATE_ACTIVE, STATE_EVICTED};

    drop(current_thread()); // tokio's process-wide descriptors, before the scene's guard
    hostile("tokio-stream-end", |scene| {
        let rt = current_thread();
        let mut image = Image::new(Mode::Gating);
        image.publish(3);
        let (sub, _conn) = scene.connected(&image, Mode::Gating);
        rt.block_on(async {
            let mut stream = AsyncSubscriber::new(sub).unwrap().into_stream();
            assert_eq!(stream.next().await.unwrap().unwrap().seq(), 0);
            // Back to in-place receives, then a stream again.
            let mut sub = stream.into_inner();
            assert_eq!(sub.recv().await.unwrap().seq(), 1);
            let mut stream = sub.into_stream();
            image.cb.store32(ctl::STATE, STATE_EVICTED);
            assert!(matches!(stream.next().await, Some(Err(RecvError::Evicted))));
            assert!(stream.is_terminated());
            image.cb.store32(ctl::STATE, STATE_ACTIVE);
            assert!(stream.next().await.is_none(), "ended for good");
        });
        drop(rt);
    });
}

/// An async loan waiting for space that a stopped subscriber holds, with no stall bound, ends
/// with `Closed` as soon as a `Closer` ends the stream; so does a wait for subscribers.
#[test]
fn a_close_ends_async_waits_for_space_and_for_subscribers() {
    let fds = guard();
    let rt = current_thread();
    let t = topic("closer");
    rt.block_on(async {
        let publisher = Publisher::builder(&t)
            .capacity(1024)
            .max_message(200)
            .stall_bound(None)
            .bind()
            .unwrap();
        let closer = publisher.closer();
        let mut publisher = AsyncPublisher::new(publisher).unwrap();
        let _held = shmcast::Subscriber::connect(&t).unwrap();
        let filled = async {
            loop {
                match publisher.loan(200).await {
                    Ok(loan) => loan.publish(),
                    Err(e) => return e,
                }
            }
        };
        let closing = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(closer.close(Duration::from_secs(10)));
        };
        let (ended, ()) = tokio::join!(
            async { tokio::time::timeout(PUBLISH_BOUND, filled).await },
            closing
        );
        assert!(matches!(ended, Ok(shmcast::LoanError::Closed)), "{ended:?}");
        let waited = tokio::time::timeout(PUBLISH_BOUND, publisher.wait_for_subscribers(5)).await;
        let Ok(Err(e)) = waited else {
            panic!("{waited:?}")
        };
        assert!(e.closed, "{e:?}");
        assert_eq!(
            (e.wanted, e.connected),
            (5, 1),
            "at once, with the one connected"
        );
    });
    drop(rt);
    fds.check();
}

/// On a topic that declares a Pod type, an async loan or send of another length is refused at
/// once, even with the ring full and no stall bound: it never waits for space it could not use.
#[test]
fn async_sends_of_another_length_are_refused_without_waiting() {
    let fds = guard();
    let rt = current_thread();
    let t = topic("pod-length");
    rt.block_on(async {
        let publisher = Publisher::builder(&t)
            .capacity(1024)
            .pod::<u64>()
            .stall_bound(None)
            .bind()
            .unwrap();
        let mut publisher = AsyncPublisher::new(publisher).unwrap();
        let _held = shmcast::Subscriber::connect(&t).unwrap();
        while publisher.try_loan(8).map(|l| l.publish()).is_ok() {}
        let refused = |r: Result<(), shmcast::LoanError>| {
            assert!(
                matches!(r, Err(shmcast::LoanError::WrongLength { len: 4, .. })),
                "{r:?}"
            )
        };
        let bound = PUBLISH_BOUND;
        refused(
            tokio::time::timeout(bound, publisher.send(b"four"))
                .await
                .unwrap(),
        );
        refused(
            tokio::time::timeout(bound, publisher.loan(4))
                .await
                .unwrap()
                .map(drop),
        );
        let timed = publisher.loan_timeout(4, Duration::from_secs(60));
        refused(tokio::time::timeout(bound, timed).await.unwrap().map(drop));
        let full = tokio::time::timeout(Duration::from_millis(50), publisher.send(&[0; 8])).await;
        assert!(
            full.is_err(),
            "a message of the right length waits for space"
        );
    });
    drop(rt);
    fds.check();
}

/// A loop of sends into a ring with room gives a current-thread runtime back to its other
/// tasks now and then (tokio's cooperative budget), as tokio's own channels do; the typed loan
/// and the owned message's typed read work on the async side too.
#[test]
fn a_loop_of_sends_that_never_waits_lets_other_tasks_run() {
    let fds = guard();
    let rt = current_thread();
    let t = topic("coop");
    rt.block_on(async {
        let publisher = Publisher::builder(&t)
            .capacity(1 << 20)
            .pod::<u64>()
            .bind()
            .unwrap();
        let mut publisher = AsyncPublisher::new(publisher).unwrap();
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let other = tokio::spawn({
            let ran = ran.clone();
            async move { ran.store(true, std::sync::atomic::Ordering::Relaxed) }
        });
        let mut sent_before_the_other_ran = None;
        for i in 0..10_000u64 {
            publisher.send_pod(&i).await.unwrap();
            if sent_before_the_other_ran.is_none() && ran.load(std::sync::atomic::Ordering::Relaxed)
            {
                sent_before_the_other_ran = Some(i + 1);
            }
        }
        other.await.unwrap();
        assert!(
            sent_before_the_other_ran.is_some(),
            "10 000 sends never let the other task run"
        );

        let mut sub = AsyncSubscriber::connect(&t).await.unwrap().into_stream();
        {
            let mut loan = publisher.loan_pod::<u64>().await.unwrap();
            *loan = 77;
            loan.publish();
        }
        let message = next_item(&mut sub).await.unwrap().unwrap();
        assert_eq!(message.to_pod::<u64>(), Ok(77));
        assert!(matches!(
            message.to_pod::<u32>(),
            Err(shmcast::PodError::Size {
                expected: 4,
                actual: 8
            })
        ));
        assert!(matches!(
            publisher.loan_pod::<u32>().await,
            Err(shmcast::LoanError::WrongType { size: 4, .. })
        ));
    });
    drop(rt);
    fds.check();
}

/// `recv_latest().await` skips to the newest message and counts what it passed over; with
/// nothing new it awaits the next one, and a wait dropped on the way loses nothing.
#[test]
fn recv_latest_awaits_the_newest_message() {
    let fds = guard();
    let rt = current_thread();
    let t = topic("latest");
    rt.block_on(async {
        let mut publisher = Publisher::builder(&t).capacity(1 << 16).bind().unwrap();
        let mut sub = AsyncSubscriber::connect(&t).await.unwrap();
        for i in 0..10u64 {
            publisher.send(&i.to_le_bytes()).unwrap();
        }
        let latest = sub.recv_latest().await.unwrap();
        assert_eq!(
            (latest.seq(), latest.skipped(), &latest[..]),
            (9, 9, &9u64.to_le_bytes()[..])
        );
        drop(latest);
        let timed_out = tokio::time::timeout(Duration::from_millis(20), sub.recv_latest())
            .await
            .is_err();
        assert!(timed_out, "nothing new to return");
        let (latest, ()) = tokio::join!(sub.recv_latest(), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            publisher.send(b"next").unwrap();
        });
        let latest = latest.unwrap();
        assert_eq!(
            (latest.seq(), latest.skipped(), &latest[..]),
            (10, 0, &b"next"[..])
        );
        drop(latest);
        drop(publisher);
        assert!(matches!(
            sub.recv_latest().await,
            Err(RecvError::Disconnected)
        ));
    });
    drop(rt);
    fds.check();
}
