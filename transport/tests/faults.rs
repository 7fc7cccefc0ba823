//! Faults with real processes: subscribers killed (SIGKILL) while holding a sample, while parked
//! in `recv`, while stalled with the ring full, in the middle of the handshake and anywhere in a
//! receive loop; a gating subscriber stopped (SIGSTOP) with and without a stall bound; a
//! publisher stopped and resumed; a publisher killed, drained by its subscribers and replaced on
//! the same topic.
//!
//! Every test ends by checking that nothing was lost (each surviving subscriber received every
//! message in order, or counted exactly what it missed), nothing leaked (a `FdGuard` here and in
//! every child subscriber) and nothing hung (every wait is bounded; see `PUBLISH_BOUND`).

mod common;

use common::child::{Proc, WATCHDOG, spawn};
use common::message::{drain, message, verify};
use common::roles::{self, received_all};
use common::{FdGuard, until};
use shmcast::{ConnectError, LoanError, Mode, Publisher, RecvError, Subscriber, SubscriberId};
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// Longest any loan may wait once nothing alive holds the ring. None of these publishers has a
/// stall bound unless the test says so, so without the fault handling under test the loan
/// would wait for ever: any finite bound tells the two apart. Generous, so that a loaded
/// machine cannot trip it; not a measure of speed.
const PUBLISH_BOUND: Duration = Duration::from_secs(10);

/// Ring geometry: at most 15 frames of `MAX` bytes fit in `CAPACITY`.
const CAPACITY: u64 = 4096;
const MAX: usize = 256;

/// Messages per test: many ringfuls, so that a dead gating subscriber left in place would stop
/// the publisher.
const COUNT: u64 = 2000;

fn topic(name: &str) -> String {
    format!("faults-{}-{name}", std::process::id())
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
        "publisher" => roles::publisher(&args),
        "hold" => role_hold(&args),
        "silent" => role_silent(&args),
        "connect-loop" => role_connect_loop(&args),
        "paced-publisher" => role_paced_publisher(&args),
        "receive-loop" => role_receive_loop(&args),
        "stall" => role_stall(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic. A gating subscriber that receives one message and holds the sample until it is
/// killed.
fn role_hold(args: &[String]) {
    let mut sub = common::connect(&args[0]);
    println!("ready");
    let sample = sub.recv_timeout(Duration::from_secs(60)).unwrap();
    println!("holding {}", sample.seq());
    std::thread::sleep(Duration::from_secs(3600));
    drop(sample);
}

/// args: socket path. Connects and never says a word.
fn role_silent(args: &[String]) {
    let _sock = shmcast::test_support::raw_connect(std::path::Path::new(&args[0])).unwrap();
    println!("connected");
    std::thread::sleep(Duration::from_secs(3600));
}

/// args: topic. Connects gating subscribers and drops them, as fast as it can, until killed.
fn role_connect_loop(args: &[String]) {
    drop(Subscriber::connect(&args[0]).unwrap());
    println!("looping");
    loop {
        drop(Subscriber::connect(&args[0]).unwrap());
    }
}

/// args: topic count subscribers. Binds (printing `bound`), waits for `subscribers`, prints
/// `publishing`, publishes `count` messages of up to `MAX` bytes 200 µs apart, prints `done` and
/// exits, which disconnects its subscribers.
fn role_paced_publisher(args: &[String]) {
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    let mut publisher = publisher(&args[0], None);
    println!("bound");
    until_subscribers(&publisher, subs);
    println!("publishing");
    let mut buf = Vec::new();
    for seq in 0..count {
        message(seq, MAX, &mut buf);
        let mut loan = publisher.loan_timeout(buf.len(), WATCHDOG).unwrap();
        loan.copy_from_slice(&buf);
        loan.publish();
        std::thread::sleep(Duration::from_micros(200));
    }
    println!("done");
}

/// args: topic. A gating subscriber that receives, holds each sample a moment and drops it, in
/// a loop until it is killed: a kill lands anywhere in receiving, parking, holding or releasing.
fn role_receive_loop(args: &[String]) {
    let mut sub = common::connect(&args[0]);
    println!("receiving");
    let mut scratch = Vec::new();
    let mut next = None;
    loop {
        let m = sub.recv().unwrap();
        // It starts at the newest message, whichever that is.
        assert_eq!(m.seq(), *next.get_or_insert(m.seq()), "in order");
        verify(m.seq(), &m, MAX, &mut scratch);
        next = Some(m.seq() + 1);
        drop(m);
    }
}

/// args: topic. A gating subscriber that reads three messages, then stops reading for ever.
fn role_stall(args: &[String]) {
    let mut sub = common::connect(&args[0]);
    println!("ready");
    for _ in 0..3 {
        drop(sub.recv_timeout(Duration::from_secs(60)).unwrap());
    }
    println!("stalled");
    std::thread::sleep(Duration::from_secs(3600));
}

fn publisher(t: &str, stall_bound: Option<Duration>) -> Publisher {
    Publisher::builder(t)
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .stall_bound(stall_bound)
        .bind()
        .unwrap()
}

/// Starts a subscriber process (`gating`, `lossy` or `demotable`) that expects `count` messages
/// of up to `max` bytes, and waits until it is connected.
fn subscriber(t: &str, mode: &str, max: usize, count: u64) -> Proc {
    let mut child = spawn(
        "subscriber",
        &[t.into(), mode.into(), max.to_string(), count.to_string()],
    );
    child.expect_line("ready");
    child
}

/// Publishes messages `seqs`; no loan may wait longer than `PUBLISH_BOUND`.
fn publish(publisher: &mut Publisher, seqs: Range<u64>) {
    let mut buf = Vec::new();
    for seq in seqs {
        message(seq, MAX, &mut buf);
        let mut loan = publisher
            .loan_timeout(buf.len(), PUBLISH_BOUND)
            .unwrap_or_else(|e| panic!("message {seq}: the publisher did not go on: {e}"));
        loan.copy_from_slice(&buf);
        loan.publish();
    }
}

fn until_subscribers(publisher: &Publisher, n: usize) {
    until(&format!("never {n} subscribers"), || {
        publisher.subscriber_count() == n
    });
}

/// Waits until every subscriber has released everything and parked in `recv`.
fn until_all_parked(publisher: &Publisher) {
    until("subscribers never caught up and parked", || {
        let stats = publisher.stats();
        stats
            .subscribers
            .iter()
            .all(|s| s.parked && s.lag_bytes == 0)
    });
}

/// Waits until exactly one subscriber has not released everything, and returns it.
fn until_one_behind(publisher: &Publisher) -> SubscriberId {
    let mut behind = None;
    until("the running subscribers never caught up", || {
        let stats = publisher.stats();
        let mut late = stats.subscribers.iter().filter(|s| s.lag_bytes > 0);
        behind = late.next().map(|s| s.id);
        behind.is_some() && late.next().is_none()
    });
    behind.unwrap()
}

#[test]
fn sigkill_of_a_subscriber_holding_a_sample_frees_the_publisher_at_once() {
    let fds = FdGuard::new();
    let t = topic("hold");
    let mut publisher = publisher(&t, None);
    let healthy = subscriber(&t, "gating", MAX, COUNT);
    let lossy = subscriber(&t, "lossy", MAX, COUNT);
    until_subscribers(&publisher, 2);
    let before = fds.snapshot();
    let mut holder = spawn("hold", std::slice::from_ref(&t));
    holder.expect_line("ready");
    until_subscribers(&publisher, 3);
    publish(&mut publisher, 0..1);
    holder.expect_line("holding 0");
    // Message 0 stays pinned, so the publisher cannot get a ringful further before the holder's
    // death is handled, whichever comes first: the kill or the full ring.
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.kill();
    });
    publish(&mut publisher, 1..COUNT);
    killer.join().unwrap();
    let stats = publisher.stats();
    assert_eq!((stats.departed, stats.subscribers.len()), (1, 2));
    fds.expect(&before, "after the holder died, with the publisher running");
    drop(publisher);
    received_all(healthy, COUNT);
    lossy.finish();
    fds.check();
}

#[test]
fn sigkill_of_a_subscriber_parked_in_recv_frees_the_publisher_at_once() {
    let fds = FdGuard::new();
    let t = topic("parked");
    let mut publisher = publisher(&t, None);
    let healthy = subscriber(&t, "gating", MAX, COUNT);
    until_subscribers(&publisher, 1);
    let before = fds.snapshot();
    // Killed, so the count it expects does not matter.
    let victim = subscriber(&t, "gating", MAX, COUNT);
    until_subscribers(&publisher, 2);
    publish(&mut publisher, 0..10);
    until_all_parked(&publisher);
    victim.kill();
    publish(&mut publisher, 10..COUNT);
    let stats = publisher.stats();
    assert_eq!((stats.departed, stats.subscribers.len()), (1, 1));
    fds.expect(&before, "after the parked subscriber died");
    drop(publisher);
    received_all(healthy, COUNT);
    fds.check();
}

#[test]
fn sigkill_mid_handshake_frees_the_pending_slot_at_once() {
    let fds = FdGuard::new();
    let t = topic("handshake");
    let mut publisher = Publisher::builder(&t)
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .max_pending_handshakes(1)
        // Beyond every bound of this test: only the hang-up can free the slot in time.
        .handshake_timeout(Duration::from_secs(3600))
        .bind()
        .unwrap();
    let before = fds.snapshot();
    let mut silent = spawn("silent", &[publisher.path().display().to_string()]);
    silent.expect_line("connected");
    // Connections are accepted in order, so the silent client holds the only slot.
    match Subscriber::connect(&t) {
        Err(ConnectError::Refused { code, reason }) => {
            assert_eq!(code, shmcast::RefuseReason::Busy, "{reason}");
            assert!(reason.contains("pending"), "{reason}")
        }
        other => panic!("expected a busy refusal, got {other:?}"),
    }
    silent.kill();
    fds.expect(&before, "after the half-connected client died");
    let healthy = subscriber(&t, "gating", MAX, COUNT);
    until_subscribers(&publisher, 1);
    publish(&mut publisher, 0..COUNT);
    let stats = publisher.stats();
    assert_eq!((stats.admitted, stats.refused, stats.departed), (1, 1, 0));
    drop(publisher);
    received_all(healthy, COUNT);
    fds.check();
}

/// Kills a `role` child process (which prints `started` once it runs) in each of `ROUNDS`
/// rounds, `delay(round)` after it started and while the publisher publishes that round's
/// messages, beside a healthy gating subscriber process: the publisher never waits on the dead
/// one, the descriptors come back after each round, and the healthy subscriber loses nothing.
/// Returns how many subscribers the publisher admitted.
fn kill_in_rounds(name: &str, role: &str, started: &str, delay: impl Fn(u64) -> Duration) -> u64 {
    const ROUNDS: u64 = 8;
    const PER_ROUND: u64 = 400;
    let fds = FdGuard::new();
    let t = topic(name);
    let mut publisher = publisher(&t, None);
    let healthy = subscriber(&t, "gating", MAX, ROUNDS * PER_ROUND);
    until_subscribers(&publisher, 1);
    let before = fds.snapshot();
    for round in 0..ROUNDS {
        let mut victim = spawn(role, std::slice::from_ref(&t));
        victim.expect_line(started);
        let delay = delay(round);
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            victim.kill();
        });
        publish(&mut publisher, round * PER_ROUND..(round + 1) * PER_ROUND);
        killer.join().unwrap();
        until_subscribers(&publisher, 1);
        fds.expect(&before, &format!("after killing {role} child {round}"));
    }
    let admitted = publisher.stats().admitted;
    drop(publisher);
    received_all(healthy, ROUNDS * PER_ROUND);
    fds.check();
    admitted - 1
}

/// A subscriber process that connects and drops in a loop is killed at another point of its
/// connect cycle in each round: before, during or after the handshake, or while admitted.
#[test]
fn sigkill_of_subscribers_while_they_connect_never_blocks_the_publisher() {
    let admitted = kill_in_rounds("connecting", "connect-loop", "looping", |round| {
        Duration::from_millis(3 * round)
    });
    // Each child connects once before it prints `looping`.
    assert!(admitted >= 8, "{admitted}");
}

/// A gating subscriber process is killed at a different moment of its receive loop (waiting,
/// parked, holding a sample, releasing it) in each round: it starts at the round's first
/// message and dies after a different share of the round, from none to all of it.
#[test]
fn sigkill_anywhere_in_the_receive_loop_never_blocks_the_publisher() {
    let admitted = kill_in_rounds("receiving", "receive-loop", "receiving", |round| {
        Duration::from_micros(round * 700)
    });
    assert_eq!(admitted, 8);
}

/// The publisher process is stopped (SIGSTOP) in the middle of a stream: subscribers drain what
/// was committed, then get `Timeout` (from sleeps that end on their own, each followed by the
/// hang-up check) and never `Disconnected`; after SIGCONT the stream goes on where it stopped,
/// and ends with `Disconnected` when the publisher exits.
#[test]
fn sigstop_of_the_publisher_is_a_timeout_and_sigcont_resumes_the_stream() {
    let fds = FdGuard::new();
    let t = topic("publisher-stop");
    let mut publisher = spawn(
        "paced-publisher",
        &[t.clone(), COUNT.to_string(), "2".into()],
    );
    publisher.expect_line("bound");
    // A second subscriber in its own process, blocked in `recv` across the stop.
    let other = subscriber(&t, "gating", MAX, COUNT);
    let mut sub = common::connect(&t);
    publisher.expect_line("publishing");
    let mut scratch = Vec::new();
    let mut next = 0;
    let mut take = |m: shmcast::Sample<'_>, next: &mut u64| {
        assert_eq!(m.seq(), *next, "in order");
        verify(m.seq(), &m, MAX, &mut scratch);
        *next += 1;
    };
    while next < COUNT / 4 {
        let m = sub.recv_timeout(WATCHDOG).unwrap();
        take(m, &mut next);
    }
    publisher.stop();
    // What was committed before the stop: at most a ringful, as we gate the publisher.
    loop {
        match sub.recv_timeout(Duration::from_millis(300)) {
            Ok(m) => take(m, &mut next),
            Err(RecvError::Timeout) => break,
            Err(e) => panic!("a stopped publisher is not gone: {e}"),
        }
    }
    assert!(next < COUNT, "stopped mid-stream");
    // Each of these sleeps outlasts PARK_RECHECK, so it ends with the hang-up check.
    for _ in 0..3 {
        match sub.recv_timeout(Duration::from_millis(250)) {
            Err(RecvError::Timeout) => {}
            other => panic!("a stopped publisher: {:?}", other.map(|m| m.seq())),
        }
    }
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    publisher.resume();
    while next < COUNT {
        let m = sub.recv_timeout(WATCHDOG).unwrap();
        take(m, &mut next);
    }
    publisher.expect_line("done");
    assert!(matches!(
        sub.recv_timeout(WATCHDOG),
        Err(RecvError::Disconnected)
    ));
    publisher.finish();
    drop(sub);
    received_all(other, COUNT);
    fds.check();
}

#[test]
fn sigstop_past_the_stall_bound_demotes_and_sigcont_reports_the_exact_lag() {
    // Fits in the ring, so the demoted subscriber receives it all once it has caught up.
    const TAIL: u64 = 10;
    let total = COUNT + TAIL;
    let fds = FdGuard::new();
    let t = topic("stop-bound");
    let mut publisher = publisher(&t, Some(Duration::from_secs(2)));
    let mut stopped = subscriber(&t, "demotable", MAX, total);
    let healthy = subscriber(&t, "gating", MAX, total);
    until_subscribers(&publisher, 2);
    publish(&mut publisher, 0..3);
    until_all_parked(&publisher);
    stopped.stop();
    // With the healthy subscriber strictly ahead, the stopped one is the slowest gating
    // subscriber, the one the bound demotes.
    publish(&mut publisher, 3..4);
    let id = until_one_behind(&publisher);
    publish(&mut publisher, 4..COUNT);
    let stats = publisher.stats();
    assert_eq!(stats.demotions, 1);
    for s in &stats.subscribers {
        let expected = if s.id == id {
            Mode::Lossy
        } else {
            Mode::Gating
        };
        assert_eq!(s.mode, expected, "{s:?}");
    }
    stopped.resume();
    stopped.expect_line("demoted after 3");
    let line = stopped.expect_line("lagged ");
    let lagged: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    until("the demoted subscriber never caught up", || {
        let stats = publisher.stats();
        let s = stats.subscribers.iter().find(|s| s.id == id).unwrap();
        s.lag_messages == 0
    });
    let stats = publisher.stats();
    let s = stats.subscribers.iter().find(|s| s.id == id).unwrap();
    assert_eq!(
        (s.lagged, s.received + s.lagged),
        (lagged, COUNT),
        "what it reports to the publisher"
    );
    publish(&mut publisher, COUNT..total);
    drop(publisher);
    let out = stopped.finish();
    let summary = format!(
        "received={} lagged={lagged} lag_events=1 demoted=true",
        total - lagged
    );
    assert!(out.contains(&summary), "{out}");
    received_all(healthy, total);
    fds.check();
}

#[test]
fn sigstop_without_a_stall_bound_times_out_and_try_loan_is_full() {
    let fds = FdGuard::new();
    let t = topic("stop-nobound");
    let mut publisher = publisher(&t, None);
    let stopped = subscriber(&t, "gating", MAX, COUNT);
    let healthy = subscriber(&t, "gating", MAX, COUNT);
    until_subscribers(&publisher, 2);
    publish(&mut publisher, 0..3);
    until_all_parked(&publisher);
    stopped.stop();
    // Fill the ring. Whenever it is full, wait for the healthy subscriber to release all it
    // read: once it has, only the stopped one can be what holds the ring.
    let mut buf = Vec::new();
    let mut seq = 3;
    loop {
        assert!(seq < COUNT, "the stopped subscriber never filled the ring");
        message(seq, MAX, &mut buf);
        let published = match publisher.try_loan(buf.len()) {
            Ok(mut loan) => {
                loan.copy_from_slice(&buf);
                loan.publish();
                true
            }
            Err(LoanError::Full) => false,
            Err(e) => panic!("{e}"),
        };
        if published {
            seq += 1;
            continue;
        }
        until_one_behind(&publisher);
        if matches!(publisher.try_loan(buf.len()), Err(LoanError::Full)) {
            break;
        }
    }
    // A wait on a stopped subscriber keeps no core busy: the publisher's spin budget falls to
    // nothing after a few fruitless spins, and it sleeps.
    let cpu_before = common::thread_cpu();
    assert!(matches!(
        publisher.loan_timeout(buf.len(), Duration::from_secs(1)),
        Err(LoanError::Timeout)
    ));
    let cpu = common::thread_cpu() - cpu_before;
    assert!(
        cpu < Duration::from_millis(250),
        "a 1 s wait used {cpu:?} of CPU"
    );
    assert!(matches!(
        publisher.try_loan(buf.len()),
        Err(LoanError::Full)
    ));
    let stats = publisher.stats();
    assert_eq!(stats.demotions, 0);
    assert!(stats.subscribers.iter().all(|s| s.mode == Mode::Gating));
    stopped.resume();
    publish(&mut publisher, seq..COUNT);
    drop(publisher);
    received_all(stopped, COUNT);
    received_all(healthy, COUNT);
    fds.check();
}

#[test]
fn sigkill_of_the_publisher_then_a_new_one_binds_the_stale_topic() {
    let (first_count, second_count) = (500u64, 700u64);
    let fds = FdGuard::new();
    let t = topic("restart");
    let bound_path = |line: String| PathBuf::from(line.split("bound ").nth(1).unwrap());
    let mut first = spawn(
        "publisher",
        &[t.clone(), first_count.to_string(), "1".into()],
    );
    let path = bound_path(first.expect_line("bound "));
    let mut sub = common::connect(&t);
    first.expect_line("published");
    first.kill();
    assert!(path.exists(), "a killed publisher cannot remove its socket");
    assert_eq!(drain(&mut sub, 4096), first_count);
    drop(sub);
    // A new subscriber process starts waiting while only the stale socket is there.
    let newcomer = spawn(
        "subscriber",
        &[
            t.clone(),
            "gating".into(),
            "4096".into(),
            second_count.to_string(),
        ],
    );
    let mut second = spawn(
        "publisher",
        &[t.clone(), second_count.to_string(), "2".into()],
    );
    assert_eq!(bound_path(second.expect_line("bound ")), path);
    // This process subscribes again after its `Disconnected`.
    let mut sub = common::connect(&t);
    second.expect_line("published");
    second.kill();
    assert_eq!(drain(&mut sub, 4096), second_count);
    drop(sub);
    received_all(newcomer, second_count);
    // A third publisher takes the stale socket over as well, and removes it when dropped.
    drop(Publisher::bind(&t).unwrap());
    assert!(!path.exists(), "socket file removed on clean shutdown");
    fds.check();
}

#[test]
fn sigkill_of_a_stalled_gating_subscriber_frees_the_publisher() {
    let fds = FdGuard::new();
    let t = topic("stall");
    let mut publisher = Publisher::builder(&t)
        .capacity(4096)
        .max_message(256)
        .bind()
        .unwrap();
    let mut stalled = spawn("stall", std::slice::from_ref(&t));
    stalled.expect_line("ready");
    let count = 2000u64;
    let mut healthy = spawn(
        "subscriber",
        &[t.clone(), "gating".into(), "256".into(), count.to_string()],
    );
    healthy.expect_line("ready");
    until("subscribers never admitted", || {
        publisher.subscriber_count() == 2
    });
    let mut buf = Vec::new();
    let mut seq = 0;
    // Fill until the stalled subscriber holds the ring.
    while seq < count {
        message(seq, 256, &mut buf);
        match publisher.loan_timeout(buf.len(), Duration::from_millis(200)) {
            Ok(mut loan) => {
                loan.copy_from_slice(&buf);
                loan.publish();
                seq += 1;
            }
            Err(shmcast::LoanError::Timeout) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        seq < count,
        "the stalled subscriber must have filled the ring"
    );
    stalled.expect_line("stalled");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stalled.kill();
    });
    // This loan is waiting on the stalled subscriber when it is killed.
    while seq < count {
        message(seq, 256, &mut buf);
        let mut loan = publisher
            .loan_timeout(buf.len(), WATCHDOG)
            .expect("watchdog: publisher never continued");
        loan.copy_from_slice(&buf);
        loan.publish();
        seq += 1;
    }
    killer.join().unwrap();
    assert_eq!(publisher.stats().departed, 1);
    drop(publisher);
    received_all(healthy, count);
    fds.check();
}

#[test]
fn sigkill_of_the_publisher_drains_then_disconnects() {
    let fds = FdGuard::new();
    let t = topic("pubkill");
    let count = 1000u64;
    let mut publisher = spawn("publisher", &[t.clone(), count.to_string(), "2".into()]);
    let bound = publisher.expect_line("bound ");
    let path = std::path::PathBuf::from(bound.split("bound ").nth(1).unwrap());
    let subs: Vec<_> = [Mode::Gating, Mode::Lossy]
        .into_iter()
        .map(|mode| common::connect_as(&t, mode))
        .collect();
    publisher.expect_line("published");
    publisher.kill();
    for mut sub in subs {
        assert_eq!(
            drain(&mut sub, 4096),
            count,
            "every committed message, and not the open loan"
        );
        assert!(matches!(
            sub.recv_timeout(Duration::from_millis(10)),
            Err(RecvError::Disconnected)
        ));
        assert_eq!(sub.stream_end(), Some(shmcast::StreamEnd::Vanished));
    }
    // The killed publisher left its socket file; a successor takes it over and removes it.
    assert!(path.exists(), "a killed publisher cannot remove its socket");
    drop(Publisher::bind(&t).expect("a new publisher replaces the stale socket"));
    assert!(!path.exists(), "socket file removed on clean shutdown");
    fds.check();
}

/// A publisher that retries instead of waiting in one loan, as a `select!` loop or a dropping
/// publisher does: timed loans that give up, or tries, while a stopped gating subscriber holds
/// the ring full. The stall bound counts across them, so the stopped subscriber is demoted
/// after it and every message goes out, as for one waiting loan.
#[test]
fn sigstop_demotes_across_retried_loans() {
    const BOUND: Duration = Duration::from_millis(300);
    for retry in ["timed", "tried"] {
        let fds = FdGuard::new();
        let t = topic(&format!("retried-{retry}"));
        let mut publisher = publisher(&t, Some(BOUND));
        let stopped = subscriber(&t, "demotable", MAX, COUNT);
        until_subscribers(&publisher, 1);
        stopped.stop();
        let start = std::time::Instant::now();
        let (mut buf, mut retries) = (Vec::new(), 0u64);
        for seq in 0..COUNT {
            message(seq, MAX, &mut buf);
            loop {
                let loan = match retry {
                    "timed" => publisher.loan_timeout(buf.len(), Duration::from_millis(20)),
                    _ => publisher.try_loan(buf.len()),
                };
                match loan {
                    Ok(mut loan) => {
                        loan.copy_from_slice(&buf);
                        loan.publish();
                        break;
                    }
                    Err(LoanError::Timeout | LoanError::Full) => {
                        retries += 1;
                        assert!(
                            start.elapsed() < PUBLISH_BOUND,
                            "{retry}: still held back after {retries} retries"
                        );
                        if retry == "tried" {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    Err(e) => panic!("{retry}: {e}"),
                }
            }
        }
        let stats = publisher.stats();
        assert_eq!(stats.demotions, 1, "{retry}: {stats:?}");
        assert!(retries > 0, "{retry}: the ring never filled");
        assert_eq!(stats.subscribers[0].mode, Mode::Lossy, "{retry}");
        stopped.kill();
        drop(publisher);
        fds.check();
    }
}
