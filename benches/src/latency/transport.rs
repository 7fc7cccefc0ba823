//! How the timestamps travel: the transports compared, and the datagram wire of the socket ones
//! (the end marker and a bounded send).

use std::os::fd::{AsFd, OwnedFd};

use crate::error::{BenchError, Result, sys};
use crate::harness::STALL;

/// The timestamp that ends a socket stream (a real one is never 0).
pub(super) const END: u64 = 0;

/// How the timestamps travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Publisher → relay process → a unix datagram socket per listener.
    UnixRelay,
    /// A unix datagram socket per listener.
    UnixDgram,
    /// One UDP multicast datagram on loopback.
    UdpMulticast,
    /// shmcast, listeners parked in `recv` (futex).
    Shmcast,
    /// shmcast, listeners busy-polling.
    ShmcastSpin,
    /// shmcast, listeners in an event loop: `poll()` on the descriptor, then `try_recv`.
    ShmcastPoll,
    /// shmcast, each listener in its own tokio runtime, awaiting `AsyncSubscriber::recv`.
    ShmcastTokio,
    /// A unix stream socket per listener, each listener in its own tokio runtime awaiting
    /// `UnixStream::read_exact`.
    TokioUnix,
    /// `tokio::sync::broadcast` inside this process: each listener a thread with its own
    /// runtime awaiting `Receiver::recv` (the in-process anchor of the tokio transports).
    TokioBroadcast,
    /// iceoryx2 publish-subscribe with an event service: listeners block on the event.
    #[cfg(feature = "iceoryx2")]
    Iceoryx2,
    /// iceoryx2 publish-subscribe, listeners busy-polling.
    #[cfg(feature = "iceoryx2")]
    Iceoryx2Busy,
}

pub(super) const ALL: &[Transport] = &[
    Transport::UnixRelay,
    Transport::UnixDgram,
    Transport::UdpMulticast,
    Transport::Shmcast,
    Transport::ShmcastSpin,
    Transport::ShmcastPoll,
    Transport::ShmcastTokio,
    Transport::TokioUnix,
    Transport::TokioBroadcast,
    #[cfg(feature = "iceoryx2")]
    Transport::Iceoryx2,
    #[cfg(feature = "iceoryx2")]
    Transport::Iceoryx2Busy,
];

impl Transport {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Transport::UnixRelay => "unix-relay",
            Transport::UnixDgram => "unix-dgram",
            Transport::UdpMulticast => "udp-multicast",
            Transport::Shmcast => "shmcast",
            Transport::ShmcastSpin => "shmcast-spin",
            Transport::ShmcastPoll => "shmcast-poll",
            Transport::ShmcastTokio => "shmcast-tokio",
            Transport::TokioUnix => "tokio-unix",
            Transport::TokioBroadcast => "tokio-broadcast",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2 => "iceoryx2",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2Busy => "iceoryx2-busy",
        }
    }

    pub(super) fn parse(name: &str) -> Result<Transport> {
        ALL.iter()
            .copied()
            .find(|t| t.name() == name)
            .ok_or_else(|| BenchError::Usage(format!("unknown latency transport {name:?}")))
    }

    /// Whether this is one of the socket alternatives.
    pub fn socket(self) -> bool {
        matches!(
            self,
            Transport::UnixRelay | Transport::UnixDgram | Transport::UdpMulticast
        )
    }

    /// Whether listeners busy-poll.
    pub fn spins(self) -> bool {
        match self {
            Transport::ShmcastSpin => true,
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2Busy => true,
            _ => false,
        }
    }
}

/// Sends an 8-byte datagram on a connected socket, waiting (bounded) while its queue is full.
pub(super) fn send_dgram(fd: &OwnedFd, value: u64) -> Result<u64> {
    let bytes = value.to_ne_bytes();
    let mut calls = 1;
    while crate::sys::send_nowait(fd.as_fd(), &bytes)
        .map_err(sys("send on a unix datagram socket"))?
        .is_none()
    {
        calls += 2;
        if !crate::sys::wait_writable(fd.as_fd(), STALL).map_err(sys("poll"))? {
            return Err(BenchError::Child {
                who: "a datagram receiver".into(),
                what: format!("took nothing for {STALL:?}"),
            });
        }
    }
    Ok(calls)
}
