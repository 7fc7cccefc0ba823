//! Per-topic counters of a bridge, updated by its export and import threads without locks and
//! read at any time as a [`TopicStats`] snapshot.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::config::{Direction, Reliability};

/// The live counters of one bridged topic. Every counter only grows; each is Relaxed (they are
/// statistics: no other memory is published through them).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
    pub gaps: AtomicU64,
    pub gap_events: AtomicU64,
    pub resets: AtomicU64,
    pub sources: AtomicU64,
    pub malformed: AtomicU64,
    pub refused: AtomicU64,
    pub local_lagged: AtomicU64,
    pub local_dropped: AtomicU64,
    pub demotions: AtomicU64,
    pub reconnects: AtomicU64,
    pub last_seq: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

/// A snapshot of one bridged topic's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicStats {
    /// The local topic.
    pub topic: String,
    /// The Zenoh key expression.
    pub key: String,
    /// Which way the topic is bridged.
    pub direction: Direction,
    /// Its delivery choice.
    pub reliability: Reliability,
    /// Messages bridged: put on Zenoh (export) or published locally (import).
    pub messages: u64,
    /// Payload bytes bridged.
    pub bytes: u64,
    /// Import: messages missing from the remote sequence (a sequence number that jumps from
    /// `n` to `n + 1 + k` counts `k`). The local topic's publisher counts them too, as messages
    /// lost upstream ([`TopicCounters::upstream_lost`](shmcast::TopicCounters::upstream_lost),
    /// shown by `shmcast stat`).
    pub gaps: u64,
    /// Import: how many jumps there were.
    pub gap_events: u64,
    /// Import: times a remote stream started again (its publisher restarted: the exporter
    /// says so, or the sequence went backwards); counting starts over there.
    pub resets: u64,
    /// Import: the sources heard, each a stream of sequence numbers: the exported topic of one
    /// host, whichever exporter reads it (and whether it restarted). More than 1 means several
    /// hosts export to this key ([`Event::FanIn`](crate::Event::FanIn)): each is followed
    /// apart, and their messages interleave on the local topic.
    pub sources: u64,
    /// Import: Zenoh payloads that were not bridge messages, or too large for the topic:
    /// counted and skipped.
    pub malformed: u64,
    /// Import: messages refused because their contract differs from the local topic's, or
    /// because the configured capacity cannot hold two of their largest.
    /// Export: connections to the local topic refused because its publisher declares it
    /// imported ([`Event::LoopRefused`](crate::Event::LoopRefused)).
    pub refused: u64,
    /// Export: messages the lossy local subscriber missed (the local publisher overran it).
    pub local_lagged: u64,
    /// Import: messages dropped because the local ring was full (lossy), or while the local
    /// topic could not be bound (retried). The local topic counts them as lost upstream too:
    /// at once, or, for those dropped before it was bound, when it is.
    pub local_dropped: u64,
    /// Export: times the reliable local subscriber was demoted for stalling the publisher.
    pub demotions: u64,
    /// Export: times the local subscriber connected again after its publisher went away.
    pub reconnects: u64,
    /// The sequence number of the last message bridged (0 before the first): read from the
    /// local topic (export), or published into it (import; a message dropped or refused does
    /// not move it).
    pub last_seq: u64,
}

impl TopicStats {
    pub(crate) fn read(
        topic: &str,
        key: &str,
        direction: Direction,
        reliability: Reliability,
        c: &Counters,
    ) -> TopicStats {
        TopicStats {
            topic: topic.to_owned(),
            key: key.to_owned(),
            direction,
            reliability,
            messages: c.messages.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            gaps: c.gaps.load(Relaxed),
            gap_events: c.gap_events.load(Relaxed),
            resets: c.resets.load(Relaxed),
            sources: c.sources.load(Relaxed),
            malformed: c.malformed.load(Relaxed),
            refused: c.refused.load(Relaxed),
            local_lagged: c.local_lagged.load(Relaxed),
            local_dropped: c.local_dropped.load(Relaxed),
            demotions: c.demotions.load(Relaxed),
            reconnects: c.reconnects.load(Relaxed),
            last_seq: c.last_seq.load(Relaxed),
        }
    }

    /// This snapshot as one JSON object (what `shmcast bridge --stats` prints per line).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "topic": self.topic,
            "key": self.key,
            "direction": self.direction.to_string(),
            "reliability": self.reliability.to_string(),
            "messages": self.messages,
            "bytes": self.bytes,
            "gaps": self.gaps,
            "gap_events": self.gap_events,
            "resets": self.resets,
            "sources": self.sources,
            "malformed": self.malformed,
            "refused": self.refused,
            "local_lagged": self.local_lagged,
            "local_dropped": self.local_dropped,
            "demotions": self.demotions,
            "reconnects": self.reconnects,
            "last_seq": self.last_seq,
        })
    }
}
