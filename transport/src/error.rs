//! One error type per operation. Errors speak the domain; system errors stay behind
//! [`std::io::Error`] where nothing more specific applies.

use crate::handshake::{DecodeError, RefuseReason};
use shmcast_core::{ConfigError, FrameError, LayoutError};
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a topic name could not be turned into a socket path.
#[derive(Debug)]
pub enum TopicError {
    /// Names are 1 to 100 characters of `A-Z a-z 0-9 . _ -`, not starting with `.`; anything
    /// with a `/` is taken as a socket path instead.
    InvalidName(String),
    /// The topic directory exists but another user owns it or others may enter it.
    InsecureDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The topic directory could not be created or inspected.
    Io(io::Error),
}

impl fmt::Display for TopicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopicError::InvalidName(n) => write!(
                f,
                "invalid topic name {n:?}: use 1-100 of A-Z a-z 0-9 . _ - (not starting with '.'), or a path with '/'"
            ),
            TopicError::InsecureDirectory { path, reason } => {
                write!(f, "refusing topic directory {}: {reason}", path.display())
            }
            TopicError::Io(e) => write!(f, "topic directory: {e}"),
        }
    }
}

impl std::error::Error for TopicError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TopicError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a publisher could not be created.
#[derive(Debug)]
pub enum BindError {
    /// The topic name is unusable.
    Topic(TopicError),
    /// Another live publisher serves this topic.
    TopicInUse(PathBuf),
    /// The ring geometry is impossible.
    Config(ConfigError),
    /// A system call failed.
    Io(io::Error),
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindError::Topic(e) => e.fmt(f),
            BindError::TopicInUse(p) => {
                write!(
                    f,
                    "topic in use: a live publisher is listening on {}",
                    p.display()
                )
            }
            BindError::Config(e) => e.fmt(f),
            BindError::Io(e) => write!(f, "creating the publisher: {e}"),
        }
    }
}

impl std::error::Error for BindError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BindError::Topic(e) => Some(e),
            BindError::Config(e) => Some(e),
            BindError::Io(e) => Some(e),
            BindError::TopicInUse(_) => None,
        }
    }
}

impl From<TopicError> for BindError {
    fn from(e: TopicError) -> Self {
        BindError::Topic(e)
    }
}

impl From<io::Error> for BindError {
    fn from(e: io::Error) -> Self {
        BindError::Io(e)
    }
}

/// Why a loan (or send) failed.
#[derive(Debug)]
pub enum LoanError {
    /// The message is longer than the ring's maximum.
    TooLarge {
        /// Requested length.
        len: usize,
        /// The publisher's maximum message size.
        max: usize,
    },
    /// `try_loan`: gating subscribers have not released enough space.
    Full,
    /// `loan_timeout`: space did not free up in time.
    Timeout,
    /// The type's alignment exceeds the 16 bytes every payload is aligned to.
    Unaligned {
        /// The type's alignment.
        align: usize,
    },
    /// Waiting for space failed in a system call.
    Io(io::Error),
}

impl fmt::Display for LoanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoanError::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the maximum of {max}")
            }
            LoanError::Full => f.write_str("ring full: gating subscribers have not released space"),
            LoanError::Timeout => f.write_str("timed out waiting for ring space"),
            LoanError::Unaligned { align } => {
                write!(
                    f,
                    "type alignment {align} exceeds the payload alignment of 16"
                )
            }
            LoanError::Io(e) => write!(f, "waiting for ring space: {e}"),
        }
    }
}

impl std::error::Error for LoanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoanError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a subscriber could not connect.
#[derive(Debug)]
pub enum ConnectError {
    /// The topic name is unusable.
    Topic(TopicError),
    /// No publisher serves the topic (after waiting, with `connect_timeout`).
    NoPublisher(PathBuf),
    /// The publisher refused us.
    Refused {
        /// Why, as a kind a program can act on (retry when [`RefuseReason::Busy`]).
        code: RefuseReason,
        /// Why, as the publisher said it.
        reason: String,
    },
    /// The process serving the socket runs as a uid that
    /// [`SubscriberBuilder::publisher`](crate::SubscriberBuilder::publisher) does not trust.
    /// Nothing was sent to it or taken from it.
    UntrustedPublisher {
        /// The socket.
        path: PathBuf,
        /// Its peer's uid.
        uid: u32,
    },
    /// The publisher did not answer the handshake in time.
    HandshakeTimeout,
    /// The publisher's reply broke the protocol.
    Protocol(ProtocolError),
    /// The shared memory the publisher sent is not acceptable.
    Layout(LayoutError),
    /// A system call failed.
    Io(io::Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Topic(e) => e.fmt(f),
            ConnectError::NoPublisher(p) => write!(f, "no publisher on {}", p.display()),
            ConnectError::Refused { code, reason } => {
                write!(f, "publisher refused the connection ({code}): {reason}")
            }
            ConnectError::UntrustedPublisher { path, uid } => write!(
                f,
                "the publisher on {} runs as uid {uid}, which this subscriber does not trust",
                path.display()
            ),
            ConnectError::HandshakeTimeout => {
                f.write_str("publisher did not complete the handshake in time")
            }
            ConnectError::Protocol(e) => write!(f, "handshake protocol error: {e}"),
            ConnectError::Layout(e) => write!(f, "shared memory refused: {e}"),
            ConnectError::Io(e) => write!(f, "connecting: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Topic(e) => Some(e),
            ConnectError::Protocol(e) => Some(e),
            ConnectError::Layout(e) => Some(e),
            ConnectError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TopicError> for ConnectError {
    fn from(e: TopicError) -> Self {
        ConnectError::Topic(e)
    }
}

impl From<io::Error> for ConnectError {
    fn from(e: io::Error) -> Self {
        ConnectError::Io(e)
    }
}

impl From<ProtocolError> for ConnectError {
    fn from(e: ProtocolError) -> Self {
        ConnectError::Protocol(e)
    }
}

/// How a publisher's side of the handshake broke the protocol. Nothing it sent was kept: every
/// descriptor that came with a bad reply is closed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The publisher closed the connection instead of answering.
    Closed,
    /// The reply is not a valid record.
    Decode(DecodeError),
    /// The reply was larger than any record, or carried too many descriptors.
    Truncated,
    /// The reply carried `got` descriptors where one of the expected counts was due.
    Descriptors {
        /// The count the reply's kind needs.
        expected: usize,
        /// The count that arrived.
        got: usize,
    },
    /// The welcome announces sizes no correct publisher sends.
    Sizes {
        /// The announced ring size in bytes.
        ring_len: u64,
        /// The announced control block size in bytes.
        cb_len: u64,
    },
    /// The welcome announces a ring of one size, its descriptor has another.
    RingSize {
        /// The size the welcome announces.
        announced: u64,
        /// The size of the file received.
        actual: u64,
    },
    /// A received descriptor is not shared memory this subscriber may map.
    SharedMemory(MapError),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Closed => f.write_str("publisher closed the connection"),
            ProtocolError::Decode(e) => e.fmt(f),
            ProtocolError::Truncated => f.write_str("the reply was truncated"),
            ProtocolError::Descriptors { got: 0, .. } => f.write_str("welcome without descriptors"),
            ProtocolError::Descriptors { expected, got } => {
                write!(f, "expected {expected} file descriptors, got {got}")
            }
            ProtocolError::Sizes { ring_len, cb_len } => {
                write!(
                    f,
                    "unexpected sizes: ring {ring_len}, control block {cb_len}"
                )
            }
            ProtocolError::RingSize { announced, actual } => write!(
                f,
                "the welcome announces a ring of {announced} bytes, its descriptor has {actual}"
            ),
            ProtocolError::SharedMemory(e) => write!(f, "shared memory refused: {e}"),
        }
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProtocolError::Decode(e) => Some(e),
            ProtocolError::SharedMemory(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a descriptor received from a publisher was not mapped.
#[derive(Debug)]
#[non_exhaustive]
pub enum MapError {
    /// The file lacks seals the protocol relies on (all of them if it is not a memfd).
    NotSealed {
        /// The names of the required seals that are absent (`"FUTURE_WRITE"`, ...).
        missing: Vec<&'static str>,
    },
    /// The file is smaller than the protocol needs (or empty).
    TooSmall {
        /// The file's size in bytes.
        size: u64,
        /// The least acceptable size.
        min: u64,
    },
    /// The file is larger than any ring this build maps.
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The largest acceptable size.
        max: u64,
    },
    /// A control block whose size is not the agreed one.
    WrongSize {
        /// The file's size in bytes.
        size: u64,
        /// The agreed size.
        expected: u64,
    },
    /// The mapping is not aligned as the ring needs (never for a page-aligned `mmap`).
    Misaligned,
    /// A syscall failed.
    Io(io::Error),
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSealed { missing } => {
                f.write_str("shared memory is missing seals:")?;
                for name in missing {
                    write!(f, " F_SEAL_{name}")?;
                }
                Ok(())
            }
            Self::TooSmall { size, min } => {
                write!(f, "shared memory has {size} bytes, fewer than {min}")
            }
            Self::TooLarge { size, max } => {
                write!(f, "shared memory has {size} bytes, more than {max}")
            }
            Self::WrongSize { size, expected } => {
                write!(f, "shared memory has {size} bytes, not {expected}")
            }
            Self::Misaligned => f.write_str("shared memory mapping is misaligned"),
            Self::Io(err) => write!(f, "shared memory: {err}"),
        }
    }
}

impl std::error::Error for MapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for MapError {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

/// Why a receive returned no message.
#[derive(Debug)]
pub enum RecvError {
    /// `try_recv`: nothing to read now.
    Empty,
    /// `recv_timeout`: nothing arrived in time.
    Timeout,
    /// The publisher overwrote this many messages before this (lossy) subscriber read them.
    /// Receiving continues in order with the oldest message still available.
    Lagged(u64),
    /// The publisher is gone and every message it committed has been received.
    Disconnected,
    /// This gating subscriber stalled past the publisher's stall bound and now receives as a
    /// lossy one (reported once; the next receive may report `Lagged`).
    Demoted,
    /// The publisher evicted this subscriber.
    Evicted,
    /// The shared memory holds something no correct publisher writes.
    Corrupt(FrameError),
    /// Waiting failed in a system call.
    Io(io::Error),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Empty => f.write_str("no message available"),
            RecvError::Timeout => f.write_str("timed out waiting for a message"),
            RecvError::Lagged(n) => write!(f, "lagged: missed {n} messages"),
            RecvError::Disconnected => f.write_str("publisher disconnected"),
            RecvError::Demoted => f.write_str("demoted from gating to lossy after stalling"),
            RecvError::Evicted => f.write_str("evicted by the publisher"),
            RecvError::Corrupt(e) => write!(f, "corrupt shared memory: {e}"),
            RecvError::Io(e) => write!(f, "waiting for messages: {e}"),
        }
    }
}

impl std::error::Error for RecvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecvError::Corrupt(e) => Some(e),
            RecvError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a payload could not be viewed as a `Pod` type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodError {
    /// The payload's length is not the type's size.
    Size {
        /// The type's size.
        expected: usize,
        /// The payload's length.
        actual: usize,
    },
    /// The payload is not aligned for the type (alignment above 16).
    Alignment,
}

impl fmt::Display for PodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PodError::Size { expected, actual } => {
                write!(f, "payload of {actual} bytes, type needs {expected}")
            }
            PodError::Alignment => f.write_str("payload not aligned for the type"),
        }
    }
}

impl std::error::Error for PodError {}

impl PodError {
    /// The error for a failed cast of a `len`-byte payload to a `T`.
    pub(crate) fn cast<T>(len: usize) -> impl Fn(bytemuck::PodCastError) -> PodError {
        move |e| match e {
            bytemuck::PodCastError::SizeMismatch => PodError::Size {
                expected: size_of::<T>(),
                actual: len,
            },
            _ => PodError::Alignment,
        }
    }
}
