//! Errors of the publishing side: binding a topic, loaning and sending, waiting for
//! subscribers, and removing stale topics.

use crate::contract::InvalidContract;
use crate::topic::{FileKind, TopicError};
use shmcast_core::ConfigError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a publisher could not be created.
#[derive(Debug)]
pub enum BindError {
    /// The topic name is unusable.
    Topic(TopicError),
    /// Another live publisher serves this topic.
    TopicInUse(PathBuf),
    /// Something that is not a socket occupies the topic's path (a file, a FIFO, a directory, a
    /// symbolic link to anything). It was left as it was.
    NotASocket {
        /// The socket path.
        path: PathBuf,
        /// What is there instead.
        kind: FileKind,
    },
    /// A socket of another user occupies the topic's path. It was left as it was.
    ForeignSocket {
        /// The socket path.
        path: PathBuf,
        /// The uid that owns it.
        uid: u32,
    },
    /// A directory of the socket path does not exist (a publisher creates only the topic
    /// directory of a name, never the directories of a path).
    NoDirectory {
        /// The socket path.
        path: PathBuf,
    },
    /// Binding the socket at the topic's path failed in a system call.
    Socket {
        /// The socket path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The ring geometry is impossible.
    Config(ConfigError),
    /// The declared message type cannot be declared (a bad name or alignment, a Pod type larger
    /// than the maximum message).
    Contract(InvalidContract),
    /// A builder option has a value it cannot take.
    InvalidOption {
        /// The builder method that set it.
        option: &'static str,
        /// What is wrong with the value.
        reason: &'static str,
    },
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
            BindError::NotASocket { path, kind } => write!(
                f,
                "{} is {kind}, not a topic socket: remove it yourself or choose another topic",
                path.display()
            ),
            BindError::ForeignSocket { path, uid } => write!(
                f,
                "{} is a socket of uid {uid}, not ours to replace: choose another topic",
                path.display()
            ),
            BindError::NoDirectory { path } => {
                let dir = path.parent().unwrap_or(path);
                write!(
                    f,
                    "cannot create the topic socket {}: directory {} does not exist",
                    path.display(),
                    dir.display()
                )
            }
            BindError::Socket { path, source } => {
                write!(f, "binding the topic socket {}: {source}", path.display())
            }
            BindError::Config(e) => e.fmt(f),
            BindError::Contract(e) => write!(f, "declaring the topic contract: {e}"),
            BindError::InvalidOption { option, reason } => write!(f, "{option}: {reason}"),
            BindError::Io(e) => write!(f, "creating the publisher: {e}"),
        }
    }
}

impl std::error::Error for BindError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BindError::Topic(e) => Some(e),
            BindError::Config(e) => Some(e),
            BindError::Contract(e) => Some(e),
            BindError::Io(e) => Some(e),
            BindError::Socket { source, .. } => Some(source),
            BindError::NotASocket { .. }
            | BindError::ForeignSocket { .. }
            | BindError::NoDirectory { .. }
            | BindError::TopicInUse(_)
            | BindError::InvalidOption { .. } => None,
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
    /// `send_pod`, `loan_pod`: the topic declares a Pod type of another size or alignment
    /// ([`PublisherBuilder::pod`](crate::PublisherBuilder::pod)), which its subscribers would
    /// misread or refuse.
    WrongType {
        /// What the topic declares.
        declared: crate::MessageType,
        /// The size of the type sent.
        size: usize,
        /// Its alignment.
        align: usize,
    },
    /// `send`, `loan`, `try_loan`, `loan_timeout`: the topic declares a Pod type
    /// ([`PublisherBuilder::pod`](crate::PublisherBuilder::pod)) and every message must be one,
    /// but this one has another length. Nothing is published.
    WrongLength {
        /// What the topic declares.
        declared: crate::MessageType,
        /// The length asked for.
        len: usize,
    },
    /// The stream was ended from another thread ([`Closer`](crate::Closer)): nothing more can
    /// be published.
    Closed,
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
            LoanError::WrongType {
                declared,
                size,
                align,
            } => write!(
                f,
                "a value of {size} bytes, align {align}, is not the topic's declared {declared}"
            ),
            LoanError::WrongLength { declared, len } => match declared {
                crate::MessageType::Pod { name, size, .. } => write!(
                    f,
                    "the topic declares every message one {name} ({size} bytes): \
                     a message of {len} bytes is not one"
                ),
                other => write!(f, "a message of {len} bytes is not the topic's {other}"),
            },
            LoanError::Closed => f.write_str("the stream was ended (Closer::close)"),
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

/// Why [`remove_stale`](crate::remove_stale) or [`stale_topics`](crate::stale_topics) did not
/// remove or list a socket. Nothing was removed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CleanError {
    /// A process listens on the socket: it is not stale.
    Live(PathBuf),
    /// The path holds something that is not a socket.
    NotASocket {
        /// The path.
        path: PathBuf,
        /// What is there.
        kind: FileKind,
    },
    /// The socket belongs to another user.
    ForeignSocket {
        /// The path.
        path: PathBuf,
        /// The uid that owns it.
        uid: u32,
    },
    /// The path (or the directory to list) does not exist, or cannot be inspected or removed.
    Io {
        /// The path or directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

impl fmt::Display for CleanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CleanError::Live(path) => write!(
                f,
                "{} is not stale: a publisher is listening on it",
                path.display()
            ),
            CleanError::NotASocket { path, kind } => {
                write!(f, "{} is {kind}, not a topic socket", path.display())
            }
            CleanError::ForeignSocket { path, uid } => write!(
                f,
                "{} is a socket of uid {uid}, not ours to remove",
                path.display()
            ),
            CleanError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for CleanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CleanError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// [`Publisher::wait_for_subscribers`](crate::Publisher::wait_for_subscribers) timed out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitError {
    /// The number of subscribers waited for.
    pub wanted: usize,
    /// How many were connected when the wait gave up.
    pub connected: usize,
    /// How long it waited.
    pub waited: std::time::Duration,
    /// The stream was ended meanwhile ([`Closer`](crate::Closer)): nobody can connect any more.
    pub closed: bool,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.closed {
            return write!(
                f,
                "the stream was ended while waiting for {} subscribers ({} connected)",
                self.wanted, self.connected
            );
        }
        write!(
            f,
            "timed out after {:?} waiting for {} subscribers ({} connected)",
            self.waited, self.wanted, self.connected
        )
    }
}

impl std::error::Error for WaitError {}
