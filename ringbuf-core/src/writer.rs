//! The writer: reserve a contiguous payload, commit or abandon it, admit and remove subscribers.
//! Whom a commit must wake is the [`wake`] protocol's decision; the writer calls it.
//!
//! # Overload and failure
//!
//! * A full ring (a gating subscriber has not released the space) makes [`Writer::try_reserve`]
//!   return [`ReserveError::Full`]; it never overwrites unreleased bytes. The transport then waits
//!   with [`Writer::prepare_wait_for_space`], or demotes the stalled subscriber with
//!   [`Writer::demote`].
//! * Cursors come from subscribers and are untrusted: a cursor ahead of the writer or more than a
//!   ring behind it demotes that subscriber to lossy (it gets lag, nobody else is affected).
//! * Lossy subscribers never slow the writer.
//!
//! ```
//! use shmcast_core::{Region, RingConfig, Writer, Reader, Mode, Start, ReadError};
//!
//! let cfg = RingConfig::new(256, 64)?;
//! let mut writer: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
//! writer.admit(cb.clone(), Mode::Gating, Start::Newest, ())?;
//! let mut reader = Reader::attach(writer.ring().clone(), cb)?;
//!
//! // The ring holds 256 bytes: a 64-byte message takes 80, so the fourth one does not fit
//! // until the gating reader releases something.
//! for _ in 0..3 {
//!     writer.send(&[7; 64], |_| {})?;
//! }
//! assert!(matches!(writer.try_reserve(64), Err(shmcast_core::ReserveError::Full { .. })));
//! let frame = reader.try_peek()?;
//! reader.release(frame);
//! writer.send(&[8; 64], |_| {})?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![allow(unsafe_code)]

use crate::frame::{self, Kind};
use crate::layout::{self, RingConfig, cb, hdr};
use crate::region::Region;
use crate::reservation::{Reservation, ReserveError};
use crate::sync::{AtomicU32, Ordering, fence};
use crate::wake::{self, Wakeups};
use core::fmt;

mod window;

/// How a subscriber is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Reliable: the writer never overwrites what this subscriber has not released.
    Gating,
    /// Never slows the writer; on overrun the subscriber is told how many messages it missed.
    Lossy,
}

impl Mode {
    pub(crate) fn encode(self) -> u32 {
        match self {
            Mode::Gating => layout::MODE_GATING,
            Mode::Lossy => layout::MODE_LOSSY,
        }
    }
}

/// Where a new subscriber starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Start {
    /// With the next message committed after it joins.
    #[default]
    Newest,
    /// With the oldest message still intact in the ring (late-joiner history).
    Oldest,
}

/// Identifies an admitted subscriber to the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(pub u64);

/// What the writer knows about one subscriber (its cursor is as the subscriber wrote it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriberInfo {
    /// The subscriber.
    pub id: SubscriberId,
    /// Its current mode (gating may have been demoted).
    pub mode: Mode,
    /// Position it has released up to.
    pub cursor: u64,
    /// Bytes committed that it has not released.
    pub lag_bytes: u64,
    /// Messages committed that it has not consumed (from its own counter).
    pub lag_messages: u64,
    /// Whether it is parked waiting for a signal.
    pub parked: bool,
    /// Messages it reports having received.
    pub received: u64,
    /// Messages it reports having missed.
    pub lagged: u64,
}

/// Counters kept by the writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Messages committed.
    pub messages: u64,
    /// Wakeups requested for parked subscribers (one per signal, one per wake of the wake word).
    pub wakeups: u64,
    /// Reservations refused because the ring was full.
    pub full: u64,
    /// Subscribers demoted from gating to lossy.
    pub demotions: u64,
    /// Laps started before the end of the ring, to stay within the cache window
    /// ([`Writer::set_cache_window`]).
    pub early_wraps: u64,
}

pub use window::DEFAULT_CACHE_WINDOW;

struct Slot<A> {
    id: SubscriberId,
    cb: Region,
    mode: Mode,
    attachment: A,
}

/// The single writer of a ring. `A` is whatever the transport attaches to each subscriber
/// (the connection it rings a doorbell on, for instance); the writer hands it back when that
/// subscriber needs a signal.
pub struct Writer<A> {
    ring: Region,
    cfg: RingConfig,
    mask: u64,
    committed: u64,
    /// The highest reservation end announced in `hdr::RESERVED`. Never lowered: a truncated or
    /// abandoned reservation may have written up to it, and a lossy reader trusts a frame's
    /// bytes only while the announced end is at most a ring ahead of that frame.
    reserved: u64,
    next_seq: u64,
    tail: u64,
    /// The header's `slack`: a frame boundary half a ring ahead of the overwrite point.
    slack: u64,
    /// Lowest gating cursor as last read; never above the true minimum, refreshed only when the
    /// cached value says the ring is full (saves reading every subscriber's line per message).
    min_gate: u64,
    /// How far into a lap the writer goes before it starts the next one early, when it can.
    cache_window: u64,
    /// Committed position before which no early wrap is considered (bounds the cursor reads).
    next_early_look: u64,
    closed: bool,
    /// Number of the current or last wait for space (`writer_waiting`); never 0.
    wait_epoch: u32,
    slots: Vec<Slot<A>>,
    next_id: u64,
    stats: WriterStats,
}

impl<A> fmt::Debug for Writer<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("cfg", &self.cfg)
            .field("committed", &self.committed)
            .field("next_seq", &self.next_seq)
            .field("subscribers", &self.slots.len())
            .finish()
    }
}

impl<A> Writer<A> {
    /// Initialises a ring in `ring` (zeroed memory of at least `cfg.region_len()` bytes) and
    /// becomes its writer.
    pub fn new(ring: Region, cfg: RingConfig) -> Result<Writer<A>, layout::LayoutError> {
        let need = cfg.region_len() as u64;
        if (ring.len() as u64) < need {
            return Err(layout::LayoutError::TooSmall {
                len: ring.len() as u64,
                need,
            });
        }
        layout::init_ring(&ring, &cfg);
        Ok(Writer {
            ring,
            cfg,
            mask: cfg.capacity() - 1,
            committed: 0,
            reserved: 0,
            next_seq: 0,
            tail: 0,
            slack: 0,
            min_gate: 0,
            cache_window: DEFAULT_CACHE_WINDOW,
            next_early_look: 0,
            closed: false,
            wait_epoch: 0,
            slots: Vec::new(),
            next_id: 1,
            stats: WriterStats::default(),
        })
    }

    /// The ring region.
    pub fn ring(&self) -> &Region {
        &self.ring
    }

    /// The ring's geometry.
    pub fn config(&self) -> RingConfig {
        self.cfg
    }

    /// Sequence number the next message will carry (= messages committed so far).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Committed position in bytes.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Counters.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// Number of admitted subscribers.
    pub fn subscriber_count(&self) -> usize {
        self.slots.len()
    }

    fn need_for(&self, len: usize) -> Result<(u64, u64, u32), ReserveError> {
        let max = self.cfg.max_payload();
        if len > max {
            return Err(ReserveError::TooLarge { len, max });
        }
        let span = frame::span(len as u64);
        let room = self.cfg.capacity() - (self.committed & self.mask);
        let pad = if span > room { room } else { 0 };
        Ok((pad, pad + span, len as u32))
    }

    fn has_space(&self, need: u64) -> bool {
        self.committed + need - self.min_gate <= self.cfg.capacity()
    }

    /// Reserves a contiguous `len`-byte payload. Never blocks. `len` is the most the caller may
    /// write: [`Reservation::truncate`] shortens the message before it is committed.
    pub fn try_reserve(&mut self, len: usize) -> Result<Reservation, ReserveError> {
        if self.closed {
            return Err(ReserveError::Closed);
        }
        let (mut pad, mut need, len) = self.need_for(len)?;
        if pad == 0
            && let Some(room) = self.early_wrap(need)
        {
            (pad, need) = (room, room + need);
            self.stats.early_wraps += 1;
        }
        if !self.has_space(need) {
            self.refresh_min_gate();
            if !self.has_space(need) {
                self.stats.full += 1;
                let free = self.cfg.capacity() - (self.committed - self.min_gate);
                return Err(ReserveError::Full { need, free });
            }
        }
        let end = self.committed + need;
        if let Some(target) = end.checked_sub(self.cfg.capacity()) {
            self.advance_tail(target);
        }
        // After a truncated or abandoned reservation `end` may be below what was announced, and
        // the bytes up to the announced end may hold that reservation's writes: keep it.
        self.reserved = self.reserved.max(end);
        self.ring
            .u64_at(hdr::RESERVED)
            .store(self.reserved, Ordering::Relaxed);
        // SYNC(seqlock): Release fence before the first byte of this reservation is written; pairs
        // with the Acquire fence a lossy reader issues after copying, before it loads `reserved`
        // (Reader::try_copy). A reader that saw any byte written below sees `reserved >= end`.
        fence(Ordering::Release);
        if pad > 0 {
            let off = layout::data_off(self.committed, self.mask);
            let meta = frame::encode_meta(
                Kind::Padding,
                (pad as usize - frame::FRAME_HEADER_LEN) as u32,
            );
            self.ring.u64_at(off).store(meta, Ordering::Relaxed);
            self.ring
                .u64_at(off + 8)
                .store(self.next_seq, Ordering::Relaxed);
        }
        Ok(Reservation {
            pos: self.committed + pad,
            end,
            len,
        })
    }

    /// Moves `tail` to the first frame boundary at or after `target` (frames below it are about
    /// to be overwritten). Walks the writer's own frames, which only it writes.
    fn advance_tail(&mut self, target: u64) {
        let tail = self.walk(self.tail, target);
        // Where a lapped reader with `Resume::Slack` resumes: far enough on that the writer
        // writes two of the largest frames before it reaches it, and at most half a ring on.
        let ahead = (2 * frame::span(self.cfg.max_payload() as u64)).min(self.cfg.capacity() / 2);
        let slack = self.walk(self.slack.max(tail), target + ahead);
        if slack != self.slack {
            self.slack = slack;
            // SYNC(slack): Release; pairs with the Acquire load in resume::slack, so a reader
            // that sees this position sees the committed header of the frame there.
            self.ring.u64_at(hdr::SLACK).store(slack, Ordering::Release);
        }
        if tail != self.tail {
            self.tail = tail;
            // SYNC(tail): Release; pairs with the Acquire load in Reader::resync, so a reader that
            // sees this tail sees the committed header of the frame there.
            self.ring.u64_at(hdr::TAIL).store(tail, Ordering::Release);
        }
    }

    /// The first frame boundary at or after `target`, walking from the boundary `from`, and at
    /// most `committed`. Walks the writer's own frames, which only it writes.
    fn walk(&self, mut pos: u64, target: u64) -> u64 {
        while pos < target && pos < self.committed {
            let meta = self
                .ring
                .u64_at(layout::data_off(pos, self.mask))
                .load(Ordering::Relaxed);
            match frame::decode(
                meta,
                pos,
                self.committed,
                self.cfg.capacity(),
                self.cfg.max_payload() as u32,
            ) {
                Ok(g) => pos += g.span,
                Err(_) => {
                    debug_assert!(false, "writer found its own frame at {pos} corrupt");
                    return self.committed;
                }
            }
        }
        pos
    }

    /// The payload of a reservation, for the caller to fill.
    ///
    /// # Safety
    /// The slice must not outlive the reservation (it must be dropped before `commit` or
    /// `abandon`), and no other slice of the same reservation may exist at the same time.
    #[cfg(not(shmcast_loom))]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn payload_mut(&self, res: &Reservation) -> &mut [u8] {
        let off = frame::payload_off(res.pos, self.mask);
        // SAFETY: the reservation's bytes belong to the writer until commit (no gating reader may
        // read below `end` yet; lossy readers copy racily and validate); exclusivity is the
        // caller's contract.
        unsafe { self.ring.slice_mut(off, res.len as usize) }
    }

    /// The payload of a reservation as a raw pointer (16-byte aligned, `res.len()` bytes), for
    /// the transport to build its own slices from. Writing through it is sound until the
    /// reservation is committed or abandoned.
    #[cfg(not(shmcast_loom))]
    pub fn payload_ptr(&self, res: &Reservation) -> *mut u8 {
        self.ring
            .as_ptr()
            .wrapping_add(frame::payload_off(res.pos, self.mask))
    }

    /// Copies `src` into the reservation's payload (at most `res.len()` bytes), with word-sized
    /// atomic stores: a lossy reader of this process copying the same bytes races only with
    /// atomics. (A caller writing through [`payload_mut`](Self::payload_mut) instead uses plain
    /// stores; lossy readers in other processes are outside this process's memory model.)
    pub fn write_payload(&self, res: &Reservation, src: &[u8]) {
        let n = src.len().min(res.len as usize);
        let off = frame::payload_off(res.pos, self.mask);
        #[cfg(not(shmcast_loom))]
        self.ring.write_words(off, &src[..n]);
        // SAFETY: the reservation's bytes belong to the writer until commit (see payload_mut).
        #[cfg(shmcast_loom)]
        unsafe {
            self.ring.write_bytes(off, &src[..n])
        }
    }

    /// Commits a reservation, with the length it has now (see [`Reservation::truncate`]), and
    /// calls `wake` for every subscriber parked with
    /// [`PARKED_SIGNAL`](wake::PARKED_SIGNAL). Returns what the transport must do; if
    /// [`Wakeups::wake_word`] is set, the [`wake_word`](Self::wake_word) was advanced and the
    /// transport must wake every sleeper on it.
    pub fn commit(&mut self, res: Reservation, wake: impl FnMut(&A)) -> Wakeups {
        let off = layout::data_off(res.pos, self.mask);
        self.ring.u64_at(off).store(
            frame::encode_meta(Kind::Message, res.len),
            Ordering::Relaxed,
        );
        self.ring
            .u64_at(off + 8)
            .store(self.next_seq, Ordering::Relaxed);
        self.next_seq += 1;
        self.committed = res.end;
        self.stats.messages += 1;
        self.ring
            .u64_at(hdr::NEXT_SEQ)
            .store(self.next_seq, Ordering::Relaxed);
        // Published by the Release store below, like the frame it points at.
        self.ring
            .u64_at(hdr::NEWEST)
            .store(res.pos, Ordering::Relaxed);
        // SYNC(commit): Release; pairs with the Acquire loads of `committed` in Reader::try_peek,
        // Reader::try_copy and Reader::may_sleep: the frame header and payload written above
        // are visible to a reader that sees this position.
        self.ring
            .u64_at(hdr::COMMITTED)
            .store(res.end, Ordering::Release);
        self.wake_parked(wake)
    }

    /// Drops a reservation without publishing it. The next reservation starts where this one
    /// did; `reserved` keeps this one's end (see [`Writer::try_reserve`]).
    pub fn abandon(&mut self, res: Reservation) {
        drop(res);
    }

    /// Reserves, copies and commits `payload` in one go.
    pub fn send(&mut self, payload: &[u8], wake: impl FnMut(&A)) -> Result<Wakeups, ReserveError> {
        let res = self.try_reserve(payload.len())?;
        self.write_payload(&res, payload);
        Ok(self.commit(res, wake))
    }

    /// After a commit: wakes the parked subscribers (the fence and the decisions are
    /// `wake::take_parked`'s).
    fn wake_parked(&mut self, wake: impl FnMut(&A)) -> Wakeups {
        if self.slots.is_empty() {
            return Wakeups::default();
        }
        let subscribers = self.slots.iter().map(|s| (&s.cb, &s.attachment));
        let w = wake::take_parked(&self.ring, subscribers, wake);
        self.stats.wakeups += w.syscalls() as u64;
        w
    }

    /// The wake word that subscribers parked with [`PARKED_ON_WORD`](wake::PARKED_ON_WORD)
    /// sleep on (see [`Wakeups::wake_word`]).
    pub fn wake_word(&self) -> &AtomicU32 {
        wake::wake_word(&self.ring)
    }

    /// Takes subscriber `id`'s park announcement, as a commit would: calls `wake` if it waits for
    /// its own signal, or advances the wake word if it sleeps on it. For events other than
    /// commits (a demotion) that the subscriber must hear.
    pub fn wake_one(&mut self, id: SubscriberId, wake: impl FnMut(&A)) -> Wakeups {
        let Some(slot) = self.slots.iter().find(|s| s.id == id) else {
            return Wakeups::default();
        };
        // The event was stored before this call; take_one's fence orders it before the swap.
        wake::take_one(&self.ring, &slot.cb, &slot.attachment, wake)
    }

    /// Re-reads every gating cursor. A cursor ahead of the writer, or more than a ring behind it,
    /// cannot come from a correct subscriber: that subscriber is demoted to lossy.
    fn refresh_min_gate(&mut self) {
        let mut min = self.committed;
        let cap = self.cfg.capacity();
        let mut demoted = 0;
        for slot in self.slots.iter_mut().filter(|s| s.mode == Mode::Gating) {
            // SYNC(release): Acquire; pairs with the Release store of `cursor` in
            // Reader::publish_progress (called by Reader::release and Reader::try_copy):
            // the subscriber's reads of the frames below it happen-before the writer reuses them.
            let c = slot.cb.u64_at(cb::CURSOR).load(Ordering::Acquire);
            if c > self.committed || self.committed - c > cap {
                slot.mode = Mode::Lossy;
                // SYNC(demote): Release; pairs with the Acquire load of `mode` in Reader::check_mode.
                slot.cb
                    .u32_at(cb::MODE)
                    .store(layout::MODE_LOSSY, Ordering::Release);
                demoted += 1;
                continue;
            }
            min = min.min(c);
        }
        self.stats.demotions += demoted;
        self.min_gate = min;
    }

    /// Whether a `len`-byte reservation would fit now, re-reading the gating cursors. Costs a
    /// load per gating subscriber and announces nothing: what a writer polls while it spins
    /// before [`prepare_wait_for_space`](Self::prepare_wait_for_space). A `len` too large for
    /// the ring never fits.
    pub fn has_space_for(&mut self, len: usize) -> bool {
        let Ok((_, need, _)) = self.need_for(len) else {
            return false;
        };
        self.has_space(need) || {
            self.refresh_min_gate();
            self.has_space(need)
        }
    }

    /// Announces that the writer is about to sleep until space frees up for a `len`-byte message,
    /// then re-checks. Returns `Ok(true)` if it may sleep (a releasing gating reader will see the
    /// announcement and ask its transport to signal), `Ok(false)` if space is already free. After
    /// sleeping, or on `Ok(false)`, call [`end_wait_for_space`](Self::end_wait_for_space).
    pub fn prepare_wait_for_space(&mut self, len: usize) -> Result<bool, ReserveError> {
        let (_, need, _) = self.need_for(len)?;
        self.wait_epoch = wake::next_wait(self.wait_epoch);
        // Announces, then fences (SYNC(space) in wake::announce_wait_for_space) before the
        // cursors are re-read.
        wake::announce_wait_for_space(&self.ring, self.wait_epoch);
        self.refresh_min_gate();
        Ok(!self.has_space(need))
    }

    /// Withdraws the announcement made by [`prepare_wait_for_space`](Self::prepare_wait_for_space).
    pub fn end_wait_for_space(&mut self) {
        wake::end_wait_for_space(&self.ring);
    }

    /// Admits a subscriber whose control block is `cb` (zeroed, at least `CONTROL_BLOCK_LEN`
    /// bytes). Its start position is fixed here, by the writer, so no publish can race it: a
    /// gating subscriber gates from this instant.
    pub fn admit(
        &mut self,
        cb: Region,
        mode: Mode,
        start: Start,
        attachment: A,
    ) -> Result<SubscriberId, layout::LayoutError> {
        let len = cb.len() as u64;
        if len < layout::CONTROL_BLOCK_LEN as u64 {
            return Err(layout::LayoutError::TooSmall {
                len,
                need: layout::CONTROL_BLOCK_LEN as u64,
            });
        }
        let (pos, seq) = match start {
            Start::Newest => (self.committed, self.next_seq),
            Start::Oldest if self.tail == self.committed => (self.committed, self.next_seq),
            Start::Oldest => {
                let off = layout::data_off(self.tail, self.mask);
                (self.tail, self.ring.u64_at(off + 8).load(Ordering::Relaxed))
            }
        };
        cb.u64_at(cb::MAGIC)
            .store(layout::CONTROL_MAGIC, Ordering::Relaxed);
        cb.u32_at(cb::VERSION)
            .store(layout::LAYOUT_VERSION, Ordering::Relaxed);
        cb.u32_at(cb::MODE).store(mode.encode(), Ordering::Relaxed);
        cb.u64_at(cb::START_POS).store(pos, Ordering::Relaxed);
        cb.u64_at(cb::START_SEQ).store(seq, Ordering::Relaxed);
        cb.u64_at(cb::CURSOR).store(pos, Ordering::Relaxed);
        cb.u64_at(cb::NEXT_SEQ).store(seq, Ordering::Relaxed);
        cb.u32_at(cb::PARKED)
            .store(wake::NOT_PARKED, Ordering::Relaxed);
        // SYNC(admit): Release; pairs with the Acquire load of `state` in Reader::attach.
        cb.u32_at(cb::STATE)
            .store(layout::STATE_ACTIVE, Ordering::Release);
        if mode == Mode::Gating {
            self.min_gate = self.min_gate.min(pos);
        }
        let id = SubscriberId(self.next_id);
        self.next_id += 1;
        self.slots.push(Slot {
            id,
            cb,
            mode,
            attachment,
        });
        Ok(id)
    }

    /// Removes a subscriber (it left, or its connection died). It stops gating at once.
    pub fn remove(&mut self, id: SubscriberId) -> Option<A> {
        let i = self.slots.iter().position(|s| s.id == id)?;
        Some(self.slots.swap_remove(i).attachment)
    }

    /// Removes a subscriber and marks its control block evicted, so it learns why.
    pub fn evict(&mut self, id: SubscriberId) -> Option<A> {
        let i = self.slots.iter().position(|s| s.id == id)?;
        let slot = self.slots.swap_remove(i);
        // SYNC(evict): Release; pairs with the Acquire load of `state` in Reader::check_mode.
        slot.cb
            .u32_at(cb::STATE)
            .store(layout::STATE_EVICTED, Ordering::Release);
        Some(slot.attachment)
    }

    /// Demotes a gating subscriber to lossy: the writer stops waiting for it. Returns whether it
    /// was gating.
    pub fn demote(&mut self, id: SubscriberId) -> bool {
        let Some(slot) = self
            .slots
            .iter_mut()
            .find(|s| s.id == id && s.mode == Mode::Gating)
        else {
            return false;
        };
        slot.mode = Mode::Lossy;
        // SYNC(demote): Release; pairs with the Acquire load of `mode` in Reader::check_mode.
        slot.cb
            .u32_at(cb::MODE)
            .store(layout::MODE_LOSSY, Ordering::Release);
        self.stats.demotions += 1;
        self.refresh_min_gate();
        true
    }

    /// The gating subscriber holding the ring back the most, if any: the one to demote when a
    /// stall bound expires.
    pub fn slowest_gating(&self) -> Option<SubscriberId> {
        self.slots
            .iter()
            .filter(|s| s.mode == Mode::Gating)
            .min_by_key(|s| s.cb.u64_at(cb::CURSOR).load(Ordering::Relaxed))
            .map(|s| s.id)
    }

    /// The release cursor of gating subscriber `id` (`None` if it is not gating), as last
    /// published by its reader.
    pub fn gating_cursor(&self, id: SubscriberId) -> Option<u64> {
        self.slots
            .iter()
            .find(|s| s.id == id && s.mode == Mode::Gating)
            .map(|s| s.cb.u64_at(cb::CURSOR).load(Ordering::Relaxed))
    }

    /// Each gating subscriber with its release cursor, as [`gating_cursor`](Self::gating_cursor)
    /// reads it.
    pub fn gating_cursors(&self) -> impl Iterator<Item = (SubscriberId, u64)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.mode == Mode::Gating)
            .map(|s| (s.id, s.cb.u64_at(cb::CURSOR).load(Ordering::Relaxed)))
    }

    /// The attachment of a subscriber.
    pub fn attachment(&self, id: SubscriberId) -> Option<&A> {
        self.slots
            .iter()
            .find(|s| s.id == id)
            .map(|s| &s.attachment)
    }

    /// A snapshot of every subscriber, as far as the writer can see.
    pub fn subscribers(&self) -> impl Iterator<Item = SubscriberInfo> + '_ {
        self.slots.iter().map(|s| {
            // SYNC(release): Acquire; pairs with the Release store of `cursor` in
            // Reader::publish_progress, which stores `next_seq` and `received` before it: the
            // counts read below are at least as new as the cursor, so a snapshot never shows
            // fewer messages received than the cursor has passed. They may be newer (the reader
            // moved on meanwhile): each figure is a snapshot of its own.
            let cursor = s.cb.u64_at(cb::CURSOR).load(Ordering::Acquire);
            let seq = s.cb.u64_at(cb::NEXT_SEQ).load(Ordering::Relaxed);
            SubscriberInfo {
                id: s.id,
                mode: s.mode,
                cursor,
                lag_bytes: self.committed.saturating_sub(cursor),
                lag_messages: self.next_seq.saturating_sub(seq),
                parked: wake::is_parked(&s.cb),
                received: s.cb.u64_at(cb::RECEIVED).load(Ordering::Relaxed),
                lagged: s.cb.u64_at(cb::LAGGED).load(Ordering::Relaxed),
            }
        })
    }

    /// Ends the stream: subscribers drain what is committed, then see it closed. Every
    /// subscriber is signalled (parked or not), since one waiting in an event loop must hear it,
    /// and the wake word is advanced ([`Wakeups::wake_word`]) for those sleeping on it.
    pub fn close(&mut self, wake: impl FnMut(&A)) -> Wakeups {
        if self.closed {
            return Wakeups::default();
        }
        self.closed = true;
        // SYNC(close): Release; pairs with the Acquire loads of `closed` in Reader::at_end and
        // Reader::may_sleep. wake::wake_all then fences (SYNC(park)) before its signals.
        self.ring.u32_at(hdr::CLOSED).store(1, Ordering::Release);
        let subscribers = self.slots.iter().map(|s| (&s.cb, &s.attachment));
        wake::wake_all(&self.ring, subscribers, wake)
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}
