//! Unix `SOCK_SEQPACKET` sockets: listening, accepting, connecting, their options and the
//! credentials of their peers.

// The only unsafe code is `peer_cred` and `refuse_descriptors`, which call getsockopt and
// setsockopt through libc (see their docs).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use rustix::net::sockopt::{self, Timeout};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use super::retry_eintr;

/// Pending connections a listening socket queues before `connect` blocks.
const LISTEN_BACKLOG: i32 = 128;

/// Bytes in a unix socket address's path (`sizeof(sockaddr_un.sun_path)`: 108 on Linux), which
/// holds a socket path and, by every tool's convention, the NUL that ends it.
pub(crate) const SUN_PATH_LEN: usize =
    size_of::<libc::sockaddr_un>() - size_of::<libc::sa_family_t>();

/// `socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)`—Creates an unconnected packet socket.
pub(crate) fn seqpacket_socket() -> io::Result<OwnedFd> {
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
/// connecting to a socket that is not yet listening is refused. The mode is set through a
/// descriptor of what is at `path`, never following a symbolic link, and only if it is a socket
/// of ours ([`chmod_own_socket`](super::fs::chmod_own_socket)): in a directory another uid may
/// write, a file swapped in after `bind` is refused, never changed. If anything after `bind`
/// fails, the file is removed again. Connections refuse descriptors from the start where the
/// kernel can ([`refuse_descriptors`]).
pub(crate) fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    let addr = SocketAddrUnix::new(path)?;
    let sock = seqpacket_socket()?;
    // Every connection accepted from it inherits the refusal: no client, admitted or not, can
    // send the publisher a descriptor, whose close it would choose (Linux 6.16 and later).
    refuse_descriptors(sock.as_fd())?;
    rustix::net::bind(&sock, &addr)?;
    let setup = super::fs::chmod_own_socket(path, 0o600)
        .map_err(|e| match e.kind() {
            // Not a missing directory (it was there for `bind`): the socket went.
            io::ErrorKind::NotFound => {
                io::Error::other("the socket was removed before its mode could be set")
            }
            _ => e,
        })
        .and_then(|()| Ok(rustix::net::listen(&sock, LISTEN_BACKLOG)?));
    if let Err(err) = setup {
        // We just created this file; left behind, it would look like a crashed publisher's.
        // (`unlink` never follows a link: if the file was swapped, what goes is what the other
        // uid put there.)
        let _ = rustix::fs::unlink(path);
        return Err(err);
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
    let sock = seqpacket_socket()?;
    connect_to(sock.as_fd(), path, timeout)?;
    Ok(sock)
}

/// `connect(sock, path)` of a socket from [`seqpacket_socket`], as [`seqpacket_connect`] does,
/// for a caller that holds the socket before it connects.
pub(crate) fn connect_to(
    sock: BorrowedFd<'_>,
    path: &Path,
    timeout: Option<Duration>,
) -> io::Result<()> {
    let addr = SocketAddrUnix::new(path)?;
    // The kernel bounds a unix-socket connect that waits for backlog room by SO_SNDTIMEO.
    if timeout.is_some() {
        set_send_timeout(sock, timeout)?;
    }
    retry_eintr(|| rustix::net::connect(sock, &addr))?;
    if timeout.is_some() {
        set_send_timeout(sock, None)?;
    }
    Ok(())
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

/// `SO_PASSRIGHTS` (Linux 6.16): whether a unix socket accepts `SCM_RIGHTS`. Not in `libc` yet.
const SO_PASSRIGHTS: libc::c_int = 83;

/// `setsockopt(sock, SOL_SOCKET, SO_PASSRIGHTS, 0)`—Refuses descriptors sent to `sock`: a
/// sender's `SCM_RIGHTS` fails with `EPERM`, so no peer can park a descriptor (its own end of
/// the connection, say, which would keep the connection open after the peer exits) in our
/// receive queue. Returns `false` on a kernel without the option (before 6.16).
pub(crate) fn refuse_descriptors(sock: BorrowedFd<'_>) -> io::Result<bool> {
    let off: libc::c_int = 0;
    // SAFETY: `off` is a live local of the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PASSRIGHTS,
            (&raw const off).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
        return Ok(false);
    }
    Err(e)
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
