//! Exit codes and one-line failures: every error a command meets becomes a [`Failure`] naming
//! the topic (or path) and the cause, with the exit code of its kind.

use std::fmt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

use shmcast::{
    BindError, ConfigError, ConnectError, DirSource, InspectError, RecvError, TopicError,
};

use crate::occupant;

/// The documented exit codes (see `shmcast --help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Any other error.
    Other = 1,
    /// The command line or a setting is wrong (clap exits with 2 itself).
    Usage = 2,
    /// No publisher serves the topic.
    Missing = 3,
    /// The topic's socket is left over from a publisher that died.
    Stale = 4,
    /// The publisher refused us, is untrusted, or speaks another protocol.
    Refused = 5,
    /// The topic carries another message type than expected.
    Contract = 6,
}

/// A command's failure: what to print (one line) and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub code: Exit,
    pub message: String,
}

impl Failure {
    pub fn new(code: Exit, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// An error of kind "other" about `what` (a topic or a path).
    pub fn other(what: &str, cause: impl fmt::Display) -> Failure {
        Failure::new(Exit::Other, format!("{what}: {cause}"))
    }

    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Usage, message)
    }

    /// Why inspecting `topic` failed.
    pub fn inspect(topic: &str, e: InspectError) -> Failure {
        match &e {
            InspectError::NoPublisher { path, dir } => return no_publisher(topic, path, *dir),
            InspectError::Stale(path) => return stale(topic, path),
            InspectError::Topic(e) => return Failure::topic(topic, e),
            _ => {}
        }
        let code = match &e {
            InspectError::NoPublisher { .. } => Exit::Missing,
            InspectError::Stale(_) => Exit::Stale,
            InspectError::Refused { .. }
            | InspectError::UntrustedPublisher { .. }
            | InspectError::Protocol(_) => Exit::Refused,
            _ => Exit::Other,
        };
        Failure::new(code, format!("{topic}: {}", inspect_cause(&e)))
    }

    /// Why subscribing to `topic` failed.
    pub fn connect(topic: &str, e: ConnectError) -> Failure {
        let code = match &e {
            // A socket left by a dead publisher refuses connections just as a missing one is
            // absent; tell them apart by looking.
            ConnectError::NoPublisher { path, .. } if is_socket(path) => {
                return stale(topic, path);
            }
            ConnectError::NoPublisher { path, dir } => return no_publisher(topic, path, *dir),
            ConnectError::Topic(e) => return Failure::topic(topic, e),
            ConnectError::InvalidExpectation(e) => {
                return Failure::usage(format!("{topic}: --expect-schema: {e}"));
            }
            ConnectError::InvalidOption { option, reason } => {
                return Failure::usage(format!("{topic}: {}: {reason}", flag(option)));
            }
            ConnectError::UntrustedPublisher { uid, .. } => {
                return Failure::new(Exit::Refused, format!("{topic}: {e} ({})", trust(*uid)));
            }
            ConnectError::Socket { path, source } if occupant::other_socket_type(source) => {
                return Failure::other(topic, occupant::socket_of_another_type(path));
            }
            // What connecting found at the path, said without following a symbolic link.
            ConnectError::Socket { path, source }
                if source.kind() == std::io::ErrorKind::InvalidInput && !is_socket(path) =>
            {
                return Failure::other(topic, occupant::not_a_socket(path));
            }
            ConnectError::Refused { .. } | ConnectError::Protocol(_) | ConnectError::Layout(_) => {
                Exit::Refused
            }
            ConnectError::ContractMismatch { .. } => Exit::Contract,
            _ => Exit::Other,
        };
        Failure::new(code, format!("{topic}: {e}"))
    }

    /// Why publishing on `topic` could not start: a wrong `--capacity`, `--max-message`,
    /// `--schema` or topic name is a usage error, in the command's terms.
    pub fn bind(topic: &str, e: BindError) -> Failure {
        let message = match &e {
            BindError::Topic(e) => return Failure::topic(topic, e),
            BindError::Config(ConfigError::Capacity(c)) => format!(
                "--capacity {c}: the ring's capacity must be a power of two from {} to {}",
                crate::words::bytes(MIN_CAPACITY),
                crate::words::bytes(MAX_CAPACITY)
            ),
            BindError::Config(ConfigError::MaxPayload { max_payload, limit }) => format!(
                "--max-message {max_payload}: too large for the ring: at most {limit} bytes \
                 (two messages must fit; a larger --capacity allows more)"
            ),
            BindError::InvalidOption { option, reason } => format!("{}: {reason}", flag(option)),
            BindError::Contract(e) => format!("--schema: {e}"),
            BindError::NotASocket { path, .. } => {
                let what = occupant::not_a_socket(path);
                return Failure::other(
                    topic,
                    format!("{what}: remove it yourself or choose another topic"),
                );
            }
            BindError::Socket { path, source } if occupant::other_socket_type(source) => {
                let what = occupant::socket_of_another_type(path);
                return Failure::other(topic, format!("{what}: choose another topic"));
            }
            _ => return Failure::other(topic, e),
        };
        Failure::usage(format!("{topic}: {message}"))
    }

    /// Why `topic` names no usable socket path: a wrong name or setting is a usage error.
    pub fn topic(topic: &str, e: &TopicError) -> Failure {
        match e {
            TopicError::PathTooLong { path, len, max } => Failure::usage(format!(
                "{topic}: socket path {} is {len} bytes, more than the {max} a unix socket \
                 address holds: use a shorter topic name or a shorter directory (--dir or \
                 SHMCAST_DIR)",
                path.display()
            )),
            // An empty name is named by the error alone (`invalid topic name ""`).
            TopicError::InvalidName(name) if name.is_empty() => Failure::usage(e.to_string()),
            TopicError::InvalidName(_)
            | TopicError::NotASocket(_)
            | TopicError::RelativeDirectory(_) => Failure::usage(format!("{topic}: {e}")),
            _ => Failure::other(topic, e),
        }
    }

    /// Why receiving from `topic` failed.
    /// The end of `sub`'s stream: nothing if the publisher ended it, a failure (exit 1) if its
    /// process went away without ending it (killed or crashed), so that a script can tell.
    pub fn ended(topic: &str, sub: &shmcast::Subscriber) -> Result<(), Failure> {
        match sub.stream_end() {
            Some(end @ shmcast::StreamEnd::Vanished) => Err(Failure::other(topic, end)),
            _ => Ok(()),
        }
    }

    pub fn recv(topic: &str, e: RecvError) -> Failure {
        let code = match e {
            RecvError::Corrupt(_) => Exit::Refused,
            _ => Exit::Other,
        };
        Failure::new(code, format!("{topic}: {e}"))
    }
}

/// What went wrong asking a publisher, in the command's words, without the topic: for an error
/// line and for `list --json`.
pub fn inspect_cause(e: &InspectError) -> String {
    match e {
        // A publisher of this protocol version built before introspection refuses INSPECT as
        // a packet of an unknown kind.
        InspectError::Refused { reason, .. } if reason.contains("unexpected packet kind") => {
            format!("{e} (the publisher's shmcast predates introspection)")
        }
        InspectError::UntrustedPublisher { uid, .. } => format!("{e} ({})", trust(*uid)),
        InspectError::NotASocket { path, .. } => occupant::not_a_socket(path),
        InspectError::Socket { path, source } if occupant::other_socket_type(source) => {
            occupant::socket_of_another_type(path)
        }
        e => e.to_string(),
    }
}

/// How to trust a publisher of `uid`, refused as untrusted.
fn trust(uid: u32) -> String {
    format!("pass --trust {uid} to trust it")
}

/// No publisher where the command looked: where that was (and that it does not exist, if so),
/// and how to look elsewhere, in the command's own terms (`--dir`).
fn no_publisher(topic: &str, path: &Path, dir: DirSource) -> Failure {
    let mut place = match dir {
        DirSource::Builder => "the topic directory given by --dir".to_owned(),
        d => d.to_string(),
    };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent
        && std::fs::symlink_metadata(parent)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        match dir {
            DirSource::SocketPath => place.push_str(&format!(
                "; its directory {} does not exist",
                parent.display()
            )),
            _ => place.push_str(", which does not exist"),
        }
    }
    // Connecting follows a symbolic link; one that leads nowhere is no publisher either.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        place.push_str(&format!("; {}", occupant::not_a_socket(path)));
    }
    let hint = match dir {
        DirSource::SocketPath | DirSource::Builder => "",
        DirSource::ShmcastDir => "; --dir or another SHMCAST_DIR looks elsewhere",
        _ => "; --dir or SHMCAST_DIR looks elsewhere",
    };
    Failure::new(
        Exit::Missing,
        format!(
            "{topic}: no publisher on {} ({place}{hint})",
            path.display()
        ),
    )
}

/// A socket left by a publisher that died.
fn stale(topic: &str, path: &Path) -> Failure {
    Failure::new(
        Exit::Stale,
        format!(
            "{topic}: {} is a stale socket: its publisher is gone (`shmcast clean` removes it)",
            path.display()
        ),
    )
}

/// The flag that sets a builder option the library names (`max_message`: `--max-message`).
fn flag(option: &str) -> String {
    format!("--{}", option.replace('_', "-"))
}

use shmcast::{MAX_CAPACITY, MIN_CAPACITY};

/// The duration a flag gives in seconds, or a usage error naming the flag, for a flag already
/// read as a number (a flag read with [`crate::flags::seconds`] says it as typed).
pub fn seconds(flag: &str, secs: f64) -> Result<Duration, Failure> {
    crate::flags::in_seconds(secs).map_err(|why| {
        // 1e300 as 1e300, not as its 301 digits.
        let shown = if secs.abs() >= 1e16 {
            format!("{secs:e}")
        } else {
            secs.to_string()
        };
        Failure::usage(format!("{flag} {shown}: {why}"))
    })
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// The exit codes as `--help` and the README list them.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  any other error (output that could not be written included; a closed pipe is not one;
     for echo and hz, a publisher that went away without ending its stream: killed or crashed)
  2  usage error: a wrong command line or setting (--capacity not a power of two, a --size
     larger than the largest message, an invalid topic name, a relative SHMCAST_DIR or --dir,
     a --dir that does not exist for list and clean)
  3  missing topic: no publisher serves it (the message says if its directory does not exist)
  4  stale topic: its socket was left by a publisher that died (`shmcast clean` removes it)
  5  refused or mismatched peer: the publisher refused us (for stat --watch, as busy for 10 s
     on), is not trusted (--trust trusts it), or speaks another protocol version
  6  contract mismatch: the topic carries another message type than `--expect-schema` says";
