//! The "latest" read: a reader that only wants the current value skips to the newest committed
//! message ([`Reader::skip_to_newest`]) and reads it, learning how many messages it skipped.
//! The search is the `resume` module's.

use crate::frame::FrameError;
use crate::layout::hdr;
use crate::reader::{RESYNC_ATTEMPTS, ReadError, Reader};
use crate::resume::{self, Found};
use crate::sync::Ordering;
use crate::wake;

/// What [`Reader::skip_to_newest`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skip {
    /// Messages skipped: the next read returns the newest committed message, whose sequence
    /// number is this many above the one the reader expected.
    pub skipped: u64,
    /// A gating reader released the skipped messages and the writer waits for space: signal
    /// it, as after [`Reader::release`] returning `true`.
    pub writer_waiting: bool,
}

impl Reader {
    /// How many messages the writer has committed beyond the last one this reader received or
    /// skipped: 0 when it is up to date. Informational (a Relaxed load of the writer's count,
    /// which only grows), for measuring how fresh a read was.
    pub fn behind(&self) -> u64 {
        self.published().saturating_sub(self.seq)
    }

    /// How many messages the writer has committed: the sequence number its next one will
    /// carry. Informational (a Relaxed load; a peer's word, so only for statistics).
    pub fn published(&self) -> u64 {
        self.ring.u64_at(hdr::NEXT_SEQ).load(Ordering::Relaxed)
    }

    /// A "latest" read's first half: moves to the newest committed message, so that the next
    /// [`try_peek`](Self::try_peek) or [`try_copy`](Self::try_copy) returns it, and says how
    /// many messages were skipped on the way (counted in [`ReaderStats::skipped`](crate::ReaderStats::skipped)). A gating
    /// reader releases them. Never blocks.
    ///
    /// `Empty` or `Closed` when nothing beyond what was read is committed. A lossy reader may
    /// still be lapped before its copy of that message validates: the copy then reports
    /// `Lagged` as always, and a caller that wants the newest message skips again. If the ring
    /// offers no usable newest position (see the `resume` module), nothing is skipped and the
    /// next read returns the next message in order.
    ///
    /// ```
    /// use shmcast_core::{Region, RingConfig, Writer, Reader, Mode, Start};
    ///
    /// let cfg = RingConfig::new(1024, 64)?;
    /// let mut writer: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
    /// let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
    /// writer.admit(cb.clone(), Mode::Gating, Start::Newest, ())?;
    /// let mut reader = Reader::attach(writer.ring().clone(), cb)?;
    /// for i in 0..5u8 {
    ///     writer.send(&[i; 8], |_| {})?;
    /// }
    /// assert_eq!(reader.skip_to_newest()?.skipped, 4);
    /// let mut buf = Vec::new();
    /// assert_eq!((reader.try_copy(&mut buf)?.seq, buf[0]), (4, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn skip_to_newest(&mut self) -> Result<Skip, ReadError> {
        for _ in 0..RESYNC_ATTEMPTS {
            let committed = self.load_committed()?;
            if self.pos == committed {
                return Err(self.at_end());
            }
            let (pos, seq) = match resume::newest(&self.ring, self.geometry(), committed) {
                Found::At { pos, seq, .. } if pos > self.pos => (pos, seq),
                Found::At { .. } | Found::Unusable => return Ok(Skip::default()),
                Found::Moved => {
                    crate::sync::spin_hint();
                    continue;
                }
            };
            let Some(skipped) = seq.checked_sub(self.seq) else {
                return Err(FrameError::Sequence {
                    expected: self.seq,
                    found: seq,
                }
                .into());
            };
            self.pos = pos;
            self.seq = seq;
            self.seen = self.seen.max(committed);
            self.stats.skipped = self.stats.skipped.saturating_add(skipped);
            self.publish_progress();
            let writer_waiting =
                self.gating && wake::writer_to_signal(&self.ring, &mut self.signalled_wait);
            return Ok(Skip {
                skipped,
                writer_waiting,
            });
        }
        Ok(Skip::default())
    }
}
