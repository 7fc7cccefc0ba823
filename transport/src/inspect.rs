//! Asking a topic's publisher for its state from outside its process: [`inspect`] and
//! [`Inspector`], which send an INSPECT request on the topic socket and read the snapshot.
//!
//! The publisher admits the request by the same credential policy as a subscriber; nothing but
//! one record is exchanged (no descriptor, no shared memory), then the connection closes.
//!
//! # Overload and failure
//!
//! Each outcome has its own [`InspectError`] variant, so that a tool can tell them apart:
//! no socket at the path ([`InspectError::NoPublisher`]), a socket that nobody serves, left by a
//! publisher that died ([`InspectError::Stale`]), a file that is not a socket
//! ([`InspectError::NotASocket`]), a publisher of an untrusted uid
//! ([`InspectError::UntrustedPublisher`]), a refusal ([`InspectError::Refused`]: not admitted,
//! or busy when asked more than
//! a publisher answers in a second), no answer within the timeout ([`InspectError::Timeout`]),
//! and an answer that breaks the protocol ([`InspectError::Protocol`]).
//!
//! ```no_run
//! use std::time::Duration;
//!
//! let info = shmcast::inspect("ticks", Duration::from_secs(1))?;
//! println!("{} messages published", info.counters.messages);
//! for s in &info.subscribers {
//!     println!("subscriber {} (pid {:?}): {:?}, {} messages behind", s.id, s.process.pid,
//!              s.mode, s.lag_messages);
//! }
//! # Ok::<(), shmcast::InspectError>(())
//! ```

use std::fmt;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::connect;
use crate::error::{ConnectError, ProtocolError};
use crate::handshake::{self, DecodeError, RefuseReason, Reply, Request};
use crate::introspect::{MAX_INFO, ProcessInfo, TopicInfo};
use crate::policy::Admission;
use crate::sys::{self, packet::RecvFdsError};
use crate::topic::{self, DirSource, FileKind, TopicError};

/// Why a topic's publisher could not be inspected.
#[derive(Debug)]
#[non_exhaustive]
pub enum InspectError {
    /// The topic name is unusable.
    Topic(TopicError),
    /// Nothing at the topic's socket path: no publisher.
    NoPublisher {
        /// The socket path looked at.
        path: PathBuf,
        /// How that path was found.
        dir: DirSource,
    },
    /// A socket of a publisher that is gone (nothing accepts connections on it).
    Stale(PathBuf),
    /// The path holds something other than a socket.
    NotASocket {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// The process serving the socket runs as a uid [`Inspector::trust`] does not trust.
    UntrustedPublisher {
        /// The socket.
        path: PathBuf,
        /// Its peer's uid.
        uid: u32,
    },
    /// The publisher refused the request.
    Refused {
        /// Why, as a kind a program can act on.
        code: RefuseReason,
        /// Why, as the publisher said it.
        reason: String,
    },
    /// No answer within the timeout.
    Timeout,
    /// The answer broke the protocol.
    Protocol(ProtocolError),
    /// Connecting or exchanging failed in a system call.
    Socket {
        /// The socket path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

impl fmt::Display for InspectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InspectError::Topic(e) => e.fmt(f),
            InspectError::NoPublisher { path, dir } => dir.no_publisher(f, path),
            InspectError::Stale(path) => write!(
                f,
                "{} is a stale socket: its publisher is gone",
                path.display()
            ),
            InspectError::NotASocket { path, kind } => {
                write!(f, "{} is {kind}, not a topic socket", path.display())
            }
            InspectError::UntrustedPublisher { path, uid } => write!(
                f,
                "{} is served by uid {uid}, which is not trusted",
                path.display()
            ),
            InspectError::Refused { code, reason } => {
                write!(f, "the publisher refused ({code}): {reason}")
            }
            InspectError::Timeout => f.write_str("the publisher did not answer in time"),
            InspectError::Protocol(e) => write!(f, "the publisher's answer is invalid: {e}"),
            InspectError::Socket { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for InspectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InspectError::Topic(e) => Some(e),
            InspectError::Protocol(e) => Some(e),
            InspectError::Socket { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Settings for inspecting a topic: where to look, how long to wait, whom to trust.
#[derive(Clone, Debug)]
pub struct Inspector {
    topic: String,
    directory: Option<PathBuf>,
    timeout: Duration,
    trust: Admission,
}

impl Inspector {
    /// Inspects `topic` (a name, or a socket path containing `/`), waiting up to a second for
    /// the answer, trusting publishers of our own uid.
    pub fn new(topic: impl Into<String>) -> Inspector {
        Inspector {
            topic: topic.into(),
            directory: None,
            timeout: Duration::from_secs(1),
            trust: Admission::SameUid,
        }
    }

    /// The directory topic names resolve in (as
    /// [`PublisherBuilder::directory`](crate::PublisherBuilder::directory)).
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> Inspector {
        self.directory = Some(dir.into());
        self
    }

    /// How long to wait for the connection and for the answer, each.
    pub fn timeout(mut self, timeout: Duration) -> Inspector {
        self.timeout = timeout;
        self
    }

    /// Which publishers' uids to trust (default: our own).
    pub fn trust(mut self, trust: Admission) -> Inspector {
        self.trust = trust;
        self
    }

    /// Asks the publisher for its snapshot.
    pub fn inspect(&self) -> Result<TopicInfo, InspectError> {
        let found = topic::resolve(&self.topic, self.directory.as_deref(), false)
            .map_err(InspectError::Topic)?;
        let path = found.path;
        let timeout = self.timeout.max(Duration::from_millis(1));
        let socket_error = |source| InspectError::Socket {
            path: path.clone(),
            source,
        };
        let sock = match sys::net::seqpacket_connect(&path, Some(timeout)) {
            Ok(sock) => sock,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(InspectError::NoPublisher {
                    path,
                    dir: found.source,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(refused_connection(&path).unwrap_or_else(|| socket_error(e)));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(InspectError::Timeout),
            Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
                return Err(socket_error(connect::not_ours(
                    e,
                    io::ErrorKind::InvalidInput,
                )));
            }
            Err(e) => return Err(socket_error(e)),
        };
        match connect::check_publisher(&sock, &path, &self.trust) {
            Ok(()) => {}
            Err(ConnectError::UntrustedPublisher { path, uid }) => {
                return Err(InspectError::UntrustedPublisher { path, uid });
            }
            Err(ConnectError::Io(e)) => return Err(socket_error(e)),
            Err(e) => return Err(socket_error(io::Error::other(e.to_string()))),
        }
        // A publisher that refuses at once may have closed already: read its reason anyway.
        let sent = sys::packet::send_packet(sock.as_fd(), &Request::inspect());
        sys::net::set_recv_timeout(sock.as_fd(), Some(timeout)).map_err(socket_error)?;
        let mut buf = vec![0u8; MAX_INFO];
        let n = match sys::packet::recv_packet(sock.as_fd(), &mut buf) {
            Ok(n) => n,
            Err(RecvFdsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(InspectError::Timeout);
            }
            Err(RecvFdsError::HungUp) => {
                return Err(match sent {
                    Err(_) => InspectError::Refused {
                        code: RefuseReason::Unstated,
                        reason: "the publisher closed the connection before answering".into(),
                    },
                    Ok(()) => InspectError::Protocol(ProtocolError::Closed),
                });
            }
            Err(RecvFdsError::Io(e)) => return Err(socket_error(e)),
            Err(RecvFdsError::Truncated) => {
                return Err(InspectError::Protocol(ProtocolError::Truncated));
            }
            Err(RecvFdsError::WrongFdCount { expected, got }) => {
                return Err(InspectError::Protocol(ProtocolError::Descriptors {
                    expected,
                    got,
                }));
            }
        };
        decode_answer(&buf[..n])
    }
}

/// Inspects `topic` in the default directory, waiting up to `timeout`; see [`Inspector`].
///
/// A topic nobody publishes is an error at once, naming where it looked:
///
/// ```
/// use shmcast::{InspectError, Inspector};
///
/// let dir = std::env::temp_dir().join("shmcast-doc-inspect-nobody");
/// let err = Inspector::new("nobody").directory(&dir).inspect().unwrap_err();
/// assert!(matches!(err, InspectError::NoPublisher { .. }));
/// assert!(err.to_string().starts_with("no publisher on"));
/// ```
pub fn inspect(topic: &str, timeout: Duration) -> Result<TopicInfo, InspectError> {
    Inspector::new(topic).timeout(timeout).inspect()
}

/// The process listening on the topic socket at `path`, found without its help: for a
/// publisher that accepts a connection but does not answer (stopped by a signal or a debugger,
/// or hung), to name it. The kernel completes a connection to a listening socket on its own
/// and tells who began listening (`SO_PEERCRED`); the connection is closed at once, and the
/// publisher, when it runs again, sees a client that left without asking anything. `None` if
/// nobody listens at `path`, its backlog stays full for 50 ms, or the kernel does not say.
///
/// ```
/// let dir = std::env::temp_dir().join("shmcast-doc-socket-owner");
/// assert!(shmcast::socket_owner(&dir.join("nobody")).is_none());
/// ```
pub fn socket_owner(path: &Path) -> Option<ProcessInfo> {
    let sock = sys::net::seqpacket_connect(path, Some(Duration::from_millis(50))).ok()?;
    let process = crate::introspect_serve::process_of(sock.as_fd());
    (process.uid != u32::MAX).then_some(process)
}

/// What a refused connection at `path` means: a stale socket, or not a socket at all.
fn refused_connection(path: &Path) -> Option<InspectError> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(if meta.file_type().is_socket() {
        InspectError::Stale(path.to_owned())
    } else {
        InspectError::NotASocket {
            path: path.to_owned(),
            kind: FileKind::of(meta.file_type()),
        }
    })
}

/// Reads the publisher's answer: an INFO record, or a REFUSE.
fn decode_answer(p: &[u8]) -> Result<TopicInfo, InspectError> {
    if let Ok(kind) = handshake::check_header(p)
        && kind == handshake::KIND_REFUSE
    {
        return match Reply::decode(p) {
            Ok(Reply::Refuse { code, text }) => Err(InspectError::Refused {
                code: handshake::refuse_reason(code),
                reason: text,
            }),
            Ok(_) => Err(InspectError::Protocol(ProtocolError::Decode(
                DecodeError::Kind(kind),
            ))),
            Err(e) => Err(InspectError::Protocol(ProtocolError::Decode(e))),
        };
    }
    TopicInfo::decode(p).map_err(|e| InspectError::Protocol(ProtocolError::Decode(e)))
}
