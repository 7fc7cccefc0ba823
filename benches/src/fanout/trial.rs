//! What a stream trial runs (transport, subscribers, message size, length, way of waiting) and
//! what it measured.

use std::time::Duration;

use crate::error::{BenchError, Result};
use crate::pin::Pin;

/// How a stream is carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Single-process reference: one copy per subscriber.
    Memcpy,
    /// One unix stream socket per subscriber.
    UnixStream,
    /// shmcast, gating subscribers.
    ShmcastGating,
    /// shmcast, lossy subscribers resuming half a ring behind the publisher after a lag (the
    /// default policy).
    ShmcastLossy,
    /// shmcast, gating subscribers, no spinning (`spin_limit(0)` on both sides): a publisher
    /// that sleeps at once when the ring is full, subscribers that park at once when it is
    /// empty. What the adaptive spins save.
    ShmcastSleep,
    /// shmcast, lossy subscribers resuming with the newest message.
    ShmcastLossyNewest,
    /// shmcast, lossy subscribers resuming with the oldest message still in the ring.
    ShmcastLossyOldest,
    /// shmcast, lossy subscribers receiving only the newest message (`recv_latest`).
    ShmcastLatest,
    /// shmcast through `shmcast::tokio`: an async publisher, async gating subscribers.
    ShmcastTokio,
    /// One unix stream socket per subscriber through tokio's `UnixStream`, both sides async.
    TokioUnix,
    /// `tokio::sync::broadcast` inside this process (the in-process anchor).
    TokioBroadcast,
    /// iceoryx2 publish-subscribe (with an event service in event-driven mode).
    #[cfg(feature = "iceoryx2")]
    Iceoryx2,
}

impl Transport {
    /// The transport's name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Memcpy => "memcpy",
            Transport::UnixStream => "unix-stream",
            Transport::ShmcastGating => "shmcast-gating",
            Transport::ShmcastLossy => "shmcast-lossy",
            Transport::ShmcastSleep => "shmcast-sleep",
            Transport::ShmcastLossyNewest => "shmcast-lossy-newest",
            Transport::ShmcastLossyOldest => "shmcast-lossy-oldest",
            Transport::ShmcastLatest => "shmcast-latest",
            Transport::ShmcastTokio => "shmcast-tokio",
            Transport::TokioUnix => "tokio-unix",
            Transport::TokioBroadcast => "tokio-broadcast",
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2 => "iceoryx2",
        }
    }

    pub(super) fn parse(name: &str) -> Result<Transport> {
        let all = [
            Transport::Memcpy,
            Transport::UnixStream,
            Transport::ShmcastGating,
            Transport::ShmcastLossy,
            Transport::ShmcastSleep,
            Transport::ShmcastLossyNewest,
            Transport::ShmcastLossyOldest,
            Transport::ShmcastLatest,
            Transport::ShmcastTokio,
            Transport::TokioUnix,
            Transport::TokioBroadcast,
            #[cfg(feature = "iceoryx2")]
            Transport::Iceoryx2,
        ];
        all.into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| BenchError::Usage(format!("unknown stream transport {name:?}")))
    }

    /// Whether the transport is one of the tokio ones, whose subscribers only wait in a
    /// runtime ([`Wait::Event`]).
    pub fn tokio(self) -> bool {
        matches!(
            self,
            Transport::ShmcastTokio | Transport::TokioUnix | Transport::TokioBroadcast
        )
    }

    /// Whether subscribers may miss messages.
    pub fn lossy(self) -> bool {
        matches!(
            self,
            Transport::ShmcastLossy
                | Transport::ShmcastLossyNewest
                | Transport::ShmcastLossyOldest
                | Transport::ShmcastLatest
        )
    }
}

/// How a subscriber waits for the next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Blocks in the kernel until woken.
    Event,
    /// Polls without ever blocking.
    Busy,
}

impl Wait {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Wait::Event => "event",
            Wait::Busy => "busy",
        }
    }

    pub(super) fn parse(name: &str) -> Result<Wait> {
        match name {
            "event" => Ok(Wait::Event),
            "busy" => Ok(Wait::Busy),
            _ => Err(BenchError::Usage(format!("unknown wait mode {name:?}"))),
        }
    }
}

/// One trial.
#[derive(Clone, Copy, Debug)]
pub struct Trial {
    /// The transport.
    pub transport: Transport,
    /// Number of subscribers.
    pub subs: usize,
    /// Message size in bytes (a multiple of 8, at least [`crate::payload::MIN_LEN`]).
    pub size: usize,
    /// How long the publisher publishes.
    pub duration: Duration,
    /// How subscribers wait.
    pub wait: Wait,
    /// Messages the transport holds in flight per subscriber (shmcast: the largest power-of-two
    /// ring holding at most this many frames; iceoryx2: the subscriber buffer), or `None` for
    /// each transport's default for the size.
    pub in_flight: Option<usize>,
    /// Extra work per message of the last subscriber, ns (0: as fast as it checks).
    pub slow_ns: u64,
    /// The CPUs of the publishing thread and the subscribers (`None`: the scheduler's choice).
    pub pin: Option<Pin>,
}

impl Trial {
    /// How often the publisher looks at the clock, in messages: every message for large ones,
    /// less often for small ones, where a clock read would be a noticeable share of the work.
    pub(super) fn clock_every(&self) -> u64 {
        if self.size >= 4096 { 1 } else { 64 }
    }
}

impl Trial {
    /// A trial with each transport's default buffering and no deliberately slow subscriber.
    pub fn new(
        transport: Transport,
        subs: usize,
        size: usize,
        duration: Duration,
        wait: Wait,
    ) -> Trial {
        Trial {
            transport,
            subs,
            size,
            duration,
            wait,
            in_flight: None,
            slow_ns: 0,
            pin: None,
        }
    }
}

/// What one trial measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Messages published.
    pub published: u64,
    /// Messages checked by subscribers, summed over subscribers.
    pub delivered: u64,
    /// From the first message to the last subscriber's end of stream, s.
    pub elapsed: f64,
    /// CPU time of the publisher and every subscriber between start and end of stream, ns.
    pub cpu_ns: u64,
    /// The publisher's CPU time in the window plus every child's whole life (start-up and exit
    /// included), ns.
    pub cpu_lifetime_ns: u64,
    /// Syscalls the publisher made to deliver (sends, polls, wakes, waits for space).
    pub publisher_syscalls: u64,
    /// Times the publisher slept for space (shmcast; 0 where not counted).
    pub publisher_waits: u64,
    /// Over the messages subscribers checked, the sum of how many newer ones the publisher had
    /// committed when each was received (0 where not measured).
    pub behind: u64,
}

impl Outcome {
    /// Messages per second each subscriber received (on average over subscribers).
    pub fn msgs_per_s(&self, subs: usize) -> f64 {
        self.delivered as f64 / subs as f64 / self.elapsed
    }

    /// How many messages behind the newest a delivered message was when received, on average.
    pub fn mean_behind(&self) -> f64 {
        self.behind as f64 / self.delivered.max(1) as f64
    }

    /// Bytes per second delivered to all subscribers together.
    pub fn bytes_per_s(&self, size: usize) -> f64 {
        self.delivered as f64 * size as f64 / self.elapsed
    }
}
