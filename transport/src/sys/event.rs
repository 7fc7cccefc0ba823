//! Readiness: eventfd counters, timerfds, `poll` and epoll.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::event::EventfdFlags;
use rustix::event::epoll;
#[cfg(any(test, feature = "test-support"))]
use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;

use super::Deadline;

/// `eventfd(0, EFD_CLOEXEC [| EFD_NONBLOCK])`—Creates an eventfd with a zero counter.
pub(crate) fn eventfd_create(nonblocking: bool) -> io::Result<OwnedFd> {
    let mut flags = EventfdFlags::CLOEXEC;
    if nonblocking {
        flags |= EventfdFlags::NONBLOCK;
    }
    Ok(rustix::event::eventfd(0, flags)?)
}

/// `write(eventfd, 1u64)`—Adds one to an eventfd counter, waking its waiters.
///
/// A saturated counter (`EAGAIN`, after 2^64−2 unread signals) is already readable, so that
/// error is success here.
pub(crate) fn eventfd_signal(fd: BorrowedFd<'_>) -> io::Result<()> {
    loop {
        match rustix::io::write(fd, &1u64.to_ne_bytes()) {
            Ok(_) | Err(Errno::AGAIN) => return Ok(()),
            Err(Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

/// `read(eventfd)`—Takes and resets an eventfd counter; returns 0 when it was already zero.
///
/// The eventfd must be non-blocking (descriptors received from a peer should get
/// [`set_nonblocking`] first): on a blocking one this waits for a signal.
pub(crate) fn eventfd_drain(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut counter = [0u8; 8];
    loop {
        match rustix::io::read(fd, &mut counter) {
            Ok(8) => return Ok(u64::from_ne_bytes(counter)),
            // Not an eventfd: an eventfd read is all 8 bytes or an error.
            Ok(_) => return Err(io::Error::from(io::ErrorKind::InvalidData)),
            Err(Errno::AGAIN) => return Ok(0),
            Err(Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

/// `timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)`—Creates a disarmed timer.
pub(crate) fn timerfd_create() -> io::Result<OwnedFd> {
    use rustix::time::{TimerfdClockId, TimerfdFlags};
    Ok(rustix::time::timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK,
    )?)
}

/// `timerfd_settime(fd, 0, after)`—Arms a one-shot timer to expire `after` from now (at least
/// 1 ns: zero would disarm it), replacing any earlier arming. Each expiry wakes the timer's
/// waiters once; an edge-triggered epoll registration sees one event per expiry.
pub(crate) fn timerfd_arm(fd: BorrowedFd<'_>, after: Duration) -> io::Result<()> {
    use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec};
    let after = after.max(Duration::from_nanos(1));
    let spec = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: Timespec {
            tv_sec: after.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: after.subsec_nanos().into(),
        },
    };
    rustix::time::timerfd_settime(fd, TimerfdTimerFlags::empty(), &spec)?;
    Ok(())
}

/// `timerfd_settime(fd, 0, 0)`—Disarms a timer: an expiry that has not happened yet never will.
pub(crate) fn timerfd_disarm(fd: BorrowedFd<'_>) -> io::Result<()> {
    use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec};
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let spec = Itimerspec {
        it_interval: zero,
        it_value: zero,
    };
    rustix::time::timerfd_settime(fd, TimerfdTimerFlags::empty(), &spec)?;
    Ok(())
}

#[cfg(any(test, feature = "test-support"))]
/// Polls `fds` for input until one is ready or the deadline passes (`revents` stay zero then).
fn poll_in(fds: &mut [PollFd<'_>], timeout: Option<Duration>) -> io::Result<()> {
    let deadline = Deadline::after(timeout);
    loop {
        let slice = deadline.next_slice()?;
        match rustix::event::poll(fds, Some(&slice)) {
            Ok(0) | Err(Errno::INTR) if !deadline.expired() => {}
            Ok(_) | Err(Errno::INTR) => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
/// Whether a polled descriptor is worth a read: input, hang-up or a pending error all are, so a
/// caller learns of a dead peer by reading.
fn is_ready(fd: &PollFd<'_>) -> io::Result<bool> {
    let revents = fd.revents();
    if revents.contains(PollFlags::NVAL) {
        return Err(Errno::BADF.into());
    }
    Ok(revents.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR))
}

#[cfg(any(test, feature = "test-support"))]
/// `poll([fd], POLLIN, timeout)`—Waits until `fd` is readable, hung up, or the timeout passes.
///
/// Returns `false` on timeout. `None` waits forever; `Some(Duration::ZERO)` only checks.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    poll_in(&mut fds, timeout)?;
    is_ready(&fds[0])
}

#[cfg(test)]
/// `poll([a, b], POLLIN, timeout)`—Waits until `a` or `b` is readable, hung up, or the timeout
/// passes; returns which of them are ready.
///
/// Used to wait on an eventfd and a control socket at once.
pub(crate) fn wait_readable2(
    a: BorrowedFd<'_>,
    b: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> io::Result<(bool, bool)> {
    let mut fds = [
        PollFd::from_borrowed_fd(a, PollFlags::IN),
        PollFd::from_borrowed_fd(b, PollFlags::IN),
    ];
    poll_in(&mut fds, timeout)?;
    Ok((is_ready(&fds[0])?, is_ready(&fds[1])?))
}

/// `epoll_create1(EPOLL_CLOEXEC)`—Creates an epoll instance.
pub(crate) fn epoll_create() -> io::Result<OwnedFd> {
    Ok(epoll::create(epoll::CreateFlags::CLOEXEC)?)
}

/// `epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET)`—Registers `fd` edge-triggered.
///
/// Each write to an eventfd registered this way yields one event per waiting epoll instance
/// without anyone reading the eventfd, which lets many subscribers share one wake-up eventfd.
pub(crate) fn epoll_add_edge(
    epfd: BorrowedFd<'_>,
    fd: BorrowedFd<'_>,
    token: u64,
) -> io::Result<()> {
    let flags = epoll::EventFlags::IN | epoll::EventFlags::ET;
    Ok(epoll::add(
        epfd,
        fd,
        epoll::EventData::new_u64(token),
        flags,
    )?)
}

/// `epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN)`—Registers `fd` level-triggered.
pub(crate) fn epoll_add(epfd: BorrowedFd<'_>, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
    let flags = epoll::EventFlags::IN;
    Ok(epoll::add(
        epfd,
        fd,
        epoll::EventData::new_u64(token),
        flags,
    )?)
}

/// `epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLRDHUP [| EPOLLIN])`—Registers `fd` for hang-ups
/// and errors, and level-triggered for data only if `data`: without it, data arriving on `fd`
/// does not wake this epoll instance.
pub(crate) fn epoll_add_hangup(
    epfd: BorrowedFd<'_>,
    fd: BorrowedFd<'_>,
    token: u64,
    data: bool,
) -> io::Result<()> {
    let mut flags = epoll::EventFlags::RDHUP;
    if data {
        flags |= epoll::EventFlags::IN;
    }
    Ok(epoll::add(
        epfd,
        fd,
        epoll::EventData::new_u64(token),
        flags,
    )?)
}

/// `epoll_ctl(epfd, EPOLL_CTL_DEL, fd)`—Unregisters `fd`.
pub(crate) fn epoll_del(epfd: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(epoll::delete(epfd, fd)?)
}

/// Most events one [`epoll_wait`] call returns.
const EPOLL_BATCH: usize = 16;

/// `epoll_wait(epfd, events, timeout)`—Waits for events and writes their tokens to `tokens`.
///
/// Returns the number of events (at most `tokens.len()` and 16), or 0 when the timeout passes.
///
/// Called through the C library, not as a raw `epoll_pwait` without its mask size, which
/// memcheck reports as uninitialised in programs that run the library under valgrind.
pub(crate) fn epoll_wait(
    epfd: BorrowedFd<'_>,
    tokens: &mut [u64],
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let room = tokens.len().min(EPOLL_BATCH);
    if room == 0 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; EPOLL_BATCH];
    let deadline = Deadline::after(timeout);
    loop {
        let slice = deadline.next_slice()?;
        // Rounded up: a slice of less than a millisecond still sleeps.
        let ms = slice
            .tv_sec
            .saturating_mul(1000)
            .saturating_add((slice.tv_nsec + 999_999) / 1_000_000)
            .min(i64::from(i32::MAX)) as i32;
        // SAFETY: `events` has room for `room` (at most 16) entries, which the kernel writes;
        // `epfd` is a descriptor borrowed for the call.
        let n = unsafe { libc::epoll_wait(epfd.as_raw_fd(), events.as_mut_ptr(), room as i32, ms) };
        if n > 0 {
            let n = n as usize;
            for (token, event) in tokens.iter_mut().zip(&events[..n]) {
                *token = event.u64;
            }
            return Ok(n);
        }
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
        if deadline.expired() {
            return Ok(0);
        }
    }
}

#[cfg(test)]
/// `epoll_wait(epfd, [event], timeout)`—Waits for one event; returns 1, or 0 on timeout.
pub(crate) fn epoll_wait_one(epfd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<usize> {
    epoll_wait(epfd, &mut [0], timeout)
}
