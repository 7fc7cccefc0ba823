//! The cache window: a stream whose subscribers keep up ends each lap early, so that it reuses
//! the front of the ring while that is still in the CPU caches.

use super::{Mode, Writer};
use crate::frame;

/// Default of [`Writer::set_cache_window`]: 4 MiB, a core's L2 cache on the machines measured
/// (see the performance notes, "A stream that keeps up stays in the front of the ring").
pub const DEFAULT_CACHE_WINDOW: u64 = 4 << 20;

impl<A> Writer<A> {
    /// Keeps a stream whose subscribers keep up within the first `bytes` of the ring (and one
    /// message more), where it stays in the CPU caches, instead of cycling the whole ring
    /// through memory. Once a lap is `bytes` in (and at least two of the next message), the
    /// writer starts the next lap with a padding frame, but only when that costs no wait and
    /// no history a subscriber relies on: every admitted subscriber is gating (none lossy, at
    /// least one) and all have released the lap's first message. A subscriber that falls behind
    /// gets the whole ring as before. 0 turns it off; default [`DEFAULT_CACHE_WINDOW`].
    ///
    /// The price: while the window applies, a subscriber joining with [`Start::Oldest`](crate::Start::Oldest) finds
    /// the messages of the window, not of the whole ring.
    pub fn set_cache_window(&mut self, bytes: u64) {
        self.cache_window = bytes;
    }

    /// The padding that ends this lap now, before a `span`-byte frame, if the window calls for
    /// it ([`set_cache_window`](Self::set_cache_window)): the room left in the lap.
    pub(super) fn early_wrap(&mut self, span: u64) -> Option<u64> {
        let off = self.committed & self.mask;
        let room = self.cfg.capacity() - off;
        if self.cache_window == 0
            || off < self.cache_window.max(2 * span)
            || self.committed < self.next_early_look
            || room - frame::FRAME_HEADER_LEN as u64 > u64::from(u32::MAX)
        {
            return None;
        }
        // Read the cursors at most once per sixteenth of the window (small messages).
        self.next_early_look = self.committed + (self.cache_window / 16).max(span);
        if !self.all_gating() {
            return None;
        }
        if !self.has_space(room + span) {
            self.refresh_min_gate();
        }
        // Refreshing may have demoted someone.
        (self.all_gating() && self.has_space(room + span)).then_some(room)
    }

    /// At least one subscriber, and every one gating.
    fn all_gating(&self) -> bool {
        !self.slots.is_empty() && self.slots.iter().all(|s| s.mode == Mode::Gating)
    }
}
