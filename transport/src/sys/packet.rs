//! Packets on a connected `SOCK_SEQPACKET` socket, with descriptors (`SCM_RIGHTS`) or without.

use std::fmt;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;

use super::reaper::Received;

use rustix::io::{Errno, IoSlice, IoSliceMut};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::retry_eintr;

/// Most descriptors one packet may carry; the handshake's welcome carries five.
pub(crate) const MAX_FDS_PER_PACKET: usize = 8;

/// Receive room for descriptors: the most one packet can carry (the kernel's `SCM_MAX_FD`), so
/// that however many a peer attaches, all arrive and are handed to the reaper thread
/// ([`Received`]), counted in [`RecvFdsError::WrongFdCount`]. Descriptors that did not fit
/// would be closed by the kernel on this thread, where a close the peer chose could hold it up.
const RECEIVE_ROOM: usize = 253;

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

#[cfg(any(test, feature = "test-support"))]
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

/// `send(sock, bytes, MSG_DONTWAIT | MSG_NOSIGNAL)`—Sends one packet without descriptors and
/// without ever blocking; `Ok(false)` when the peer's queue is full.
///
/// `MSG_DONTWAIT` applies to this call alone, so no flag the peer sets on its own end (or on a
/// shared open file description, which a socket end is not) can make it block.
pub(crate) fn try_send_packet(sock: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<bool> {
    match send_whole(bytes.len(), || {
        rustix::net::send(sock, bytes, SendFlags::DONTWAIT | SendFlags::NOSIGNAL)
    }) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
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
/// Returns the packet's length and its descriptors. Room is made for as many descriptors as a
/// packet can carry, so surplus ones are received and closed by the reaper thread rather than
/// by the kernel on this one ([`RECEIVE_ROOM`]). At most
/// [`MAX_FDS_PER_PACKET`] may be expected, else [`io::ErrorKind::InvalidInput`]. A zero-length
/// packet without descriptors is indistinguishable from a hang-up and reported as
/// [`RecvFdsError::HungUp`], so the protocol never sends one.
pub(crate) fn recv_with_fds(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    expected_fds: usize,
) -> Result<(usize, Vec<Received>), RecvFdsError> {
    recv_with_fds_of(sock, buf, &[expected_fds])
}

/// `recvmsg(sock, buf, MSG_CMSG_CLOEXEC)`—Receives one packet whose descriptor count must be one
/// of `allowed` (a reply that is either a refusal without descriptors or an acceptance with
/// them). Otherwise as [`recv_with_fds`]; `WrongFdCount` names the largest allowed count.
pub(crate) fn recv_with_fds_of(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    allowed: &[usize],
) -> Result<(usize, Vec<Received>), RecvFdsError> {
    let expected_fds = allowed.iter().copied().max().unwrap_or(0);
    if expected_fds > MAX_FDS_PER_PACKET {
        return Err(io::Error::from(io::ErrorKind::InvalidInput).into());
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(RECEIVE_ROOM))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
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
            fds.extend(received.map(Received::new));
        }
    }

    if msg.flags.contains(ReturnFlags::CTRUNC)
        && !msg.flags.contains(ReturnFlags::TRUNC)
        && fds.len() < expected_fds
    {
        // There was room for the descriptors expected, yet fewer arrived: the kernel could not
        // install the rest, because this process has no descriptor left (or a security policy
        // refused them). Not the peer's fault; say what the receiver lacks.
        return Err(RecvFdsError::Io(io::Error::from_raw_os_error(libc::EMFILE)));
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
