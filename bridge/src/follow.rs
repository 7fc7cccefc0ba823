//! The sequence numbers an importer follows: one stream per `source` ([`wire`](crate::wire)),
//! so that two hosts exporting one topic name to one key are counted apart instead of as one
//! sequence that jumps back and forth.
//!
//! * Within a source, a jump from `n` to `n + 1 + k` is `k` messages missed (a gap), and a step
//!   back a reset.
//! * A new `epoch` from the same exporter (`origin`) is a new local publisher on the exporting
//!   host: a reset, whatever its first sequence number, never a gap.
//! * A new `origin` for a known source is a restarted exporter reading the same topic: its
//!   numbers go on from where the last exporter stopped, so what it did not read while it was
//!   down is a gap. (If that topic's publisher restarted as well while no exporter ran, nothing
//!   in the messages says so: a first number past the last one is counted as a gap, one before
//!   it as a reset.)
//! * The first message of a source starts its count: what was published before it is neither
//!   a gap nor a reset (nothing can tell what an importer that ran before this one received).
//!
//! At most [`MAX_SOURCES`] sources are followed at once. When one more arrives, the one heard
//! from least recently is forgotten: if it speaks again, its next message starts its count
//! afresh, as a first message does (so a gap across that silence is not counted), and it counts
//! as a new source in `sources` once more.

use crate::wire::Sender;

/// The most sources one key's importer follows at once.
pub(crate) const MAX_SOURCES: usize = 64;

/// What one message's sequence number says, against its source's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The first message of a source this importer follows (`new_source`), or the next one.
    InOrder,
    /// This many messages are missing before it.
    Gap(u64),
    /// The source's stream started again.
    Reset,
}

/// One source's place in its stream.
#[derive(Clone, Copy, Debug)]
struct Stream {
    sender: Sender,
    /// The next sequence number expected.
    expected: u64,
    /// When it was last heard, in messages of this key ([`Streams::clock`]).
    heard: u64,
}

/// The streams of one key.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    streams: Vec<Stream>,
    /// Counts messages: the order in which sources were heard.
    clock: u64,
}

/// What [`Streams::follow`] found besides the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Followed {
    /// The step of the message's sequence number.
    pub step: Step,
    /// Whether the message's source was not followed before it.
    pub new_source: bool,
}

impl Streams {
    /// Follows message `seq` from `sender`.
    pub fn follow(&mut self, sender: Sender, seq: u64) -> Followed {
        self.clock += 1;
        let clock = self.clock;
        let Some(s) = self
            .streams
            .iter_mut()
            .find(|s| s.sender.source == sender.source)
        else {
            if self.streams.len() >= MAX_SOURCES
                && let Some(oldest) = (0..self.streams.len()).min_by_key(|&i| self.streams[i].heard)
            {
                self.streams.swap_remove(oldest);
            }
            self.streams.push(Stream {
                sender,
                expected: seq.wrapping_add(1),
                heard: clock,
            });
            return Followed {
                step: Step::InOrder,
                new_source: true,
            };
        };
        let restarted = s.sender.origin == sender.origin && s.sender.epoch != sender.epoch;
        let expected = std::mem::replace(&mut s.expected, seq.wrapping_add(1));
        s.sender = sender;
        s.heard = clock;
        let step = if restarted || seq < expected {
            Step::Reset
        } else if seq > expected {
            Step::Gap(seq - expected)
        } else {
            Step::InOrder
        };
        Followed {
            step,
            new_source: false,
        }
    }

    /// How many sources are followed now.
    pub fn len(&self) -> usize {
        self.streams.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(origin: u64, source: u64, epoch: u32) -> Sender {
        Sender {
            origin,
            source,
            epoch,
        }
    }

    fn steps(s: &mut Streams, sender: Sender, seqs: impl IntoIterator<Item = u64>) -> Vec<Step> {
        seqs.into_iter().map(|q| s.follow(sender, q).step).collect()
    }

    #[test]
    fn two_sources_interleaved_are_counted_apart() {
        let mut s = Streams::default();
        let (a, b) = (from(1, 10, 0), from(2, 20, 0));
        assert!(s.follow(a, 0).new_source);
        assert!(s.follow(b, 500).new_source);
        for i in 1..100 {
            assert_eq!(s.follow(a, i).step, Step::InOrder);
            if i % 3 == 0 {
                assert_eq!(s.follow(b, 500 + i / 3).step, Step::InOrder);
            }
        }
        assert_eq!(s.follow(a, 105).step, Step::Gap(5));
    }

    #[test]
    fn a_new_epoch_is_a_reset_whatever_its_number() {
        let mut s = Streams::default();
        let a = from(1, 10, 0);
        steps(&mut s, a, 0..50);
        // The new publisher published 200 before the exporter reached it.
        assert_eq!(s.follow(from(1, 10, 1), 200).step, Step::Reset);
        assert_eq!(s.follow(from(1, 10, 1), 201).step, Step::InOrder);
        // Without a new epoch, a step back is a reset and a jump a gap.
        assert_eq!(s.follow(from(1, 10, 1), 5).step, Step::Reset);
        assert_eq!(s.follow(from(1, 10, 1), 9).step, Step::Gap(3));
    }

    #[test]
    fn a_restarted_exporter_goes_on_with_its_sources_numbers() {
        let mut s = Streams::default();
        steps(&mut s, from(1, 10, 3), 0..7);
        // Another origin (a restarted exporter, whose epochs start at 0 again).
        let step = s.follow(from(2, 10, 0), 12);
        assert_eq!(
            step,
            Followed {
                step: Step::Gap(5),
                new_source: false
            }
        );
        assert_eq!(s.follow(from(2, 10, 0), 13).step, Step::InOrder);
    }

    #[test]
    fn the_least_recently_heard_source_is_forgotten_beyond_the_bound() {
        let mut s = Streams::default();
        for source in 0..MAX_SOURCES as u64 {
            s.follow(from(source, source, 0), 0);
        }
        // Source 0 speaks again: it is now the most recent; source 1 is the oldest.
        s.follow(from(0, 0, 0), 1);
        assert!(s.follow(from(99, 99, 0), 0).new_source);
        assert_eq!(s.len(), MAX_SOURCES);
        assert_eq!(s.follow(from(0, 0, 0), 2).step, Step::InOrder);
        // Source 1 was forgotten: it starts afresh, its jump uncounted.
        let back = s.follow(from(1, 1, 0), 40);
        assert_eq!(
            back,
            Followed {
                step: Step::InOrder,
                new_source: true
            }
        );
    }
}
