//! Publisher and subscribers in one process (real memfds, sockets, futexes and eventfds; threads
//! instead of processes): the API's contract, quickly, including what it costs (wake syscalls
//! per commit, none for busy subscribers) and that a thousand connect cycles leak nothing. Every
//! test holds a `FdGuard`: it ends with the process's descriptors as they were. Every wait is
//! bounded by `common::until`'s watchdog.

mod common;

use common::{FdGuard, until};
use shmcast::{
    ConnectError, LoanError, Mode, Publisher, RecvError, RefuseReason, Start, Subscriber,
};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("basic-{}-{name}", std::process::id())
}

const T: Duration = Duration::from_secs(10);

#[test]
fn send_receive_in_place_and_typed() {
    let fds = FdGuard::new();
    let t = topic("typed");
    let mut publisher = Publisher::builder(&t).capacity(1 << 16).bind().unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    publisher.send(b"hello").unwrap();
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, Debug, PartialEq)]
    #[repr(C)]
    struct Tick {
        seq: u64,
        price: f64,
    }
    publisher.send_pod(&Tick { seq: 7, price: 1.5 }).unwrap();
    {
        let mut loan = publisher.loan_pod::<Tick>().unwrap();
        *loan = Tick { seq: 8, price: 2.5 };
        loan.publish();
    }
    let s = sub.recv_timeout(T).unwrap();
    assert_eq!((&*s, s.seq()), (&b"hello"[..], 0));
    drop(s);
    assert_eq!(
        sub.recv_timeout(T).unwrap().as_pod::<Tick>().unwrap(),
        &Tick { seq: 7, price: 1.5 }
    );
    assert_eq!(
        sub.recv_timeout(T).unwrap().as_pod::<Tick>().unwrap().seq,
        8
    );
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    assert_eq!(publisher.stats().wake_syscalls, 0, "nobody was parked");
    drop((sub, publisher));
    fds.check();
}

#[test]
fn blocking_receive_is_woken() {
    let fds = FdGuard::new();
    for round in 0..3 {
        let t = topic(&format!("wake-{round}"));
        let mut publisher = Publisher::bind(&t).unwrap();
        let subs: Vec<_> = (0..3).map(|_| Subscriber::connect(&t).unwrap()).collect();
        let readers: Vec<_> = subs
            .into_iter()
            .map(|mut s| {
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        match s.recv_timeout(T) {
                            Ok(m) => got.push(m.to_vec()),
                            Err(RecvError::Disconnected) => return got,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        for i in 0..100u32 {
            publisher.send(&i.to_le_bytes()).unwrap();
            if i % 10 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        drop(publisher);
        for r in readers {
            let got = r.join().unwrap();
            assert_eq!(got.len(), 100);
            for (i, m) in got.iter().enumerate() {
                assert_eq!(m, &(i as u32).to_le_bytes());
            }
        }
    }
    fds.check();
}

#[test]
fn full_ring_try_loan_and_timeout() {
    let fds = FdGuard::new();
    let t = topic("full");
    let mut publisher = Publisher::builder(&t)
        .capacity(1024)
        .max_message(200)
        .bind()
        .unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    let mut sent = 0;
    while publisher.try_loan(200).map(|l| l.publish()).is_ok() {
        sent += 1;
    }
    assert!(sent >= 4);
    assert!(matches!(publisher.try_loan(200), Err(LoanError::Full)));
    assert!(matches!(
        publisher.loan_timeout(200, Duration::from_millis(50)),
        Err(LoanError::Timeout)
    ));
    assert!(matches!(
        publisher.try_loan(100_000),
        Err(LoanError::TooLarge { .. })
    ));
    drop(sub.recv_timeout(T).unwrap());
    publisher.try_loan(200).unwrap().publish();
    drop((sub, publisher));
    fds.check();
}

#[test]
fn stall_bound_demotes_and_subscriber_is_told() {
    let fds = FdGuard::new();
    let t = topic("stall");
    let mut publisher = Publisher::builder(&t)
        .capacity(1024)
        .max_message(200)
        .stall_bound(Some(Duration::from_millis(100)))
        .bind()
        .unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    for i in 0..20u8 {
        publisher.send(&[i; 200]).unwrap();
    }
    assert_eq!(publisher.stats().demotions, 1);
    assert!(matches!(sub.recv_timeout(T), Err(RecvError::Demoted)));
    assert!(!sub.is_gating());
    let Err(RecvError::Lagged(n)) = sub.recv_timeout(T) else {
        panic!("expected lag")
    };
    let mut rest = 0;
    while sub.try_recv().is_ok() {
        rest += 1;
    }
    assert_eq!(n + rest, 20);
    drop((sub, publisher));
    fds.check();
}

/// Subscribers stopped together cost the publisher one stall bound, not one each: when it
/// expires, every gating subscriber holding the ring that has not moved since the stall began
/// is demoted with the slowest, while one that keeps reading stays gating. Here three never
/// read: a look for space after the bound (`try_loan`, which never waits) finds room at once.
#[test]
fn subscribers_stopped_together_are_demoted_together() {
    let fds = FdGuard::new();
    let t = topic("stall-together");
    let bound = Duration::from_millis(100);
    let mut publisher = Publisher::builder(&t)
        .capacity(1024)
        .max_message(200)
        .stall_bound(Some(bound))
        .bind()
        .unwrap();
    let stopped: Vec<Subscriber> = (0..3).map(|_| Subscriber::connect(&t).unwrap()).collect();
    let mut live = Subscriber::connect(&t).unwrap();
    let mut sent = 0u8;
    // Fill the ring; the live subscriber keeps up, the stopped ones read nothing.
    let full = loop {
        match publisher.try_loan(200) {
            Ok(mut loan) => {
                loan.fill(sent);
                loan.publish();
                sent += 1;
                while live.try_recv().is_ok() {}
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(full, LoanError::Full), "{full:?}");
    std::thread::sleep(bound * 2);
    let mut loan = publisher
        .try_loan(200)
        .expect("room once the stopped ones are demoted");
    loan.fill(sent);
    loan.publish();
    sent += 1;
    let stats = publisher.stats();
    assert_eq!(stats.demotions, 3, "{stats:?}");
    assert!(live.is_gating());
    let mut seen = 0u8;
    while let Ok(sample) = live.try_recv() {
        assert!(sample.iter().all(|&b| b == sample[0]));
        seen = sample[0] + 1;
    }
    assert_eq!(seen, sent, "the live subscriber got the last message");
    drop((stopped, live, publisher));
    fds.check();
}

#[test]
fn late_joiner_from_oldest_and_lossy_lag() {
    let fds = FdGuard::new();
    let t = topic("oldest");
    let mut publisher = Publisher::builder(&t).capacity(4096).bind().unwrap();
    for i in 0..10u8 {
        publisher.send(&[i; 100]).unwrap();
    }
    let mut old = Subscriber::builder(&t)
        .start(Start::Oldest)
        .mode(Mode::Lossy)
        .connect()
        .unwrap();
    assert_eq!(old.recv_timeout(T).unwrap().seq(), 0);
    let mut lossy = Subscriber::builder(&t).lossy().connect().unwrap();
    for i in 0..200u8 {
        publisher.send(&[i; 100]).unwrap();
    }
    let Err(RecvError::Lagged(n)) = lossy.recv_timeout(T) else {
        panic!("expected lag")
    };
    let next = lossy.recv_timeout(T).unwrap().seq();
    assert_eq!(next, 10 + n);
    drop((old, lossy, publisher));
    fds.check();
}

#[test]
fn no_publisher_and_topic_in_use() {
    let fds = FdGuard::new();
    let t = topic("missing");
    assert!(matches!(
        Subscriber::connect(&t),
        Err(ConnectError::NoPublisher { .. })
    ));
    let start = std::time::Instant::now();
    let r = Subscriber::builder(&t)
        .connect_timeout(Duration::from_millis(100))
        .connect();
    assert!(matches!(r, Err(ConnectError::NoPublisher { .. })));
    assert!(start.elapsed() >= Duration::from_millis(100));
    let publisher = Publisher::bind(&t).unwrap();
    assert!(matches!(
        Publisher::bind(&t),
        Err(shmcast::BindError::TopicInUse(_))
    ));
    let path = publisher.path().to_owned();
    drop(publisher);
    assert!(!path.exists(), "socket removed on clean shutdown");
    fds.check();
}

#[test]
fn waits_for_a_publisher_that_appears_later() {
    let fds = FdGuard::new();
    let t = topic("later");
    let t2 = t.clone();
    let sub = std::thread::spawn(move || {
        let mut s = Subscriber::builder(&t2)
            .connect_timeout(T)
            .connect()
            .unwrap();
        s.recv_timeout(T).unwrap().to_vec()
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut publisher = Publisher::bind(&t).unwrap();
    until("the waiting subscriber never connected", || {
        publisher.subscriber_count() > 0
    });
    publisher.send(b"late").unwrap();
    assert_eq!(sub.join().unwrap(), b"late");
    drop(publisher);
    fds.check();
}

/// A publisher that goes away during the handshake (it accepts and closes unanswered, as one
/// killed while we connect does) or does not answer in time is waited out like a missing one:
/// a subscriber with a connect timeout tries again and connects to the topic's next publisher.
#[test]
fn a_publisher_gone_during_the_handshake_is_waited_out_until_the_next_one() {
    let fds = FdGuard::new();
    let t = topic("gone-in-handshake");
    let dying = common::dying::Dying::at(&t);
    let t2 = t.clone();
    let sub = std::thread::spawn(move || {
        let mut s = Subscriber::builder(&t2)
            .connect_timeout(T)
            .handshake_timeout(Duration::from_millis(100))
            .connect()
            .unwrap();
        s.recv_timeout(T).unwrap().to_vec()
    });
    // The first connection gets no answer (the handshake timeout passes), the second sees the
    // connection closed before any answer; then the process is gone and its socket replaced.
    let silent = dying.accept("the subscriber never connected");
    let closed = dying.accept("the subscriber did not try again after the handshake timeout");
    drop((closed, silent));
    dying.gone();
    let mut publisher = Publisher::bind(&t).unwrap();
    until("the waiting subscriber never connected", || {
        publisher.subscriber_count() > 0
    });
    publisher.send(b"next").unwrap();
    assert_eq!(sub.join().unwrap(), b"next");
    drop(publisher);
    fds.check();
}

/// Waits until `n` subscribers are parked.
fn until_parked(p: &Publisher, n: usize) {
    until("subscribers never parked", || {
        p.stats().subscribers.iter().filter(|s| s.parked).count() >= n
    });
}

/// Whether `fd` is readable now.
fn readable(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLIN != 0
}

/// Attempts of a wake count before it must be exact. A subscriber asleep in `recv` wakes by
/// itself every 100 ms to look for a hang-up; a commit that falls into that look finds it
/// awake and, rightly, wakes nobody. A count short of the expected one is therefore tried
/// again on a fresh topic; too many syscalls, or a short count every time, fails.
const WAKE_ATTEMPTS: u32 = 3;

#[test]
fn wake_syscalls_per_commit() {
    let fds = FdGuard::new();
    // (subscribers, of which asleep in recv, of which armed by try_recv, expected syscalls for
    // one commit): one futex wake however many sleep in recv, one doorbell per armed one.
    let cases = [
        (3, 3, 0, 1),
        (1, 1, 0, 1),
        (12, 4, 0, 1),
        (3, 0, 2, 2),
        (5, 2, 2, 3),
        (2, 0, 0, 0),
    ];
    for (i, (subs, sleeping, armed, expected)) in cases.into_iter().enumerate() {
        for attempt in 1..=WAKE_ATTEMPTS {
            let t = topic(&format!("calls-{i}-{attempt}"));
            let made = wake_syscalls_of_one_commit(&t, subs, sleeping, armed);
            if made < expected && attempt < WAKE_ATTEMPTS {
                eprintln!(
                    "case {i}: {made} of {expected} wake syscalls (a sleeper was looking); again"
                );
                continue;
            }
            assert_eq!(
                made, expected,
                "{subs} subscribers, {sleeping} asleep, {armed} armed"
            );
            break;
        }
    }
    fds.check();
}

/// Connects `subs` subscribers to a new publisher of `t`, puts `sleeping` of them to sleep in
/// `recv` and arms `armed` more with `try_recv`, commits one message, checks that every one of
/// them gets it and that the armed ones are re-armed, and returns the publisher's wake syscalls.
fn wake_syscalls_of_one_commit(t: &str, subs: usize, sleeping: usize, armed: usize) -> u64 {
    let mut publisher = Publisher::bind(t).unwrap();
    let mut all: Vec<_> = (0..subs).map(|_| Subscriber::connect(t).unwrap()).collect();
    let sleepers: Vec<_> = all
        .drain(..sleeping)
        .map(|mut s| std::thread::spawn(move || s.recv_timeout(T).map(|m| m.seq()).unwrap()))
        .collect();
    for s in &mut all[..armed] {
        assert!(matches!(s.try_recv(), Err(RecvError::Empty)));
        assert!(
            !readable(std::os::fd::AsFd::as_fd(s)),
            "armed, nothing to read"
        );
    }
    until_parked(&publisher, sleeping + armed);
    publisher.send(b"x").unwrap();
    for s in sleepers {
        assert_eq!(s.join().unwrap(), 0);
    }
    for s in &mut all[..armed] {
        assert!(readable(std::os::fd::AsFd::as_fd(s)), "the doorbell rang");
        assert_eq!(s.try_recv().unwrap().seq(), 0);
        assert!(matches!(s.try_recv(), Err(RecvError::Empty)));
        assert!(
            !readable(std::os::fd::AsFd::as_fd(s)),
            "doorbell taken, re-armed"
        );
    }
    publisher.stats().wake_syscalls
}

#[test]
fn silent_and_garbage_clients_do_not_delay_others() {
    let fds = FdGuard::new();
    use shmcast::test_support::{raw_connect, raw_send};
    let t = topic("silent");
    let mut publisher = Publisher::builder(&t)
        .handshake_timeout(Duration::from_millis(200))
        .bind()
        .unwrap();
    let path = publisher.path().to_owned();
    let silent: Vec<_> = (0..20).map(|_| raw_connect(&path).unwrap()).collect();
    let garbage = raw_send(&path, b"definitely not a hello", &[]).unwrap();
    assert!(garbage.unwrap().contains("not a shmcast packet"));
    let mut wrong_version = b"SHMC\x09\x00\x01\x00\x01\x00\0\0\0\0\0\0".to_vec();
    let reply = raw_send(&path, &wrong_version, &[]).unwrap().unwrap();
    assert!(reply.contains("protocol version 9"), "{reply}");
    wrong_version[4] = 2;
    // A descriptor sent to the publisher is refused: by the kernel where it can (Linux 6.16,
    // `SO_PASSRIGHTS` off on the listener, inherited by every connection), else in a reply.
    let fd = raw_connect(&path).unwrap();
    match raw_send(&path, &wrong_version, &[std::os::fd::AsFd::as_fd(&fd)]) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
        Ok(reply) => {
            let reply = reply.unwrap();
            assert!(reply.contains("descriptors"), "{reply}");
        }
        Err(e) => panic!("sending a descriptor: {e}"),
    }
    // A real subscriber is admitted at once, while the silent clients wait for their timeout.
    let mut sub = Subscriber::connect(&t).unwrap();
    publisher.send(b"still serving").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"still serving");
    until("silent clients never dropped", || {
        publisher.stats().refused >= 22
    });
    drop(silent);
    assert_eq!(publisher.subscriber_count(), 1);
    drop((fd, sub, publisher));
    fds.check();
}

#[test]
fn two_publishers_racing_for_a_stale_socket_never_both_win() {
    let fds = FdGuard::new();
    let dir = std::env::temp_dir().join(format!("shmcast-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("topic.sock");
    for round in 0..100 {
        // A socket file nobody listens on: what a killed publisher leaves behind.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        Publisher::bind(path.to_str().unwrap())
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, shmcast::BindError::TopicInUse(_)), "{e}");
            }
        }
        // The winner's socket is the one at the path: a subscriber reaches it.
        let mut winner = results.into_iter().find_map(Result::ok).unwrap();
        let mut sub = Subscriber::connect(path.to_str().unwrap()).unwrap();
        winner.send(b"here").unwrap();
        assert_eq!(&*sub.recv_timeout(T).unwrap(), b"here");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn lossy_subscribers_join_a_publisher_that_laps_them_during_the_handshake() {
    let fds = FdGuard::new();
    let t = topic("flood");
    let mut publisher = Publisher::builder(&t).capacity(4096).bind().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = std::thread::spawn({
        let stop = stop.clone();
        move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                publisher.send(&[7; 100]).unwrap();
            }
        }
    });
    // Between admission and attach the publisher writes far more than the ring holds: the
    // subscriber is lapped, not corrupt, and its first receives report the lag.
    for start in [Start::Newest, Start::Oldest].repeat(10) {
        let mut sub = Subscriber::builder(&t)
            .mode(Mode::Lossy)
            .start(start)
            .connect()
            .unwrap();
        let received = loop {
            match sub.recv_timeout(T) {
                Err(RecvError::Lagged(_)) => continue,
                other => break other.map(|s| s.len()),
            }
        };
        assert_eq!(received.unwrap(), 100);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    // The flooding thread owns the publisher: joining it drops it.
    flood.join().unwrap();
    fds.check();
}

/// `max_subscribers` refuses the next subscriber as busy, with the reason, and admits one again
/// as soon as a subscriber has left: one that waits (`connect_timeout`) is admitted then.
#[test]
fn max_subscribers_refuses_the_next_until_one_leaves() {
    let fds = FdGuard::new();
    let t = topic("max-subs");
    let mut publisher = Publisher::builder(&t)
        .max_subscribers(Some(2))
        .bind()
        .unwrap();
    let first = Subscriber::connect(&t).unwrap();
    let mut second = Subscriber::connect(&t).unwrap();
    for _ in 0..3 {
        match Subscriber::connect(&t) {
            Err(ConnectError::Refused { code, reason }) => {
                assert_eq!(code, RefuseReason::Busy, "{reason}");
                assert!(reason.contains("maximum of 2 subscribers"), "{reason}")
            }
            other => panic!("a third subscriber was not refused: {other:?}"),
        }
    }
    assert_eq!(publisher.subscriber_count(), 2);
    assert!(publisher.stats().refused >= 3);
    // An inspection takes no slot: a full topic answers it, when it is needed most.
    let info = shmcast::Inspector::new(&t).inspect().unwrap();
    assert_eq!(info.subscriber_count, 2);
    // A subscriber willing to wait takes a busy refusal as passing: it tries again, and is
    // admitted once a slot is free.
    let waiting = {
        let t = t.clone();
        std::thread::spawn(move || {
            Subscriber::builder(&t)
                .connect_timeout(Duration::from_secs(30))
                .connect()
        })
    };
    let refused = publisher.stats().refused;
    until("the waiting subscriber refused", || {
        publisher.stats().refused > refused
    });
    drop(first);
    let mut third = waiting.join().unwrap().unwrap();
    publisher.send(b"both").unwrap();
    assert_eq!(&*second.recv_timeout(T).unwrap(), b"both");
    assert_eq!(&*third.recv_timeout(T).unwrap(), b"both");
    drop((second, third, publisher));
    fds.check();
}

fn dev_shm() -> Vec<String> {
    let mut v: Vec<_> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn thousand_connect_cycles_leak_nothing() {
    let fds = FdGuard::new();
    let shm_before = dev_shm();
    let t = topic("cycles");
    let mut publisher = Publisher::builder(&t).capacity(1 << 16).bind().unwrap();
    // Warm up lazily allocated descriptors (epoll, eventfds) before counting.
    drop(Subscriber::connect(&t).unwrap());
    let settle = |p: &Publisher| until("departures not processed", || p.subscriber_count() == 0);
    settle(&publisher);
    let before = fds.snapshot();
    for i in 0..1000u32 {
        let mode = if i % 2 == 0 {
            Mode::Gating
        } else {
            Mode::Lossy
        };
        let mut sub = Subscriber::builder(&t).mode(mode).connect().unwrap();
        publisher.send(&i.to_le_bytes()).unwrap();
        assert_eq!(
            &*sub.recv_timeout(Duration::from_secs(10)).unwrap(),
            &i.to_le_bytes()
        );
        drop(sub);
        if i % 100 == 99 {
            settle(&publisher);
        }
    }
    settle(&publisher);
    fds.expect(
        &before,
        "after 1000 cycles (publisher and subscriber sides in this process)",
    );
    assert_eq!(publisher.stats().admitted, 1001);
    let path = publisher.path().to_owned();
    drop(publisher);
    assert!(!path.exists(), "socket file removed on clean shutdown");
    assert_eq!(dev_shm(), shm_before, "nothing appears in /dev/shm");
    fds.check();
}

#[test]
fn busy_subscribers_cost_the_publisher_no_syscall() {
    let fds = FdGuard::new();
    let t = topic("busy");
    let mut publisher = Publisher::builder(&t).capacity(1 << 20).bind().unwrap();
    let mut subs: Vec<_> = (0..3).map(|_| Subscriber::connect(&t).unwrap()).collect();
    for round in 0..100u32 {
        for i in 0..100u32 {
            publisher.send(&(round * 100 + i).to_le_bytes()).unwrap();
        }
        for s in &mut subs {
            for _ in 0..100 {
                drop(s.recv_timeout(Duration::from_secs(10)).unwrap());
            }
        }
    }
    let stats = publisher.stats();
    assert_eq!(stats.messages, 10_000);
    assert_eq!(
        stats.wake_syscalls, 0,
        "no subscriber ever parked, so no wake syscall"
    );
    // Now one parks: exactly the parked ones cost a signal (tried again if the commit fell
    // into the sleeper's own look for a hang-up: `WAKE_ATTEMPTS`).
    let mut parked = subs.pop().unwrap();
    for (attempt, seq) in (1..=WAKE_ATTEMPTS).zip(10_000..) {
        let before = publisher.stats().wake_syscalls;
        let waiter = std::thread::spawn(move || {
            let seq = parked
                .recv_timeout(Duration::from_secs(30))
                .map(|m| m.seq())
                .unwrap();
            (parked, seq)
        });
        until("the subscriber never parked", || {
            publisher.stats().subscribers.iter().any(|s| s.parked)
        });
        publisher.send(b"wake").unwrap();
        let got;
        (parked, got) = waiter.join().unwrap();
        assert_eq!(got, seq);
        let made = publisher.stats().wake_syscalls - before;
        if made == 0 && attempt < WAKE_ATTEMPTS {
            continue;
        }
        assert_eq!(made, 1);
        break;
    }
    drop((subs, parked, publisher));
    fds.check();
}

/// `try_recv_ready` takes what is in the ring and, finding nothing, announces no wait: the next
/// publication costs the publisher no doorbell, where `try_recv`'s `Empty` costs one.
#[test]
fn try_recv_ready_announces_no_wait() {
    let fds = FdGuard::new();
    let t = topic("ready");
    let mut publisher = Publisher::builder(&t).capacity(1 << 16).bind().unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    for i in 0..3u32 {
        publisher.send(&i.to_le_bytes()).unwrap();
    }
    for i in 0..3u64 {
        assert_eq!(sub.try_recv_ready().unwrap().seq(), i);
    }
    assert!(matches!(sub.try_recv_ready(), Err(RecvError::Empty)));
    publisher.send(b"next").unwrap();
    assert_eq!(
        publisher.stats().wake_syscalls,
        0,
        "nobody announced a wait"
    );
    assert_eq!(sub.try_recv_ready().unwrap().seq(), 3);
    // The same look with `try_recv` parks with the subscriber's own signal: one doorbell.
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    publisher.send(b"after").unwrap();
    assert_eq!(publisher.stats().wake_syscalls, 1);
    assert_eq!(sub.try_recv_ready().unwrap().seq(), 4);
    // A closed stream read to its end: `Disconnected`, as from every receive.
    drop(publisher);
    assert!(matches!(sub.try_recv_ready(), Err(RecvError::Disconnected)));
    assert!(matches!(
        sub.recv_timeout(Duration::from_secs(10)),
        Err(RecvError::Disconnected)
    ));
    drop(sub);
    fds.check();
}

/// A subscriber told that the stream ended finds the topic's socket file already gone, so a
/// process that dies right after its publisher said goodbye leaves nothing stale behind.
#[test]
fn the_socket_file_is_gone_before_subscribers_hear_the_end() {
    for round in 0..20 {
        let t = topic(&format!("goodbye-{round}"));
        let publisher = Publisher::builder(&t).capacity(4096).bind().unwrap();
        let path = publisher.path().to_owned();
        let mut sub = Subscriber::connect(&t).unwrap();
        assert_eq!(sub.stream_end(), None, "going on");
        let closer = std::thread::spawn(move || drop(publisher));
        match sub.recv_timeout(Duration::from_secs(10)) {
            Err(RecvError::Disconnected) => {}
            other => panic!("expected the end of the stream, got {other:?}"),
        }
        assert_eq!(sub.stream_end(), Some(shmcast::StreamEnd::Closed));
        assert!(
            !path.exists(),
            "round {round}: {} still there",
            path.display()
        );
        closer.join().unwrap();
    }
}

/// A child forked from a process with a publisher may drop its inherited copy (or just exit):
/// the parent's stream, socket file and subscribers carry on.
#[test]
fn a_publisher_dropped_in_a_forked_child_leaves_the_parents_stream_alone() {
    let fds = FdGuard::new();
    let t = topic("forked");
    let mut publisher = Publisher::bind(&t).unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    publisher.send(b"before").unwrap();
    let path = publisher.path().to_owned();
    // SAFETY: the child only drops the publisher, which takes no lock another thread of the
    // parent could hold at the fork, and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(publisher)));
        // SAFETY: ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(if dropped.is_ok() { 0 } else { 1 }) };
    }
    let status = wait_for_child(pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's drop failed: status {status:#x}"
    );
    assert!(path.exists(), "the child removed the parent's socket file");
    publisher.send(b"after").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"before");
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"after");
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    assert!(Subscriber::connect(&t).is_ok(), "the parent still admits");
    drop((sub, publisher));
    fds.check();
}

/// Waits for our forked child `pid` to end; its wait status.
fn wait_for_child(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waits for our own child, writing its status into a live local.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    status
}

/// A `Closer` inherited by a forked child closes nothing there: the stream is the parent's.
#[test]
fn a_closer_used_in_a_forked_child_leaves_the_parents_stream_alone() {
    let fds = FdGuard::new();
    let t = topic("forked-closer");
    let mut publisher = Publisher::bind(&t).unwrap();
    let closer = publisher.closer();
    let mut sub = Subscriber::connect(&t).unwrap();
    let path = publisher.path().to_owned();
    // SAFETY: the child only calls `close`, which returns at once in another process (it
    // takes no lock), and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let closed = closer.close(Duration::from_millis(10));
        // SAFETY: ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(if closed { 1 } else { 0 }) };
    }
    let status = wait_for_child(pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's close claimed to end the stream: status {status:#x}"
    );
    assert!(path.exists(), "the child removed the parent's socket file");
    publisher.send(b"after").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"after");
    drop((sub, closer, publisher));
    fds.check();
}

/// A `Closer` that is dropped unused (a signal that never came) changes nothing: the socket
/// file stays and subscribers still connect.
#[test]
fn an_unused_closer_dropped_leaves_the_topic_alone() {
    let fds = FdGuard::new();
    let t = topic("unused-closer");
    let mut publisher = Publisher::bind(&t).unwrap();
    let path = publisher.path().to_owned();
    let closer = publisher.closer();
    drop(closer.clone());
    drop(closer);
    assert!(
        path.exists(),
        "dropping an unused closer removed the socket file"
    );
    let mut sub = Subscriber::connect(&t).unwrap();
    publisher.send(b"still here").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"still here");
    drop((sub, publisher));
    assert!(!path.exists());
    fds.check();
}

/// A `Closer` ends the stream from another thread while the publisher's own thread is busy
/// (here: waiting for space held by a gating subscriber), as dropping the publisher would: the
/// socket file is gone, subscribers drain and hear `Closed`, not `Vanished`.
#[test]
fn a_closer_ends_the_stream_from_another_thread() {
    let fds = FdGuard::new();
    let t = topic("closer");
    let mut publisher = Publisher::builder(&t)
        .capacity(1024)
        .max_message(200)
        .stall_bound(None)
        .bind()
        .unwrap();
    let path = publisher.path().to_owned();
    let mut sub = Subscriber::connect(&t).unwrap();
    let closer = publisher.closer();
    let busy = std::thread::spawn(move || {
        // Fills the ring and then waits for space the subscriber does not free yet.
        let mut sent = 0u64;
        while publisher
            .loan_timeout(200, Duration::from_millis(300))
            .is_ok_and(|mut l| {
                l.fill(b'x');
                l.publish();
                true
            })
        {
            sent += 1;
        }
        (publisher, sent)
    });
    until("the ring filled", || {
        path.exists() && sub.stats().received == 0
    });
    assert!(closer.close(Duration::from_secs(10)));
    assert!(!path.exists(), "the socket file goes first");
    let (publisher, sent) = busy.join().unwrap();
    let mut received = 0;
    loop {
        match sub.recv_timeout(T) {
            Ok(_) => received += 1,
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(received, sent, "everything committed before the close");
    assert_eq!(sub.stream_end(), Some(shmcast::StreamEnd::Closed));
    drop((sub, publisher));
    fds.check();
}

/// A close that finds a loan in progress waits for it: the loan's message is the last one,
/// and then the stream ends; waits for subscribers end at once.
#[test]
fn a_close_during_a_loan_ends_the_stream_when_the_loan_ends() {
    let fds = FdGuard::new();
    let t = topic("closer-loan");
    let mut publisher = Publisher::builder(&t).capacity(4096).bind().unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    let closer = publisher.closer();
    publisher.send(b"first").unwrap();
    let loan = publisher.loan(4).unwrap();
    // The loan holds the writer: the close cannot finish within its wait.
    assert!(!closer.close(Duration::from_millis(20)));
    let mut loan = loan;
    loan.copy_from_slice(b"last");
    loan.publish();
    assert!(matches!(publisher.loan(4), Err(LoanError::Closed)));
    let err = publisher
        .wait_for_subscribers(2, Duration::from_secs(60))
        .unwrap_err();
    assert!(err.closed && err.connected == 1, "{err:?}");
    assert!(err.to_string().starts_with("the stream was ended"), "{err}");
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"first");
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"last");
    assert!(matches!(sub.recv_timeout(T), Err(RecvError::Disconnected)));
    assert_eq!(sub.stream_end(), Some(shmcast::StreamEnd::Closed));
    drop((sub, publisher, closer));
    fds.check();
}
