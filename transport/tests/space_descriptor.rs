//! A publisher in an event loop waits for space on its descriptor (`Publisher::space_fd`, armed
//! by `watch_space`): a gating stream through a small ring reaches subscriber processes whole
//! and in order from a `poll()` loop, an edge-triggered epoll loop and mio, and the descriptor
//! becomes readable for each reason the publisher should look again (a release, a departure,
//! the stall bound, a `Closer`), and not after a loan withdrew the wait.
//!
//! The descriptor also becomes readable by itself 100 ms after each watch (a re-check). A test
//! that a release or a departure makes it readable counts only rounds that ended before that
//! re-check could have fired, and retries the others: on a loaded machine a round may take
//! longer, and then it proves nothing either way.

mod common;

use common::child::{Proc, spawn_ready};
use common::message::{message, verify};
use common::{FdGuard, poll_readable};
use shmcast::{LoanError, Mode, Publisher, RecvError};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// Ring and messages: a few dozen frames fit, so the publisher finds the ring full often.
const CAPACITY: u64 = 8192;
const MAX: usize = 200;
const COUNT: u64 = 20_000;

/// Longest a wait on the descriptor may take while a subscriber can release: only a hang
/// reaches it.
const HANG: Duration = Duration::from_secs(30);

/// The descriptor's own re-check after each watch (`wake::PARK_RECHECK`).
const RECHECK: Duration = Duration::from_millis(100);

fn topic(name: &str) -> String {
    format!("space-{}-{name}", std::process::id())
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "reader" => role_reader(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic count. A gating subscriber that checks every message in order, pausing now and
/// then so that the ring fills, until the stream ends; prints how many it received.
fn role_reader(args: &[String]) {
    let count: u64 = args[1].parse().unwrap();
    let mut sub = common::connect(&args[0]);
    println!("ready");
    let mut scratch = Vec::new();
    let mut next = 0;
    loop {
        match sub.recv() {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                verify(m.seq(), &m, MAX, &mut scratch);
                next += 1;
                match next % 1000 {
                    0 => std::thread::sleep(Duration::from_millis(3)),
                    n if n % 89 == 0 => std::thread::sleep(Duration::from_micros(100)),
                    _ => {}
                }
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("message {next}: {e}"),
        }
    }
    assert_eq!(next, count, "every message before the end");
    println!("received {next}");
}

fn publisher(name: &str, stall_bound: Option<Duration>) -> Publisher {
    Publisher::builder(topic(name))
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .stall_bound(stall_bound)
        .bind()
        .unwrap()
}

fn reader(name: &str, count: u64) -> Proc {
    spawn_ready("reader", &[topic(name), count.to_string()])
}

/// Publishes message `seq` if it fits now; `false` if the ring is full.
fn try_publish(p: &mut Publisher, seq: u64, buf: &mut Vec<u8>) -> bool {
    message(seq, MAX, buf);
    match p.try_loan(buf.len()) {
        Ok(mut loan) => {
            loan.copy_from_slice(buf);
            loan.publish();
            true
        }
        Err(LoanError::Full) => false,
        Err(e) => panic!("message {seq}: {e}"),
    }
}

/// Publishes `COUNT` messages to `readers` gating subscriber processes from an event loop:
/// `wait` blocks until the space descriptor is readable (`false`: it never became so). Returns
/// how many times the loop waited on the descriptor.
fn event_loop_publish(name: &str, readers: usize, mut wait: impl FnMut(RawFd) -> bool) -> u64 {
    let fds = FdGuard::new();
    let mut p = publisher(name, None);
    let children: Vec<Proc> = (0..readers).map(|_| reader(name, COUNT)).collect();
    p.wait_for_subscribers(readers, HANG).unwrap();
    let mut buf = Vec::new();
    let mut waits = 0;
    for seq in 0..COUNT {
        while !try_publish(&mut p, seq, &mut buf) {
            if p.watch_space(MAX).unwrap() {
                continue;
            }
            waits += 1;
            assert!(
                wait(p.space_fd().as_raw_fd()),
                "space descriptor not readable for {HANG:?} while message {seq} waited"
            );
        }
    }
    drop(p);
    for child in children {
        let out = child.finish();
        assert!(out.contains(&format!("received {COUNT}")), "{out}");
    }
    fds.check();
    waits
}

#[test]
fn poll_loop_publishes_every_message_of_a_gating_stream() {
    let waits = event_loop_publish("poll", 2, |fd| poll_readable(fd, HANG));
    assert!(waits > 0, "the ring never filled: the test proves nothing");
}

#[test]
fn edge_triggered_epoll_publishes_every_message_of_a_gating_stream() {
    // SAFETY: epoll_create1 has no memory preconditions.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0, "epoll_create1");
    let mut registered = None;
    let waits = event_loop_publish("epollet", 1, |fd| {
        if registered != Some(fd) {
            let mut ev = libc::epoll_event {
                events: (libc::EPOLLIN | libc::EPOLLET) as u32,
                u64: 1,
            };
            // SAFETY: `ev` is a valid event for the duration of the call.
            let rc = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
            assert_eq!(rc, 0, "epoll_ctl");
            registered = Some(fd);
        }
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
        loop {
            // SAFETY: `ev` has room for the 4 events asked for.
            let n = unsafe { libc::epoll_wait(ep, ev.as_mut_ptr(), 4, HANG.as_millis() as i32) };
            if n >= 0 {
                return n > 0;
            }
        }
    });
    // SAFETY: we own the epoll descriptor.
    unsafe { libc::close(ep) };
    assert!(waits > 0, "the ring never filled: the test proves nothing");
}

#[test]
fn mio_publishes_every_message_of_a_gating_stream() {
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Token};
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(4);
    let mut registered = None;
    let waits = event_loop_publish("mio", 2, |fd| {
        if registered != Some(fd) {
            poll.registry()
                .register(&mut SourceFd(&fd), Token(3), Interest::READABLE)
                .unwrap();
            registered = Some(fd);
        }
        poll.poll(&mut events, Some(HANG)).unwrap();
        events.iter().any(|e| e.token() == Token(3))
    });
    assert!(waits > 0, "the ring never filled: the test proves nothing");
}

/// A publisher on `name` whose one gating subscriber process is stopped, with its ring filled
/// and the space descriptor watched: what the single-wait tests start from.
struct Held {
    fds: FdGuard,
    p: Publisher,
    child: Proc,
    buf: Vec<u8>,
    /// The message that found the ring full.
    next: u64,
}

impl Held {
    fn new(name: &str, stall_bound: Option<Duration>) -> Held {
        let fds = FdGuard::new();
        let mut p = publisher(name, stall_bound);
        let child = reader(name, u64::MAX);
        p.wait_for_subscribers(1, HANG).unwrap();
        child.stop();
        let mut buf = Vec::new();
        let mut next = 0;
        while try_publish(&mut p, next, &mut buf) {
            next += 1;
        }
        assert!(!p.watch_space(MAX).unwrap(), "the ring is full");
        Held {
            fds,
            p,
            child,
            buf,
            next,
        }
    }

    fn fd(&self) -> RawFd {
        self.p.space_fd().as_raw_fd()
    }

    /// Kills the subscriber, drops the publisher and checks that nothing leaked.
    fn end(self) {
        self.child.kill();
        drop(self.p);
        self.fds.check();
    }
}

/// Runs rounds of [`Held::new`] and `event` until one ends before the descriptor's own re-check
/// could have made it readable; fails if the descriptor did not become readable in such a round.
fn readable_before_the_recheck(name: &str, event: impl Fn(&Proc)) {
    for round in 0..20 {
        let held = Held::new(name, None);
        let watched = Instant::now();
        assert!(
            !poll_readable(held.fd(), Duration::ZERO),
            "readable for nothing"
        );
        event(&held.child);
        let readable = poll_readable(held.fd(), RECHECK / 2);
        let conclusive = watched.elapsed() < RECHECK;
        held.end();
        if conclusive {
            assert!(
                readable,
                "round {round}: not readable {:?} after",
                RECHECK / 2
            );
            return;
        }
    }
    panic!("no round ended within {RECHECK:?}: the machine is too slow for this test");
}

#[test]
fn a_release_makes_the_descriptor_readable() {
    readable_before_the_recheck("release", Proc::resume);
}

#[test]
fn a_subscriber_leaving_makes_the_descriptor_readable() {
    readable_before_the_recheck("leave", |child| child.signal(libc::SIGKILL));
}

#[test]
fn the_stall_bound_makes_the_descriptor_readable_and_the_next_loan_demotes() {
    let bound = Duration::from_millis(300);
    let mut h = Held::new("stall", Some(bound));
    let began = Instant::now();
    // The 100 ms re-checks come first: each finds the ring still full and watches again.
    let mut rechecks = 0;
    while !try_publish(&mut h.p, h.next, &mut h.buf) {
        rechecks += 1;
        assert!(rechecks < 1000, "never demoted");
        if !h.p.watch_space(MAX).unwrap() {
            assert!(
                poll_readable(h.fd(), HANG),
                "not readable while the stall bound ran"
            );
        }
    }
    assert!(
        began.elapsed() >= bound / 2,
        "went through before the bound"
    );
    let stats = h.p.stats();
    assert_eq!(stats.demotions, 1, "{stats:?}");
    assert_eq!(stats.subscribers[0].mode, Mode::Lossy, "{stats:?}");
    h.child.resume();
    h.end();
}

#[test]
fn a_closer_makes_the_descriptor_readable_and_the_next_loan_is_closed() {
    let mut h = Held::new("closer", None);
    let closer = h.p.closer();
    let closing = std::thread::spawn(move || closer.close(Duration::from_millis(10)));
    assert!(poll_readable(h.fd(), HANG), "not readable");
    assert!(matches!(h.p.try_loan(8), Err(LoanError::Closed)));
    assert!(matches!(h.p.watch_space(8), Err(LoanError::Closed)));
    closing.join().unwrap();
    h.child.resume();
    h.end();
}

#[test]
fn a_loan_withdraws_the_watch_and_leaves_the_descriptor_quiet() {
    let mut h = Held::new("quiet", None);
    h.child.resume();
    assert!(
        poll_readable(h.fd(), HANG),
        "not readable after the release"
    );
    // Once it has read everything it rings no more (a doorbell it decided on before the
    // withdrawal could still arrive after it, which this test is not about).
    common::until("the subscriber catching up", || {
        h.p.stats().subscribers[0].lag_messages == 0
    });
    assert!(
        try_publish(&mut h.p, h.next, &mut h.buf),
        "no space in an empty ring"
    );
    // The wait was withdrawn: no doorbell, and the timer disarmed, past the re-check.
    assert!(
        !poll_readable(h.fd(), RECHECK * 2),
        "readable with no wait announced"
    );
    // Too large is refused before anything is armed.
    assert!(matches!(
        h.p.watch_space(MAX + 1),
        Err(LoanError::TooLarge { .. })
    ));
    assert!(!poll_readable(h.fd(), Duration::ZERO));
    h.end();
}

#[test]
fn unwatch_space_withdraws_a_wait_given_up() {
    let mut h = Held::new("unwatch", None);
    h.p.unwatch_space();
    // Releases after the withdrawal ring nobody, and the timer is disarmed.
    h.child.resume();
    assert!(
        !poll_readable(h.fd(), RECHECK * 2),
        "readable after the wait was withdrawn"
    );
    h.p.unwatch_space();
    common::until("the subscriber catching up", || {
        h.p.stats().subscribers[0].lag_messages == 0
    });
    assert!(try_publish(&mut h.p, h.next, &mut h.buf), "no space");
    h.end();
}

#[test]
fn between_waits_a_departure_leaves_the_descriptor_quiet() {
    let mut h = Held::new("departed", None);
    h.p.unwatch_space();
    h.child.signal(libc::SIGKILL);
    // The server thread signals the departure to the space set once it is counted; the
    // descriptor, with no wait armed, does not show it.
    common::until("the departure", || h.p.stats().departed == 1);
    assert!(
        !poll_readable(h.fd(), RECHECK * 2),
        "readable with no wait armed"
    );
    // Nor does the next wait, for what came before it: with no gating subscriber left,
    // everything fits.
    assert!(h.p.watch_space(MAX).unwrap());
    assert!(!poll_readable(h.fd(), Duration::ZERO));
    h.end();
}

#[test]
fn a_watch_that_fits_at_once_arms_nothing() {
    let fds = FdGuard::new();
    let mut p = publisher("fits", None);
    // No gating subscriber: everything fits.
    assert!(p.watch_space(MAX).unwrap());
    assert!(!poll_readable(p.space_fd().as_raw_fd(), RECHECK * 2));
    drop(p);
    fds.check();
}
