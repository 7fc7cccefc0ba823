//! The descriptor contract: a subscriber's descriptor is readable whenever a receive would not
//! return `Empty`, from the moment `connect` returns, with no prior call. Each event-loop idiom
//! receives a gating stream from a publisher process (every message checked, in order), then
//! `Disconnected`: level-triggered epoll with one receive per wakeup and draining, edge-triggered
//! epoll, `poll()`, mio, readiness first and try first, blocking receives (alone and batched
//! with `try_recv_ready`) mixed with the descriptor, and a late joiner's history (`Start::Oldest`) seen without any call.
//!
//! The publisher has no stall bound, so a descriptor that stays unreadable while a message waits
//! hangs the stream: each wait is bounded by `HANG`, which fails the test naming the message.

mod common;

use common::child::{Proc, spawn};
use common::message::{message, verify};
use common::{FdGuard, poll_readable};
use shmcast::{Mode, Publisher, RecvError, Sample, Start, Subscriber};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Ring and messages: a few dozen frames fit, so the publisher waits for space often.
const CAPACITY: u64 = 8192;
const MAX: usize = 200;
const COUNT: u64 = 20_000;

/// Longest a wait on the descriptor may take while the publisher runs: only a hang reaches it.
const HANG: Duration = Duration::from_secs(30);

fn topic(name: &str) -> String {
    format!("descriptor-{}-{name}", std::process::id())
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
        r => panic!("unknown role {r}"),
    }
}

/// args: topic count history. Publishes `history` messages, waits for one subscriber, then
/// publishes the rest to `count` in bursts with pauses (so that the subscriber both finds
/// messages waiting and parks), and exits, ending the stream.
fn role_publisher(args: &[String]) {
    let count: u64 = args[1].parse().unwrap();
    let history: u64 = args[2].parse().unwrap();
    let mut publisher = Publisher::builder(&args[0])
        .capacity(CAPACITY)
        .max_message(MAX as u64)
        .stall_bound(None)
        .bind()
        .unwrap();
    let mut buf = Vec::new();
    for seq in 0..history {
        message(seq, MAX, &mut buf);
        publisher.send(&buf).unwrap();
    }
    println!("bound");
    publisher
        .wait_for_subscribers(1, Duration::from_secs(60))
        .unwrap();
    for seq in history..count {
        message(seq, MAX, &mut buf);
        publisher.send(&buf).unwrap();
        match seq % 1000 {
            0 => std::thread::sleep(Duration::from_millis(2)),
            n if n % 97 == 0 => std::thread::sleep(Duration::from_micros(50)),
            _ => {}
        }
    }
    println!("published");
}

/// A publisher process of `count` messages, `history` of them before anyone connects.
fn publisher(name: &str, count: u64, history: u64) -> Proc {
    let mut p = spawn(
        "publisher",
        &[topic(name), count.to_string(), history.to_string()],
    );
    p.expect_line("bound");
    p
}

fn subscribe(name: &str, start: Start) -> Subscriber {
    subscribe_as(name, start, Mode::Gating)
}

fn subscribe_as(name: &str, start: Start, mode: Mode) -> Subscriber {
    Subscriber::builder(topic(name))
        .start(start)
        .mode(mode)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap()
}

/// Checks each receive's outcome against the stream: every message in order, then the end.
struct Stream {
    next: u64,
    count: u64,
    scratch: Vec<u8>,
    /// Lossy: `Lagged(n)` moves `next` on by `n` (every message received or counted).
    lossy: bool,
    lagged: u64,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Message,
    Empty,
    End,
}

impl Stream {
    fn new(count: u64) -> Self {
        Stream {
            next: 0,
            count,
            scratch: Vec::new(),
            lossy: false,
            lagged: 0,
        }
    }

    fn lossy(count: u64) -> Self {
        Stream {
            lossy: true,
            ..Stream::new(count)
        }
    }

    fn take(&mut self, got: Result<Sample<'_>, RecvError>) -> Outcome {
        match got {
            Ok(m) => {
                assert_eq!(m.seq(), self.next, "in order");
                verify(m.seq(), &m, MAX, &mut self.scratch);
                self.next += 1;
                Outcome::Message
            }
            Err(RecvError::Lagged(n)) if self.lossy => {
                assert!(n > 0, "Lagged(0)");
                self.next += n;
                self.lagged += n;
                Outcome::Message
            }
            Err(RecvError::Empty) => Outcome::Empty,
            Err(RecvError::Disconnected) => {
                assert_eq!(self.next, self.count, "every message before the end");
                Outcome::End
            }
            Err(e) => panic!("message {}: {e}", self.next),
        }
    }

    fn hung(&self, idiom: &str) -> ! {
        panic!(
            "{idiom}: descriptor not readable for {HANG:?} while message {} of {} was due",
            self.next, self.count
        )
    }
}

/// An epoll set watching one descriptor.
struct Epoll(RawFd);

impl Epoll {
    fn new(fd: RawFd, edge: bool) -> Self {
        // SAFETY: epoll_create1 has no memory preconditions.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        assert!(ep >= 0, "epoll_create1");
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN as u32) | if edge { libc::EPOLLET as u32 } else { 0 },
            u64: 7,
        };
        // SAFETY: `ev` is a valid event for the duration of the call.
        let rc = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        assert_eq!(rc, 0, "epoll_ctl");
        Epoll(ep)
    }

    /// Waits up to `HANG` for the descriptor; whether it became readable.
    fn wait(&self) -> bool {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
        loop {
            // SAFETY: `ev` has room for the 4 events asked for.
            let n =
                unsafe { libc::epoll_wait(self.0, ev.as_mut_ptr(), 4, HANG.as_millis() as i32) };
            if n >= 0 {
                return n > 0;
            }
            assert_eq!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(libc::EINTR)
            );
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: we own the epoll descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// Runs `receive` against a publisher process, then checks that it ended well and nothing leaked.
fn against_publisher(name: &str, history: u64, start: Start, receive: impl FnOnce(Subscriber)) {
    let fds = FdGuard::new();
    let publisher = publisher(name, COUNT, history);
    let sub = subscribe(name, start);
    receive(sub);
    publisher.finish();
    fds.check();
}

#[test]
fn level_triggered_epoll_one_receive_per_wakeup() {
    against_publisher("lt-one", 0, Start::Newest, |mut sub| {
        let ep = Epoll::new(sub.as_raw_fd(), false);
        let mut s = Stream::new(COUNT);
        loop {
            if !ep.wait() {
                s.hung("level-triggered, one receive per wakeup");
            }
            if s.take(sub.try_recv()) == Outcome::End {
                break;
            }
        }
    });
}

/// Waits for readiness first, then receives until `Empty`, until the end of the stream.
fn readiness_first_until_empty(mut sub: Subscriber, edge: bool, idiom: &str) {
    let ep = Epoll::new(sub.as_raw_fd(), edge);
    let mut s = Stream::new(COUNT);
    'stream: loop {
        if !ep.wait() {
            s.hung(idiom);
        }
        loop {
            match s.take(sub.try_recv()) {
                Outcome::Message => {}
                Outcome::Empty => break,
                Outcome::End => break 'stream,
            }
        }
    }
}

#[test]
fn level_triggered_epoll_until_empty() {
    against_publisher("lt-drain", 0, Start::Newest, |sub| {
        readiness_first_until_empty(sub, false, "level-triggered, until Empty")
    });
}

#[test]
fn edge_triggered_epoll_readiness_first() {
    against_publisher("et", 0, Start::Newest, |sub| {
        readiness_first_until_empty(sub, true, "edge-triggered, readiness first")
    });
}

#[test]
fn edge_triggered_epoll_try_first() {
    against_publisher("et-try", 0, Start::Newest, |mut sub| {
        let mut s = Stream::new(COUNT);
        // Try before the descriptor is even registered: its readiness must not depend on it.
        loop {
            match s.take(sub.try_recv()) {
                Outcome::Message => continue,
                Outcome::Empty => break,
                Outcome::End => return,
            }
        }
        let ep = Epoll::new(sub.as_raw_fd(), true);
        'stream: loop {
            loop {
                match s.take(sub.try_recv()) {
                    Outcome::Message => {}
                    Outcome::Empty => break,
                    Outcome::End => break 'stream,
                }
            }
            if !ep.wait() {
                s.hung("edge-triggered, try first");
            }
        }
    });
}

#[test]
fn poll_readiness_first_one_receive_per_wakeup() {
    against_publisher("poll-one", 0, Start::Newest, |mut sub| {
        let fd = sub.as_raw_fd();
        let mut s = Stream::new(COUNT);
        loop {
            if !poll_readable(fd, HANG) {
                s.hung("poll, one receive per wakeup");
            }
            if s.take(sub.try_recv()) == Outcome::End {
                break;
            }
        }
    });
}

#[test]
fn poll_try_first() {
    against_publisher("poll-try", 0, Start::Newest, |mut sub| {
        let fd = sub.as_raw_fd();
        let mut s = Stream::new(COUNT);
        'stream: loop {
            loop {
                match s.take(sub.try_recv()) {
                    Outcome::Message => {}
                    Outcome::Empty => break,
                    Outcome::End => break 'stream,
                }
            }
            if !poll_readable(fd, HANG) {
                s.hung("poll, try first");
            }
        }
    });
}

#[test]
fn mio_edge_triggered_until_would_block() {
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Token};
    against_publisher("mio", 0, Start::Newest, |mut sub| {
        let mut poll = Poll::new().unwrap();
        let fd = sub.as_raw_fd();
        poll.registry()
            .register(&mut SourceFd(&fd), Token(0), Interest::READABLE)
            .unwrap();
        let mut events = Events::with_capacity(4);
        let mut s = Stream::new(COUNT);
        'stream: loop {
            poll.poll(&mut events, Some(HANG)).unwrap();
            if events.is_empty() {
                s.hung("mio");
            }
            for event in &events {
                assert_eq!(event.token(), Token(0));
                loop {
                    match s.take(sub.try_recv()) {
                        Outcome::Message => {}
                        Outcome::Empty => break,
                        Outcome::End => break 'stream,
                    }
                }
            }
        }
        poll.registry().deregister(&mut SourceFd(&fd)).unwrap();
    });
}

/// Blocking receives change the park state and may take the descriptor's readiness; the
/// descriptor must still tell the truth afterwards, for a loop doing one receive per wakeup.
#[test]
fn blocking_receives_mixed_with_the_descriptor() {
    against_publisher("mixed", 0, Start::Newest, |mut sub| {
        let ep = Epoll::new(sub.as_raw_fd(), false);
        let mut s = Stream::new(COUNT);
        let mut round = 0u64;
        loop {
            round += 1;
            let outcome = if round % 7 < 3 {
                // Blocking, parking on the ring's wake word when nothing is there.
                s.take(sub.recv_timeout(HANG))
            } else {
                if !ep.wait() {
                    s.hung("blocking receives mixed with the descriptor");
                }
                s.take(sub.try_recv())
            };
            if outcome == Outcome::End {
                break;
            }
        }
    });
}

/// A batching receiver: a blocking receive, then `try_recv_ready` until `Empty`; every few
/// rounds a wait on the descriptor and `try_recv` instead, which must still find the descriptor
/// readable whenever a message waits.
#[test]
fn batches_of_ready_messages_mixed_with_the_descriptor() {
    against_publisher("batches", 0, Start::Newest, |mut sub| {
        let ep = Epoll::new(sub.as_raw_fd(), false);
        let mut s = Stream::new(COUNT);
        let mut round = 0u64;
        loop {
            round += 1;
            let first = if round % 5 == 0 {
                if !ep.wait() {
                    s.hung("batches mixed with the descriptor");
                }
                s.take(sub.try_recv())
            } else {
                s.take(sub.recv_timeout(HANG))
            };
            if first == Outcome::End {
                break;
            }
            while s.take(sub.try_recv_ready()) == Outcome::Message {}
        }
    });
}

/// A late joiner's history is readable at once: no call before the first wait.
#[test]
fn history_readable_from_connect() {
    let history = 20;
    against_publisher("oldest", history, Start::Oldest, |sub| {
        let fd = sub.as_raw_fd();
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout only looks.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        assert_eq!(n, 1, "history waiting, yet the descriptor is not readable");
        readiness_first_until_empty(sub, true, "late joiner, edge-triggered");
    });
}

/// The end of the stream alone makes the descriptor readable: a subscriber parked on it with
/// nothing left to read learns of the publisher's exit.
#[test]
fn end_of_stream_makes_the_descriptor_readable() {
    against_publisher("end", 0, Start::Newest, |mut sub| {
        let mut s = Stream::new(COUNT);
        while s.next < COUNT {
            match s.take(sub.recv_timeout(HANG)) {
                Outcome::Message => {}
                o => panic!("{o:?} before the end"),
            }
        }
        // Parked with everything read: only the end can wake us.
        let ep = Epoll::new(sub.as_raw_fd(), true);
        loop {
            match s.take(sub.try_recv()) {
                Outcome::Empty => {
                    if !ep.wait() {
                        s.hung("end of stream");
                    }
                }
                Outcome::End => break,
                Outcome::Message => panic!("a message after the last"),
            }
        }
    });
}

/// A lossy subscriber that falls behind: a lag is something to receive, so the descriptor must
/// say so too. One receive per wakeup, level-triggered, pausing now and then so that the
/// publisher laps it; every message is received or counted, then the end.
#[test]
fn lossy_lags_through_level_triggered_one_receive_per_wakeup() {
    let fds = FdGuard::new();
    let publisher = publisher("lossy", COUNT, 0);
    let mut sub = subscribe_as("lossy", Start::Newest, Mode::Lossy);
    let ep = Epoll::new(sub.as_raw_fd(), false);
    let mut s = Stream::lossy(COUNT);
    let mut wakeups = 0u64;
    loop {
        if !ep.wait() {
            s.hung("lossy, level-triggered, one receive per wakeup");
        }
        wakeups += 1;
        if wakeups % 500 == 0 {
            std::thread::sleep(Duration::from_millis(3));
        }
        if s.take(sub.try_recv()) == Outcome::End {
            break;
        }
    }
    assert!(s.lagged > 0, "never lapped: the test tested no lag");
    drop(ep);
    drop(sub);
    publisher.finish();
    fds.check();
}
