//! Real processes: this test binary re-executes itself in a child role (see `role_entry` and
//! `common::child`) so publishers and subscribers live in separate processes with separate
//! address spaces. Every wait is bounded by a watchdog; none of these tests asserts on time.
//! Every test holds a `FdGuard`: it ends with the process's descriptors as they were.

mod common;

use common::child::{WATCHDOG, spawn};
use common::message::{message, verify};
use common::{FdGuard, roles, until};
use shmcast::{ConnectError, Mode, Publisher, RecvError, Subscriber};
use std::time::{Duration, Instant};

fn topic(name: &str) -> String {
    format!("mp-{}-{name}", std::process::id())
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
        "stall" => role_stall(&args),
        "other-uid" => role_other_uid(&args),
        "other-uid-publisher" => role_other_uid_publisher(&args),
        "hostile-writer" => role_hostile_writer(&args),
        r => panic!("unknown role {r}"),
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

/// args: path. Drops to uid 65534, then tries to subscribe.
fn role_other_uid(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let path = std::path::Path::new(&args[0]);
    match shmcast::test_support::raw_handshake(path) {
        Ok(Err(refusal)) => println!("refused: {refusal}"),
        Ok(Ok(_)) => panic!("a foreign uid received descriptors"),
        Err(e) => panic!("connect: {e}"),
    }
    // Our side refuses first: the publisher runs as root, not as us.
    match Subscriber::connect(&args[0]) {
        Err(ConnectError::UntrustedPublisher { uid: 0, .. }) => println!("untrusted: uid 0"),
        other => panic!("expected an untrusted publisher, got {other:?}"),
    }
    let trusting = Subscriber::builder(&args[0]).publisher(shmcast::Admission::AnyUid);
    match trusting.connect() {
        Err(ConnectError::Refused { reason }) => println!("refused again: {reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// args: path. Drops to uid 65534, binds a publisher admitting any uid on `path`, prints
/// `bound`, and publishes a message every 5 ms for at most a minute.
fn role_other_uid_publisher(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let mut publisher = Publisher::builder(&args[0])
        .admission(shmcast::Admission::AnyUid)
        .bind()
        .unwrap();
    println!("bound");
    let until = Instant::now() + Duration::from_secs(60);
    for i in 0u64.. {
        if Instant::now() > until {
            break;
        }
        publisher.send(&i.to_le_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// args: path. Receives the ring as a subscriber and tries every way to write it.
fn role_hostile_writer(args: &[String]) {
    use std::os::fd::AsRawFd;
    let (fds, _sock) = shmcast::test_support::raw_handshake(std::path::Path::new(&args[0]))
        .unwrap()
        .unwrap();
    let ring = &fds[0];
    let len = 4096;
    // SAFETY: mmap with a null hint and a valid fd; the result is checked and never used.
    let shared_rw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            ring.as_raw_fd(),
            0,
        )
    };
    assert_eq!(
        shared_rw,
        libc::MAP_FAILED,
        "writable mapping of the ring fd must fail"
    );
    let reopened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{}", ring.as_raw_fd()));
    match reopened {
        Err(e) => println!("reopen O_RDWR refused: {e}"),
        Ok(f) => {
            // SAFETY: as above.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                )
            };
            assert_eq!(
                m,
                libc::MAP_FAILED,
                "writable mapping through a re-open must fail"
            );
            assert!(
                std::io::Write::write(&mut &f, b"x").is_err(),
                "write() through a re-open must fail"
            );
            println!("reopen O_RDWR allowed, but mmap(PROT_WRITE) and write() refused");
        }
    }
    println!("ring is read-only");
}

#[test]
fn million_messages_to_two_gating_and_two_lossy_processes() {
    let count: u64 = std::env::var("SHMCAST_MP_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let fds = FdGuard::new();
    let max = 64 * 1024;
    let t = topic("million");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 22)
        .max_message(max as u64)
        .bind()
        .unwrap();
    let mut children: Vec<_> = ["gating", "gating", "lossy", "lossy"]
        .iter()
        .map(|mode| {
            let mut c = spawn(
                "subscriber",
                &[
                    t.clone(),
                    mode.to_string(),
                    max.to_string(),
                    count.to_string(),
                ],
            );
            c.expect_line("ready");
            c
        })
        .collect();
    until("subscribers never admitted", || {
        publisher.subscriber_count() == 4
    });
    let mut buf = Vec::new();
    for seq in 0..count {
        message(seq, max, &mut buf);
        let mut loan = publisher
            .loan_timeout(buf.len(), WATCHDOG)
            .expect("watchdog: publisher stuck");
        loan.copy_from_slice(&buf);
        loan.publish();
    }
    let stats = publisher.stats();
    drop(publisher);
    let mut lossy_received = 0;
    for (i, c) in children.drain(..).enumerate() {
        let out = c.finish();
        eprintln!("subscriber {i}: {}", out.trim());
        if i < 2 {
            assert!(out.contains(&format!("received={count} lagged=0")), "{out}");
        } else {
            lossy_received += out
                .split("received=")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    }
    eprintln!(
        "published {count}: {} wake syscalls ({:.4} per message), lossy received {lossy_received}",
        stats.wake_syscalls,
        stats.wake_syscalls as f64 / count as f64
    );
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
    let out = healthy.finish();
    assert!(out.contains(&format!("received={count} lagged=0")), "{out}");
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
        let mut scratch = Vec::new();
        let mut next = 0;
        loop {
            match sub.recv_timeout(WATCHDOG) {
                Ok(m) => {
                    assert_eq!(m.seq(), next);
                    verify(m.seq(), &m, 4096, &mut scratch);
                    next += 1;
                }
                Err(RecvError::Disconnected) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(
            next, count,
            "every committed message, and not the open loan"
        );
        assert!(matches!(
            sub.recv_timeout(Duration::from_millis(10)),
            Err(RecvError::Disconnected)
        ));
    }
    // The killed publisher left its socket file; a successor takes it over and removes it.
    assert!(path.exists(), "a killed publisher cannot remove its socket");
    drop(Publisher::bind(&t).expect("a new publisher replaces the stale socket"));
    assert!(!path.exists(), "socket file removed on clean shutdown");
    fds.check();
}

#[test]
fn a_subscriber_process_cannot_write_the_ring() {
    let fds = FdGuard::new();
    let t = topic("readonly");
    let publisher = Publisher::bind(&t).unwrap();
    let child = spawn("hostile-writer", &[publisher.path().display().to_string()]);
    let out = child.finish();
    assert!(out.contains("ring is read-only"), "{out}");
    drop(publisher);
    fds.check();
}

/// A fresh directory of `mode` for a test that switches a child to uid 65534, or `None` (said
/// on stderr) when the test does not run as root and so cannot switch.
fn dir_for_another_uid(name: &str, mode: u32) -> Option<std::path::PathBuf> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to switch to another uid");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("shmcast-{name}-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    Some(dir)
}

#[test]
fn another_uid_is_refused_before_any_fd_is_sent() {
    let fds = FdGuard::new();
    let Some(dir) = dir_for_another_uid("uid", 0o755) else {
        return;
    };
    let path = dir.join("topic.sock");
    let publisher = Publisher::bind(path.to_str().unwrap()).unwrap();
    // Let the other uid reach the socket, so that the credential check is what stops it.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let out = spawn("other-uid", &[path.display().to_string()]).finish();
    assert!(out.contains("refused: uid 65534 is not admitted"), "{out}");
    assert!(out.contains("untrusted: uid 0"), "{out}");
    assert!(out.contains("refused again"), "{out}");
    assert_eq!(publisher.subscriber_count(), 0);
    assert!(publisher.stats().refused >= 2);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A socket path in a directory others may write can be bound by anyone: a subscriber trusts
/// only a publisher of its own uid unless told otherwise, and learns which uid it refused.
#[test]
fn a_publisher_of_another_uid_is_not_trusted() {
    let fds = FdGuard::new();
    // Anyone may bind here, as in a shared directory.
    let Some(dir) = dir_for_another_uid("trust", 0o777) else {
        return;
    };
    let path = dir.join("topic.sock");
    let topic = path.to_str().unwrap();
    let mut publisher = spawn("other-uid-publisher", &[topic.to_owned()]);
    publisher.expect_line("bound");
    match Subscriber::connect(topic) {
        Err(e @ ConnectError::UntrustedPublisher { uid: 65534, .. }) => {
            assert!(e.to_string().contains("uid 65534"), "{e}");
        }
        other => panic!("expected an untrusted publisher, got {other:?}"),
    }
    for trusted in [
        shmcast::Admission::Uids(vec![65534]),
        shmcast::Admission::AnyUid,
    ] {
        let mut sub = Subscriber::builder(topic)
            .publisher(trusted.clone())
            .connect()
            .unwrap_or_else(|e| panic!("{trusted:?}: {e}"));
        assert_eq!(sub.recv_timeout(Duration::from_secs(10)).unwrap().len(), 8);
    }
    publisher.kill();
    std::fs::remove_dir_all(&dir).unwrap();
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
    // Now one parks: exactly the parked ones cost a signal.
    let mut parked = subs.pop().unwrap();
    let waiter = std::thread::spawn(move || {
        parked
            .recv_timeout(Duration::from_secs(30))
            .map(|m| m.seq())
            .unwrap()
    });
    until("the subscriber never parked", || {
        publisher.stats().subscribers.iter().any(|s| s.parked)
    });
    publisher.send(b"wake").unwrap();
    assert_eq!(waiter.join().unwrap(), 10_000);
    assert_eq!(publisher.stats().wake_syscalls, 1);
    drop((subs, publisher));
    fds.check();
}
