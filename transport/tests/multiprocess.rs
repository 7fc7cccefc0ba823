//! Real processes: this test binary re-executes itself in a child role (see `role_entry`) so
//! publishers and subscribers live in separate processes with separate address spaces.
//! Every wait is bounded by a watchdog; none of these tests asserts on time.

use shmcast::{ConnectError, Mode, Publisher, RecvError, Subscriber};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WATCHDOG: Duration = Duration::from_secs(300);

fn topic(name: &str) -> String {
    format!("mp-{}-{name}", std::process::id())
}

/// Starts this binary in `role` with `args`.
fn spawn(role: &str, args: &[String]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "role_entry",
            "--nocapture",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("SHMCAST_ROLE", role)
        .env("SHMCAST_ARGS", args.join(" "))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Waits for a child to exit, killing it (and failing) if the watchdog expires.
fn wait(mut child: Child, what: &str) -> String {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
            assert!(status.success(), "{what} failed: {status}\n{out}");
            return out;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("watchdog: {what} still running after {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the child's stdout until a line containing `prefix` (bounded by the watchdog).
fn expect_line(child: &mut Child, prefix: &str) -> String {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix_owned = prefix.to_owned();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(out);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            // libtest prints `test role_entry ... ` before the child's first line.
            if line.contains(&prefix_owned) {
                let _ = tx.send(Some((line.clone(), reader)));
                return;
            }
            line.clear();
        }
        let _ = tx.send(None);
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(Some((line, reader))) => {
            child.stdout = Some(reader.into_inner());
            line
        }
        Ok(None) => panic!("child ended before printing {prefix:?}"),
        Err(_) => panic!("watchdog: no {prefix:?} from child"),
    }
}

/// Deterministic message `seq`: size from 0 to `max`, header [seq, checksum], body a pattern.
fn message(seq: u64, max: usize, buf: &mut Vec<u8>) {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    x ^= x >> 29;
    let len = (x % (max as u64 + 1)) as usize;
    buf.clear();
    buf.resize(len, 0);
    for (i, b) in buf.iter_mut().enumerate().skip(16) {
        *b = (x as usize).wrapping_add(i * 131) as u8;
    }
    if len >= 16 {
        let sum = checksum(&buf[16..]);
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        buf[8..16].copy_from_slice(&sum.to_le_bytes());
    } else {
        buf.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (seq as u8).wrapping_add(i as u8));
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut words = bytes.chunks_exact(8);
    for w in words.by_ref() {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x100_0000_01b3);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Checks a received payload against what message `seq` must be.
fn verify(seq: u64, payload: &[u8], max: usize, scratch: &mut Vec<u8>) {
    message(seq, max, scratch);
    assert_eq!(payload.len(), scratch.len(), "length of message {seq}");
    if payload.len() >= 16 {
        assert_eq!(
            u64::from_le_bytes(payload[..8].try_into().unwrap()),
            seq,
            "seq field"
        );
        let sum = u64::from_le_bytes(payload[8..16].try_into().unwrap());
        assert_eq!(checksum(&payload[16..]), sum, "checksum of message {seq}");
    } else {
        assert_eq!(payload, &scratch[..], "bytes of message {seq}");
    }
}

/// The child side. Runs only when re-executed with SHMCAST_ROLE set.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Ok(role) = std::env::var("SHMCAST_ROLE") else {
        return;
    };
    let args: Vec<String> = std::env::var("SHMCAST_ARGS")
        .unwrap()
        .split(' ')
        .map(str::to_owned)
        .collect();
    match role.as_str() {
        "subscriber" => role_subscriber(&args),
        "stall" => role_stall(&args),
        "publisher" => role_publisher(&args),
        "other-uid" => role_other_uid(&args),
        "hostile-writer" => role_hostile_writer(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic mode max expected. Receives until disconnected; prints a summary line.
fn role_subscriber(args: &[String]) {
    let (topic, mode, max, expected) = (
        &args[0],
        &args[1],
        args[2].parse().unwrap(),
        args[3].parse::<u64>().unwrap(),
    );
    let mode = if mode == "gating" {
        Mode::Gating
    } else {
        Mode::Lossy
    };
    let mut sub = Subscriber::builder(topic)
        .mode(mode)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap();
    println!("ready");
    let (mut received, mut lagged, mut next) = (0u64, 0u64, 0u64);
    let mut scratch = Vec::new();
    loop {
        match sub.recv_timeout(Duration::from_secs(60)) {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                verify(m.seq(), &m, max, &mut scratch);
                received += 1;
                next += 1;
            }
            Err(RecvError::Lagged(n)) => {
                assert_eq!(mode, Mode::Lossy, "a gating subscriber never lags");
                lagged += n;
                next += n;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("subscriber: {e}"),
        }
    }
    assert_eq!(
        received + lagged,
        expected,
        "every message received or counted as missed"
    );
    if mode == Mode::Gating {
        assert_eq!(received, expected);
    }
    println!("summary received={received} lagged={lagged}");
}

/// args: topic. A gating subscriber that reads three messages, then stops reading for ever.
fn role_stall(args: &[String]) {
    let mut sub = Subscriber::builder(&args[0])
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap();
    println!("ready");
    for _ in 0..3 {
        drop(sub.recv_timeout(Duration::from_secs(60)).unwrap());
    }
    println!("stalled");
    std::thread::sleep(Duration::from_secs(3600));
}

/// args: topic count subscribers. Publishes `count` messages once `subscribers` are connected,
/// then reports and waits to be killed.
fn role_publisher(args: &[String]) {
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    // Room for every message: the test reads only after the publisher is killed.
    let mut publisher = Publisher::builder(&args[0])
        .capacity(1 << 22)
        .max_message(4096)
        .bind()
        .unwrap();
    println!("bound");
    while publisher.subscriber_count() < subs {
        std::thread::sleep(Duration::from_millis(5));
    }
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

/// args: path. Drops to uid 65534, then tries to subscribe.
fn role_other_uid(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let path = std::path::Path::new(&args[0]);
    match shmcast::__test_support::raw_handshake(path) {
        Ok(Err(refusal)) => println!("refused: {refusal}"),
        Ok(Ok(_)) => panic!("a foreign uid received descriptors"),
        Err(e) => panic!("connect: {e}"),
    }
    match Subscriber::connect(&args[0]) {
        Err(ConnectError::Refused { reason }) => println!("refused again: {reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// args: path. Receives the ring as a subscriber and tries every way to write it.
fn role_hostile_writer(args: &[String]) {
    use std::os::fd::AsRawFd;
    let (fds, _sock) = shmcast::__test_support::raw_handshake(std::path::Path::new(&args[0]))
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
            expect_line(&mut c, "ready");
            c
        })
        .collect();
    while publisher.subscriber_count() < 4 {
        std::thread::sleep(Duration::from_millis(5));
    }
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
        let out = wait(c, &format!("subscriber {i}"));
        eprintln!("subscriber {i}: {}", out.trim());
        if i >= 2 {
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
}

#[test]
fn sigkill_of_a_stalled_gating_subscriber_frees_the_publisher() {
    let t = topic("stall");
    let mut publisher = Publisher::builder(&t)
        .capacity(4096)
        .max_message(256)
        .bind()
        .unwrap();
    let mut stalled = spawn("stall", std::slice::from_ref(&t));
    expect_line(&mut stalled, "ready");
    let count = 2000u64;
    let mut healthy = spawn(
        "subscriber",
        &[t.clone(), "gating".into(), "256".into(), count.to_string()],
    );
    expect_line(&mut healthy, "ready");
    while publisher.subscriber_count() < 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
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
    expect_line(&mut stalled, "stalled");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stalled.kill().unwrap();
        stalled.wait().unwrap();
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
    assert!(publisher.stats().departed >= 1);
    drop(publisher);
    let out = wait(healthy, "healthy subscriber");
    assert!(out.contains(&format!("received={count} lagged=0")), "{out}");
}

#[test]
fn sigkill_of_the_publisher_drains_then_disconnects() {
    let t = topic("pubkill");
    let count = 1000u64;
    let mut publisher = spawn("publisher", &[t.clone(), count.to_string(), "2".into()]);
    expect_line(&mut publisher, "bound");
    let subs: Vec<_> = [Mode::Gating, Mode::Lossy]
        .into_iter()
        .map(|mode| {
            Subscriber::builder(&t)
                .mode(mode)
                .connect_timeout(Duration::from_secs(30))
                .connect()
                .unwrap()
        })
        .collect();
    expect_line(&mut publisher, "published");
    publisher.kill().unwrap();
    publisher.wait().unwrap();
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
}

#[test]
fn a_subscriber_process_cannot_write_the_ring() {
    let t = topic("readonly");
    let publisher = Publisher::bind(&t).unwrap();
    let child = spawn("hostile-writer", &[publisher.path().display().to_string()]);
    let out = wait(child, "hostile writer");
    assert!(out.contains("ring is read-only"), "{out}");
}

#[test]
fn another_uid_is_refused_before_any_fd_is_sent() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to switch to another uid");
        return;
    }
    let dir = std::env::temp_dir().join(format!("shmcast-uid-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = dir.join("topic.sock");
    let publisher = Publisher::bind(path.to_str().unwrap()).unwrap();
    // Let the other uid reach the socket, so that the credential check is what stops it.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let out = wait(
        spawn("other-uid", &[path.display().to_string()]),
        "other-uid client",
    );
    assert!(out.contains("refused: uid 65534 is not admitted"), "{out}");
    assert!(out.contains("refused again"), "{out}");
    assert_eq!(publisher.subscriber_count(), 0);
    assert!(publisher.stats().refused >= 2);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
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
    let shm_before = dev_shm();
    let t = topic("cycles");
    let mut publisher = Publisher::builder(&t).capacity(1 << 16).bind().unwrap();
    // Warm up lazily allocated descriptors (epoll, eventfds) before counting.
    drop(Subscriber::connect(&t).unwrap());
    let settle = |p: &Publisher| {
        let deadline = Instant::now() + WATCHDOG;
        while p.subscriber_count() > 0 {
            assert!(
                Instant::now() < deadline,
                "watchdog: departures not processed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    settle(&publisher);
    let before = shmcast::open_fd_count().unwrap();
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
    let after = shmcast::open_fd_count().unwrap();
    assert_eq!(
        before, after,
        "open descriptors (publisher and subscriber sides in this process)"
    );
    assert_eq!(publisher.stats().admitted, 1001);
    let path = publisher.path().to_owned();
    drop(publisher);
    assert!(!path.exists(), "socket file removed on clean shutdown");
    assert_eq!(dev_shm(), shm_before, "nothing appears in /dev/shm");
}

#[test]
fn busy_subscribers_cost_the_publisher_no_syscall() {
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
    while publisher.stats().subscribers.iter().all(|s| !s.parked) {
        std::thread::sleep(Duration::from_millis(1));
    }
    publisher.send(b"wake").unwrap();
    assert_eq!(waiter.join().unwrap(), 10_000);
    assert_eq!(publisher.stats().wake_syscalls, 1);
}
