//! How a stream ended: closed by its publisher, or left by a process that went away.

use std::fmt;

/// How a topic's stream ended, after [`RecvError::Disconnected`](crate::RecvError::Disconnected)
/// ([`Subscriber::stream_end`](crate::Subscriber::stream_end)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamEnd {
    /// The publisher ended it: it was dropped (C: destroyed), also by a process that exits
    /// normally, since that drops it.
    Closed,
    /// The publisher's process went away without ending it: killed, crashed, or exited without
    /// dropping the publisher (`std::process::exit`, `_exit`).
    Vanished,
}

impl fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamEnd::Closed => "the publisher ended the stream",
            StreamEnd::Vanished => {
                "the publisher went away without ending the stream (killed, crashed, or exited \
                 without dropping it)"
            }
        })
    }
}
