//! The subscriber's half of the handshake: find the publisher's socket (waiting for it with a
//! backoff), check whom it belongs to, ask, and map what the welcome hands over.
//!
//! # Overload and failure
//!
//! * No socket, or a stale one: retried with a backoff of 1 to 50 ms until `connect_timeout`,
//!   then [`ConnectError::NoPublisher`] naming the path and how it was found (which directory,
//!   and why that one). Any other failure to connect: [`ConnectError::Socket`], naming the path.
//! * A socket served by a uid the subscriber does not trust:
//!   [`ConnectError::UntrustedPublisher`] before anything is sent or received.
//! * A refusal: [`ConnectError::Refused`] with its [`RefuseReason`](crate::RefuseReason)
//!   (busy, permission, version, ...) and the publisher's text. A busy one (too many handshakes
//!   pending at the publisher) is tried again, as a missing socket is, until `connect_timeout`.
//! * A publisher whose queue of connections stays full for the whole wait (stopped, or
//!   overwhelmed): [`ConnectError::Socket`] saying so.
//! * No reply within the handshake timeout, or a publisher that closes the connection before it
//!   answers (killed as we connect): tried again with a new connection, as for a missing
//!   socket, until `connect_timeout`; then [`ConnectError::HandshakeTimeout`] or
//!   [`ConnectError::Protocol`] (`Closed`). So a connect takes at most `connect_timeout` and
//!   one `handshake_timeout` more.
//! * A reply that breaks the protocol (malformed, wrong descriptors, unsealed or mis-sized
//!   memory, an impossible contract): [`ConnectError::Protocol`]; every descriptor that came
//!   with it is closed.
//! * A topic whose contract does not meet the subscriber's expectation:
//!   [`ConnectError::ContractMismatch`] naming both; the connection and the shared memory are
//!   dropped, so the publisher sees the subscriber leave.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, Reader, layout};

use crate::contract::{Contract, Expectation, InvalidContract, MessageType};
use crate::deadline;
use crate::error::{ConnectError, MapError, ProtocolError};
use crate::handshake::{self, Hello, RefuseReason, Reply};
use crate::policy::Admission;
use crate::shm;
use crate::sys::{self, fork::PrivateFd, packet::RecvFdsError, reaper::Received};
use crate::topic::{DirSource, FileKind};

/// Longest pause between two attempts to find a publisher.
const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// Connects to the topic socket at `path` (found as `dir` says), waiting up to `wait` for a
/// publisher to appear (`None`: fail at once). Each connect attempt is bounded by what is left
/// of `wait`, or by `step` when not waiting.
pub(crate) fn dial(
    path: &Path,
    dir: DirSource,
    wait: Option<Duration>,
    step: Duration,
) -> Result<PrivateFd, ConnectError> {
    let deadline = wait.map(deadline::after);
    let mut backoff = Duration::from_millis(1);
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let bound = left.unwrap_or(step).max(Duration::from_millis(1));
        // Private from its creation: a fork while the connect waits leaves the child nothing.
        let sock =
            PrivateFd::open(sys::net::seqpacket_socket).map_err(|source| ConnectError::Socket {
                path: path.to_owned(),
                source,
            })?;
        match sys::net::connect_to(sock.as_fd(), path, Some(bound)) {
            Ok(()) => return Ok(sock),
            // A file that is no socket never becomes a publisher: say what it is at once.
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && let Some(kind) = not_a_socket(path) =>
            {
                return Err(ConnectError::Socket {
                    path: path.to_owned(),
                    source: io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("it is {kind}, not a topic socket"),
                    ),
                });
            }
            // A stream or datagram socket: another program's, never a publisher's.
            Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
                return Err(ConnectError::Socket {
                    path: path.to_owned(),
                    source: not_ours(e, io::ErrorKind::InvalidInput),
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                match left {
                    Some(left) if !left.is_zero() => {
                        std::thread::sleep(backoff.min(left));
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                    _ => {
                        return Err(ConnectError::NoPublisher {
                            path: path.to_owned(),
                            dir,
                        });
                    }
                }
            }
            // The kernel waited `bound` for room in the listener's queue of connections: the
            // publisher accepts none (stopped by a signal, or overwhelmed).
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(ConnectError::Socket {
                    path: path.to_owned(),
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the publisher accepted no connection within {} ms: its queue of \
                             pending connections stayed full (a publisher stopped by a signal, \
                             or overwhelmed)",
                            bound.as_millis()
                        ),
                    ),
                });
            }
            Err(source) if source.kind() == io::ErrorKind::PermissionDenied => {
                return Err(ConnectError::Socket {
                    path: path.to_owned(),
                    source: io::Error::new(source.kind(), permission_denied(path, &source)),
                });
            }
            Err(source) => {
                return Err(ConnectError::Socket {
                    path: path.to_owned(),
                    source,
                });
            }
        }
    }
}

/// Why connecting to `path` was denied, as far as its owner and mode tell (a publisher that
/// admits only its own uid keeps its socket 0600; a directory on the way may be closed too).
fn permission_denied(path: &Path, e: &io::Error) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) if m.uid() != sys::process::getuid() => format!(
            "{e}: the socket belongs to uid {} (mode {:o}); its publisher must admit this uid \
             (admission), which opens the socket to others",
            m.uid(),
            m.mode() & 0o777
        ),
        Ok(m) => format!("{e} (socket mode {:o})", m.mode() & 0o777),
        // Not even its owner and mode can be read: a directory on the way keeps us out.
        Err(_) => format!("{e}: a directory on the way to it is closed to this uid"),
    }
}

/// A stream or datagram socket at a topic path (the system's `EPROTOTYPE`, kept as the
/// source), as an error of `kind`.
pub(crate) fn not_ours(e: io::Error, kind: io::ErrorKind) -> io::Error {
    io::Error::new(kind, NotOurs(e))
}

/// Why a socket of another type is no topic socket; its source is the system's error.
#[derive(Debug)]
struct NotOurs(io::Error);

impl std::fmt::Display for NotOurs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "it is a socket of another type (stream or datagram), not a shmcast topic socket",
        )
    }
}

impl std::error::Error for NotOurs {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// What `path` is, as `connect` sees it (following links), when it exists and is no socket.
fn not_a_socket(path: &Path) -> Option<FileKind> {
    let meta = std::fs::metadata(path).ok()?;
    let kind = FileKind::of(meta.file_type());
    (kind != FileKind::Socket).then_some(kind)
}

/// Checks that the process serving `sock` runs as a uid `trusted` admits: an explicit path may
/// lie where others can bind.
pub(crate) fn check_publisher(
    sock: &OwnedFd,
    path: &Path,
    trusted: &Admission,
) -> Result<(), ConnectError> {
    let uid = sys::net::peer_cred(sock.as_fd())?.uid;
    if trusted.admits(uid) {
        Ok(())
    } else {
        Err(ConnectError::UntrustedPublisher {
            path: path.to_owned(),
            uid,
        })
    }
}

/// What a welcome hands over, checked only as a record (not yet mapped).
pub(crate) struct Welcome {
    /// The ring size the welcome announces.
    pub(crate) ring_len: u64,
    /// The control block size the welcome announces.
    pub(crate) cb_len: u64,
    /// The message type the welcome declares.
    pub(crate) message: MessageType,
    /// Whether the publisher republishes messages imported from elsewhere.
    pub(crate) imported: bool,
    /// The ring's descriptor (read-only), as received: kept once its seals are checked.
    pub(crate) ring: Received,
    /// This subscriber's control block, as received.
    pub(crate) control_block: Received,
}

/// Connects to the topic socket at `path` as [`dial`] does, checks the publisher's uid against
/// `trusted`, and exchanges `hello` for its welcome, each answer waited for up to `step`.
///
/// A publisher that goes away or stops answering during the handshake (killed as we connect,
/// say) is waited out like a missing one until `wait` has passed: the topic's next publisher
/// gets a new connection. So the whole may take up to `wait` and one `step` more.
pub(crate) fn handshake(
    path: &Path,
    dir: DirSource,
    wait: Option<Duration>,
    step: Duration,
    trusted: &Admission,
    hello: &Hello,
) -> Result<(PrivateFd, Welcome), ConnectError> {
    let deadline = wait.map(deadline::after);
    let mut backoff = Duration::from_millis(1);
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let sock = dial(path, dir, left, step)?;
        check_publisher(&sock, path, trusted)?;
        match exchange(&sock, hello, step) {
            Ok(welcome) => return Ok((sock, welcome)),
            Err(e) if publisher_gone(&e) || busy(&e) => {
                drop(sock);
                let left = deadline.map_or(Duration::ZERO, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                if left.is_zero() {
                    return Err(e);
                }
                std::thread::sleep(backoff.min(left));
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether `e` is a refusal for overload (too many handshakes pending at the publisher): it
/// passes, so a subscriber still willing to wait tries again.
fn busy(e: &ConnectError) -> bool {
    matches!(
        e,
        ConnectError::Refused {
            code: RefuseReason::Busy,
            ..
        }
    )
}

/// The refusal of a publisher that closed the connection without reading our request: it was
/// going away, or refused us and its text was lost.
const CLOSED_BEFORE_HANDSHAKE: &str = "the publisher closed the connection before the handshake";

/// Whether `e`, from [`exchange`], says that the publisher went away or did not answer in time:
/// a subscriber still willing to wait for a publisher tries again, as the topic's next publisher
/// (a restarted one) may already be there, or this one may answer a new connection.
pub(crate) fn publisher_gone(e: &ConnectError) -> bool {
    match e {
        ConnectError::HandshakeTimeout | ConnectError::Protocol(ProtocolError::Closed) => true,
        ConnectError::Refused { code, reason } => {
            *code == RefuseReason::Unstated && reason == CLOSED_BEFORE_HANDSHAKE
        }
        _ => false,
    }
}

/// Sends `hello` on `sock` and receives the publisher's reply, waiting at most `timeout`.
pub(crate) fn exchange(
    sock: &OwnedFd,
    hello: &Hello,
    timeout: Duration,
) -> Result<Welcome, ConnectError> {
    // A publisher that refuses us at once (credentials, overload) may already have closed the
    // connection: its refusal is still queued, so read the reply even if sending failed.
    let sent = sys::packet::send_packet(sock.as_fd(), &hello.encode());
    sys::net::set_recv_timeout(sock.as_fd(), Some(timeout))?;
    let mut buf = [0u8; handshake::MAX_PACKET];
    let received =
        sys::packet::recv_with_fds_of(sock.as_fd(), &mut buf, &[0, handshake::WELCOME_FDS]);
    let (n, fds) = match received {
        Ok(r) => r,
        Err(RecvFdsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
            return Err(ConnectError::HandshakeTimeout);
        }
        Err(RecvFdsError::HungUp) => {
            return Err(match sent {
                // It closed before reading our request: a refusal whose text was lost.
                Err(_) => ConnectError::Refused {
                    code: RefuseReason::Unstated,
                    reason: CLOSED_BEFORE_HANDSHAKE.into(),
                },
                Ok(()) => ProtocolError::Closed.into(),
            });
        }
        Err(RecvFdsError::Io(e)) => return Err(e.into()),
        Err(RecvFdsError::Truncated) => return Err(ProtocolError::Truncated.into()),
        Err(RecvFdsError::WrongFdCount { expected, got }) => {
            return Err(ProtocolError::Descriptors { expected, got }.into());
        }
    };
    match Reply::decode(&buf[..n]).map_err(ProtocolError::Decode)? {
        Reply::Refuse { code, text } => Err(ConnectError::Refused {
            code: handshake::refuse_reason(code),
            reason: text,
        }),
        // Refused before admission: the publisher's contract does not meet our expectation.
        Reply::Mismatch { offered, .. } => Err(ConnectError::ContractMismatch {
            expected: hello.expect.clone(),
            offered,
        }),
        Reply::Welcome {
            flags,
            ring_len,
            cb_len,
            message,
        } => {
            let got = fds.len();
            let [ring, control_block]: [Received; handshake::WELCOME_FDS] =
                fds.try_into().map_err(|_| ProtocolError::Descriptors {
                    expected: handshake::WELCOME_FDS,
                    got,
                })?;
            Ok(Welcome {
                ring_len,
                cb_len,
                message,
                imported: flags & handshake::FLAG_IMPORTED != 0,
                ring,
                control_block,
            })
        }
    }
}

/// Maps what `welcome` hands over, after checking it against what it announces, attaches a
/// reader to it, and checks the topic's contract against `expect`. Whatever fails, everything
/// received is unmapped and closed.
/// A mapping that failed: this process short of memory or address space (`ENOMEM`) is a local
/// error that names the mapping's size; anything else is the publisher's file at fault.
fn map_failure(e: MapError, what: &str, len: u64) -> ConnectError {
    match e {
        MapError::Io(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
            ConnectError::Io(io::Error::new(
                e.kind(),
                format!(
                    "mapping the topic's {what} of {len} bytes: {e} (this process's memory or \
                     address space limit, `ulimit -v`, is short of it)"
                ),
            ))
        }
        e => ProtocolError::SharedMemory(e).into(),
    }
}

pub(crate) fn attach(
    welcome: Welcome,
    expect: &Expectation,
) -> Result<(Reader, Contract), ConnectError> {
    let Welcome {
        ring_len,
        cb_len,
        message,
        ring,
        control_block,
        ..
    } = welcome;
    if cb_len != CONTROL_BLOCK_LEN as u64 || ring_len < HEADER_LEN as u64 {
        return Err(ProtocolError::Sizes { ring_len, cb_len }.into());
    }
    // The mapping keeps a descriptor only once its seals show it is shared memory, whose close
    // never waits; anything else the publisher sent is closed by the reaper thread.
    let ring = shm::ring_region(ring, HEADER_LEN).map_err(|e| map_failure(e, "ring", ring_len))?;
    // The announced size is the publisher's claim about its own descriptor: a mismatch means it
    // lies or sent the wrong file.
    if ring.len() as u64 != ring_len {
        return Err(ProtocolError::RingSize {
            announced: ring_len,
            actual: ring.len() as u64,
        }
        .into());
    }
    let cb = shm::control_block_region(control_block, CONTROL_BLOCK_LEN)
        .map_err(|e| map_failure(e, "control block", cb_len))?;
    let max_message = layout::validate_ring(&ring)
        .map_err(ConnectError::Layout)?
        .max_payload();
    let reader = Reader::attach(ring, cb).map_err(ConnectError::Layout)?;
    let contract = Contract::new(message, max_message);
    if let MessageType::Pod { size, .. } = contract.message
        && size > max_message
    {
        // No message of the declared type fits this ring.
        let impossible = InvalidContract::Size { size, max_message };
        return Err(ProtocolError::Contract(impossible).into());
    }
    if !expect.is_met_by(&contract) {
        return Err(ConnectError::ContractMismatch {
            expected: expect.clone(),
            offered: contract,
        });
    }
    Ok((reader, contract))
}
