//! Errors of the receiving side: connecting, mapping what a publisher sends, receiving, and
//! reading a payload as a Pod type.

use crate::contract::{Contract, Expectation, InvalidContract};
use crate::handshake::{DecodeError, RefuseReason};
use crate::topic::{DirSource, TopicError};
use shmcast_core::{FrameError, LayoutError};
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a subscriber could not connect.
#[derive(Debug)]
pub enum ConnectError {
    /// The topic name is unusable.
    Topic(TopicError),
    /// No publisher serves the topic (after waiting, with `connect_timeout`).
    NoPublisher {
        /// The socket path it looked for.
        path: PathBuf,
        /// How that path was found: which directory, and why that one.
        dir: DirSource,
    },
    /// Connecting to the topic's socket failed in a system call (other than finding no
    /// publisher).
    Socket {
        /// The socket path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
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
    /// The topic's contract does not meet this subscriber's expectation. The publisher refused
    /// the subscriber before admitting it (it counts a refusal); against a publisher that
    /// admitted it anyway, the connection and the shared memory were dropped.
    ContractMismatch {
        /// What this subscriber expects.
        expected: Expectation,
        /// What the publisher declared.
        offered: Contract,
    },
    /// The expected message type is one no publisher can declare (a bad name or alignment).
    /// Nothing was sent.
    InvalidExpectation(InvalidContract),
    /// A builder option has a value it cannot take.
    InvalidOption {
        /// The builder method that set it.
        option: &'static str,
        /// What is wrong with the value.
        reason: &'static str,
    },
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
            ConnectError::NoPublisher { path, dir } => dir.no_publisher(f, path),
            ConnectError::Socket { path, source } => {
                write!(f, "connecting to {}: {source}", path.display())
            }
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
            ConnectError::ContractMismatch { expected, offered } => write!(
                f,
                "topic contract mismatch: the topic carries {offered}; this subscriber expects {expected}"
            ),
            ConnectError::InvalidExpectation(e) => write!(f, "expecting a topic contract: {e}"),
            ConnectError::InvalidOption { option, reason } => write!(f, "{option}: {reason}"),
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
            ConnectError::InvalidExpectation(e) => Some(e),
            ConnectError::Io(e) => Some(e),
            ConnectError::Socket { source, .. } => Some(source),
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
    /// The welcome declares a contract no correct publisher declares (a Pod type larger than
    /// its ring's maximum message).
    Contract(InvalidContract),
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
            ProtocolError::Contract(e) => {
                write!(f, "the welcome declares an impossible contract: {e}")
            }
        }
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProtocolError::Decode(e) => Some(e),
            ProtocolError::SharedMemory(e) => Some(e),
            ProtocolError::Contract(e) => Some(e),
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
///
/// Comparable, for tests: two [`RecvError::Io`] are equal when their
/// [`kind`](io::Error::kind)s are (the cause stays reachable through `source`).
#[derive(Debug)]
pub enum RecvError {
    /// `try_recv`: nothing to read now.
    Empty,
    /// `recv_timeout`: nothing arrived in time.
    Timeout,
    /// The publisher lapped this (lossy) subscriber, which missed exactly this many messages:
    /// those overwritten before it read them and those it skips to its resume point. Receiving
    /// continues in order from where the subscriber's [`Resume`](crate::Resume) policy puts it
    /// ([`SubscriberBuilder::resume`](crate::SubscriberBuilder::resume)): by default
    /// ([`Resume::Slack`](crate::Resume::Slack)) two of the largest messages ahead of where the
    /// publisher overwrites next, so that the next read has time to finish;
    /// [`Resume::Oldest`](crate::Resume::Oldest) continues with the oldest message still in the
    /// ring, [`Resume::Newest`](crate::Resume::Newest) with the newest.
    Lagged(u64),
    /// The publisher is gone and every message it committed has been received.
    Disconnected,
    /// This gating subscriber stalled past the publisher's stall bound and now receives as a
    /// lossy one (reported once; the next receive may report `Lagged`). It stays lossy for the
    /// rest of its connection: a program that needs every message again connects anew (a new
    /// subscriber is gating from its first message on) and resynchronises from its own state.
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

impl PartialEq for RecvError {
    fn eq(&self, other: &Self) -> bool {
        use RecvError::*;
        match (self, other) {
            (Empty, Empty)
            | (Timeout, Timeout)
            | (Disconnected, Disconnected)
            | (Demoted, Demoted)
            | (Evicted, Evicted) => true,
            (Lagged(a), Lagged(b)) => a == b,
            (Corrupt(a), Corrupt(b)) => a == b,
            (Io(a), Io(b)) => a.kind() == b.kind(),
            _ => false,
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
