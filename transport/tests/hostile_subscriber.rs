//! Hostile subscribers, each a real process holding what a subscriber really gets (the ring
//! read-only, its control block read-write, its connection): whatever they do with it, the
//! publisher keeps publishing and the other subscribers lose nothing.
//!
//! The test binary re-executes itself in a child role (see `role_entry`). Every wait is bounded
//! by a watchdog; nothing here asserts on time.

use shmcast::{Mode, Publisher, Subscriber};
use shmcast_core::layout::{ControlBlock, RingHeader};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const WATCHDOG: Duration = Duration::from_secs(120);
const MESSAGES: u64 = 20_000;

/// Tests in this binary run one at a time: descriptor counts are per process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn topic(name: &str) -> String {
    format!("hostile-sub-{}-{name}", std::process::id())
}

fn spawn(role: &str, args: &[&str]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "role_entry", "--nocapture", "--test-threads=1"])
        .env("SHMCAST_HOSTILE_ROLE", role)
        .env("SHMCAST_HOSTILE_ARGS", args.join(" "))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Reads the child's stdout until a line containing `word`, within the watchdog.
fn expect_line(child: &mut Child, word: &str) -> String {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let word_owned = word.to_owned();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(out);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains(&word_owned) {
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
        Ok(None) => panic!("child ended before printing {word:?}"),
        Err(_) => panic!("watchdog: no {word:?} from child"),
    }
}

/// Waits for a child to exit successfully (killing it if the watchdog expires).
fn wait_ok(mut child: Child, what: &str) -> String {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
            assert!(status.success(), "{what} failed: {status}\n{out}");
            return out;
        }
        assert!(Instant::now() < deadline, "watchdog: {what} still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Message `seq`: 8..=200 bytes, the sequence number then a pattern derived from it.
fn message(seq: u64) -> Vec<u8> {
    let len = 8 + (seq.wrapping_mul(2654435761) % 193) as usize;
    let mut m = seq.to_le_bytes().to_vec();
    m.extend((8..len).map(|i| (seq as usize + i * 7) as u8));
    m
}

/// Waits until the publisher has admitted `n` subscribers.
fn until_subscribers(p: &Publisher, n: usize) {
    let deadline = Instant::now() + WATCHDOG;
    while p.subscriber_count() < n {
        assert!(
            Instant::now() < deadline,
            "watchdog: subscribers never joined"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Publishes `MESSAGES` messages (blocking loans: the good gating subscriber paces them), with
/// the hostile child attacking throughout; returns the publisher's statistics.
fn publish_under_attack(topic: &str, attack: &str) -> shmcast::PublisherStats {
    let mut publisher = Publisher::builder(topic).capacity(1 << 14).bind().unwrap();
    let path = publisher.path().to_str().unwrap().to_owned();
    let mut good = spawn("good", &[&path]);
    expect_line(&mut good, "connected");
    let mut hostile = spawn("hostile", &[&path, attack]);
    expect_line(&mut hostile, "attacking");
    until_subscribers(&publisher, 2);
    for seq in 0..MESSAGES {
        // A loan that never comes back is the hang this test exists to catch.
        let m = message(seq);
        let mut loan = publisher
            .loan_timeout(m.len(), WATCHDOG)
            .unwrap_or_else(|e| panic!("message {seq}: {e}"));
        loan.copy_from_slice(&m);
        loan.publish();
    }
    let stats = publisher.stats();
    drop(publisher);
    let out = wait_ok(good, "the good subscriber");
    assert!(
        out.contains(&format!("received {MESSAGES} in order")),
        "{out}"
    );
    // The hostile one stops when its stdin closes.
    drop(hostile.stdin.take());
    let out = wait_ok(hostile, "the hostile subscriber");
    eprintln!("{attack}: {out} {stats:?}");
    stats
}

fn with_fd_check(body: impl FnOnce()) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = shmcast::open_fd_count().unwrap();
    body();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = shmcast::open_fd_count().unwrap();
        if now == before {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "descriptors leaked: {before} before, {now} after"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A lossy subscriber makes its own socket blocking, never reads its doorbells (its queue
/// fills), keeps announcing "parked" so every commit rings it, floods the publisher with
/// doorbells and FUTEX_WAKEs the ring's wake word in a loop: the publisher's sends never block
/// (each doorbell is MSG_DONTWAIT on the publisher's own end) and the good subscriber receives
/// every message in order.
#[test]
fn doorbell_and_parked_storms_never_block_the_publisher() {
    with_fd_check(|| {
        let stats = publish_under_attack(&topic("storm"), "storm");
        assert_eq!(stats.messages, MESSAGES);
        // The storm did reach the publisher: it rang the hostile's full doorbell again and again.
        assert!(stats.wake_syscalls > MESSAGES / 10, "{stats:?}");
    });
}

/// A gating subscriber writes cursors ahead of the writer and far behind it: the publisher
/// demotes it (no stall bound is configured, so only that check can free the publisher) and
/// the good subscriber receives every message in order.
#[test]
fn garbage_gating_cursors_are_demoted() {
    with_fd_check(|| {
        let stats = publish_under_attack(&topic("cursor"), "cursor");
        assert!(stats.demotions >= 1, "{stats:?}");
    });
}

/// Child roles; a no-op in the normal test run.
#[test]
fn role_entry() {
    let Ok(role) = std::env::var("SHMCAST_HOSTILE_ROLE") else {
        return;
    };
    let args: Vec<String> = std::env::var("SHMCAST_HOSTILE_ARGS")
        .unwrap_or_default()
        .split(' ')
        .map(str::to_owned)
        .collect();
    match role.as_str() {
        "good" => role_good(&args),
        "hostile" => role_hostile(&args),
        other => panic!("unknown role {other}"),
    }
}

/// args: path. A gating subscriber that checks every message.
fn role_good(args: &[String]) {
    let mut sub = Subscriber::builder(args[0].as_str())
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .unwrap();
    println!("connected");
    let mut expect = 0u64;
    loop {
        match sub.recv_timeout(WATCHDOG) {
            Ok(m) => {
                assert_eq!(&*m, &message(expect)[..], "message {expect}");
                expect += 1;
            }
            Err(shmcast::RecvError::Disconnected) => break,
            Err(e) => panic!("after {expect} messages: {e}"),
        }
    }
    assert_eq!(expect, MESSAGES);
    println!("received {expect} in order");
}

/// Maps `fd` (`len` bytes) shared, read-write or read-only.
fn map(fd: &OwnedFd, len: usize, write: bool) -> *mut u8 {
    let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
    // SAFETY: a fresh shared mapping of a descriptor we own; checked for failure.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap");
    p.cast()
}

/// args: path, attack (`storm` | `cursor`). Attacks until stdin closes.
fn role_hostile(args: &[String]) {
    let path = std::path::Path::new(&args[0]);
    let mode = if args[1] == "cursor" {
        Mode::Gating
    } else {
        Mode::Lossy
    };
    let (fds, sock) = shmcast::__test_support::raw_handshake_as(path, mode)
        .unwrap()
        .expect("admitted");
    let ring_len = std::fs::File::from(fds[0].try_clone().unwrap())
        .metadata()
        .unwrap()
        .len() as usize;
    let ring = map(&fds[0], ring_len, false);
    let cb = map(&fds[1], size_of::<ControlBlock>(), true);
    // SAFETY: the offsets are inside the mappings, aligned, and these words are atomics in the
    // protocol.
    let (wake, parked, cursor) = unsafe {
        (
            &*ring
                .add(std::mem::offset_of!(RingHeader, wake))
                .cast::<AtomicU32>(),
            &*cb.add(std::mem::offset_of!(ControlBlock, parked))
                .cast::<AtomicU32>(),
            &*cb.add(std::mem::offset_of!(ControlBlock, cursor))
                .cast::<AtomicU64>(),
        )
    };
    // Our end blocking: it must not matter to the publisher, whose end is another file.
    // SAFETY: plain fcntl calls on a descriptor we own.
    unsafe {
        let fl = libc::fcntl(sock.as_raw_fd(), libc::F_GETFL);
        assert!(fl >= 0);
        assert_eq!(
            libc::fcntl(sock.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK),
            0
        );
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().lines().count();
        stop2.store(true, Ordering::Relaxed);
    });
    println!("attacking");
    std::io::stdout().flush().unwrap();
    let mut rounds = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match args[1].as_str() {
            "storm" => {
                parked.store(1, Ordering::SeqCst);
                // SAFETY: a futex wake on a word of our read-only mapping.
                unsafe {
                    libc::syscall(libc::SYS_futex, wake.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
                }
                // SAFETY: a one-byte non-blocking send on our own socket.
                unsafe {
                    libc::send(
                        sock.as_raw_fd(),
                        b"x".as_ptr().cast(),
                        1,
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    );
                }
            }
            _ => {
                cursor.store(
                    if rounds % 2 == 0 { u64::MAX } else { 0 },
                    Ordering::Release,
                );
                parked.store(rounds as u32, Ordering::Relaxed);
            }
        }
        rounds += 1;
        if rounds % 1024 == 0 {
            std::thread::yield_now();
        }
    }
    println!("stopped after {rounds} rounds");
}
