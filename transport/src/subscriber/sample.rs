//! A received message: a view of the ring for a gating subscriber, a validated copy for a
//! lossy one.

use super::Subscriber;
use crate::error::PodError;
use shmcast_core::Frame;
use std::ops::Deref;

/// A received message. For a gating subscriber it is a view of the ring itself, released when
/// dropped; for a lossy one, a validated copy.
pub struct Sample<'a> {
    sub: &'a mut Subscriber,
    frame: Option<Frame>,
    seq: u64,
    len: usize,
}

impl<'a> Sample<'a> {
    /// A gating subscriber's frame, viewed in place until dropped.
    pub(crate) fn in_place(sub: &'a mut Subscriber, frame: Frame) -> Self {
        Sample {
            seq: frame.seq(),
            len: frame.len(),
            frame: Some(frame),
            sub,
        }
    }

    /// A message copied into the subscriber's buffer.
    pub(crate) fn copied(sub: &'a mut Subscriber, seq: u64, len: usize) -> Self {
        Sample {
            seq,
            len,
            frame: None,
            sub,
        }
    }

    /// The message's sequence number (0 for the publisher's first message).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether every byte read from this sample so far was the message's. Always `true` for a
    /// lossy subscriber's copy, and for a gating subscriber's view of the ring while the
    /// publisher gates on it. A gating subscriber demoted while it holds the sample (it stalled
    /// the publisher past its [stall bound](crate::PublisherBuilder::stall_bound)) no longer
    /// holds the publisher back, and the publisher may then write a later message over the
    /// sample: call this after using the bytes, and discard what was made of them if it
    /// returns `false`. The next receive reports the demotion
    /// ([`RecvError::Demoted`](crate::RecvError::Demoted)).
    ///
    /// ```no_run
    /// # let mut sub = shmcast::Subscriber::connect("prices")?;
    /// let sample = sub.recv()?;
    /// let total: u64 = sample.iter().map(|&b| u64::from(b)).sum();
    /// if sample.is_intact() {
    ///     println!("message {}: {total}", sample.seq());
    /// } else {
    ///     eprintln!("message {} was overwritten while it was read", sample.seq());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_intact(&self) -> bool {
        match &self.frame {
            Some(frame) => self.sub.intact(frame),
            None => true,
        }
    }

    /// How many messages the publisher has committed after this one, as of this call: `0` if it
    /// is the newest. Measures freshness; informational (the publisher's count, read without
    /// synchronising).
    pub fn behind(&self) -> u64 {
        self.sub
            .reader
            .published()
            .saturating_sub(self.seq.saturating_add(1))
    }

    /// The payload as a `T`.
    pub fn as_pod<T: bytemuck::Pod>(&self) -> Result<&T, PodError> {
        bytemuck::try_from_bytes(self).map_err(PodError::cast::<T>(self.len))
    }
}

impl Deref for Sample<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.frame {
            // A demotion (only past a configured stall bound) ends the promise below:
            // docs/architecture.md, "Demotion".
            // SAFETY: in-place frames are gating ones; the publisher does not write them before
            // their release in Drop, after every borrow of this slice has ended.
            Some(frame) => unsafe { self.sub.payload(frame) },
            None => self.sub.copied(self.len),
        }
    }
}

impl Drop for Sample<'_> {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            self.sub.release(frame);
        }
    }
}

impl std::fmt::Debug for Sample<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sample")
            .field("seq", &self.seq)
            .field("len", &self.len)
            .finish()
    }
}
