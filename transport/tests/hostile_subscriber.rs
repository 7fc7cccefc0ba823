//! Hostile subscribers, each a real process holding what a subscriber really gets (the ring
//! read-only, its control block read-write, its connection): whatever they do with it, the
//! publisher keeps publishing and the other subscribers lose nothing.
//!
//! Child processes come from `common::child`; every wait is bounded by its watchdog; nothing
//! here asserts on time.

mod common;

use common::child::{self, WATCHDOG};
use common::{FdGuard, message::message, roles};
use shmcast::{Mode, Publisher};
use shmcast_core::layout::{ControlBlock, RingHeader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const MESSAGES: u64 = 20_000;
/// Largest message.
const MAX: usize = 200;

fn topic(name: &str) -> String {
    format!("hostile-sub-{}-{name}", std::process::id())
}

/// Publishes `MESSAGES` messages with blocking loans (a good gating subscriber process paces
/// them) while a hostile subscriber process runs `attack`; returns the publisher's statistics.
fn publish_under_attack(topic: &str, attack: &str) -> shmcast::PublisherStats {
    let fds = FdGuard::new();
    let mut publisher = Publisher::builder(topic).capacity(1 << 14).bind().unwrap();
    let path = publisher.path().to_str().unwrap().to_owned();
    let mut good = child::spawn(
        "subscriber",
        &[
            path.clone(),
            "gating".into(),
            MAX.to_string(),
            MESSAGES.to_string(),
        ],
    );
    good.expect_line("ready");
    let mut hostile = child::spawn("hostile", &[path, attack.into()]);
    hostile.expect_line("attacking");
    common::until("both subscribers admitted", || {
        publisher.subscriber_count() == 2
    });
    let mut m = Vec::new();
    for seq in 0..MESSAGES {
        message(seq, MAX, &mut m);
        // A loan that never comes back is the hang this test exists to catch.
        let mut loan = publisher
            .loan_timeout(m.len(), WATCHDOG)
            .unwrap_or_else(|e| panic!("message {seq}: {e}"));
        loan.copy_from_slice(&m);
        loan.publish();
    }
    let stats = publisher.stats();
    drop(publisher);
    let out = good.finish();
    assert!(
        out.contains(&format!("summary received={MESSAGES} lagged=0")),
        "{out}"
    );
    // Still attacking when killed: nothing stopped it, and nothing it did stopped us.
    hostile.kill();
    fds.check();
    stats
}

/// A lossy subscriber makes its own socket blocking, never reads its doorbells (its queue
/// fills), keeps announcing "parked" (both kinds) so commits ring it or wake the futex, floods
/// the publisher with doorbells and FUTEX_WAKEs the ring's wake word in a loop: the publisher's
/// sends never block (each doorbell is MSG_DONTWAIT on the publisher's own end) and the good
/// subscriber receives every message in order.
#[test]
fn doorbell_and_parked_storms_never_block_the_publisher() {
    let stats = publish_under_attack(&topic("storm"), "storm");
    assert_eq!(stats.messages, MESSAGES);
    // The storm did reach the publisher: it rang the hostile's full doorbell again and again.
    assert!(stats.wake_syscalls > MESSAGES / 100, "{stats:?}");
}

/// A gating subscriber writes cursors ahead of the writer and far behind it: the publisher
/// demotes it (no stall bound is configured, so only that check can free the publisher) and
/// the good subscriber receives every message in order.
#[test]
fn garbage_gating_cursors_are_demoted() {
    let stats = publish_under_attack(&topic("cursor"), "cursor");
    assert!(stats.demotions >= 1, "{stats:?}");
}

/// Child roles; a no-op in the normal test run.
#[test]
#[ignore = "runs only as a child process"]
fn role_entry() {
    let Some((role, args)) = child::role() else {
        return;
    };
    match role.as_str() {
        "subscriber" => roles::subscriber(&args),
        "hostile" => role_hostile(&args),
        other => panic!("unknown role {other}"),
    }
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

/// args: path, attack (`storm` | `cursor`). Attacks until killed.
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
    println!("attacking");
    for rounds in 0u64.. {
        match args[1].as_str() {
            "storm" => {
                // Both park kinds: its doorbell (1) and the futex word (2).
                parked.store(1 + (rounds % 2) as u32, Ordering::SeqCst);
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
        if rounds % 1024 == 0 {
            std::thread::yield_now();
        }
    }
}
