//! The reader: the next frame in order, release, lag accounting, and its re-check before it
//! parks (the park protocol itself is the [`wake`] module's).
//!
//! A gating reader peeks a frame ([`Reader::try_peek`]), uses it in place, then releases it
//! ([`Reader::release`]); the writer never overwrites it in between. A lossy reader copies
//! ([`Reader::try_copy`]) and validates after copying, so it never accepts bytes overwritten while
//! it read them.
//!
//! # Overload and failure
//!
//! * A lossy reader that the writer laps gets [`ReadError::Lagged`] with the exact number of
//!   messages it missed, then continues in order from where its [`Resume`] policy says: two of
//!   the largest frames ahead of the writer's overwrite point (the default), the newest
//!   committed message, or the oldest intact one.
//! * [`Reader::skip_to_newest`] skips to the newest committed message on request (a "latest"
//!   read) and says how many messages it skipped.
//! * Everything read from the ring is untrusted: an impossible header, position or sequence number
//!   yields [`ReadError::Corrupt`], never a panic or an out-of-bounds access.
//! * Once the writer closes the stream, the reader first gets every committed message, then
//!   [`ReadError::Closed`].
//!
//! ```
//! use shmcast_core::{Region, RingConfig, Writer, Reader, Mode, Start, ReadError};
//!
//! let cfg = RingConfig::new(256, 64)?;
//! let mut writer: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let cb = Region::heap(shmcast_core::CONTROL_BLOCK_LEN);
//! writer.admit(cb.clone(), Mode::Lossy, Start::Newest, ())?;
//! let mut reader = Reader::attach(writer.ring().clone(), cb)?;
//!
//! // Ten 48-byte messages into a 256-byte ring: the lossy reader was lapped. Resuming with the
//! // oldest intact message, it missed six.
//! reader.set_resume(shmcast_core::Resume::Oldest);
//! for i in 0..10u8 {
//!     writer.send(&[i; 48], |_| {})?;
//! }
//! let mut buf = Vec::new();
//! assert_eq!(reader.try_copy(&mut buf), Err(ReadError::Lagged(6)));
//! let first = reader.try_copy(&mut buf)?;
//! assert_eq!((first.seq, buf[0]), (6, 6));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![allow(unsafe_code)]

use crate::frame::{self, FrameError, Kind};
use crate::layout::{self, LayoutError, RingConfig, cb, hdr};
use crate::region::Region;
use crate::resume::{self, Found, Geometry, Resume};
use crate::step;
use crate::sync::{AtomicU32, Ordering, fence};
use crate::wake;
use core::fmt;

/// Attempts to find a stable frame after being lapped before reporting "try again".
pub(crate) const RESYNC_ATTEMPTS: usize = 64;

/// Why no message was returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing committed yet beyond what was read.
    Empty,
    /// The stream ended and everything committed was read.
    Closed,
    /// The writer overwrote this many messages before they were read; reading continues where
    /// the reader's [`Resume`] policy says.
    Lagged(u64),
    /// The writer demoted this gating reader to lossy (it stalled too long or its cursor was
    /// invalid). Reported once by `try_peek`; read on with `try_copy`.
    Demoted,
    /// The writer evicted this reader.
    Evicted,
    /// The shared memory holds something no correct writer writes.
    Corrupt(FrameError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Empty => f.write_str("no message available"),
            ReadError::Closed => f.write_str("stream closed"),
            ReadError::Lagged(n) => write!(f, "lagged: missed {n} messages"),
            ReadError::Demoted => f.write_str("demoted from gating to lossy"),
            ReadError::Evicted => f.write_str("evicted by the publisher"),
            ReadError::Corrupt(e) => write!(f, "corrupt ring: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<FrameError> for ReadError {
    fn from(e: FrameError) -> Self {
        ReadError::Corrupt(e)
    }
}

/// A committed message frame handed to a gating reader, to be released after use.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a peeked frame holds the writer back until released"]
pub struct Frame {
    pos: u64,
    end: u64,
    payload_off: usize,
    len: u32,
    seq: u64,
}

impl Frame {
    /// The message's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Position of the frame in the ring.
    pub fn pos(&self) -> u64 {
        self.pos
    }
}

/// A message copied out by [`Reader::try_copy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// The message's sequence number.
    pub seq: u64,
    /// Payload length in bytes (the buffer holds exactly this many).
    pub len: usize,
    /// A gating reader released the message and the writer waits for space: signal it, as
    /// after [`Reader::release`] returning `true`. Always `false` for lossy readers.
    pub writer_waiting: bool,
}

/// Counters kept by a reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Messages received.
    pub received: u64,
    /// Messages missed (sum of all `Lagged(n)`).
    pub lagged: u64,
    /// `Lagged` reports.
    pub lag_events: u64,
    /// Messages skipped on request by [`Reader::skip_to_newest`] (not counted in `lagged`).
    pub skipped: u64,
}

/// One subscriber's side of a ring.
pub struct Reader {
    pub(crate) ring: Region,
    cb: Region,
    cap: u64,
    mask: u64,
    max_payload: u32,
    /// Position of the next frame to read.
    pub(crate) pos: u64,
    /// Sequence number the next message must carry.
    pub(crate) seq: u64,
    /// The last `committed` a gating peek loaded (Acquire). Frames below it are committed and,
    /// for a gating reader, stay intact until released, so peeks below it need not reload the
    /// writer's hot line.
    pub(crate) seen: u64,
    /// The writer's wait for space (`writer_waiting`) this reader last signalled.
    pub(crate) signalled_wait: u32,
    pub(crate) gating: bool,
    writer_gone: bool,
    resume: Resume,
    pub(crate) stats: ReaderStats,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("pos", &self.pos)
            .field("seq", &self.seq)
            .field("gating", &self.gating)
            .finish()
    }
}

impl Reader {
    /// Attaches to a ring and the control block the writer admitted this reader with. Both come
    /// from a peer: every field is validated. A lossy reader the writer lapped since its admission
    /// attaches all the same; its first read reports the lag.
    pub fn attach(ring: Region, cb: Region) -> Result<Reader, LayoutError> {
        let cfg: RingConfig = layout::validate_ring(&ring)?;
        layout::validate_control_block(&cb)?;
        // SYNC(admit): Acquire; pairs with the Release store of `state` in Writer::admit.
        let state = cb.u32_at(cb::STATE).load(Ordering::Acquire);
        if state != layout::STATE_ACTIVE {
            return Err(LayoutError::Field {
                field: "state",
                value: state.into(),
            });
        }
        // SYNC(commit): Acquire; pairs with the Release store in Writer::commit. Loaded before
        // `mode`: a demotion that preceded these commits is then visible below.
        let committed = ring.u64_at(hdr::COMMITTED).load(Ordering::Acquire);
        let mode = cb.u32_at(cb::MODE).load(Ordering::Relaxed);
        let gating = match mode {
            layout::MODE_GATING => true,
            layout::MODE_LOSSY => false,
            _ => {
                return Err(LayoutError::Field {
                    field: "mode",
                    value: mode.into(),
                });
            }
        };
        let pos = cb.u64_at(cb::START_POS).load(Ordering::Relaxed);
        let seq = cb.u64_at(cb::START_SEQ).load(Ordering::Relaxed);
        // The writer never laps a gating reader, but may lap a lossy one between its admission
        // and this attach (a fast publisher, a slow handshake): its first read reports the lag.
        if pos % frame::FRAME_ALIGN as u64 != 0
            || pos > committed
            || (gating && committed - pos > cfg.capacity())
        {
            return Err(LayoutError::Field {
                field: "start_pos",
                value: pos,
            });
        }
        Ok(Reader {
            cap: cfg.capacity(),
            mask: cfg.capacity() - 1,
            max_payload: cfg.max_payload() as u32,
            ring,
            cb,
            pos,
            seq,
            seen: pos,
            signalled_wait: 0,
            gating,
            writer_gone: false,
            resume: Resume::default(),
            stats: ReaderStats::default(),
        })
    }

    /// Whether the writer still gates on this reader.
    pub fn is_gating(&self) -> bool {
        self.gating
    }

    /// Counters.
    pub fn stats(&self) -> ReaderStats {
        self.stats
    }

    /// Where this reader continues after the writer laps it (default [`Resume::Slack`]).
    pub fn set_resume(&mut self, resume: Resume) {
        self.resume = resume;
    }

    /// The resume policy.
    pub fn resume(&self) -> Resume {
        self.resume
    }

    pub(crate) fn geometry(&self) -> Geometry {
        Geometry {
            cap: self.cap,
            mask: self.mask,
            max_payload: self.max_payload,
        }
    }

    /// Sequence number of the next message this reader expects.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// The ring region.
    pub fn ring(&self) -> &Region {
        &self.ring
    }

    /// Tells the reader the writer is gone (its process died): once the committed messages are
    /// read, reads report [`ReadError::Closed`] instead of [`ReadError::Empty`]. The transport
    /// learns this from the connection's hang-up, which orders it after the writer's last store.
    pub fn set_writer_gone(&mut self) {
        self.writer_gone = true;
    }

    /// Whether the writer ended the stream ([`Writer::close`](crate::Writer::close)), rather
    /// than going away without a word.
    pub fn writer_closed(&self) -> bool {
        // SYNC(close): as in `at_end`.
        self.ring.u32_at(hdr::CLOSED).load(Ordering::Acquire) != 0
    }

    /// Picks up a demotion or eviction decided by the writer.
    fn check_mode(&mut self) -> Result<(), ReadError> {
        // SYNC(evict): Acquire; pairs with the Release store in Writer::evict.
        if self.cb.u32_at(cb::STATE).load(Ordering::Acquire) != layout::STATE_ACTIVE {
            return Err(ReadError::Evicted);
        }
        // SYNC(demote): Acquire; pairs with the Release stores in Writer::demote and
        // Writer::refresh_min_gate.
        if self.gating && self.cb.u32_at(cb::MODE).load(Ordering::Acquire) != layout::MODE_GATING {
            self.gating = false;
        }
        Ok(())
    }

    /// `Empty` or `Closed` for a reader that has read everything up to `committed`.
    pub(crate) fn at_end(&self) -> ReadError {
        // SYNC(close): Acquire; pairs with the Release store in Writer::close, which follows the
        // last commit, so re-reading `committed` afterwards gives the final position.
        let closed = self.ring.u32_at(hdr::CLOSED).load(Ordering::Acquire) != 0;
        if (closed || self.writer_gone)
            && self.ring.u64_at(hdr::COMMITTED).load(Ordering::Acquire) == self.pos
        {
            ReadError::Closed
        } else {
            ReadError::Empty
        }
    }

    /// The fraction of the ring published and not yet read by this reader, in 1/256ths (0 to
    /// 256). A hint for how a waiter should wait (read with no ordering), not a position to
    /// read at.
    pub fn backlog_256ths(&self) -> u32 {
        let committed = self.ring.u64_at(hdr::COMMITTED).load(Ordering::Relaxed);
        let behind = committed.saturating_sub(self.pos).min(self.cap);
        (behind * 256 / self.cap.max(1)) as u32
    }

    /// Loads `committed` and checks it against our position.
    pub(crate) fn load_committed(&self) -> Result<u64, ReadError> {
        // SYNC(commit): Acquire; pairs with the Release store of `committed` in Writer::commit.
        let committed = self.ring.u64_at(hdr::COMMITTED).load(Ordering::Acquire);
        if committed < self.pos || committed % frame::FRAME_ALIGN as u64 != 0 {
            return Err(FrameError::Position(committed).into());
        }
        Ok(committed)
    }

    /// The next message frame, for a gating reader to use in place and then
    /// [`release`](Self::release). Never blocks.
    pub fn try_peek(&mut self) -> Result<Frame, ReadError> {
        self.check_mode()?;
        if !self.gating {
            return Err(ReadError::Demoted);
        }
        if self.pos >= self.seen {
            self.seen = self.load_committed()?;
        }
        let committed = self.seen;
        loop {
            if self.pos == committed {
                return Err(self.at_end());
            }
            if committed - self.pos > self.cap {
                return Err(FrameError::Position(committed).into());
            }
            let off = layout::data_off(self.pos, self.mask);
            let meta = self.ring.u64_at(off).load(Ordering::Relaxed);
            let seq = self.ring.u64_at(off + 8).load(Ordering::Relaxed);
            let g = frame::decode(meta, self.pos, committed, self.cap, self.max_payload)?;
            if seq != self.seq {
                return Err(FrameError::Sequence {
                    expected: self.seq,
                    found: seq,
                }
                .into());
            }
            if g.kind == Kind::Padding {
                self.pos += g.span;
                continue;
            }
            return Ok(Frame {
                pos: self.pos,
                end: self.pos + g.span,
                payload_off: frame::payload_off(self.pos, self.mask),
                len: g.len,
                seq,
            });
        }
    }

    /// The payload of a peeked frame, in place.
    ///
    /// # Safety
    /// The reader must be gating, and the slice must be dropped before the frame is released:
    /// until then the writer does not write these bytes. (If the writer demotes this reader
    /// meanwhile, that promise ends; the transport only demotes past a configured stall bound.)
    #[cfg(not(shmcast_loom))]
    pub unsafe fn payload(&self, frame: &Frame) -> &[u8] {
        // SAFETY: the frame is committed (its header was read after the Acquire of `committed`)
        // and gated by our cursor until release, per the caller's contract.
        unsafe { self.ring.slice(frame.payload_off, frame.len as usize) }
    }

    /// Copies a peeked frame's payload into `dst` (resized to fit).
    pub fn read_payload(&self, frame: &Frame, dst: &mut Vec<u8>) {
        // Every byte is overwritten below: only a longer message fills the new part first.
        dst.resize(frame.len as usize, 0);
        if self.gating {
            // SAFETY: as in `payload`: committed and gated until release.
            unsafe { self.ring.read_bytes(frame.payload_off, dst) }
        } else {
            self.ring.copy_racy(frame.payload_off, dst);
        }
    }

    /// Whether a frame handed out in place still holds its message: the writer has reserved
    /// over none of its bytes. Always so while this reader gates the writer; once it is demoted
    /// (past the publisher's stall bound) the writer may lap a frame it still holds. Call it
    /// after reading the frame: the reads are ordered before the check as in `try_copy`'s
    /// seqlock, so `true` means every byte read was the message's, `false` that some may belong
    /// to a later one.
    pub fn frame_intact(&self, frame: &Frame) -> bool {
        // SYNC(seqlock): as in try_copy, the frame's bytes read through `payload` or
        // `read_payload` take the place of the racy copy.
        fence(Ordering::Acquire);
        let reserved = self.ring.u64_at(hdr::RESERVED).load(Ordering::Relaxed);
        reserved <= frame.pos.saturating_add(self.cap)
    }

    /// Releases a peeked frame (and everything before it): the writer may reuse its space.
    /// Returns `true` if the writer is waiting for space and must be signalled: once per wait,
    /// however many frames this reader releases while the writer sleeps.
    pub fn release(&mut self, frame: Frame) -> bool {
        self.pos = frame.end;
        self.seq = frame.seq.wrapping_add(1);
        self.stats.received = self.stats.received.wrapping_add(1);
        self.publish_progress();
        // After the store of `cursor`: wake::writer_to_signal fences (SYNC(space)) before it
        // reads `writer_waiting`.
        wake::writer_to_signal(&self.ring, &mut self.signalled_wait)
    }

    pub(crate) fn publish_progress(&self) {
        self.cb
            .u64_at(cb::NEXT_SEQ)
            .store(self.seq, Ordering::Relaxed);
        self.cb
            .u64_at(cb::RECEIVED)
            .store(self.stats.received, Ordering::Relaxed);
        // SYNC(release): Release; pairs with the Acquire load of `cursor` in
        // Writer::refresh_min_gate: our reads of the released frames happen-before their reuse.
        self.cb
            .u64_at(cb::CURSOR)
            .store(self.pos, Ordering::Release);
    }

    /// Copies the next message into `dst` (resized to the payload length) and validates the copy
    /// afterwards. Works for gating and lossy readers; for a gating reader it also releases the
    /// message. Never blocks.
    pub fn try_copy(&mut self, dst: &mut Vec<u8>) -> Result<Copied, ReadError> {
        if self.gating {
            match self.try_peek() {
                Ok(frame) => {
                    self.read_payload(&frame, dst);
                    let (seq, len) = (frame.seq, frame.len as usize);
                    let writer_waiting = self.release(frame);
                    return Ok(Copied {
                        seq,
                        len,
                        writer_waiting,
                    });
                }
                Err(ReadError::Demoted) => {}
                Err(e) => return Err(e),
            }
        } else {
            self.check_mode()?;
        }
        loop {
            let committed = self.load_committed()?;
            step::point();
            if self.pos == committed {
                return Err(self.at_end());
            }
            if committed - self.pos > self.cap {
                self.resync()?;
                continue;
            }
            let off = layout::data_off(self.pos, self.mask);
            let meta = self.ring.u64_at(off).load(Ordering::Relaxed);
            let seq = self.ring.u64_at(off + 8).load(Ordering::Relaxed);
            step::point();
            let geometry = frame::decode(meta, self.pos, committed, self.cap, self.max_payload);
            if let Some(g) = geometry.as_ref().ok().filter(|g| g.kind == Kind::Message) {
                // Every byte is overwritten by the copy: resizing without clearing fills only
                // what grew (a 1 MiB memset per read otherwise).
                dst.resize(g.len as usize, 0);
                self.ring.copy_racy(off + frame::FRAME_HEADER_LEN, dst);
                step::point();
            }
            // SYNC(seqlock): Acquire fence after the racy copy, before loading `reserved`; pairs
            // with the Release fence in Writer::try_reserve. If any byte we copied came from a
            // later reservation, `reserved` shows it.
            fence(Ordering::Acquire);
            let reserved = self.ring.u64_at(hdr::RESERVED).load(Ordering::Relaxed);
            if reserved > self.pos.saturating_add(self.cap) {
                self.resync()?;
                continue;
            }
            // The bytes were intact while we read them: any fault is the writer's.
            let g = geometry?;
            if seq != self.seq {
                return Err(FrameError::Sequence {
                    expected: self.seq,
                    found: seq,
                }
                .into());
            }
            self.pos += g.span;
            if g.kind == Kind::Padding {
                continue;
            }
            self.seq = self.seq.wrapping_add(1); // the writer chose it: wrap, never panic
            self.stats.received = self.stats.received.wrapping_add(1);
            self.publish_progress();
            return Ok(Copied {
                seq,
                len: g.len as usize,
                writer_waiting: false,
            });
        }
    }

    /// After being lapped: moves to where the resume policy says (the oldest intact frame, or,
    /// if messages were lost, the writer's slack frame or the newest message, each falling back
    /// to the next) and reports how many messages were skipped as `Lagged`. `Ok` if it moved past padding only (nothing missed: read on), and
    /// `Empty` (try again) if the writer keeps lapping us meanwhile. Every `Ok` moves the position
    /// forward, so a caller that loops on it stops.
    fn resync(&mut self) -> Result<(), ReadError> {
        for _ in 0..RESYNC_ATTEMPTS {
            // SYNC(tail): Acquire; pairs with the Release store in Writer::advance_tail.
            let tail = self.ring.u64_at(hdr::TAIL).load(Ordering::Acquire);
            step::point();
            let committed = self.load_committed()?;
            if tail <= self.pos {
                // The writer's new tail is not visible yet.
                crate::sync::spin_hint();
                continue;
            }
            if tail > committed || tail % frame::FRAME_ALIGN as u64 != 0 {
                return Err(FrameError::Position(tail).into());
            }
            if tail == committed {
                // Everything committed was overwritten by a reservation not yet committed: the
                // next intact frame is that one. Wait for it (prepare_park lets us sleep).
                return Err(ReadError::Empty);
            }
            let off = layout::data_off(tail, self.mask);
            let meta = self.ring.u64_at(off).load(Ordering::Relaxed);
            let seq = self.ring.u64_at(off + 8).load(Ordering::Relaxed);
            step::point();
            // SYNC(seqlock): as in try_copy.
            fence(Ordering::Acquire);
            let reserved = self.ring.u64_at(hdr::RESERVED).load(Ordering::Relaxed);
            if reserved > tail.saturating_add(self.cap) {
                continue;
            }
            if let Err(e) = frame::decode(meta, tail, committed, self.cap, self.max_payload) {
                return Err(e.into());
            }
            // Lapped by padding only, nothing is lost: read on in order whatever the policy.
            if seq != self.seq {
                let moved = match self.resume {
                    Resume::Oldest => None,
                    Resume::Newest => self.resync_to(Resume::Newest),
                    Resume::Slack => self
                        .resync_to(Resume::Slack)
                        .or_else(|| self.resync_to(Resume::Newest)),
                };
                if let Some(done) = moved {
                    return done;
                }
            }
            return self.lapped_to(tail, seq);
        }
        Err(ReadError::Empty)
    }

    /// The resume point of `at` (the writer's `slack` frame, or the newest message), or `None`
    /// to resume elsewhere (the `resume` module says when).
    fn resync_to(&mut self, at: Resume) -> Option<Result<(), ReadError>> {
        let mut last = None;
        for _ in 0..RESYNC_ATTEMPTS {
            let slack = (at == Resume::Slack).then(|| resume::slack(&self.ring));
            let committed = match self.load_committed() {
                Ok(c) => c,
                Err(e) => return Some(Err(e)),
            };
            let found = match slack {
                Some(pos) => resume::frame_at(&self.ring, self.geometry(), pos, committed),
                None => resume::newest(&self.ring, self.geometry(), committed),
            };
            match found {
                Found::At { pos, seq, .. } if pos > self.pos => {
                    return Some(self.lapped_to(pos, seq));
                }
                Found::At { .. } | Found::Unusable => return None,
                // Overwritten while `committed` stood still: an open reservation covers it,
                // which the oldest-frame path knows how to wait for.
                Found::Moved if last == Some(committed) => return None,
                Found::Moved => last = Some(committed),
            }
            crate::sync::spin_hint();
        }
        None
    }

    /// Moves a lapped reader to the intact frame at `pos`, whose header carries `seq`, and
    /// reports the messages missed on the way: `Lagged`, or `Ok` if none (only padding).
    fn lapped_to(&mut self, pos: u64, seq: u64) -> Result<(), ReadError> {
        let Some(missed) = seq.checked_sub(self.seq) else {
            return Err(FrameError::Sequence {
                expected: self.seq,
                found: seq,
            }
            .into());
        };
        self.pos = pos;
        self.seq = seq;
        if missed == 0 {
            return Ok(());
        }
        self.stats.lagged = self.stats.lagged.saturating_add(missed);
        self.stats.lag_events = self.stats.lag_events.saturating_add(1);
        self.cb
            .u64_at(cb::LAGGED)
            .store(self.stats.lagged, Ordering::Relaxed);
        self.cb
            .u64_at(cb::LAG_EVENTS)
            .store(self.stats.lag_events, Ordering::Relaxed);
        self.publish_progress();
        Err(ReadError::Lagged(missed))
    }

    /// Announces that this reader is about to sleep until its own signal (the transport's
    /// per-subscriber doorbell), then re-checks for data. Returns `true` if it may sleep: a
    /// later commit will see the announcement and signal it. Otherwise (data or end of stream
    /// arrived meanwhile) the announcement is withdrawn. After waking call
    /// [`unpark`](Self::unpark).
    pub fn prepare_park(&mut self) -> bool {
        wake::park(&self.cb, wake::PARKED_SIGNAL, || self.may_sleep())
    }

    /// Like [`prepare_park`](Self::prepare_park), for a reader that will sleep on the ring's
    /// wake word ([`wake_word`](Self::wake_word)) until it changes (the transport sleeps on it,
    /// e.g. with a futex). Returns the value to sleep on (the word's value before the
    /// announcement), or `None` if it must not sleep.
    pub fn prepare_park_on_word(&mut self) -> Option<u32> {
        wake::park_on_word(&self.ring, &self.cb, || self.may_sleep())
    }

    /// The ring's wake word, to sleep on after
    /// [`prepare_park_on_word`](Self::prepare_park_on_word).
    pub fn wake_word(&self) -> &AtomicU32 {
        wake::wake_word(&self.ring)
    }

    /// The re-check after a park announcement (wake::park fences between the two): whether
    /// nothing can be read and the stream goes on, so that this reader may sleep.
    fn may_sleep(&self) -> bool {
        // SYNC(commit): Acquire; pairs with the Release store in Writer::commit.
        let committed = self.ring.u64_at(hdr::COMMITTED).load(Ordering::Acquire);
        // SYNC(close): Acquire; pairs with the Release store in Writer::close.
        let closed = self.ring.u32_at(hdr::CLOSED).load(Ordering::Acquire) != 0;
        let evicted = self.cb.u32_at(cb::STATE).load(Ordering::Relaxed) != layout::STATE_ACTIVE;
        !(self.readable(committed) || closed || evicted || self.writer_gone)
    }

    /// Whether a frame at or after our position is committed and intact. A lapped reader whose
    /// oldest intact frame is still being written (tail == committed) has nothing to read.
    fn readable(&self, committed: u64) -> bool {
        if committed == self.pos {
            return false;
        }
        // SYNC(tail): Acquire; pairs with the Release store in Writer::advance_tail.
        let tail = self.ring.u64_at(hdr::TAIL).load(Ordering::Acquire);
        !(self.pos < tail && tail == committed)
    }

    /// Withdraws the park announcement after waking.
    pub fn unpark(&self) {
        wake::unpark(&self.cb);
    }
}
