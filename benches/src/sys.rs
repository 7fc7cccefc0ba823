//! Every syscall the benchmark makes that the transports under test do not make for it: clocks,
//! CPU-time, memory and descriptor accounting, sockets for the socket transports, shared pages, descriptor
//! inheritance and signals for child processes.
#![allow(unsafe_code)]

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::fs::{MemfdFlags, fstat, memfd_create};
use rustix::io::{Errno, FdFlags, fcntl_setfd};
use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, ipproto, sockopt};
use rustix::process::{Signal, set_parent_process_death_signal};
use rustix::time::{ClockId, Timespec, clock_gettime};

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: the clock every process of a run shares.
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`: sleeps until `deadline_ns` (from
/// [`now_ns`]), returning at once if it has passed.
pub fn sleep_until_ns(deadline_ns: u64) {
    let request = Timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as i64,
        tv_nsec: (deadline_ns % 1_000_000_000) as i64,
    };
    while let Err(Errno::INTR) =
        rustix::thread::clock_nanosleep_absolute(ClockId::Monotonic, &request)
    {}
}

/// `prctl(PR_SET_TIMERSLACK, 1)`: absolute sleeps of this thread end within a nanosecond of
/// their deadline instead of the default 50 µs, so a paced publisher keeps its period.
pub fn tight_timer_slack() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// `getrusage(who)`: user + system CPU time in nanoseconds.
fn rusage_ns(who: libc::c_int) -> u64 {
    // SAFETY: `rusage` is plain integers, so all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    if rc != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// `getrusage(RUSAGE_SELF)`: CPU time of every thread of this process so far, ns.
pub fn cpu_self_ns() -> u64 {
    rusage_ns(libc::RUSAGE_SELF)
}

/// `getrusage(RUSAGE_CHILDREN)`: CPU time of every child reaped so far, ns.
pub fn cpu_children_ns() -> u64 {
    rusage_ns(libc::RUSAGE_CHILDREN)
}

/// Arranges for a spawned child to inherit exactly `fds` (besides stdio) and to be killed when
/// this process dies (`PR_SET_PDEATHSIG`).
pub fn prepare_child(command: &mut Command, fds: Vec<RawFd>) {
    // SAFETY: the hook makes only raw syscalls (fcntl, prctl) on descriptors the parent keeps
    // open across the spawn, and allocates nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            for &fd in &fds {
                // SAFETY: the parent keeps every fd in `fds` open until the spawn returns; the
                // borrow ends before `exec`.
                let fd = BorrowedFd::borrow_raw(fd);
                fcntl_setfd(fd, FdFlags::empty())?;
            }
            set_parent_process_death_signal(Some(Signal::KILL))?;
            Ok(())
        });
    }
}

/// Takes ownership of a descriptor the parent handed down across `exec`, after checking
/// (`fstat`) that the number is open.
pub fn adopt_inherited(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 3 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not an inherited descriptor",
        ));
    }
    // SAFETY: the parent cleared CLOEXEC on this number for this process alone and nothing else
    // here owns it; `fstat` proves it open before anything uses it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    match fstat(&owned) {
        Ok(_) => Ok(owned),
        Err(err) => {
            // Not ours after all: do not close a number we do not own.
            std::mem::forget(owned);
            Err(err.into())
        }
    }
}

/// `kill(pid, signal)`: stops, continues or kills a child process.
pub fn kill(pid: u32, signal: Signal) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process id"))?;
    Ok(rustix::process::kill_process(pid, signal)?)
}

/// This process's resident set size in bytes, from `/proc/self/statm` (resident pages, its
/// second field).
pub fn rss_bytes() -> io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_ascii_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| io::Error::other(format!("unexpected /proc/self/statm: {statm:?}")))?;
    Ok(pages * rustix::param::page_size() as u64)
}

/// This process's open descriptors, counted by listing `/proc/self/fd`, for leak checks: exact
/// only while no other thread opens or closes one.
pub fn fd_count() -> io::Result<usize> {
    // The listing includes the directory's own descriptor.
    Ok(std::fs::read_dir("/proc/self/fd")?
        .count()
        .saturating_sub(1))
}

/// `socketpair(AF_UNIX, kind, SOCK_CLOEXEC)`.
pub fn unix_pair(kind: SocketType) -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        kind,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// `send(MSG_DONTWAIT | MSG_NOSIGNAL)`: `Ok(None)` when the socket buffer is full.
pub fn send_nowait(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<Option<usize>> {
    match rustix::net::send(fd, buf, SendFlags::DONTWAIT | SendFlags::NOSIGNAL) {
        Ok(n) => Ok(Some(n)),
        Err(Errno::AGAIN) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `recv(MSG_DONTWAIT)`: `Ok(None)` when nothing is queued, `Ok(Some(0))` at end of stream.
pub fn recv_nowait(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    match rustix::net::recv(fd, buf, RecvFlags::DONTWAIT) {
        Ok((n, _)) => Ok(Some(n)),
        Err(Errno::AGAIN) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `recv`, blocking, retried on `EINTR`: `Ok(None)` when the socket's receive timeout
/// (`SO_RCVTIMEO`, see [`set_recv_timeout`]) passed first.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match rustix::net::recv(fd, &mut *buf, RecvFlags::empty()) {
            Ok((n, _)) => return Ok(Some(n)),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
}

/// `setsockopt(SO_RCVTIMEO)`: blocking receives fail with `EAGAIN` after `timeout`.
pub fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    Ok(sockopt::set_socket_timeout(
        fd,
        sockopt::Timeout::Recv,
        Some(timeout),
    )?)
}

/// `poll(POLLIN)` on one descriptor for at most `timeout`: whether it became readable (or hung
/// up).
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    Ok(poll(&mut fds, timeout)? > 0)
}

/// `poll(POLLOUT)` on one descriptor for at most `timeout`: whether it became writable.
pub fn wait_writable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
    Ok(poll(&mut fds, timeout)? > 0)
}

/// `poll` for at most `timeout`, retried on `EINTR`: the number of ready descriptors.
pub fn poll(fds: &mut [PollFd<'_>], timeout: Duration) -> io::Result<usize> {
    let ts = Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    loop {
        match rustix::event::poll(fds, Some(&ts)) {
            Err(Errno::INTR) => continue,
            other => return Ok(other?),
        }
    }
}

/// `read` on an eventfd (blocking), retried on `EINTR`.
pub fn eventfd_read(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    loop {
        match rustix::io::read(fd, &mut buf) {
            Ok(_) => return Ok(u64::from_ne_bytes(buf)),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// `write(value)` on an eventfd.
pub fn eventfd_add(fd: BorrowedFd<'_>, value: u64) -> io::Result<()> {
    rustix::io::write(fd, &value.to_ne_bytes())?;
    Ok(())
}

/// `eventfd(0, EFD_CLOEXEC)`.
pub fn eventfd() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC,
    )?)
}

/// The multicast group and port a run uses: administratively scoped (239/8), on loopback only.
pub fn multicast_group(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(239, 255, 83, 67), port)
}

/// A UDP socket that sends to a multicast group over loopback only: `IP_MULTICAST_IF` =
/// 127.0.0.1, `IP_MULTICAST_LOOP` on, `IP_MULTICAST_TTL` 0 (no datagram leaves the host).
pub fn multicast_sender() -> io::Result<OwnedFd> {
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(ipproto::UDP),
    )?;
    sockopt::set_ip_multicast_if(&fd, &Ipv4Addr::LOCALHOST)?;
    sockopt::set_ip_multicast_loop(&fd, true)?;
    sockopt::set_ip_multicast_ttl(&fd, 0)?;
    Ok(fd)
}

/// A UDP socket bound to `group` that has joined it on the loopback interface.
pub fn multicast_listener(group: SocketAddrV4) -> io::Result<OwnedFd> {
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(ipproto::UDP),
    )?;
    sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &group)?;
    sockopt::set_ip_add_membership(&fd, group.ip(), &Ipv4Addr::LOCALHOST)?;
    Ok(fd)
}

/// `sendto` a UDP datagram.
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], to: SocketAddrV4) -> io::Result<usize> {
    Ok(rustix::net::sendto(fd, buf, SendFlags::NOSIGNAL, &to)?)
}

/// One 128-byte line of a shared page: an atomic counter that two processes bounce.
#[repr(C, align(128))]
pub struct Line {
    /// The counter.
    pub value: AtomicU64,
}

/// A page of [`Line`]s in a memfd, mapped shared: the parent creates it, a child maps the
/// inherited descriptor.
pub struct SharedLines {
    base: NonNull<Line>,
    lines: usize,
}

impl SharedLines {
    const PAGE: usize = 4096;

    /// Creates a zeroed memfd page of `lines` lines and maps it.
    pub fn create(lines: usize) -> io::Result<(OwnedFd, SharedLines)> {
        let fd = memfd_create("shmcast-bench-lines", MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, Self::PAGE as u64)?;
        let map = Self::map(&fd, lines)?;
        Ok((fd, map))
    }

    /// Maps the page in `fd` (which must hold at least `lines` lines).
    pub fn map(fd: &OwnedFd, lines: usize) -> io::Result<SharedLines> {
        assert!(
            lines * size_of::<Line>() <= Self::PAGE,
            "{lines} lines do not fit a page"
        );
        let len = fstat(fd)?.st_size;
        if len < Self::PAGE as i64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "shared page is too small",
            ));
        }
        // SAFETY: a fresh shared mapping of a whole page of the memfd, which is at least that
        // long (checked above); nothing else in this process maps it.
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                Self::PAGE,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                0,
            )?
        };
        let base = NonNull::new(base.cast::<Line>()).expect("mmap never returns null on success");
        Ok(SharedLines { base, lines })
    }

    /// Line `index`. Panics if out of range.
    pub fn line(&self, index: usize) -> &Line {
        assert!(index < self.lines, "line {index} of {}", self.lines);
        // SAFETY: `index < lines`, the page-aligned mapping holds `lines` 128-byte lines while
        // `self` lives, and a `Line` is an atomic, which the other process may write at any time.
        unsafe { &*self.base.as_ptr().add(index) }
    }
}

impl Drop for SharedLines {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `map`; every `&Line` borrowed from `self` has ended.
        let _ = unsafe { munmap(self.base.as_ptr().cast(), Self::PAGE) };
    }
}
