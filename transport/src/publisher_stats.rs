//! What a publisher counts ([`Publisher::stats`](crate::Publisher::stats)).

use shmcast_core::SubscriberInfo;

/// Publisher statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublisherStats {
    /// Messages published.
    pub messages: u64,
    /// Wake syscalls made (doorbell sends and futex wakes). Zero while no subscriber is parked.
    pub wake_syscalls: u64,
    /// Times a loan found the ring full.
    pub full: u64,
    /// Times the publisher slept waiting for space.
    pub space_waits: u64,
    /// Gating subscribers demoted to lossy.
    pub demotions: u64,
    /// Laps started early to stay in the cache window ([`PublisherBuilder::cache_window`](crate::PublisherBuilder::cache_window)).
    pub early_wraps: u64,
    /// Subscribers admitted so far.
    pub admitted: u64,
    /// Subscriber connections refused (policy, protocol, overload, timeout, a contract that
    /// does not meet the subscriber's expectation). Introspection requests refused as too
    /// frequent are not counted.
    pub refused: u64,
    /// Subscribers that left or died.
    pub departed: u64,
    /// Messages lost upstream, before they reached this publisher, as noted with
    /// [`Publisher::note_upstream_lost`](crate::Publisher::note_upstream_lost).
    pub upstream_lost: u64,
    /// Every current subscriber.
    pub subscribers: Vec<SubscriberInfo>,
}
