//! Samples: received messages, viewed in place in the ring (gating) or as a validated copy
//! (lossy), released when dropped.
#![allow(unsafe_code)]

use std::ops::Deref;

use shmcast_core::Frame;

use crate::error::PodError;
use crate::subscriber::Subscriber;

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
