//! The subscriber handle and its samples.
//!
//! # The held sample
//!
//! A Rust [`Sample`] borrows its subscriber mutably (a gating one is a view of the ring that
//! the publisher may not overwrite until it is released). The handle keeps the sample itself:
//! the [`Subscriber`] lives in its own heap allocation that never moves, the sample is created
//! from a `'static` reference to it, and until the sample is released the handle makes no other
//! reference to the subscriber (a second receive or the statistics return [`SHMCAST_EBUSY`];
//! the descriptor is cached at connect time). Dropping the handle drops the sample before the
//! subscriber.
//!
//! A message that did not fit the caller's buffer in a copy-out receive stays held, not lent,
//! and is handed out by the next receive of either kind.

use crate::contract::{Declared, shmcast_contract};
use crate::error::{Failure, SHMCAST_EDEMOTED, SHMCAST_EINVAL, SHMCAST_EMSGSIZE, guard};
use crate::options::shmcast_subscriber_options;
use crate::translate::{Wait, subscriber_builder, topic_arg};
use shmcast_transport::{Sample, StreamEnd, Subscriber};
use std::ffi::{c_char, c_int, c_void};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::ptr::NonNull;

/// A subscription to a topic. Opaque; create with `shmcast_subscriber_connect`, free with
/// `shmcast_subscriber_destroy`.
pub struct shmcast_subscriber {
    /// The held sample, borrowing `*subscriber`. Declared first: dropped first.
    sample: Option<Sample<'static>>,
    /// Whether `sample` has been handed to the caller (and not yet released).
    lent: bool,
    /// Owned: from `Box::leak`, freed in `Drop` after `sample`. Never moved, and no
    /// reference to it is made while `sample` is `Some`.
    subscriber: NonNull<Subscriber>,
    /// The subscriber's readiness descriptor, cached so that reading it needs no reference to
    /// the subscriber.
    fd: RawFd,
    /// The topic's contract, cached for the same reason.
    contract: Declared,
    /// Whether the publisher declared the topic imported, cached for the same reason.
    imported: bool,
}

impl shmcast_subscriber {
    /// The subscriber, if no sample borrows it.
    fn idle(&mut self) -> Result<&mut Subscriber, Failure> {
        if self.sample.is_some() {
            return Err(Failure::busy(
                "a sample is held: release it (or receive the message kept after SHMCAST_EMSGSIZE) first",
            ));
        }
        // SAFETY: `subscriber` is live until Drop, and with no sample held nothing else refers
        // to it; `&mut self` makes this the only reference.
        Ok(unsafe { self.subscriber.as_mut() })
    }

    /// The held message if one is kept, else the next one received, now held in the handle.
    fn fetch(&mut self, wait: Wait) -> Result<&Sample<'static>, Failure> {
        if self.lent {
            return Err(Failure::busy(
                "a sample is outstanding: call shmcast_sample_release first",
            ));
        }
        let sample = match self.sample.take() {
            Some(kept) => kept,
            None => {
                self.idle()?;
                // The `'static` borrow goes into `self.sample`, dropped before the subscriber is
                // freed; while it exists every other path to it goes through `idle` (refuses).
                // SAFETY: no sample is held (checked above): nothing else refers to the subscriber.
                let subscriber: &'static mut Subscriber = unsafe { &mut *self.subscriber.as_ptr() };
                match wait {
                    Wait::Never => subscriber.try_recv(),
                    Wait::Forever => subscriber.recv(),
                    Wait::For(t) => subscriber.recv_timeout(t),
                }?
            }
        };
        Ok(self.sample.insert(sample))
    }

    /// The newest message, now held in the handle, and how many were passed over to reach it.
    /// A message kept after `SHMCAST_EMSGSIZE` is older than the newest: it is dropped.
    fn fetch_latest(&mut self, wait: Wait) -> Result<(&Sample<'static>, u64), Failure> {
        if self.lent {
            return Err(Failure::busy(
                "a sample is outstanding: call shmcast_sample_release first",
            ));
        }
        self.sample = None;
        // As in `fetch`: the `'static` borrow goes into `self.sample`.
        // SAFETY: no sample is held (dropped above): nothing else refers to the subscriber.
        let subscriber: &'static mut Subscriber = unsafe { &mut *self.subscriber.as_ptr() };
        let latest = match wait {
            Wait::Never => subscriber.try_recv_latest(),
            Wait::Forever => subscriber.recv_latest(),
            Wait::For(t) => subscriber.recv_latest_timeout(t),
        }?;
        let skipped = latest.skipped();
        Ok((self.sample.insert(latest.into_sample()), skipped))
    }
}

impl Drop for shmcast_subscriber {
    fn drop(&mut self) {
        // The sample borrows the subscriber: release it first.
        self.sample = None;
        // SAFETY: `subscriber` came from `Box::leak` in `shmcast_subscriber_connect` and is
        // freed only here; the sample that borrowed it is gone.
        drop(unsafe { Box::from_raw(self.subscriber.as_ptr()) });
    }
}

/// A received message, from `shmcast_subscriber_recv`; valid until `shmcast_sample_release`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmcast_sample {
    /// The payload: `len` readable bytes, 16-byte aligned, read-only. For a gating subscriber
    /// it is the ring itself (zero-copy; the publisher will not overwrite it until released,
    /// unless it demotes the subscriber for stalling it past its stall bound: then
    /// `shmcast_sample_release` returns `SHMCAST_EDEMOTED`), for a lossy one a validated copy.
    pub data: *const c_void,
    /// Payload length in bytes (may be 0).
    pub len: usize,
    /// The message's sequence number (0 for the publisher's first message).
    pub seq: u64,
    /// The subscriber holding the sample; set by the receive, cleared by the release. Do not
    /// change.
    pub owner: *mut shmcast_subscriber,
}

/// Sixteen aligned bytes that an empty sample's `data` points to.
#[repr(C, align(16))]
struct Empty([u8; 16]);

static EMPTY_PAYLOAD: Empty = Empty([0; 16]);

/// Where a sample's `data` points: into the ring or the lossy copy, or, for an empty one (whose
/// copy may have no buffer at all), at [`EMPTY_PAYLOAD`], so that it is always a valid,
/// 16-byte aligned pointer.
fn data_of(sample: &Sample<'_>) -> *const c_void {
    if sample.is_empty() {
        std::ptr::from_ref(&EMPTY_PAYLOAD).cast()
    } else {
        sample.as_ptr().cast()
    }
}

impl shmcast_sample {
    const EMPTY: shmcast_sample = shmcast_sample {
        data: std::ptr::null(),
        len: 0,
        seq: 0,
        owner: std::ptr::null_mut(),
    };

    /// The description of `sample`, held by `owner`.
    fn of(sample: &Sample<'_>, owner: *mut shmcast_subscriber) -> shmcast_sample {
        shmcast_sample {
            data: data_of(sample),
            len: sample.len(),
            seq: sample.seq(),
            owner,
        }
    }
}

/// Subscriber counters, from `shmcast_subscriber_get_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmcast_subscriber_stats {
    /// Messages received.
    pub received: u64,
    /// Messages missed: overwritten before this subscriber read them (the sum of every
    /// `SHMCAST_ELAGGED` count, and the messages `shmcast_subscriber_recv_latest` found
    /// overwritten while it read them, which it adds to its `skipped` count instead of
    /// reporting a lag). `received + lagged`, plus the messages latest receives skipped
    /// unread, is every message since the subscriber joined.
    pub lagged: u64,
    /// Laps: each `SHMCAST_ELAGGED` returned, and each lap `shmcast_subscriber_recv_latest`
    /// absorbed into its skipped count instead of returning it.
    pub lag_events: u64,
    /// Times a receive blocked waiting for a wakeup.
    pub parks: u64,
    /// Whether the publisher still gates on this subscriber (false for lossy and demoted ones).
    pub gating: bool,
    /// Whether its waits are patient: a sleep let its ring fill, so its receives poll longer
    /// and sparser before they sleep, until a sleep leaves the ring nearly empty.
    pub patient: bool,
}

// `patient` sits in what was padding: the struct keeps the size older callers allocate.
const _: () = assert!(size_of::<shmcast_subscriber_stats>() == 40);

/// The handle behind a `sub` argument.
///
/// # Safety
///
/// `ptr` is null or a live handle from `shmcast_subscriber_connect`, not used by another
/// thread during the call.
unsafe fn handle<'a>(ptr: *mut shmcast_subscriber) -> Result<&'a mut shmcast_subscriber, Failure> {
    // SAFETY: the caller promises null or a live handle used by this thread only.
    unsafe { ptr.as_mut() }.ok_or_else(|| Failure::null("sub"))
}

/// Connects to the publisher of `topic` (a name or a socket path, as for
/// `shmcast_publisher_create`).
///
/// `opts` may be `NULL` for the defaults (gating, newest, fail at once if there is no
/// publisher). On success `*out` receives a new handle, owned by the caller until
/// `shmcast_subscriber_destroy`; on failure `*out` is set to `NULL`.
///
/// Blocks up to `connect_timeout_ms` waiting for a publisher to appear, then up to
/// `handshake_timeout_ms` for its answer.
///
/// Errors: `SHMCAST_EINVAL` (null `topic`/`out`, bad or uninitialised options, an expected
/// type no publisher can declare), `SHMCAST_ETOPIC`, `SHMCAST_ENOPUBLISHER` (the error message
/// names the socket path looked for and why that directory), `SHMCAST_EREFUSED`,
/// `SHMCAST_ETIMEDOUT` (handshake), `SHMCAST_EPROTOCOL`, `SHMCAST_ECONTRACT` (the topic's
/// contract does not meet the `expect_*` options; the error message names both, and the
/// publisher refused the subscriber before admitting it), `SHMCAST_EIO`. Thread-safe.
///
/// # Safety
///
/// `topic` is `NULL` or a NUL-terminated string; `opts` is `NULL` or points to an initialised
/// `shmcast_subscriber_options` whose `expect_type_name`, `expect_schema_name` and `directory`
/// are each `NULL` or a NUL-terminated string; `out` is `NULL` or points to writable storage for
/// one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_connect(
    topic: *const c_char,
    opts: *const shmcast_subscriber_options,
    out: *mut *mut shmcast_subscriber,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: `out` is non-null and writable (caller's promise).
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the caller promises null or a NUL-terminated string.
        let topic = unsafe { topic_arg(topic) }?;
        // SAFETY: the caller promises null or a valid options struct.
        let opts = unsafe { opts.as_ref() };
        // SAFETY: the caller promises null or NUL-terminated names in the options.
        let subscriber = unsafe { subscriber_builder(topic, opts) }?.connect()?;
        let fd = subscriber.as_fd().as_raw_fd();
        let contract = Declared::new(subscriber.contract());
        let imported = subscriber.imported();
        let handle = Box::new(shmcast_subscriber {
            sample: None,
            lent: false,
            subscriber: NonNull::from(Box::leak(Box::new(subscriber))),
            fd,
            contract,
            imported,
        });
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Disconnects and frees the handle.
///
/// A held sample is released; its `data` becomes invalid, as does the descriptor from
/// `shmcast_subscriber_fd` (remove it from your poll set first). `NULL` is ignored. Never
/// blocks.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a handle from `shmcast_subscriber_connect` that has not been destroyed and
/// that no other thread is using.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_destroy(sub: *mut shmcast_subscriber) {
    guard(|| {
        if !sub.is_null() {
            // SAFETY: the caller hands back a handle from `Box::into_raw` in
            // `shmcast_subscriber_connect`, for the last time.
            drop(unsafe { Box::from_raw(sub) });
        }
        Ok(())
    });
}

/// Receives the next message in place: `*out` describes it until `shmcast_sample_release`.
///
/// Only one sample may be held per subscriber: release it before the next receive
/// (`SHMCAST_EBUSY` otherwise). A gating subscriber holds the publisher back while it holds a
/// sample, so release promptly. On failure `*out` is cleared (`data == NULL`, `owner == NULL`),
/// except on `SHMCAST_EBUSY`, which leaves it as it was: it may be the outstanding sample, which
/// can still be released.
///
/// Blocking: `timeout_ms == -1` waits until a message arrives or the stream ends; `0` never
/// waits (`SHMCAST_EAGAIN`, and then the descriptor from `shmcast_subscriber_fd` becomes
/// readable when a message may be waiting); a positive value waits at most that long
/// (`SHMCAST_ETIMEDOUT`).
///
/// Errors: `SHMCAST_EINVAL` (null argument, `timeout_ms < -1`), `SHMCAST_EBUSY`,
/// `SHMCAST_EAGAIN`, `SHMCAST_ETIMEDOUT`, `SHMCAST_ELAGGED` (lossy: messages were overwritten
/// before they were read; the count is in `shmcast_last_lagged_count()`; receive again to go
/// on), `SHMCAST_EDEMOTED` (once, when a stalled gating subscriber became lossy),
/// `SHMCAST_EDISCONNECTED` (the publisher is gone and every message was received; final),
/// `SHMCAST_EEVICTED`, `SHMCAST_ECORRUPT`, `SHMCAST_EIO`.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`, not in use by another
/// thread; `out` is `NULL` or points to a writable `shmcast_sample`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_recv(
    sub: *mut shmcast_subscriber,
    timeout_ms: c_int,
    out: *mut shmcast_sample,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(sub) };
        // `SHMCAST_EBUSY` leaves `*out` alone: it may be the outstanding sample, still to be
        // released.
        if !h.as_ref().is_ok_and(|h| h.lent) {
            // SAFETY: `out` is non-null and writable (caller's promise).
            unsafe { out.write(shmcast_sample::EMPTY) };
        }
        let h = h?;
        let wait = Wait::from_ms(timeout_ms)?;
        let described = shmcast_sample::of(h.fetch(wait)?, sub);
        h.lent = true;
        // SAFETY: as above.
        unsafe { out.write(described) };
        Ok(())
    })
}

/// Receives the newest message in place, skipping every older one not yet received, and
/// stores in `*skipped` (if not `NULL`) how many it passed over since the previous receive: for
/// subscribers that want the current value, not the history. `*out` describes the message
/// until `shmcast_sample_release`, exactly as after `shmcast_subscriber_recv`, whose rules on
/// holding one sample, blocking (`timeout_ms`: -1, 0 for a try that never waits, or a
/// positive bound) and threads apply. A lap while reading is absorbed into the skipped count,
/// so `SHMCAST_ELAGGED` is never returned; a message kept after `SHMCAST_EMSGSIZE` is dropped.
///
/// Errors: as `shmcast_subscriber_recv`, without `SHMCAST_ELAGGED`.
///
/// # Safety
///
/// As `shmcast_subscriber_recv`; `skipped` is `NULL` or points to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_recv_latest(
    sub: *mut shmcast_subscriber,
    timeout_ms: c_int,
    out: *mut shmcast_sample,
    skipped: *mut u64,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(sub) };
        // `SHMCAST_EBUSY` leaves `*out` alone: it may be the outstanding sample, still to be
        // released.
        if !h.as_ref().is_ok_and(|h| h.lent) {
            // SAFETY: `out` is non-null and writable (caller's promise).
            unsafe { out.write(shmcast_sample::EMPTY) };
        }
        let h = h?;
        let wait = Wait::from_ms(timeout_ms)?;
        let (sample, passed) = h.fetch_latest(wait)?;
        let described = shmcast_sample::of(sample, sub);
        h.lent = true;
        // SAFETY: as above.
        unsafe { out.write(described) };
        // SAFETY: the caller promises null or a writable u64.
        if let Some(s) = unsafe { skipped.as_mut() } {
            *s = passed;
        }
        Ok(())
    })
}

/// Releases a sample from `shmcast_subscriber_recv`: its `data` must not be read afterwards,
/// and for a gating subscriber the publisher may reuse the space.
///
/// Clears `*sample`. Releasing a cleared sample (`owner == NULL`) does nothing and returns 0.
/// Never blocks (it may send one non-blocking doorbell to a publisher waiting for space).
///
/// A gating subscriber's sample is the ring itself, which the publisher does not overwrite
/// while it gates on the subscriber. A subscriber that holds the publisher back past its stall
/// bound is demoted to lossy, and the publisher may then write over the sample it still holds:
/// the release then returns `SHMCAST_EDEMOTED` (the sample is released all the same), and
/// whatever was read from `data` may mix this message with a later one; discard it. The next
/// receive reports the demotion too.
///
/// Errors: `SHMCAST_EINVAL` (null `sample`, or it is not the sample its subscriber holds, e.g.
/// a copy of one already released), `SHMCAST_EDEMOTED` (released, but the publisher wrote over
/// the sample while it was held).
///
/// Threads: callable from any thread, but not concurrently with another call on the sample's
/// subscriber.
///
/// # Safety
///
/// `sample` is `NULL` or points to a `shmcast_sample` filled by `shmcast_subscriber_recv` (or
/// cleared), whose `owner` subscriber has not been destroyed and is not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_sample_release(sample: *mut shmcast_sample) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a valid, writable sample.
        let s = unsafe { sample.as_mut() }.ok_or_else(|| Failure::null("sample"))?;
        if s.owner.is_null() {
            return Ok(());
        }
        // SAFETY: the caller promises the owner is a live handle used by this thread only.
        let h = unsafe { handle(s.owner) }?;
        let matches = h.lent
            && h.sample
                .as_ref()
                .is_some_and(|held| held.seq() == s.seq && data_of(held) == s.data);
        if !matches {
            return Err(Failure::invalid(
                "this sample is not the one its subscriber holds (already released?)",
            ));
        }
        let intact = h.sample.as_ref().is_some_and(Sample::is_intact);
        h.lent = false;
        h.sample = None;
        *s = shmcast_sample::EMPTY;
        if !intact {
            return Err(Failure::new(
                SHMCAST_EDEMOTED,
                "the subscriber was demoted while it held this sample, and the publisher wrote \
                 over it: what was read from it may belong to a later message",
            ));
        }
        Ok(())
    })
}

/// Receives the next message by copying it into `buf` (the natural path for a lossy
/// subscriber, and for callers that keep messages). No sample is held afterwards.
///
/// On success the message is copied to `buf`, its length stored in `*len` and its sequence
/// number in `*seq` (if `seq` is not `NULL`). If it is longer than `cap`, nothing is copied,
/// `*len` (and `*seq`) receive its length (and sequence number), `SHMCAST_EMSGSIZE` is returned,
/// and the message is kept: the next receive (of either kind) returns it. `buf` may be `NULL`
/// when `cap` is 0.
///
/// Blocking and the other errors are those of `shmcast_subscriber_recv`; `SHMCAST_EBUSY` means
/// a sample from `shmcast_subscriber_recv` is outstanding.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`, not in use by another
/// thread; `buf` is `NULL` or points to `cap` writable bytes; `len` is `NULL` or points to a
/// writable `size_t`; `seq` is `NULL` or points to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_recv_copy(
    sub: *mut shmcast_subscriber,
    timeout_ms: c_int,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
    seq: *mut u64,
) -> c_int {
    guard(|| {
        if len.is_null() {
            return Err(Failure::null("len"));
        }
        if buf.is_null() && cap > 0 {
            return Err(Failure::null("buf"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(sub) }?;
        let wait = Wait::from_ms(timeout_ms)?;
        let sample = h.fetch(wait)?;
        let n = sample.len();
        // SAFETY: `len` is non-null and writable (caller's promise).
        unsafe { len.write(n) };
        if !seq.is_null() {
            // SAFETY: non-null, and the caller promises a writable `uint64_t`.
            unsafe { seq.write(sample.seq()) };
        }
        if n > cap {
            return Err(Failure::new(
                SHMCAST_EMSGSIZE,
                format_args!("message of {n} bytes does not fit a buffer of {cap}; it is kept"),
            ));
        }
        if n > 0 {
            // SAFETY: `n <= cap`, `buf` is non-null (n > 0 implies cap > 0, checked above) and
            // the caller promises `cap` writable bytes; the caller's buffer cannot overlap the
            // sample, which is in the read-only ring or the subscriber's private copy.
            unsafe { std::ptr::copy_nonoverlapping(sample.as_ptr(), buf.cast::<u8>(), n) };
        }
        h.sample = None;
        Ok(())
    })
}

/// The subscriber's readiness descriptor, for `poll`, `select` or epoll.
///
/// Returns a descriptor (>= 0) owned by the subscriber, or `SHMCAST_EINVAL` if `sub` is `NULL`.
/// It is readable (`POLLIN`) whenever a receive would not return `SHMCAST_EAGAIN` (a message,
/// a lag, a demotion, the end of the stream), from the moment `shmcast_subscriber_connect`
/// returns, with no prior call: poll first or receive first; with `poll()` or level-triggered
/// epoll, one receive per wakeup or until `SHMCAST_EAGAIN`; with edge-triggered epoll
/// (`EPOLLET`), until `SHMCAST_EAGAIN`, as for every descriptor: an edge is not repeated while
/// messages wait. Readiness may be spurious (a receive then
/// returns `SHMCAST_EAGAIN`). Do not read, write or close it; it closes with
/// `shmcast_subscriber_destroy`. Never blocks; callable while a sample is held. While a sample
/// is held it stays readable, since a receive would return `SHMCAST_EBUSY`: release the sample
/// before waiting on it, or a `poll()` loop spins.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_fd(sub: *const shmcast_subscriber) -> c_int {
    let mut fd = SHMCAST_EINVAL as c_int;
    let code = guard(|| {
        // SAFETY: the caller promises null or a live handle; only the cached `fd` is read.
        let h = unsafe { sub.as_ref() }.ok_or_else(|| Failure::null("sub"))?;
        fd = h.fd;
        Ok(())
    });
    if code == 0 { fd } else { code }
}

/// `shmcast_subscriber_stream_end`: the stream goes on.
pub const SHMCAST_STREAM_GOING_ON: c_int = 0;
/// `shmcast_subscriber_stream_end`: the publisher ended the stream (`shmcast_publisher_destroy`).
pub const SHMCAST_STREAM_CLOSED: c_int = 1;
/// `shmcast_subscriber_stream_end`: the publisher's process went away without ending the
/// stream: killed, crashed, or exited (`exit`, a return from `main`, `_exit`) without
/// `shmcast_publisher_destroy`, which also leaves its socket file behind.
pub const SHMCAST_STREAM_VANISHED: c_int = 2;

/// How the stream ended: `SHMCAST_STREAM_GOING_ON` (0) while it goes on, then, once a receive
/// returned `SHMCAST_EDISCONNECTED`, `SHMCAST_STREAM_CLOSED` (the publisher ended it) or
/// `SHMCAST_STREAM_VANISHED` (its process went away without ending it: killed or crashed).
/// Errors (negative): `SHMCAST_EINVAL` (`sub` is `NULL`), `SHMCAST_EBUSY` (a sample is held:
/// one from `shmcast_subscriber_recv` not yet released, or a message kept after
/// `SHMCAST_EMSGSIZE` not yet received).
/// Never blocks.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_stream_end(sub: *mut shmcast_subscriber) -> c_int {
    let mut end = SHMCAST_STREAM_GOING_ON;
    let code = guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        end = match unsafe { handle(sub) }?.idle()?.stream_end() {
            None => SHMCAST_STREAM_GOING_ON,
            Some(StreamEnd::Closed) => SHMCAST_STREAM_CLOSED,
            Some(_) => SHMCAST_STREAM_VANISHED,
        };
        Ok(())
    });
    if code == 0 { end } else { code }
}

/// Whether the topic's publisher declared that it republishes messages imported from elsewhere
/// (`opts->imported` at `shmcast_publisher_create`, as a bridge's local topic does): 1 if so, 0
/// if not, `SHMCAST_EINVAL` if `sub` is `NULL`. A gateway checks it to never forward such a
/// topic back where it came from. Never blocks; callable while a sample is held.
///
/// Threads: callable from any thread, but not concurrently with `shmcast_subscriber_destroy`
/// on the same handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_imported(sub: *const shmcast_subscriber) -> c_int {
    let mut imported = 0;
    let code = guard(|| {
        // SAFETY: the caller promises null or a live handle; only the cached flag is read.
        let h = unsafe { sub.as_ref() }.ok_or_else(|| Failure::null("sub"))?;
        imported = c_int::from(h.imported);
        Ok(())
    });
    if code == 0 { imported } else { code }
}

/// Stores in `*out` what the topic carries, as its publisher declared it when this subscriber
/// connected: its kind (`SHMCAST_CONTRACT_BYTES` when nothing was declared), type or schema
/// name, type size and alignment or schema version, and maximum message size. `out->name`
/// stays valid until `shmcast_subscriber_destroy`. Never blocks; callable while a sample is
/// held.
///
/// Errors: `SHMCAST_EINVAL` (null argument).
///
/// Threads: callable from any thread, but not concurrently with `shmcast_subscriber_destroy`
/// on the same handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`; `out` is `NULL` or
/// points to a writable `shmcast_contract`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_contract(
    sub: *const shmcast_subscriber,
    out: *mut shmcast_contract,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle; only the cached contract is read.
        let h = unsafe { sub.as_ref() }.ok_or_else(|| Failure::null("sub"))?;
        // SAFETY: `out` is non-null and writable (caller's promise).
        unsafe { out.write(h.contract.describe()) };
        Ok(())
    })
}

/// Stores the subscriber's counters in `*out`. Never blocks.
///
/// Errors: `SHMCAST_EINVAL` (null argument), `SHMCAST_EBUSY` (a sample is held: one from
/// `shmcast_subscriber_recv` not yet released, or a message kept after `SHMCAST_EMSGSIZE` not
/// yet received).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `sub` is `NULL` or a live handle from `shmcast_subscriber_connect`, not in use by another
/// thread; `out` is `NULL` or points to a writable `shmcast_subscriber_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_get_stats(
    sub: *mut shmcast_subscriber,
    out: *mut shmcast_subscriber_stats,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let s = unsafe { handle(sub) }?.idle()?.stats();
        let stats = shmcast_subscriber_stats {
            received: s.received,
            lagged: s.lagged,
            lag_events: s.lag_events,
            parks: s.parks,
            gating: s.gating,
            patient: s.patient,
        };
        // SAFETY: `out` is non-null and writable (caller's promise).
        unsafe { out.write(stats) };
        Ok(())
    })
}
