//! Latest reads: a subscriber that only wants the current value skips whatever it has not read
//! yet and receives the newest message, learning how many it passed over.
//!
//! The skip is the core's (`Reader::skip_to_newest`): a lossy subscriber then copies and
//! validates that message as always; if the publisher overwrites it meanwhile, the read skips to
//! the newest again, so a latest read never returns bytes the publisher overwrote. A gating
//! subscriber releases what it skips (the publisher may reuse that space at once) and views the
//! newest message in place.

use std::fmt;
use std::ops::Deref;
use std::os::fd::AsFd;
use std::time::Duration;

use super::{Got, Sample, Subscriber, map_read};
use crate::error::RecvError;
use crate::wake;

/// Skips and reads before a latest read against a publisher that laps it every time reports
/// nothing found (the waiting receives then look again).
const ATTEMPTS: usize = 16;

/// The newest message, from [`Subscriber::recv_latest`] and its variants: a [`Sample`]
/// (dereference to use it) and how many messages this receive passed over to reach it.
pub struct Latest<'a> {
    sample: Sample<'a>,
    skipped: u64,
}

impl<'a> Latest<'a> {
    /// Messages between the previous receive and this one that were not received: skipped to
    /// reach the newest, or overwritten while being read. `0` if this is the very next message.
    /// Also counted in [`SubscriberStats`](crate::SubscriberStats): `skipped`, or `lagged` for
    /// overwritten ones.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The message itself.
    pub fn into_sample(self) -> Sample<'a> {
        self.sample
    }
}

impl<'a> Deref for Latest<'a> {
    type Target = Sample<'a>;
    fn deref(&self) -> &Sample<'a> {
        &self.sample
    }
}

impl fmt::Debug for Latest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latest")
            .field("seq", &self.sample.seq())
            .field("len", &self.sample.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl Subscriber {
    /// Receives the newest message, blocking until there is one this subscriber has not
    /// received; every older message not yet received is skipped, and counted
    /// ([`Latest::skipped`]). For subscribers that want the current value, not the history
    /// ("keep last 1", conflation). Returns errors as [`recv`](Self::recv) does, `Lagged`
    /// excepted: a lap while reading is absorbed into the skipped count.
    ///
    /// ```no_run
    /// use shmcast::{RecvError, Subscriber};
    ///
    /// let mut sub = Subscriber::builder("camera").lossy().connect()?;
    /// loop {
    ///     match sub.recv_latest() {
    ///         Ok(frame) => println!("frame {} ({} older ones skipped)", frame.seq(), frame.skipped()),
    ///         Err(RecvError::Disconnected) => break,
    ///         Err(e) => return Err(e.into()),
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_latest(&mut self) -> Result<Latest<'_>, RecvError> {
        self.recv_latest_until(None)
    }

    /// Like [`recv_latest`](Self::recv_latest), waiting at most `timeout`
    /// ([`RecvError::Timeout`]).
    pub fn recv_latest_timeout(&mut self, timeout: Duration) -> Result<Latest<'_>, RecvError> {
        self.recv_latest_until(Some(timeout))
    }

    /// Like [`recv_latest`](Self::recv_latest) without waiting: [`RecvError::Empty`] if nothing
    /// new is committed. The descriptor follows the same contract as after
    /// [`try_recv`](Self::try_recv).
    pub fn try_recv_latest(&mut self) -> Result<Latest<'_>, RecvError> {
        let before = self.reader.next_seq();
        // Nothing new: the wait is announced (or what arrived meanwhile is taken, still the
        // newest and still never `Lagged`).
        match self.try_next_latest()? {
            Some(got) => Ok(self.latest(got, before)),
            None => Err(RecvError::Empty),
        }
    }

    /// How many messages the publisher has committed beyond the last one this subscriber
    /// received or skipped: `0` when it is up to date. Measures how fresh the last receive was;
    /// informational (the publisher's count, read without synchronising).
    pub fn behind(&self) -> u64 {
        self.reader.behind()
    }

    fn recv_latest_until(&mut self, timeout: Option<Duration>) -> Result<Latest<'_>, RecvError> {
        let before = self.reader.next_seq();
        let sample = self.wait_for(timeout, Self::next_latest)?;
        let skipped = sample.seq().saturating_sub(before);
        Ok(Latest { sample, skipped })
    }

    /// Where the next receive starts: what a latest read counts its skips from.
    #[cfg(feature = "tokio")]
    pub(crate) fn next_seq(&self) -> u64 {
        self.reader.next_seq()
    }

    /// What [`try_recv_latest`](Self::try_recv_latest) finds, not yet lent out (`None`:
    /// `Empty`, with the wait announced).
    pub(crate) fn try_next_latest(&mut self) -> Result<Option<Got>, RecvError> {
        self.try_next_with(Self::next_latest)
    }

    /// The newest message `got`, counting what was skipped since `before`.
    pub(crate) fn latest(&mut self, got: Got, before: u64) -> Latest<'_> {
        let sample = self.sample(got);
        let skipped = sample.seq().saturating_sub(before);
        Latest { sample, skipped }
    }

    /// Skips to the newest committed message and takes it; again if the publisher overwrites it
    /// while it is copied.
    fn next_latest(&mut self) -> Result<Option<Got>, RecvError> {
        for _ in 0..ATTEMPTS {
            match self.reader.skip_to_newest() {
                Ok(skip) => {
                    if skip.writer_waiting && !self.gone {
                        // Never blocks; a full queue means a doorbell is already pending.
                        let _ = wake::ring_doorbell(self.sock.as_fd());
                    }
                }
                Err(e) => return map_read(e),
            }
            match self.next() {
                Err(RecvError::Lagged(_)) => {}
                other => return other,
            }
        }
        Ok(None)
    }
}
