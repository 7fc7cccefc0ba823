//! The syscalls the transport makes, each wrapped once, and nothing else.
//!
//! Every other module reaches the kernel through these helpers (memory maps go through `memmap2`
//! in [`shm`](crate::shm)). Each helper is named after its syscall, says so in its first doc
//! line, and returns [`std::io::Result`] or [`RecvFdsError`]: `rustix::io::Errno` never leaves
//! this module.
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
//! - Receives use `MSG_CMSG_CLOEXEC` and hold every received descriptor as an [`OwnedFd`]. A
//!   packet that was truncated, or carried more or fewer descriptors than expected, is an error,
//!   and every descriptor that arrived with it is closed before the error is returned: a hostile
//!   peer cannot leak descriptors into this process.

// The only unsafe code is `peer_cred`, which calls getsockopt through libc (see its docs).
#![allow(unsafe_code)]
// A few helpers (the level-triggered waits, `epoll_wait_one`) serve only the tests.
#![allow(dead_code)]

use std::fmt;
use std::io;
use std::mem::{MaybeUninit, size_of};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
use rustix::fs::{MemfdFlags, Mode, OFlags};
use rustix::io::{Errno, IoSlice, IoSliceMut};
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use rustix::thread::futex::Flags as FutexFlags;

pub(crate) use rustix::fs::SealFlags;

/// Most descriptors one packet may carry; the handshake's welcome carries five.
pub(crate) const MAX_FDS_PER_PACKET: usize = 8;

/// Receive room for descriptors beyond the expected count, so that a peer sending a few too many
/// makes them arrive (and be closed) as a counted [`RecvFdsError::WrongFdCount`] rather than be
/// cut off by the kernel.
const EXTRA_FD_SLOTS: usize = 4;

/// Pending connections a listening socket queues before `connect` blocks.
const LISTEN_BACKLOG: i32 = 128;

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

/// `memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)`—Creates an anonymous file that can be
/// sealed.
///
/// Also asks for `MFD_NOEXEC_SEAL` (the file can never be made executable) and falls back to
/// asking without it on kernels older than 6.3, which reject the flag with `EINVAL`.
pub(crate) fn memfd_create_sealable(name: &str) -> io::Result<OwnedFd> {
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    match rustix::fs::memfd_create(name, flags | MemfdFlags::NOEXEC_SEAL) {
        Err(Errno::INVAL) => Ok(rustix::fs::memfd_create(name, flags)?),
        result => Ok(result?),
    }
}

/// `ftruncate(fd, len)`—Sets the size of a file.
pub(crate) fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    retry_eintr(|| rustix::fs::ftruncate(fd, len))
}

/// `fstat(fd).st_size`—Returns the size of a file in bytes.
pub(crate) fn fstat_size(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let stat = rustix::fs::fstat(fd)?;
    u64::try_from(stat.st_size).map_err(|_| Errno::OVERFLOW.into())
}

/// `fcntl(fd, F_ADD_SEALS, seals)`—Adds seals to a memfd; they can never be removed.
pub(crate) fn add_seals(fd: BorrowedFd<'_>, seals: SealFlags) -> io::Result<()> {
    Ok(rustix::fs::fcntl_add_seals(fd, seals)?)
}

/// `fcntl(fd, F_GET_SEALS)`—Returns the seals of a memfd.
///
/// Fails with [`io::ErrorKind::InvalidInput`] (`EINVAL`) when `fd` is not a sealable file.
pub(crate) fn get_seals(fd: BorrowedFd<'_>) -> io::Result<SealFlags> {
    Ok(rustix::fs::fcntl_get_seals(fd)?)
}

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

/// `getrlimit(RLIMIT_NOFILE)`—The soft limit on this process's descriptors (`u64::MAX` when
/// unlimited or unknown).
pub(crate) fn descriptor_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
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

/// `futex(word, FUTEX_WAIT, expected, timeout)`—Sleeps while `*word == expected`, at most
/// `timeout`, on a word in memory shared between processes (the ring's wake word).
///
/// Returns when woken, when the word no longer holds `expected`, on timeout or on a signal:
/// callers re-check their condition in every case, so all of these are `Ok`. Waiting needs only
/// read access, so it works on a read-only mapping.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) -> io::Result<()> {
    let timeout = Timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    match rustix::thread::futex::wait(word, FutexFlags::empty(), expected, Some(&timeout)) {
        Ok(()) | Err(Errno::AGAIN | Errno::TIMEDOUT | Errno::INTR) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// `futex(word, FUTEX_WAKE, INT_MAX)`—Wakes every process waiting on `word`; returns how many.
///
/// Cannot block, whatever any other process does with the word or its memory.
pub(crate) fn futex_wake_all(word: &AtomicU32) -> io::Result<usize> {
    Ok(rustix::thread::futex::wake(
        word,
        FutexFlags::empty(),
        i32::MAX as u32,
    )?)
}

/// `send(sock, [1], MSG_DONTWAIT | MSG_NOSIGNAL)`—Rings a peer's doorbell: one byte on a
/// connected packet socket, which makes the peer's end readable.
///
/// Never blocks: `MSG_DONTWAIT` applies to this call alone, so no flag the peer sets on its own
/// end (or on a shared open file description, which a socket end is not) can change that. A full
/// queue means the peer has doorbells pending and is already readable: that is success.
pub(crate) fn doorbell_ring(sock: BorrowedFd<'_>) -> io::Result<()> {
    match retry_eintr(|| rustix::net::send(sock, &[1], SendFlags::DONTWAIT | SendFlags::NOSIGNAL)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(e),
    }
}

/// Most doorbell packets [`doorbell_drain`] takes in one call.
const DOORBELL_DRAIN_MAX: usize = 64;

/// `recvmsg(sock, MSG_CMSG_CLOEXEC)` until `EAGAIN`—Takes pending doorbells from a connected
/// packet socket (at most 64; a flood leaves the rest readable). `sock` must be our own
/// non-blocking end (each end is a separate file, so the peer cannot change that). Descriptors
/// a hostile peer attaches are closed. Returns `false` if the peer hung up or the socket failed.
pub(crate) fn doorbell_drain(sock: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16];
    for _ in 0..DOORBELL_DRAIN_MAX {
        match recv_with_fds(sock, &mut buf, 0) {
            Ok(_) | Err(RecvFdsError::WrongFdCount { .. } | RecvFdsError::Truncated) => {}
            Err(RecvFdsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
    true
}

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

/// Whether a polled descriptor is worth a read: input, hang-up or a pending error all are, so a
/// caller learns of a dead peer by reading.
fn is_ready(fd: &PollFd<'_>) -> io::Result<bool> {
    let revents = fd.revents();
    if revents.contains(PollFlags::NVAL) {
        return Err(Errno::BADF.into());
    }
    Ok(revents.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR))
}

/// `poll([fd], POLLIN, timeout)`—Waits until `fd` is readable, hung up, or the timeout passes.
///
/// Returns `false` on timeout. `None` waits forever; `Some(Duration::ZERO)` only checks.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    poll_in(&mut fds, timeout)?;
    is_ready(&fds[0])
}

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

/// `epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLRDHUP)`—Registers `fd` for hang-ups and errors
/// only: data arriving on it does not wake this epoll instance.
pub(crate) fn epoll_add_hangup(
    epfd: BorrowedFd<'_>,
    fd: BorrowedFd<'_>,
    token: u64,
) -> io::Result<()> {
    Ok(epoll::add(
        epfd,
        fd,
        epoll::EventData::new_u64(token),
        epoll::EventFlags::RDHUP,
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
pub(crate) fn epoll_wait(
    epfd: BorrowedFd<'_>,
    tokens: &mut [u64],
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let room = tokens.len().min(EPOLL_BATCH);
    if room == 0 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let mut events = [MaybeUninit::<epoll::Event>::uninit(); EPOLL_BATCH];
    let deadline = Deadline::after(timeout);
    loop {
        let slice = deadline.next_slice()?;
        match epoll::wait(epfd, &mut events[..room], Some(&slice)) {
            Ok((ready, _)) if !ready.is_empty() => {
                for (token, event) in tokens.iter_mut().zip(ready.iter()) {
                    // `Event` is packed: copy the field out before calling a method on it.
                    let data = event.data;
                    *token = data.u64();
                }
                return Ok(ready.len());
            }
            Ok(_) | Err(Errno::INTR) if !deadline.expired() => {}
            Ok(_) | Err(Errno::INTR) => return Ok(0),
            Err(err) => return Err(err.into()),
        }
    }
}

/// `epoll_wait(epfd, [event], timeout)`—Waits for one event; returns 1, or 0 on timeout.
pub(crate) fn epoll_wait_one(epfd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<usize> {
    epoll_wait(epfd, &mut [0], timeout)
}

/// `socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)`—Creates an unconnected packet socket.
fn seqpacket_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// `socket` + `bind(path)` + `chmod(path, 0600)` + `listen(128)`—Creates a listening
/// `SOCK_SEQPACKET` socket at `path`.
///
/// Fails with [`io::ErrorKind::AddrInUse`] when `path` exists; deciding whether an existing
/// socket is stale is the caller's job (see [`seqpacket_connect`]).
///
/// The socket file is made 0600 after `bind`, because a socket has no mode to set before its file
/// exists and the process-wide umask is not ours to change. Nobody can connect in between:
/// connecting to a socket that is not yet listening is refused. `chmod` follows the path, so
/// `path` must live in a directory only we can write (the topic directory is 0700). If anything
/// after `bind` fails, the file is removed again.
pub(crate) fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    let addr = SocketAddrUnix::new(path)?;
    let sock = seqpacket_socket()?;
    rustix::net::bind(&sock, &addr)?;
    let setup = rustix::fs::chmod(path, Mode::RUSR | Mode::WUSR)
        .and_then(|()| rustix::net::listen(&sock, LISTEN_BACKLOG));
    if let Err(err) = setup {
        // We just created this file; left behind, it would look like a crashed publisher's.
        let _ = rustix::fs::unlink(path);
        return Err(err.into());
    }
    Ok(sock)
}

/// `accept4(listener, SOCK_CLOEXEC [| SOCK_NONBLOCK])`—Accepts a pending connection.
///
/// On a non-blocking listener with nothing pending this fails with
/// [`io::ErrorKind::WouldBlock`]. `nonblocking` sets the mode of the accepted socket.
pub(crate) fn seqpacket_accept(listener: BorrowedFd<'_>, nonblocking: bool) -> io::Result<OwnedFd> {
    let mut flags = SocketFlags::CLOEXEC;
    if nonblocking {
        flags |= SocketFlags::NONBLOCK;
    }
    retry_eintr(|| rustix::net::accept_with(listener, flags))
}

/// `socket` + `connect(path)`—Connects a blocking `SOCK_SEQPACKET` socket to `path`.
///
/// The error kind tells the caller what it found: [`io::ErrorKind::NotFound`] (no publisher yet),
/// [`io::ErrorKind::ConnectionRefused`] (a stale socket file left by a dead publisher), or
/// [`io::ErrorKind::WouldBlock`] (the listener's backlog stayed full for `timeout`). `None` waits
/// for backlog room forever. The timeout bounds only the connect: the returned socket has no send
/// timeout.
pub(crate) fn seqpacket_connect(path: &Path, timeout: Option<Duration>) -> io::Result<OwnedFd> {
    let addr = SocketAddrUnix::new(path)?;
    let sock = seqpacket_socket()?;
    // The kernel bounds a unix-socket connect that waits for backlog room by SO_SNDTIMEO.
    if timeout.is_some() {
        set_send_timeout(sock.as_fd(), timeout)?;
    }
    retry_eintr(|| rustix::net::connect(&sock, &addr))?;
    if timeout.is_some() {
        set_send_timeout(sock.as_fd(), None)?;
    }
    Ok(sock)
}

/// `ioctl(fd, FIONBIO, nonblocking)`—Switches a descriptor's `O_NONBLOCK` mode.
///
/// The mode belongs to the open file description, so it changes for every process holding a
/// copy of the descriptor.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, nonblocking: bool) -> io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(fd, nonblocking)?)
}

/// `setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, timeout)`—Bounds every blocking receive.
///
/// A receive that times out fails with [`io::ErrorKind::WouldBlock`]. `None` removes the bound;
/// `Some(Duration::ZERO)` is rejected with [`io::ErrorKind::InvalidInput`].
pub(crate) fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    Ok(sockopt::set_socket_timeout(fd, Timeout::Recv, timeout)?)
}

/// `setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, timeout)`—Bounds every blocking send (and connect).
///
/// Same conventions as [`set_recv_timeout`].
pub(crate) fn set_send_timeout(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    Ok(sockopt::set_socket_timeout(fd, Timeout::Send, timeout)?)
}

/// The identity of a connected peer, as the kernel recorded it at `connect` time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerCred {
    /// The peer's process id in our pid namespace; `None` when it has none there (a peer in
    /// another container) or the socket is not connected. Informational only: pids are reused.
    pub(crate) pid: Option<i32>,
    /// The peer's effective uid (`u32::MAX` when the socket is not connected).
    pub(crate) uid: u32,
    /// The peer's effective gid (`u32::MAX` when the socket is not connected).
    pub(crate) gid: u32,
}

/// `getsockopt(sock, SOL_SOCKET, SO_PEERCRED)`—Returns the credentials of a unix socket's peer.
///
/// This calls libc rather than `rustix::net::sockopt::socket_peercred`: that function returns a
/// `UCred` whose pid is a non-zero type, but the kernel reports pid 0 for a peer outside our pid
/// namespace and for an unconnected socket, which a hostile or containerised peer controls.
pub(crate) fn peer_cred(sock: BorrowedFd<'_>) -> io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live locals for the whole call; the kernel writes at most
    // `len` bytes into `cred`, and any bytes are a valid `ucred` (three plain integers).
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != size_of::<libc::ucred>() {
        return Err(io::ErrorKind::InvalidData.into());
    }
    Ok(PeerCred {
        pid: (cred.pid != 0).then_some(cred.pid),
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// Runs a send until it is not interrupted, and makes every "peer gone" error `EPIPE` and a
/// partly sent packet an error.
///
/// A peer that closed with packets of ours still unread makes our next call fail once with
/// `ECONNRESET` instead of `EPIPE`; callers need not tell the two apart.
fn send_whole(len: usize, mut send: impl FnMut() -> rustix::io::Result<usize>) -> io::Result<()> {
    match retry_eintr(|| {
        send().map_err(|err| {
            if err == Errno::CONNRESET {
                Errno::PIPE
            } else {
                err
            }
        })
    })? {
        sent if sent == len => Ok(()),
        _ => Err(io::ErrorKind::WriteZero.into()),
    }
}

/// `sendmsg(sock, bytes, SCM_RIGHTS(fds), MSG_NOSIGNAL)`—Sends one packet carrying descriptors.
///
/// The receiver gets its own copies of `fds`; ours stay open. At most [`MAX_FDS_PER_PACKET`]
/// descriptors, else [`io::ErrorKind::InvalidInput`]. A closed peer is
/// [`io::ErrorKind::BrokenPipe`] (also when it closed with packets unread); a full peer queue blocks (bounded by [`set_send_timeout`]) or,
/// non-blocking, is [`io::ErrorKind::WouldBlock`].
pub(crate) fn send_with_fds(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    sendmsg_fds(sock, bytes, fds, SendFlags::NOSIGNAL)
}

/// [`send_with_fds`] with `MSG_DONTWAIT`, whatever the socket's own flags: `Ok(false)` when the
/// peer's queue is full.
pub(crate) fn try_send_with_fds(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<bool> {
    match sendmsg_fds(sock, bytes, fds, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

fn sendmsg_fds(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
    flags: SendFlags,
) -> io::Result<()> {
    if fds.len() > MAX_FDS_PER_PACKET {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS_PER_PACKET))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let iov = [IoSlice::new(bytes)];
    send_whole(bytes.len(), || {
        rustix::net::sendmsg(sock, &iov, &mut control, flags)
    })
}

/// `send(sock, bytes, MSG_NOSIGNAL)`—Sends one packet without descriptors.
///
/// Errors as for [`send_with_fds`].
pub(crate) fn send_packet(sock: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<()> {
    send_whole(bytes.len(), || {
        rustix::net::send(sock, bytes, SendFlags::NOSIGNAL)
    })
}

/// Why [`recv_with_fds`] or [`recv_packet`] returned no packet. Every descriptor that arrived with
/// a rejected packet has been closed.
#[derive(Debug)]
pub(crate) enum RecvFdsError {
    /// The receive failed; a timeout or an empty non-blocking socket is
    /// [`io::ErrorKind::WouldBlock`].
    Io(io::Error),
    /// The peer closed its end. Packets it sent before closing are received first.
    HungUp,
    /// The packet was larger than the buffer, or carried more descriptors than there was room
    /// to receive.
    Truncated,
    /// The packet carried a different number of descriptors than the protocol step expects.
    WrongFdCount {
        /// Descriptors the caller expected.
        expected: usize,
        /// Descriptors that arrived.
        got: usize,
    },
}

impl fmt::Display for RecvFdsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(err) => write!(f, "receive failed: {err}"),
            Self::HungUp => f.write_str("peer hung up"),
            Self::Truncated => f.write_str("packet or its descriptors truncated"),
            Self::WrongFdCount { expected, got } => {
                write!(f, "expected {expected} file descriptors, got {got}")
            }
        }
    }
}

impl std::error::Error for RecvFdsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for RecvFdsError {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

/// `recvmsg(sock, buf, MSG_CMSG_CLOEXEC)`—Receives one packet that must carry exactly
/// `expected_fds` descriptors.
///
/// Returns the packet's length and its descriptors. Room is made for a few more descriptors than
/// expected, so surplus ones are received and closed rather than lost in the kernel. At most
/// [`MAX_FDS_PER_PACKET`] may be expected, else [`io::ErrorKind::InvalidInput`]. A zero-length
/// packet without descriptors is indistinguishable from a hang-up and reported as
/// [`RecvFdsError::HungUp`], so the protocol never sends one.
pub(crate) fn recv_with_fds(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    expected_fds: usize,
) -> Result<(usize, Vec<OwnedFd>), RecvFdsError> {
    recv_with_fds_of(sock, buf, &[expected_fds])
}

/// `recvmsg(sock, buf, MSG_CMSG_CLOEXEC)`—Receives one packet whose descriptor count must be one
/// of `allowed` (a reply that is either a refusal without descriptors or an acceptance with
/// them). Otherwise as [`recv_with_fds`]; `WrongFdCount` names the largest allowed count.
pub(crate) fn recv_with_fds_of(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    allowed: &[usize],
) -> Result<(usize, Vec<OwnedFd>), RecvFdsError> {
    let expected_fds = allowed.iter().copied().max().unwrap_or(0);
    if expected_fds > MAX_FDS_PER_PACKET {
        return Err(io::Error::from(io::ErrorKind::InvalidInput).into());
    }
    let mut space = [MaybeUninit::uninit();
        rustix::cmsg_space!(ScmRights(MAX_FDS_PER_PACKET + EXTRA_FD_SLOTS))];
    let room = rustix::cmsg_space!(ScmRights(expected_fds + EXTRA_FD_SLOTS));
    let mut control = RecvAncillaryBuffer::new(&mut space[..room]);
    // A peer that closed with packets of ours unread makes one receive fail with ECONNRESET
    // even though the packets it sent before closing are still queued: skip that report (the
    // kernel clears it) so they are received, then the hang-up.
    let msg = loop {
        let mut iov = [IoSliceMut::new(&mut *buf)];
        match rustix::net::recvmsg(sock, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC) {
            Ok(msg) => break msg,
            Err(Errno::INTR | Errno::CONNRESET) => {}
            Err(err) => return Err(io::Error::from(err).into()),
        }
    };

    // Take ownership of everything that arrived before judging the packet, so that every error
    // below closes them on its way out.
    let mut fds = Vec::with_capacity(expected_fds);
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }

    if msg
        .flags
        .intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
    {
        return Err(RecvFdsError::Truncated);
    }
    if msg.bytes == 0 && fds.is_empty() {
        return Err(RecvFdsError::HungUp);
    }
    if !allowed.contains(&fds.len()) {
        return Err(RecvFdsError::WrongFdCount {
            expected: expected_fds,
            got: fds.len(),
        });
    }
    Ok((msg.bytes, fds))
}

/// `recvmsg(sock, buf, MSG_CMSG_CLOEXEC)`—Receives one packet that must carry no descriptors.
///
/// Descriptors a peer attaches anyway are received, closed, and reported as
/// [`RecvFdsError::WrongFdCount`] (or [`RecvFdsError::Truncated`] when there were many).
pub(crate) fn recv_packet(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, RecvFdsError> {
    recv_with_fds(sock, buf, 0).map(|(len, _)| len)
}

/// `open("/proc/self/fd/N", O_RDONLY | O_CLOEXEC)`—A new read-only descriptor for the file `fd`
/// refers to (a memfd, say), to hand to peers that must not get our read-write one.
pub(crate) fn reopen_readonly(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    Ok(rustix::fs::open(
        path.as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)` then `flock(LOCK_EX | LOCK_NB)`, retried
/// every millisecond for up to `timeout`—Takes an advisory lock on a directory, held until the
/// returned descriptor is dropped. [`io::ErrorKind::WouldBlock`] if another holder keeps it.
pub(crate) fn lock_dir(dir: &Path, timeout: Duration) -> io::Result<OwnedFd> {
    let fd = retry_eintr(|| {
        rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(Errno::INTR) => {}
            Err(Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// Counts this process's open descriptors by listing `/proc/self/fd`, for leak checks.
///
/// Exact only while no other thread opens or closes descriptors.
pub(crate) fn fd_count() -> io::Result<usize> {
    // The listing includes the directory's own descriptor.
    Ok(std::fs::read_dir("/proc/self/fd")?
        .count()
        .saturating_sub(1))
}

/// `getuid()`—Returns the real user id of this process.
pub(crate) fn getuid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A name no other test in this process uses.
    fn unique(tag: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        format!("shmcast-test-{tag}-{}-{n}", std::process::id())
    }

    /// A memfd with a unique name, so that [`open_copies`] can count its descriptors.
    fn named_memfd(tag: &str) -> (OwnedFd, String) {
        let name = unique(tag);
        (memfd_create_sealable(&name).unwrap(), name)
    }

    /// How many of this process's descriptors refer to the memfd called `name`.
    ///
    /// Unlike [`fd_count`] this is exact while other tests open and close descriptors.
    fn open_copies(name: &str) -> usize {
        let target = format!("/memfd:{name} (deleted)");
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|link| link.as_os_str() == target.as_str())
            .count()
    }

    fn pair() -> (OwnedFd, OwnedFd) {
        rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap()
    }

    fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
        let (a, b) = (rustix::fs::fstat(a).unwrap(), rustix::fs::fstat(b).unwrap());
        (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    }

    /// A fresh 0700 directory for socket files, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            let path = std::env::temp_dir().join(unique("dir"));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .unwrap();
            Self(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn memfd_size_and_seals() {
        let fd = memfd_create_sealable("shmcast-test").unwrap();
        ftruncate(fd.as_fd(), 8192).unwrap();
        assert_eq!(fstat_size(fd.as_fd()).unwrap(), 8192);
        let before = get_seals(fd.as_fd()).unwrap();
        assert!(
            !before.contains(SealFlags::SEAL),
            "sealing must still be allowed"
        );

        add_seals(fd.as_fd(), SealFlags::SHRINK).unwrap();
        assert!(get_seals(fd.as_fd()).unwrap().contains(SealFlags::SHRINK));
        let err = ftruncate(fd.as_fd(), 4096).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        ftruncate(fd.as_fd(), 16384).unwrap();

        add_seals(fd.as_fd(), SealFlags::SEAL).unwrap();
        let err = add_seals(fd.as_fd(), SealFlags::GROW).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn get_seals_rejects_non_memfd() {
        let evfd = eventfd_create(true).unwrap();
        let err = get_seals(evfd.as_fd()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn eventfd_signal_drain_and_wait() {
        let evfd = eventfd_create(true).unwrap();
        assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 0);
        assert!(!wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
        assert!(!wait_readable(evfd.as_fd(), Some(Duration::from_millis(5))).unwrap());

        for _ in 0..3 {
            eventfd_signal(evfd.as_fd()).unwrap();
        }
        assert!(wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
        assert!(wait_readable(evfd.as_fd(), None).unwrap());
        assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 3, "signals coalesce");
        assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 0);
        assert!(!wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
    }

    #[test]
    fn wait_readable_wakes_on_signal_from_another_thread() {
        let evfd = eventfd_create(true).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                eventfd_signal(evfd.as_fd()).unwrap();
            });
            assert!(wait_readable(evfd.as_fd(), None).unwrap());
        });
        assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 1);
    }

    #[test]
    fn huge_timeout_does_not_overflow() {
        let evfd = eventfd_create(true).unwrap();
        eventfd_signal(evfd.as_fd()).unwrap();
        assert!(wait_readable(evfd.as_fd(), Some(Duration::MAX)).unwrap());
        let epfd = epoll_create().unwrap();
        epoll_add(epfd.as_fd(), evfd.as_fd(), 1).unwrap();
        assert_eq!(
            epoll_wait_one(epfd.as_fd(), Some(Duration::MAX)).unwrap(),
            1
        );
    }

    #[test]
    fn wait_readable2_reports_each_side() {
        let evfd = eventfd_create(true).unwrap();
        let (a, b) = pair();
        let timeout = Some(Duration::ZERO);
        assert_eq!(
            wait_readable2(evfd.as_fd(), b.as_fd(), timeout).unwrap(),
            (false, false)
        );
        send_packet(a.as_fd(), b"x").unwrap();
        assert_eq!(
            wait_readable2(evfd.as_fd(), b.as_fd(), timeout).unwrap(),
            (false, true)
        );
        eventfd_signal(evfd.as_fd()).unwrap();
        assert_eq!(
            wait_readable2(evfd.as_fd(), b.as_fd(), None).unwrap(),
            (true, true)
        );
        eventfd_drain(evfd.as_fd()).unwrap();
        recv_packet(b.as_fd(), &mut [0; 8]).unwrap();
        drop(a);
        // A hung-up peer makes the socket ready, so the waiter reads and learns of it.
        assert_eq!(
            wait_readable2(evfd.as_fd(), b.as_fd(), None).unwrap(),
            (false, true)
        );
    }

    #[test]
    fn epoll_edge_triggered_gives_one_event_per_write_without_reading() {
        let evfd = eventfd_create(true).unwrap();
        let epfd = epoll_create().unwrap();
        epoll_add_edge(epfd.as_fd(), evfd.as_fd(), 7).unwrap();
        let zero = Some(Duration::ZERO);
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);

        for _ in 0..3 {
            eventfd_signal(evfd.as_fd()).unwrap();
            let mut tokens = [0; 4];
            assert_eq!(epoll_wait(epfd.as_fd(), &mut tokens, None).unwrap(), 1);
            assert_eq!(tokens[0], 7);
            // Never read: the edge was consumed, so no second event.
            assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
        }
    }

    #[test]
    fn an_armed_timer_gives_one_edge_per_expiry_and_rearming_replaces() {
        let timer = timerfd_create().unwrap();
        let epfd = epoll_create().unwrap();
        epoll_add_edge(epfd.as_fd(), timer.as_fd(), 9).unwrap();
        let zero = Some(Duration::ZERO);
        assert_eq!(
            epoll_wait_one(epfd.as_fd(), zero).unwrap(),
            0,
            "created disarmed"
        );

        // Zero means "at once", not "disarm"; each expiry is one event, the timer never read.
        for _ in 0..3 {
            timerfd_arm(timer.as_fd(), Duration::ZERO).unwrap();
            let mut tokens = [0; 4];
            assert_eq!(epoll_wait(epfd.as_fd(), &mut tokens, None).unwrap(), 1);
            assert_eq!(tokens[0], 9);
            assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
        }

        // A later arming replaces an earlier one: armed for an hour, re-armed for now.
        timerfd_arm(timer.as_fd(), Duration::from_secs(3600)).unwrap();
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
        timerfd_arm(timer.as_fd(), Duration::from_millis(1)).unwrap();
        assert_eq!(epoll_wait_one(epfd.as_fd(), None).unwrap(), 1);
        // Durations beyond what a timespec holds do not overflow.
        timerfd_arm(timer.as_fd(), Duration::MAX).unwrap();
    }

    #[test]
    fn epoll_level_triggered_repeats_until_read() {
        let evfd = eventfd_create(true).unwrap();
        let epfd = epoll_create().unwrap();
        epoll_add(epfd.as_fd(), evfd.as_fd(), 1).unwrap();
        eventfd_signal(evfd.as_fd()).unwrap();
        let zero = Some(Duration::ZERO);
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 1);
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 1);
        eventfd_drain(evfd.as_fd()).unwrap();
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
        let err = epoll_wait(epfd.as_fd(), &mut [], zero).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn send_two_fds_receive_two() {
        let (a, b) = pair();
        let (m1, n1) = named_memfd("two");
        let (m2, n2) = named_memfd("two");
        send_with_fds(a.as_fd(), b"hello", &[m1.as_fd(), m2.as_fd()]).unwrap();

        let mut buf = [0; 16];
        let (len, fds) = recv_with_fds(b.as_fd(), &mut buf, 2).unwrap();
        assert_eq!(&buf[..len], b"hello");
        assert_eq!(fds.len(), 2);
        assert!(same_file(fds[0].as_fd(), m1.as_fd()));
        assert!(same_file(fds[1].as_fd(), m2.as_fd()));
        let flags = rustix::io::fcntl_getfd(&fds[0]).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        assert_eq!((open_copies(&n1), open_copies(&n2)), (2, 2));
        drop(fds);
        assert_eq!((open_copies(&n1), open_copies(&n2)), (1, 1));
    }

    #[test]
    fn surplus_fds_are_refused_and_closed() {
        let (a, b) = pair();
        let (memfd, name) = named_memfd("surplus");
        let three = [memfd.as_fd(); 3];
        send_with_fds(a.as_fd(), b"x", &three).unwrap();
        let err = recv_with_fds(b.as_fd(), &mut [0; 8], 2).unwrap_err();
        assert!(
            matches!(
                err,
                RecvFdsError::WrongFdCount {
                    expected: 2,
                    got: 3
                }
            ),
            "{err}"
        );
        assert_eq!(open_copies(&name), 1, "only our own copy is left");
    }

    #[test]
    fn missing_fds_are_refused_and_closed() {
        let (a, b) = pair();
        let (memfd, name) = named_memfd("missing");
        send_with_fds(a.as_fd(), b"x", &[memfd.as_fd()]).unwrap();
        let err = recv_with_fds(b.as_fd(), &mut [0; 8], 2).unwrap_err();
        assert!(
            matches!(
                err,
                RecvFdsError::WrongFdCount {
                    expected: 2,
                    got: 1
                }
            ),
            "{err}"
        );
        assert_eq!(open_copies(&name), 1);
    }

    #[test]
    fn recv_packet_closes_fds_a_peer_attaches() {
        let (a, b) = pair();
        let (memfd, name) = named_memfd("attached");
        send_with_fds(a.as_fd(), b"data", &[memfd.as_fd(), memfd.as_fd()]).unwrap();
        let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
        assert!(
            matches!(
                err,
                RecvFdsError::WrongFdCount {
                    expected: 0,
                    got: 2
                }
            ),
            "{err}"
        );
        assert_eq!(open_copies(&name), 1);

        // More than the receive room: the kernel drops what does not fit, we close the rest.
        send_with_fds(a.as_fd(), b"data", &[memfd.as_fd(); MAX_FDS_PER_PACKET]).unwrap();
        let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
        assert!(matches!(err, RecvFdsError::Truncated), "{err}");
        assert_eq!(open_copies(&name), 1);

        send_packet(a.as_fd(), b"next").unwrap();
        let mut buf = [0; 8];
        let len = recv_packet(b.as_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..len], b"next", "the socket stays usable");
    }

    #[test]
    fn fd_count_sees_received_fds_closed() {
        // `fd_count` is process-wide and other tests run in parallel, so only bound the growth:
        // a leak of 64 descriptors per round would show.
        let (a, b) = pair();
        let (memfd, _) = named_memfd("count");
        let before = fd_count().unwrap();
        for _ in 0..64 {
            send_with_fds(a.as_fd(), b"x", &[memfd.as_fd()]).unwrap();
            recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
        }
        let after = fd_count().unwrap();
        assert!(after < before + 32, "descriptor leak: {before} -> {after}");
    }

    #[test]
    fn truncated_packet_is_an_error_and_closes_its_fds() {
        let (a, b) = pair();
        let (memfd, name) = named_memfd("trunc");
        send_with_fds(a.as_fd(), &[1; 64], &[memfd.as_fd()]).unwrap();
        let err = recv_with_fds(b.as_fd(), &mut [0; 16], 1).unwrap_err();
        assert!(matches!(err, RecvFdsError::Truncated), "{err}");
        assert_eq!(open_copies(&name), 1);

        send_packet(a.as_fd(), &[1; 64]).unwrap();
        let err = recv_packet(b.as_fd(), &mut [0; 16]).unwrap_err();
        assert!(matches!(err, RecvFdsError::Truncated), "{err}");
    }

    #[test]
    fn peer_hang_up_is_hung_up() {
        let (a, b) = pair();
        drop(a);
        let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
        assert!(matches!(err, RecvFdsError::HungUp), "{err}");
        let err = recv_with_fds(b.as_fd(), &mut [0; 8], 1).unwrap_err();
        assert!(matches!(err, RecvFdsError::HungUp), "{err}");
    }

    #[test]
    fn peer_closing_with_our_packets_unread_is_a_hang_up_too() {
        let (a, b) = pair();
        send_packet(a.as_fd(), b"unread").unwrap();
        send_packet(b.as_fd(), b"one").unwrap();
        send_packet(b.as_fd(), b"two").unwrap();
        drop(b);
        let mut buf = [0; 8];
        for expected in [&b"one"[..], b"two"] {
            let len = recv_packet(a.as_fd(), &mut buf).unwrap();
            assert_eq!(&buf[..len], expected, "what the peer sent comes first");
        }
        let err = recv_packet(a.as_fd(), &mut buf).unwrap_err();
        assert!(matches!(err, RecvFdsError::HungUp), "{err}");
        let err = recv_packet(a.as_fd(), &mut buf).unwrap_err();
        assert!(matches!(err, RecvFdsError::HungUp), "{err}");

        let (a, b) = pair();
        send_packet(a.as_fd(), b"unread").unwrap();
        drop(b);
        let err = send_packet(a.as_fd(), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn receive_timeout_and_nonblocking_are_would_block() {
        let (_a, b) = pair();
        set_recv_timeout(b.as_fd(), Some(Duration::from_millis(5))).unwrap();
        let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
        assert!(
            matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock),
            "{err}"
        );
        set_recv_timeout(b.as_fd(), None).unwrap();
        let err = set_recv_timeout(b.as_fd(), Some(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

        set_nonblocking(b.as_fd(), true).unwrap();
        let err = recv_with_fds(b.as_fd(), &mut [0; 8], 1).unwrap_err();
        assert!(
            matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock),
            "{err}"
        );
    }

    #[test]
    fn too_many_fds_are_rejected_before_any_syscall() {
        let (a, b) = pair();
        let evfd = eventfd_create(true).unwrap();
        let many = [evfd.as_fd(); MAX_FDS_PER_PACKET + 1];
        let err = send_with_fds(a.as_fd(), b"x", &many).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = recv_with_fds(b.as_fd(), &mut [0; 8], MAX_FDS_PER_PACKET + 1).unwrap_err();
        assert!(matches!(err, RecvFdsError::Io(_)), "{err}");
    }

    #[test]
    fn send_to_closed_peer_is_broken_pipe() {
        let (a, b) = pair();
        drop(b);
        let err = send_packet(a.as_fd(), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        let evfd = eventfd_create(true).unwrap();
        let err = send_with_fds(a.as_fd(), b"x", &[evfd.as_fd()]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    const SIGPIPE_CHILD_ENV: &str = "SHMCAST_TEST_SIGPIPE_CHILD";

    /// The Rust runtime ignores `SIGPIPE`, which would hide a missing `MSG_NOSIGNAL`; a child
    /// process restores the default disposition (what a C host has) and sends to a closed peer.
    /// Linux raises no `SIGPIPE` for `SOCK_SEQPACKET` at all, so the child also sends over a
    /// stream pair, where only `MSG_NOSIGNAL` keeps it alive.
    #[test]
    fn send_to_closed_peer_raises_no_sigpipe_in_a_c_like_host() {
        let module = module_path!().split_once("::").unwrap().1;
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &format!("{module}::sigpipe_child"), "--ignored"])
            .env(SIGPIPE_CHILD_ENV, "1")
            .output()
            .unwrap();
        assert!(child.status.success(), "child died: {}", child.status);
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(
            stdout.contains("1 passed"),
            "the child ran no test: {stdout}"
        );
    }

    #[test]
    #[ignore = "run in a child process by send_to_closed_peer_raises_no_sigpipe_in_a_c_like_host"]
    fn sigpipe_child() {
        if std::env::var_os(SIGPIPE_CHILD_ENV).is_none() {
            return;
        }
        // SAFETY: this child process runs only this test; SIG_DFL is a valid disposition.
        let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        assert_ne!(previous, libc::SIG_ERR);
        let stream = || {
            let flags = SocketFlags::CLOEXEC;
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, flags, None).unwrap()
        };
        for (a, b) in [pair(), stream()] {
            drop(b);
            let err = send_packet(a.as_fd(), b"x").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        }
        let (a, b) = stream();
        drop(b);
        let err = send_with_fds(a.as_fd(), b"x", &[a.as_fd()]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn listen_connect_accept_and_peer_cred() {
        let dir = TempDir::new();
        let path = dir.0.join("topic.sock");
        let listener = seqpacket_listen(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let client = seqpacket_connect(&path, Some(Duration::from_secs(5))).unwrap();
        let server = seqpacket_accept(listener.as_fd(), true).unwrap();
        let me = PeerCred {
            pid: i32::try_from(std::process::id()).ok(),
            uid: getuid(),
            gid: rustix::process::getgid().as_raw(),
        };
        assert_eq!(peer_cred(server.as_fd()).unwrap(), me);
        assert_eq!(peer_cred(client.as_fd()).unwrap(), me);

        // The accepted socket is non-blocking, the connected one has no send timeout left.
        let err = recv_packet(server.as_fd(), &mut [0; 8]).unwrap_err();
        assert!(matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock));
        assert_eq!(
            sockopt::socket_timeout(&client, Timeout::Send).unwrap(),
            None
        );
        let err = seqpacket_listen(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn nonblocking_accept_with_nothing_pending_would_block() {
        let dir = TempDir::new();
        let path = dir.0.join("idle.sock");
        let listener = seqpacket_listen(&path).unwrap();
        set_nonblocking(listener.as_fd(), true).unwrap();
        let err = seqpacket_accept(listener.as_fd(), false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn connect_tells_missing_from_stale() {
        let dir = TempDir::new();
        let path = dir.0.join("topic.sock");
        let err = seqpacket_connect(&path, None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);

        drop(seqpacket_listen(&path).unwrap());
        assert!(path.exists(), "a dead listener leaves its socket file");
        let err = seqpacket_connect(&path, None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn connect_to_a_full_backlog_times_out() {
        let dir = TempDir::new();
        let path = dir.0.join("full.sock");
        let listener = seqpacket_socket().unwrap();
        rustix::net::bind(&listener, &SocketAddrUnix::new(&path).unwrap()).unwrap();
        rustix::net::listen(&listener, 0).unwrap();
        let _queued = seqpacket_connect(&path, None).unwrap();
        let err = seqpacket_connect(&path, Some(Duration::from_millis(10))).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn peer_cred_of_unconnected_socket_has_no_pid() {
        let sock = seqpacket_socket().unwrap();
        let cred = peer_cred(sock.as_fd()).unwrap();
        assert_eq!(cred.pid, None);
    }
}
