//! The subscriber's descriptor for event loops: one epoll set that is readable when the
//! publisher rings this subscriber's doorbell or hangs up, or when the subscriber's own timer
//! expires.
//!
//! The timer is what lets `try_recv` make the descriptor readable by itself (at once, or after
//! a nap on a ring that cannot progress) without any peer's help: it is registered
//! edge-triggered and never read, so each expiry makes exactly one event.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use crate::sys;

const TOKEN_TIMER: u64 = 1;
const TOKEN_SOCKET: u64 = 2;

/// The epoll set behind a subscriber's [`AsFd`](std::os::fd::AsFd), and its own timer.
#[derive(Debug)]
pub(crate) struct Readiness {
    /// What the subscriber exposes: its connection (level-triggered) and `timer`.
    epoll: OwnedFd,
    /// A timer only this subscriber holds, registered edge-triggered in `epoll` and never read.
    timer: OwnedFd,
}

impl Readiness {
    /// Watches `conn` (the subscriber's end of its connection) for doorbells and hang-ups.
    pub(crate) fn new(conn: BorrowedFd<'_>) -> io::Result<Self> {
        let timer = sys::event::timerfd_create()?;
        let epoll = sys::event::epoll_create()?;
        sys::event::epoll_add(epoll.as_fd(), conn, TOKEN_SOCKET)?;
        // Edge-triggered and never read: each expiry makes one event.
        sys::event::epoll_add_edge(epoll.as_fd(), timer.as_fd(), TOKEN_TIMER)?;
        Ok(Readiness { epoll, timer })
    }

    /// Waits up to `timeout` (`Some(ZERO)`: only looks) and says whether the connection has
    /// something to read (doorbells or a hang-up).
    pub(crate) fn poll(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let mut tokens = [0u64; 4];
        let n = sys::event::epoll_wait(self.epoll.as_fd(), &mut tokens, timeout)?;
        Ok(tokens[..n].contains(&TOKEN_SOCKET))
    }

    /// Makes the descriptor readable by itself `after` from now (at once for `ZERO`), replacing
    /// any earlier arming.
    pub(crate) fn arm(&self, after: Duration) -> io::Result<()> {
        sys::event::timerfd_arm(self.timer.as_fd(), after)
    }
}

impl AsFd for Readiness {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}
