//! The wake protocol: when a reader may sleep, whom a commit must wake, and when a writer waiting
//! for space must be signalled, with the fences that keep each decision from losing a wakeup.
//!
//! Both waits are the same two-sided handshake: the sleeper announces itself in shared memory,
//! issues a SeqCst fence and re-checks its condition; the other side makes its change, issues a
//! SeqCst fence and reads the announcement. Either the sleeper's re-check sees the change or the
//! other side sees the announcement.
//!
//! * **A reader waiting for data** announces itself in its control block's `parked` word
//!   ([`Reader::prepare_park`](crate::Reader::prepare_park)), saying how it will sleep:
//!   - [`PARKED_SIGNAL`]: on its own signal, which the transport delivers to that subscriber
//!     alone (a doorbell on its connection). A commit that takes this flag hands the
//!     subscriber's attachment to the `wake` callback.
//!   - [`PARKED_ON_WORD`]: on the ring header's *wake word*
//!     ([`Reader::prepare_park_on_word`](crate::Reader::prepare_park_on_word)), until it differs
//!     from the value read before the announcement. A commit that takes one or more of these
//!     flags advances the word once and sets [`Wakeups::wake_word`]: the transport wakes every
//!     sleeper on it at once (it sleeps on the word with a futex, for instance, and wakes them
//!     with one call however many there are).
//! * **A writer waiting for space** announces the number of its wait in the ring header's
//!   `writer_waiting` ([`Writer::prepare_wait_for_space`](crate::Writer::prepare_wait_for_space))
//!   and re-reads the gating cursors; a gating reader that releases reads the announcement and
//!   asks its transport to signal the writer, once per wait.
//!
//! # Overload and failure
//!
//! * A busy subscriber costs the writer no wakeup: a commit loads each `parked` word and writes
//!   only those that are set.
//! * However many subscribers sleep on the wake word, a commit asks for one wake of it.
//! * `parked` is written by the subscriber and untrusted: any non-zero value other than
//!   [`PARKED_ON_WORD`] counts as [`PARKED_SIGNAL`], so a hostile value costs the writer at most
//!   one signal to that subscriber, or one advance of the word, per commit.
//! * A releasing reader signals a waiting writer once per wait, however many frames it releases
//!   while the writer sleeps.
//!
//! ```
//! use shmcast_core::{CONTROL_BLOCK_LEN, Mode, Reader, Region, RingConfig, Start, Wakeups, Writer};
//!
//! let cfg = RingConfig::new(4096, 256)?;
//! let mut writer: Writer<&str> = Writer::new(Region::heap(cfg.region_len()), cfg)?;
//! let mut join = |name| -> Result<Reader, Box<dyn std::error::Error>> {
//!     let cb = Region::heap(CONTROL_BLOCK_LEN);
//!     writer.admit(cb.clone(), Mode::Gating, Start::Newest, name)?;
//!     Ok(Reader::attach(writer.ring().clone(), cb)?)
//! };
//! let (mut a, mut b, mut c) = (join("a")?, join("b")?, join("c")?);
//!
//! // `a` and `b` sleep on the wake word, `c` on its own signal.
//! let seen = a.prepare_park_on_word().expect("nothing to read: may sleep");
//! assert_eq!(b.prepare_park_on_word(), Some(seen));
//! assert!(c.prepare_park());
//! let mut signalled = Vec::new();
//! let wakeups = writer.send(b"hi", |who| signalled.push(*who))?;
//! assert_eq!(signalled, ["c"]);
//! assert_eq!(wakeups, Wakeups { signals: 1, wake_word: true });
//! assert_eq!(wakeups.syscalls(), 2);
//! assert_ne!(a.wake_word().load(std::sync::atomic::Ordering::Relaxed), seen);
//!
//! // An announcement is taken once: until the readers park again, commits ask for nothing.
//! assert_eq!(writer.send(b"again", |_| unreachable!())?, Wakeups::default());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::layout::{cb, hdr};
use crate::region::Region;
use crate::sync::{AtomicU32, Ordering, fence};

/// `parked`: not parked.
pub const NOT_PARKED: u32 = 0;
/// `parked`: sleeps until its own signal (any non-zero value other than [`PARKED_ON_WORD`] means
/// the same).
pub const PARKED_SIGNAL: u32 = 1;
/// `parked`: sleeps on the ring header's wake word.
pub const PARKED_ON_WORD: u32 = 2;

/// What a commit (or close) asks the transport to do beyond the per-subscriber `wake` calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wakeups {
    /// How many subscribers were passed to `wake` (parked with their own signal).
    pub signals: usize,
    /// Whether subscribers sleep on the wake word, which was advanced: the transport must wake
    /// every sleeper on it (one call however many there are).
    pub wake_word: bool,
}

impl Wakeups {
    /// Calls the transport makes to deliver these wakeups: one per signal, one for the wake word.
    pub fn syscalls(&self) -> usize {
        self.signals + usize::from(self.wake_word)
    }

    /// Takes one subscriber's park announcement. Returns whether that subscriber must be
    /// signalled individually; a subscriber on the wake word sets [`wake_word`](Self::wake_word).
    fn take(&mut self, block: &Region) -> bool {
        match block.u32_at(cb::PARKED).swap(NOT_PARKED, Ordering::Relaxed) {
            NOT_PARKED => false,
            PARKED_ON_WORD => {
                self.wake_word = true;
                false
            }
            _ => {
                self.signals += 1;
                true
            }
        }
    }
}

// The reader's side.

/// Announces in `block` that its reader is about to sleep (`how`: [`PARKED_SIGNAL`] or
/// [`PARKED_ON_WORD`]), then calls `may_sleep`, the reader's re-check for data and end of stream.
/// Returns `true` if the reader may sleep: a later commit will take the announcement. Otherwise
/// the announcement is withdrawn.
pub(crate) fn park(block: &Region, how: u32, may_sleep: impl FnOnce() -> bool) -> bool {
    let parked = block.u32_at(cb::PARKED);
    parked.store(how, Ordering::Relaxed);
    // SYNC(park): SeqCst fence between the store of `parked` and the loads of `committed` and
    // `closed` in `may_sleep` (Reader::may_sleep); pairs with the SeqCst fences in take_parked
    // (after Writer::commit's store of `committed`), take_one and wake_all (after
    // Writer::close's store of `closed`).
    fence(Ordering::SeqCst);
    if may_sleep() {
        return true;
    }
    parked.store(NOT_PARKED, Ordering::Relaxed);
    false
}

/// [`park`] with [`PARKED_ON_WORD`]. Returns the wake word's value to sleep on (read before the
/// announcement), or `None` if the reader must not sleep.
pub(crate) fn park_on_word(
    ring: &Region,
    block: &Region,
    may_sleep: impl FnOnce() -> bool,
) -> Option<u32> {
    // SYNC(wake-word): Acquire, before the store of `parked` in `park` (which Acquire keeps after
    // it); pairs with the Release increment in advance_wake_word. A writer that takes our flag
    // advances the word after taking it, so the value we sleep on is older than its increment.
    let word = ring.u32_at(hdr::WAKE).load(Ordering::Acquire);
    park(block, PARKED_ON_WORD, may_sleep).then_some(word)
}

/// Withdraws a park announcement after waking.
pub(crate) fn unpark(block: &Region) {
    block
        .u32_at(cb::PARKED)
        .store(NOT_PARKED, Ordering::Relaxed);
}

/// Whether `block` holds a park announcement (for statistics; decides nothing).
pub(crate) fn is_parked(block: &Region) -> bool {
    block.u32_at(cb::PARKED).load(Ordering::Relaxed) != NOT_PARKED
}

/// The ring's wake word.
pub(crate) fn wake_word(ring: &Region) -> &AtomicU32 {
    ring.u32_at(hdr::WAKE)
}

// The writer's side.

/// After a commit: takes the park announcement of every subscriber in `subscribers` (control
/// block, attachment), calls `wake` for each one parked on its own signal, and advances the wake
/// word once if any sleeps on it.
pub(crate) fn take_parked<'a, A: 'a>(
    ring: &Region,
    subscribers: impl Iterator<Item = (&'a Region, &'a A)>,
    mut wake: impl FnMut(&A),
) -> Wakeups {
    // SYNC(park): SeqCst fence between the store of `committed` (Writer::commit) and the loads of
    // `parked` below; pairs with the SeqCst fence in `park` between a reader's store of `parked`
    // and its load of `committed`. Either the writer sees the flag or the reader sees the commit.
    fence(Ordering::SeqCst);
    let mut w = Wakeups::default();
    for (block, attachment) in subscribers {
        // A load first, so that a busy subscriber's line is only read.
        if is_parked(block) && w.take(block) {
            wake(attachment);
        }
    }
    if w.wake_word {
        advance_wake_word(ring);
    }
    w
}

/// Takes one subscriber's park announcement, as a commit would, for an event other than a commit
/// (a demotion) that the caller stored before this call.
pub(crate) fn take_one<A>(
    ring: &Region,
    block: &Region,
    attachment: &A,
    mut wake: impl FnMut(&A),
) -> Wakeups {
    // SYNC(park): as in take_parked, after the caller's store of the event.
    fence(Ordering::SeqCst);
    let mut w = Wakeups::default();
    if w.take(block) {
        wake(attachment);
    }
    if w.wake_word {
        advance_wake_word(ring);
    }
    w
}

/// At close, after the store of `closed`: clears every announcement, calls `wake` for every
/// subscriber, parked or not (one waiting in an event loop must hear it), and advances the wake
/// word.
pub(crate) fn wake_all<'a, A: 'a>(
    ring: &Region,
    subscribers: impl Iterator<Item = (&'a Region, &'a A)>,
    mut wake: impl FnMut(&A),
) -> Wakeups {
    // SYNC(park): SeqCst fence between the store of `closed` (Writer::close) and the signals
    // below; pairs with the fence in `park`, after which the reader sees `closed` or gets a
    // signal.
    fence(Ordering::SeqCst);
    let mut signals = 0;
    for (block, attachment) in subscribers {
        unpark(block);
        wake(attachment);
        signals += 1;
    }
    advance_wake_word(ring);
    Wakeups {
        signals,
        wake_word: true,
    }
}

/// Advances the wake word, after the `parked` flags it answers were taken.
fn advance_wake_word(ring: &Region) {
    // SYNC(wake-word): Release; pairs with the Acquire load in park_on_word, made before that
    // reader's store of `parked`: a reader whose flag we took read the old value, so its sleep on
    // the word returns at once or is ended by the transport's wake.
    ring.u32_at(hdr::WAKE).fetch_add(1, Ordering::Release);
}

// The writer's wait for space.

/// The number of the writer's wait after `previous`: never 0, which means "not waiting".
pub(crate) fn next_wait(previous: u32) -> u32 {
    previous.wrapping_add(1).max(1)
}

/// Announces wait number `wait` in `writer_waiting`. The caller then re-reads the gating cursors
/// (Writer::refresh_min_gate) and sleeps only if they still leave no room.
pub(crate) fn announce_wait_for_space(ring: &Region, wait: u32) {
    ring.u32_at(hdr::WRITER_WAITING)
        .store(wait, Ordering::Relaxed);
    // SYNC(space): SeqCst fence between the store of `writer_waiting` and the caller's loads of
    // the cursors; pairs with the SeqCst fence in writer_to_signal between a reader's store of
    // `cursor` and its load of `writer_waiting`. Either we see the release or the reader sees us.
    fence(Ordering::SeqCst);
}

/// Withdraws the announcement of [`announce_wait_for_space`].
pub(crate) fn end_wait_for_space(ring: &Region) {
    ring.u32_at(hdr::WRITER_WAITING).store(0, Ordering::Relaxed);
}

/// A gating reader's side, after it stored its cursor (Reader::publish_progress): whether the
/// writer waits for space and this reader has not yet signalled that wait (`signalled`, which is
/// updated). `true` means the transport must signal the writer.
pub(crate) fn writer_to_signal(ring: &Region, signalled: &mut u32) -> bool {
    // SYNC(space): SeqCst fence between the store of `cursor` and the load of `writer_waiting`;
    // pairs with the fence in announce_wait_for_space.
    fence(Ordering::SeqCst);
    let wait = ring.u32_at(hdr::WRITER_WAITING).load(Ordering::Relaxed);
    if wait == 0 || wait == *signalled {
        return false;
    }
    *signalled = wait;
    true
}
