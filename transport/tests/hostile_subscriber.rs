//! Hostile subscribers on shared memory and wakeups, each a real process holding what a
//! subscriber really gets (the ring read-only, its control block read-write, its connection):
//! whatever it writes, wakes, withholds or floods, the publisher keeps publishing and a good
//! subscriber process loses nothing (`common::attack`). Attacks on the topic socket itself are
//! `hostile_clients.rs`.
//!
//! Child processes come from `common::child`; every wait is bounded by its watchdog; the only
//! bound on time is the delay an attack on wakeups may cause ([`DELAY_BOUND`]).

mod common;

use common::abi::{ctl, hdr};
use common::attack::{self, Attacked, FLAT_OUT, RING};
use common::{child, roles};
use shmcast::Mode;
use shmcast_core::CONTROL_BLOCK_LEN;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// What the requeueing subscriber prints once it has moved a sleeper off the wake word.
const REQUEUED: &str = "requeued";
/// What the hole-punching subscriber prints once it has zeroed its control block 1000 times.
const PUNCHED: &str = "punched its control block";
/// What the subscriber moving its cursor backwards prints once it has done so 1000 times.
const MOVED_BACK: &str = "moved its cursor back";
/// What the storming subscriber prints once its unread doorbells fill its socket's queue and
/// the publisher has taken doorbells carrying descriptors off its own (or the kernel refused
/// them).
const QUEUE_FULL: &str = "doorbell queue full";

fn topic(name: &str) -> String {
    format!("hostile-sub-{}-{name}", std::process::id())
}

/// Publishes while a hostile subscriber process runs `attack` until `reached` holds (see
/// [`attack::publish_under_attack`]). Under an attack on wakeups ([`ON_WAKEUPS`]) every loan of
/// the publisher and every receive of the good subscriber must end within [`DELAY_BOUND`].
/// Returns the publisher's statistics.
fn publish_under_attack(
    topic: &str,
    attack: &str,
    rate: (u64, Duration),
    reached: impl FnMut(&shmcast::Publisher, &mut child::Proc) -> bool,
) -> shmcast::PublisherStats {
    let Attacked {
        stats,
        longest_loan,
        longest_wait,
    } = attack::publish_under_attack(topic, ("hostile", attack), 2, rate, reached);
    // Late, but within the recheck: no attack on wakeups turns a missed one into a hang. (The
    // others may hold the publisher back as any gating subscriber may, with no stall bound.)
    if ON_WAKEUPS.contains(&attack) {
        assert!(
            longest_loan <= DELAY_BOUND && longest_wait <= DELAY_BOUND,
            "{attack}: a loan took up to {longest_loan:?} and a receive up to {longest_wait:?}"
        );
    }
    stats
}

/// The bound on the delay an attack on wakeups may cause: every sleep of a publisher waiting
/// for space and of a subscriber in `recv` ends within `PARK_RECHECK` (100 ms) by itself, so a
/// diverted or withheld wakeup costs at most that, plus scheduling. Twenty times the recheck
/// leaves room for a loaded machine and still tells the recheck from the watchdog (300 s) or the
/// subscriber's own receive timeout (60 s), which are all an unbounded delay would leave.
const DELAY_BOUND: Duration = Duration::from_secs(2);

/// The attacks that forge, divert or withhold wakeups, whose delays [`DELAY_BOUND`] bounds.
const ON_WAKEUPS: [&str; 3] = ["storm", "requeue", "withhold"];

/// A lossy subscriber makes its own socket blocking, never reads its doorbells, keeps
/// announcing "parked" (both kinds) so commits ring it or wake the futex, floods the publisher
/// with doorbells (every fourth carrying two descriptors) and FUTEX_WAKEs the ring's wake word in
/// a loop. Publishing goes on until the hostile sees its doorbell queue full (the kernel refuses
/// further doorbells) and the publisher has drained doorbells carrying descriptors (or the
/// kernel refused them, on a connection that takes none: Linux 6.16 and later): the
/// publisher's sends never block (each doorbell is MSG_DONTWAIT on the publisher's own end), it
/// closes every descriptor that arrived, and the good subscriber receives every message in order.
#[test]
fn doorbell_and_parked_storms_never_block_the_publisher() {
    // `publish_under_attack` checks that the publisher's process ends with the descriptors it
    // started with: every descriptor that arrived with a doorbell was closed.
    let stats = publish_under_attack(&topic("storm"), "storm", FLAT_OUT, |_, hostile| {
        hostile.printed(QUEUE_FULL)
    });
    // Every unread doorbell in the hostile's queue was one send of the publisher's.
    assert!(stats.wake_syscalls >= queue_limit() as u64, "{stats:?}");
}

/// A gating subscriber writes cursors ahead of the writer and far behind it: the publisher
/// demotes it (no stall bound is configured, so only that check can free the publisher) and
/// the good subscriber receives every message in order.
#[test]
fn garbage_gating_cursors_are_demoted() {
    let stats = publish_under_attack(&topic("cursor"), "cursor", FLAT_OUT, |publisher, _| {
        publisher.stats().demotions >= 1
    });
    assert!(stats.demotions >= 1, "{stats:?}");
}

/// A gating process punches holes into its own control block (allowed: the seals forbid only
/// resizing), so the publisher's mapping of it reads zeros, cursor, `parked` and the
/// publisher-written line alike, while it keeps releasing everything committed. The publisher
/// reads back nothing it wrote there, takes a zero cursor for one behind (or demotes it, once
/// the ring has wrapped), faults in fresh pages without a `SIGBUS`, and the good subscriber
/// receives every message in order.
#[test]
fn a_subscriber_punching_holes_in_its_control_block_loses_others_nothing() {
    publish_under_attack(&topic("punch"), "punch", FLAT_OUT, |_, hostile| {
        hostile.printed(PUNCHED)
    });
}

/// A gating process moves its cursor backwards, again and again: it releases everything
/// committed, then claims again up to half a ring it had released. The publisher reads a cursor
/// that is in range but lower than before (the writer's cached minimum assumed cursors only grow):
/// it may hold back for it, or overwrite what the hostile claims (its own loss), but the good
/// subscriber receives every message in order and the publisher keeps publishing. Publishing
/// goes on until the hostile has moved its cursor back 1000 times.
#[test]
fn a_subscriber_moving_its_cursor_backwards_loses_others_nothing() {
    publish_under_attack(&topic("backwards"), "backwards", FLAT_OUT, |_, hostile| {
        hostile.printed(MOVED_BACK)
    });
}

/// A subscriber moves the sleepers of the ring's wake word onto a futex of its own
/// (`FUTEX_CMP_REQUEUE` needs only read access) in a loop, while messages come a millisecond
/// apart, so the good gating subscriber sleeps in `recv` before each. The publisher's wakes then
/// miss it; it wakes when its sleep runs out (`PARK_RECHECK`), late (within [`DELAY_BOUND`],
/// which `publish_under_attack` checks) but with nothing lost. Publishing goes on until the
/// hostile has moved a sleeper.
#[test]
fn requeued_sleepers_are_late_but_lose_nothing() {
    let stats = publish_under_attack(
        &topic("requeue"),
        "requeue",
        (300, Duration::from_millis(1)),
        |_, hostile| hostile.printed(REQUEUED),
    );
    // Nothing the hostile did is the publisher's business: it still woke its sleepers itself.
    assert!(stats.wake_syscalls >= 1, "{stats:?}");
}

/// A gating subscriber releases space (a valid cursor: everything committed) but never rings
/// the doorbell that tells a publisher waiting for space: the publisher's waits end by
/// themselves (`PARK_RECHECK`) or on the good subscriber's doorbell, late (within
/// [`DELAY_BOUND`]) but never stuck, and the good subscriber receives every message in order.
/// Publishing goes on until the publisher has waited for space several times.
#[test]
fn a_subscriber_withholding_its_space_doorbell_only_delays_the_publisher() {
    let stats = publish_under_attack(
        &topic("withhold"),
        "withhold",
        (500, Duration::ZERO),
        |publisher, _| publisher.stats().space_waits >= 3,
    );
    assert_eq!(
        stats.demotions, 0,
        "a valid cursor is no reason to demote: {stats:?}"
    );
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

/// args: path, attack (`storm` | `cursor` | `requeue` | `withhold` | `punch` | `backwards`).
/// Attacks until killed.
fn role_hostile(args: &[String]) {
    let path = std::path::Path::new(&args[0]);
    let mode = if ["cursor", "withhold", "punch", "backwards"].contains(&args[1].as_str()) {
        Mode::Gating
    } else {
        Mode::Lossy
    };
    let (fds, sock) = shmcast::test_support::raw_handshake_as(path, mode)
        .unwrap()
        .expect("admitted");
    let ring_len = std::fs::File::from(fds[0].try_clone().unwrap())
        .metadata()
        .unwrap()
        .len() as usize;
    let ring = map(&fds[0], ring_len, false);
    let cb = map(&fds[1], CONTROL_BLOCK_LEN, true);
    // SAFETY: the offsets are inside the mappings, aligned, and these words are atomics in the
    // protocol.
    let (committed, wake, parked, cursor) = unsafe {
        (
            &*ring.add(hdr::COMMITTED).cast::<AtomicU64>(),
            &*ring.add(hdr::WAKE).cast::<AtomicU32>(),
            &*cb.add(ctl::PARKED).cast::<AtomicU32>(),
            &*cb.add(ctl::CURSOR).cast::<AtomicU64>(),
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
    let queue_limit = queue_limit();
    let mut full = false;
    let mut with_fds = 0u64;
    let mut fds_refused = false;
    // Where requeued sleepers wait: nobody ever wakes this word.
    let own = AtomicU32::new(0);
    let mut requeued = false;
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
                if rounds % 4 == 0 {
                    // A doorbell carrying two descriptors (copies of the ring's), which the
                    // publisher must close when it drains them.
                    let ring = fds[0].as_fd();
                    match shmcast::test_support::try_send_fds(sock.as_fd(), &[ring, ring]) {
                        Ok(sent) => with_fds += u64::from(sent),
                        // Refused by the kernel (`SO_PASSRIGHTS`, Linux 6.16 and later): the
                        // publisher never receives them.
                        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                            fds_refused = true;
                        }
                        // The publisher has gone; the test is about to kill us.
                        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                        Err(e) => panic!("doorbell with descriptors: {e}"),
                    }
                } else {
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
            }
            "withhold" => {
                // Releases everything committed, a frame boundary, a few times a millisecond,
                // and never rings the doorbell a waiting publisher expects.
                std::thread::sleep(std::time::Duration::from_micros(300));
                cursor.store(committed.load(Ordering::Acquire), Ordering::Release);
            }
            "backwards" => {
                // Releases everything committed, then moves its cursor back by up to half the
                // ring: a position it released already, still in range, never past its start.
                let now = committed.load(Ordering::Acquire);
                cursor.store(now, Ordering::Release);
                std::thread::yield_now();
                let back = (rounds.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % (RING / 2);
                cursor.store(now.saturating_sub(back & !15), Ordering::Release);
                std::thread::yield_now();
                if rounds == 1000 {
                    println!("{MOVED_BACK} 1000 times");
                }
            }
            "punch" => {
                // Zeroes its whole control block (the publisher's line 0 included) by freeing
                // its pages, then releases everything committed, again and again.
                // SAFETY: fallocate on the control block descriptor we were given.
                let rc = unsafe {
                    libc::fallocate(
                        fds[1].as_raw_fd(),
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        0,
                        // The whole page, so that it is freed rather than cleared.
                        4096,
                    )
                };
                assert_eq!(rc, 0, "punch: {}", std::io::Error::last_os_error());
                cursor.store(committed.load(Ordering::Acquire), Ordering::Release);
                if rounds == 1000 {
                    println!("{PUNCHED} 1000 times");
                }
            }
            "requeue" => {
                let seen = wake.load(Ordering::Relaxed);
                // SAFETY: FUTEX_CMP_REQUEUE from a word of our read-only mapping onto a word of
                // our own; the "timeout" argument carries the requeue count.
                let moved = unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        wake.as_ptr(),
                        libc::FUTEX_CMP_REQUEUE,
                        0,
                        i32::MAX as libc::c_long,
                        own.as_ptr(),
                        seen,
                    )
                };
                if moved > 0 && !requeued {
                    requeued = true;
                    println!("{REQUEUED} {moved} sleeper(s)");
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
            if !full && args[1] == "storm" {
                let mut queued: libc::c_int = 0;
                // SAFETY: FIONREAD writes one int, the bytes queued on our socket.
                let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::FIONREAD, &mut queued) };
                assert_eq!(rc, 0, "FIONREAD");
                // Each doorbell is one byte. The publisher's end queues at most `queue_limit`
                // of ours: beyond twice that, it has taken some carrying descriptors, unless
                // the kernel refused every one.
                if queued >= queue_limit && (fds_refused || with_fds > 2 * queue_limit as u64) {
                    full = true;
                    println!(
                        "{QUEUE_FULL}: {queued} doorbells unread, {with_fds} sent with \
                         descriptors (refused by the kernel: {fds_refused})"
                    );
                }
            }
            std::thread::yield_now();
        }
    }
}

/// How many packets the kernel queues for a connected packet socket before it refuses more.
fn queue_limit() -> i32 {
    std::fs::read_to_string("/proc/sys/net/unix/max_dgram_qlen")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(10)
}
