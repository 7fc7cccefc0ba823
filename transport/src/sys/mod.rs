//! The syscalls the transport makes, each wrapped once, and nothing else, split by kernel
//! domain as rustix splits its own modules.
//!
//! Every other module reaches the kernel through these helpers (memory maps go through `memmap2`
//! in [`shm`](crate::shm)). Each helper is named after its syscall, says so in its first doc
//! line, and returns [`std::io::Result`] or [`RecvFdsError`](packet::RecvFdsError): `rustix::io::Errno` never leaves
//! this module.
//!
//! | module | kernel domain |
//! |---|---|
//! | [`fs`] | memfds, seals, sizes, reopening, directory locks |
//! | [`event`] | eventfd, timerfd, `poll`, epoll |
//! | [`fork`] | descriptors a forked child must not keep (`pthread_atfork`, `dup3`) |
//! | [`futex`] | sleeping on and waking a shared word |
//! | [`net`] | unix `SOCK_SEQPACKET` sockets, their options, peer credentials |
//! | [`packet`] | sending and receiving packets, with descriptors (`SCM_RIGHTS`) or without |
//! | [`process`] | descriptor limits and counts, the uid, the machine's runnable threads |
//! | [`reaper`] | closing descriptors a peer sent off the receiving thread |
//!
//! # Failure
//!
//! - `EINTR` is retried everywhere. Waits retry with the time left before their deadline, so a
//!   signal storm can neither shorten nor stretch a timeout.
//! - Sends use `MSG_NOSIGNAL`, so a vanished peer never raises a `SIGPIPE` that kills a host
//!   process which did not ignore it. (Linux raises none for `SOCK_SEQPACKET` today; the flag
//!   makes that a guarantee rather than a kernel detail.)
//! - A closed peer is [`io::ErrorKind::BrokenPipe`] to senders and [`RecvFdsError::HungUp`] to
//!   receivers, who first get every packet it sent before closing. (Linux reports a peer that
//!   closed with our packets unread as `ECONNRESET`, once, ahead of its queued packets; these
//!   helpers absorb that.)
//! - Receives use `MSG_CMSG_CLOEXEC` and hold every received descriptor as a
//!   [`Received`](reaper::Received), closed by the reaper thread unless kept: a close can wait
//!   as long as the sender likes (a lingering TCP socket). A packet that was truncated, or
//!   carried more or fewer descriptors than expected, is an error, and every descriptor that
//!   arrived with it is handed to the reaper before the error is returned: a hostile peer can
//!   neither leak descriptors into this process nor hold up the thread that received them.

pub(crate) mod event;
pub(crate) mod fork;
pub(crate) mod fs;
pub(crate) mod futex;
pub(crate) mod net;
pub(crate) mod packet;
pub(crate) mod process;
pub(crate) mod reaper;
#[cfg(test)]
mod tests;

use std::io;
use std::time::{Duration, Instant};

use rustix::event::Timespec;
use rustix::io::Errno;

/// Longest single kernel wait; longer timeouts loop. Without `epoll_pwait2`, `epoll_wait` rejects
/// timeouts above `c_int::MAX` milliseconds (about 24.8 days).
const MAX_WAIT_SLICE: Duration = Duration::from_secs(24 * 60 * 60);

/// Runs a syscall until it returns anything but `EINTR`.
fn retry_eintr<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match call() {
            Err(Errno::INTR) => {}
            result => return result.map_err(io::Error::from),
        }
    }
}

/// The end of a timed wait; `None` waits forever (so does a timeout too large for `Instant`).
struct Deadline(Option<Instant>);

impl Deadline {
    fn after(timeout: Option<Duration>) -> Self {
        Self(timeout.and_then(|timeout| Instant::now().checked_add(timeout)))
    }

    /// The time to pass to the next kernel wait: what is left, at most [`MAX_WAIT_SLICE`].
    fn next_slice(&self) -> io::Result<Timespec> {
        let left = self.0.map_or(MAX_WAIT_SLICE, |end| {
            end.saturating_duration_since(Instant::now())
                .min(MAX_WAIT_SLICE)
        });
        Timespec::try_from(left).map_err(|_| Errno::INVAL.into())
    }

    fn expired(&self) -> bool {
        self.0.is_some_and(|end| Instant::now() >= end)
    }
}
