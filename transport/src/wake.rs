//! Wakeups as the transport delivers them: the core decides *who* needs a wake (its `wake`
//! module: parked flags, the ring's wake word); this module makes the syscalls.
//!
//! | who waits | where it sleeps | who wakes it, how |
//! |---|---|---|
//! | a subscriber blocked in `recv` | a futex on the ring's wake word | the publisher, one `FUTEX_WAKE` for all of them ([`deliver`]) |
//! | a subscriber in an event loop | its descriptor (see [`readiness`](crate::readiness)) | the publisher, a one-byte doorbell on that subscriber's own connection ([`ring_doorbell`]) |
//! | the publisher waiting for space | an epoll set of every admitted connection ([`SpaceWait`]), directly, or inside an event loop's set of its own while a wait is armed | a subscriber that released, with a doorbell on its connection; the server thread when a subscriber leaves; in an event loop, also a timer of its own when the stall bound or a re-check is due |
//!
//! A busy subscriber costs the publisher nothing: the core asks for a wake only for those that
//! announced they park, and a commit that wakes nobody makes no syscall.
//!
//! # Overload and failure
//!
//! * No descriptor used for waking is shared with a peer: a doorbell is a non-blocking send on
//!   the publisher's own end of a connection, so a subscriber that stops reading (or makes its
//!   end blocking) cannot make a wake block; a full queue already means "look at the ring".
//! * A peer that floods doorbells costs at most [`DOORBELL_DRAIN_MAX`] reads per drain.
//! * A futex has no hang-up: sleepers re-check by themselves every [`PARK_RECHECK`], which bounds
//!   how late a subscriber notices a publisher that died without closing, and what a peer that
//!   withholds wakes can do (delay, never hang).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use shmcast_core::{Reader, SubscriberId, Wakeups, Writer};

use crate::sys::{self, fork::PrivateFd, packet::RecvFdsError};

/// How long a parked subscriber or a publisher waiting for space sleeps before re-checking by
/// itself. Wakeups are never lost between correct peers (the loom models check it); this bounds
/// how late a subscriber blocked in `recv` notices a publisher that died without closing (a
/// futex has no hang-up), and what a peer that withholds or floods doorbells can do: delay,
/// never hang.
pub(crate) const PARK_RECHECK: Duration = Duration::from_millis(100);

/// How many times a receive that may not sleep (a lapped lossy subscriber whose resume point is
/// not written yet) looks again at once before it starts to nap for [`STUCK_NAP`] between
/// looks: `recv` in a loop of its own, `try_recv` by arming the descriptor's timer. A writer
/// racing the reader settles within these; a ring that cannot progress (a publisher that died
/// mid-reservation, or a hostile one) then costs a wakeup per nap instead of a spinning core.
pub(crate) const STUCK_SPINS: u32 = 64;

/// The nap of a receive stuck on a ring that does not progress; a hang-up ends it at once.
pub(crate) const STUCK_NAP: Duration = Duration::from_millis(1);

/// Most doorbell packets [`drain_doorbells`] takes in one call.
pub(crate) const DOORBELL_DRAIN_MAX: usize = 64;

/// Rings a peer's doorbell: one byte on a connected packet socket, which makes the peer's end
/// readable ("look at the ring").
///
/// Never blocks. A full queue means the peer has doorbells pending and is already readable: that
/// is success.
pub(crate) fn ring_doorbell(sock: BorrowedFd<'_>) -> io::Result<()> {
    sys::packet::try_send_packet(sock, &[1]).map(drop)
}

/// Takes pending doorbells from our end of a connection (at most [`DOORBELL_DRAIN_MAX`]; a flood
/// leaves the rest readable). `sock` must be our own non-blocking end (each end is a separate
/// file, so the peer cannot change that). Descriptors a hostile peer attaches are closed.
/// Returns `false` if the peer hung up or the socket failed.
pub(crate) fn drain_doorbells(sock: BorrowedFd<'_>) -> bool {
    drain_at_most(sock, DOORBELL_DRAIN_MAX)
}

/// Takes everything queued on `sock` (a connection just admitted, whose peer can send no more
/// descriptors), closing what it carried: nothing a subscriber sends before its welcome is a
/// doorbell. Bounded by what one connection can queue.
pub(crate) fn drain_admitted(sock: BorrowedFd<'_>) {
    drain_at_most(sock, ADMISSION_DRAIN_MAX);
}

/// Receives and drops up to `max` packets from `sock`, closing any descriptors they carry;
/// `false` if the peer hung up or the socket failed.
fn drain_at_most(sock: BorrowedFd<'_>, max: usize) -> bool {
    let mut buf = [0u8; 16];
    for _ in 0..max {
        match sys::packet::recv_with_fds(sock, &mut buf, 0) {
            Ok(_) | Err(RecvFdsError::WrongFdCount { .. } | RecvFdsError::Truncated) => {}
            Err(RecvFdsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
    true
}

/// Most packets [`drain_admitted`] takes: more than a connection's send buffer can queue.
const ADMISSION_DRAIN_MAX: usize = 4096;

/// What the writer keeps per subscriber: how to reach it.
pub(crate) struct Link {
    /// Its connection: the doorbell a subscriber waiting in an event loop watches, and on which
    /// it rings the publisher back when it frees space. Only this side's end: no flag the
    /// subscriber sets can make a send on it block (see [`ring_doorbell`]).
    pub(crate) conn: Arc<PrivateFd>,
}

/// Runs `event` (a commit, a close, a demotion) and delivers the wakeups it asks for: a doorbell
/// to each subscriber waiting on its descriptor, one `FUTEX_WAKE` for all those waiting on the
/// ring's wake word. Returns the syscalls made: none when nobody is parked.
pub(crate) fn deliver(
    writer: &mut Writer<Link>,
    event: impl FnOnce(&mut Writer<Link>, &mut dyn FnMut(&Link)) -> Wakeups,
) -> u64 {
    let w = event(writer, &mut |link: &Link| {
        // Full (a doorbell is already pending) or gone (the server thread removes it).
        let _ = ring_doorbell(link.conn.as_fd());
    });
    if w.wake_word {
        let _ = sys::futex::futex_wake_all(writer.wake_word());
    }
    w.syscalls() as u64
}

/// How a sleep on the ring's wake word ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slept {
    /// The reader may not sleep now: data arrived meanwhile, or its state forbids parking.
    NotParked,
    /// The word moved: somebody committed, demoted or closed.
    Woken,
    /// The word did not move within the timeout (or the sleep was interrupted): a dead publisher
    /// wakes nobody, so the caller should look for a hang-up.
    Unchanged,
}

/// Parks `reader` on the ring's wake word for at most `timeout`: announces the park, re-checks,
/// sleeps on a futex only if nothing arrived in between, and unparks.
pub(crate) fn sleep_on_word(reader: &mut Reader, timeout: Duration) -> io::Result<Slept> {
    let Some(word) = reader.prepare_park_on_word() else {
        return Ok(Slept::NotParked);
    };
    let waited = sys::futex::futex_wait(reader.wake_word(), word, timeout);
    reader.unpark();
    waited?;
    Ok(if reader.wake_word().load(Ordering::Relaxed) == word {
        Slept::Unchanged
    } else {
        Slept::Woken
    })
}

/// `space_epoll` token of the server thread's kick (subscriber ids start at 0 and never reach
/// it).
const KICK: u64 = u64::MAX;

/// Tokens in the event loop's set: the space set, and the timer.
const SPACE: u64 = 1;
const TIMER: u64 = 2;

/// Where the publisher waits for space: an epoll set of every admitted connection (token: the
/// subscriber id; a subscriber that releases space while the publisher waits rings its doorbell)
/// and of a private eventfd that the server thread signals when a subscriber leaves (its space
/// is free).
///
/// A publisher in an event loop waits on a set of its own (`Publisher::space_fd`), which holds
/// the space set only while a wait is armed ([`arm_watch`](Self::arm_watch)), and a private
/// timer that ends the wait when the publisher must look again by itself. Whatever reaches the
/// space set between waits (a doorbell rung just before a wait was withdrawn, a departure)
/// therefore never makes that descriptor readable.
pub(crate) struct SpaceWait {
    epoll: OwnedFd,
    kick: OwnedFd,
    /// The event loop's set: `epoll` while a wait is armed, and `timer`.
    watch: OwnedFd,
    /// Registered edge-triggered in `watch` and never read: each expiry makes one event.
    timer: OwnedFd,
}

/// Most events one [`SpaceWait::wait`] takes.
pub(crate) const SPACE_EVENTS: usize = 16;

impl SpaceWait {
    /// An empty set with its kick, and the event loop's set with its timer.
    pub(crate) fn new() -> io::Result<Self> {
        let epoll = sys::event::epoll_create()?;
        let kick = sys::event::eventfd_create(true)?;
        sys::event::epoll_add(epoll.as_fd(), kick.as_fd(), KICK)?;
        let watch = sys::event::epoll_create()?;
        let timer = sys::event::timerfd_create()?;
        sys::event::epoll_add_edge(watch.as_fd(), timer.as_fd(), TIMER)?;
        Ok(SpaceWait {
            epoll,
            kick,
            watch,
            timer,
        })
    }

    /// Watches an admitted subscriber's connection for its doorbells.
    pub(crate) fn watch(&self, conn: BorrowedFd<'_>, id: SubscriberId) -> io::Result<()> {
        sys::event::epoll_add(self.epoll.as_fd(), conn, id.0)
    }

    /// Stops watching a departed subscriber's connection.
    pub(crate) fn unwatch(&self, conn: BorrowedFd<'_>) {
        let _ = sys::event::epoll_del(self.epoll.as_fd(), conn);
    }

    /// The space set itself, for a reactor to watch (`shmcast::tokio`).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }

    /// The event loop's set, readable only while a wait is armed.
    pub(crate) fn watch_fd(&self) -> BorrowedFd<'_> {
        self.watch.as_fd()
    }

    /// Arms an event loop's wait: the space set joins the event loop's set, and the timer
    /// makes it readable by itself `after` from now. Undone by [`end_watch`](Self::end_watch).
    pub(crate) fn arm_watch(&self, after: Duration) -> io::Result<()> {
        sys::event::epoll_add(self.watch.as_fd(), self.epoll.as_fd(), SPACE)?;
        sys::event::timerfd_arm(self.timer.as_fd(), after)
    }

    /// Ends an event loop's wait: the space set leaves the event loop's set, the timer is
    /// disarmed, and an expiry already reported is taken, so that the set is quiet.
    pub(crate) fn end_watch(&self) {
        let _ = sys::event::epoll_del(self.watch.as_fd(), self.epoll.as_fd());
        let _ = sys::event::timerfd_disarm(self.timer.as_fd());
        let mut tokens = [0u64; 2];
        let _ = sys::event::epoll_wait(self.watch.as_fd(), &mut tokens, Some(Duration::ZERO));
    }

    /// Wakes a publisher waiting for space (a subscriber left).
    pub(crate) fn kick(&self) {
        let _ = sys::event::eventfd_signal(self.kick.as_fd());
    }

    /// Sleeps until a watched subscriber rings or the kick fires, at most `timeout`; writes the
    /// tokens of what is ready into `tokens` and returns how many.
    pub(crate) fn wait(
        &self,
        tokens: &mut [u64; SPACE_EVENTS],
        timeout: Duration,
    ) -> io::Result<usize> {
        sys::event::epoll_wait(self.epoll.as_fd(), tokens, Some(timeout))
    }

    /// Takes the doorbells of the subscribers [`wait`](Self::wait) reported (and the kick), so
    /// that they do not stay readable. Bounded: a subscriber that floods its connection costs a
    /// waiting publisher some reads, never a hang.
    pub(crate) fn drain(&self, writer: &Writer<Link>, tokens: &[u64]) {
        for &token in tokens {
            if token == KICK {
                let _ = sys::event::eventfd_drain(self.kick.as_fd());
            } else if let Some(link) = writer.attachment(SubscriberId(token)) {
                drain_doorbells(link.conn.as_fd());
            }
        }
    }
}
