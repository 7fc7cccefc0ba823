//! The publisher handle.
//!
//! # The outstanding loan
//!
//! A Rust [`Loan`] borrows its publisher mutably and holds the ring's writer lock. C cannot
//! express that borrow, so the handle keeps the loan itself: the [`Publisher`] lives in its own
//! heap allocation that never moves, the loan is created from a `'static` reference to it, and
//! the handle refuses every call that would touch the publisher ([`SHMCAST_EBUSY`]) until the
//! loan is published or abandoned. Dropping the handle drops the loan before the publisher.
//!
//! While a loan is outstanding new subscribers wait to be admitted (the writer lock is held),
//! so C callers are told to publish promptly. The lock is a futex on Linux, with no owning
//! thread: a loan may be finished on another thread than the one that took it.

use crate::error::{Failure, guard, guard_value};
use crate::options::{SHMCAST_MODE_GATING, SHMCAST_MODE_LOSSY, shmcast_publisher_options};
use crate::translate::{Wait, publisher_builder, topic_arg};
use shmcast_transport::{Loan, MessageType, Mode, Publisher};
use std::ffi::{CString, c_char, c_int, c_void};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::ptr::NonNull;

/// A publisher: the single writer of a topic. Opaque; create with `shmcast_publisher_create`,
/// free with `shmcast_publisher_destroy`.
pub struct shmcast_publisher {
    /// The outstanding loan, borrowing `*publisher`. Declared first: dropped first.
    loan: Option<Loan<'static>>,
    /// Owned: from `Box::leak`, freed in `Drop` after `loan`. Never moved, and no reference
    /// to it is made while `loan` is `Some`.
    publisher: NonNull<Publisher>,
    /// The socket path, for `shmcast_publisher_path`.
    path: CString,
    /// The declared Pod type's name and size, if the topic declares one: every message must be
    /// one value (C has no typed send to check it at compile time).
    pod: Option<(String, usize)>,
    /// The publisher's space descriptor (`Publisher::space_fd`), open as long as it is: kept
    /// here so that it can be returned while a loan borrows the publisher.
    pub(crate) space_fd: RawFd,
}

impl shmcast_publisher {
    /// The publisher, if no loan borrows it.
    pub(crate) fn idle(&mut self) -> Result<&mut Publisher, Failure> {
        if self.loan.is_some() {
            return Err(Failure::busy(
                "a loan is outstanding: publish or abandon it first",
            ));
        }
        // SAFETY: `publisher` is live until Drop, and with no loan outstanding nothing else
        // refers to it; `&mut self` makes this the only reference.
        Ok(unsafe { self.publisher.as_mut() })
    }

    /// Refuses a message of `len` bytes on a topic whose declared type has another size.
    pub(crate) fn check_len(&self, len: usize) -> Result<(), Failure> {
        match &self.pod {
            Some((name, size)) if *size != len => Err(Failure::invalid(format_args!(
                "the topic declares every message one {name} ({size} bytes): \
                 a message of {len} bytes is not one"
            ))),
            _ => Ok(()),
        }
    }

    /// Takes a loan and keeps it in the handle.
    fn lend(&mut self, len: usize, wait: Wait) -> Result<&mut Loan<'static>, Failure> {
        self.idle()?;
        // The `'static` borrow is stored in `self.loan`, dropped before the publisher is freed;
        // while it exists every other path to the publisher goes through `idle`, which refuses.
        // SAFETY: no loan is outstanding (checked above): nothing else refers to the publisher.
        let publisher: &'static mut Publisher = unsafe { &mut *self.publisher.as_ptr() };
        // C checks a typed topic's length when the loan is published (`publish_len` may send
        // less than was loaned), so a loan of another length is lent, as one of variable length
        // filled to `len`.
        let loan = match (self.pod.is_some(), wait) {
            (false, Wait::Never) => publisher.try_loan(len),
            (false, Wait::Forever) => publisher.loan(len),
            (false, Wait::For(t)) => publisher.loan_timeout(len, t),
            (true, Wait::Never) => publisher.try_loan_up_to(len).map(filled),
            (true, Wait::Forever) => publisher.loan_up_to(len).map(filled),
            (true, Wait::For(t)) => publisher.loan_up_to_timeout(len, t).map(filled),
        }?;
        Ok(self.loan.insert(loan))
    }
}

/// A loan from `loan_up_to` with all its capacity part of the message, as `loan` lends it.
fn filled(mut loan: Loan<'_>) -> Loan<'_> {
    let all = loan.capacity();
    // Never over the capacity.
    let _ = loan.set_len(all);
    loan
}

impl Drop for shmcast_publisher {
    fn drop(&mut self) {
        // The loan borrows the publisher: end it first.
        self.loan = None;
        // SAFETY: `publisher` came from `Box::leak` in `shmcast_publisher_create` and is
        // freed only here; the loan that borrowed it is gone.
        drop(unsafe { Box::from_raw(self.publisher.as_ptr()) });
    }
}

/// Publisher counters, from `shmcast_publisher_get_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmcast_publisher_stats {
    /// Messages published.
    pub messages: u64,
    /// Wake syscalls made (one futex wake for all subscribers asleep in a receive, one
    /// never-blocking doorbell per subscriber waiting on its descriptor); zero while none is
    /// parked.
    pub wake_syscalls: u64,
    /// Times a loan found the ring full.
    pub full: u64,
    /// Times the publisher slept waiting for space.
    pub space_waits: u64,
    /// Gating subscribers demoted to lossy.
    pub demotions: u64,
    /// Subscribers admitted so far.
    pub admitted: u64,
    /// Subscriber connections refused (policy, protocol, overload, timeout, a contract that
    /// does not meet the subscriber's expectation); refused introspection requests are not.
    pub refused: u64,
    /// Subscribers that left or died.
    pub departed: u64,
    /// Subscribers connected now.
    pub subscribers: u64,
    /// The largest message this publisher accepts, in bytes.
    pub max_message: u64,
}

/// One connected subscriber as its publisher sees it, from `shmcast_publisher_subscribers`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmcast_subscriber_info {
    /// The publisher's identifier for the subscriber (unique while the publisher lives).
    pub id: u64,
    /// Its current mode: `SHMCAST_MODE_GATING` or `SHMCAST_MODE_LOSSY` (a demoted subscriber
    /// is lossy).
    pub mode: i32,
    /// Whether it is parked, waiting for a wakeup.
    pub parked: bool,
    /// Ring position it has released up to.
    pub cursor: u64,
    /// Bytes published that it has not released.
    pub lag_bytes: u64,
    /// Messages published that it has not consumed.
    pub lag_messages: u64,
    /// Messages it reports having received.
    pub received: u64,
    /// Messages it reports having missed.
    pub lagged: u64,
}

/// The handle behind a `pub` argument.
///
/// # Safety
///
/// `ptr` is null or a live handle from `shmcast_publisher_create`, not used by another thread
/// during the call.
pub(crate) unsafe fn handle<'a>(
    ptr: *mut shmcast_publisher,
) -> Result<&'a mut shmcast_publisher, Failure> {
    // SAFETY: the caller promises null or a live handle used by this thread only.
    unsafe { ptr.as_mut() }.ok_or_else(|| Failure::null("pub"))
}

/// Creates the publisher of `topic` and starts serving it.
///
/// `topic` is a name (`A-Z a-z 0-9 . _ -`, not starting with `.`) resolved in the topic
/// directory: `opts->directory`, else `$SHMCAST_DIR`, else `$XDG_RUNTIME_DIR/shmcast/`, else
/// `/tmp/shmcast-$UID/`; or a socket path if it contains a `/`. The socket path may be at most
/// 107 bytes long (a unix socket address), which bounds a name by its directory's length.
/// `opts` may be `NULL` for the defaults. On success `*out` receives a new handle, owned by the
/// caller until `shmcast_publisher_destroy`; on failure `*out` is set to `NULL`. The library
/// starts one background thread per publisher to admit subscribers.
///
/// Errors: `SHMCAST_EINVAL` (null `topic`/`out`, bad or uninitialised options, a declared type
/// or schema with a bad name, a bad alignment, or larger than the maximum message),
/// `SHMCAST_ETOPIC` (a bad name, a socket path too long, an unsafe or missing directory),
/// `SHMCAST_EINUSE` (another live publisher serves the topic; a stale socket of a dead one, ours
/// and refusing connections, is replaced), `SHMCAST_EEXIST` (anything else occupies the path: a
/// file, a FIFO, a directory, a symbolic link, another user's socket; it is left as it was),
/// `SHMCAST_ECONFIG` (bad capacity/max_message), `SHMCAST_EIO`.
/// Blocks only briefly (creating the ring, probing an existing socket). Thread-safe.
///
/// # Safety
///
/// `topic` is `NULL` or a NUL-terminated string; `opts` is `NULL` or points to an initialised
/// `shmcast_publisher_options` (whose `admit_uids` holds `admit_uid_count` entries, and whose
/// `type_name`, `schema_name` and `directory` are each `NULL` or a NUL-terminated string);
/// `out` is `NULL` or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_create(
    topic: *const c_char,
    opts: *const shmcast_publisher_options,
    out: *mut *mut shmcast_publisher,
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
        // SAFETY: the caller promises `admit_uids` holds `admit_uid_count` entries.
        let builder = unsafe { publisher_builder(topic, opts) }?;
        let publisher = builder.bind()?;
        let path = CString::new(publisher.path().as_os_str().as_bytes())
            .map_err(|_| Failure::invalid("socket path contains a NUL byte"))?;
        let pod = match &publisher.contract().message {
            MessageType::Pod { name, size, .. } => Some((name.clone(), *size)),
            _ => None,
        };
        let space_fd = publisher.space_fd().as_raw_fd();
        let handle = Box::new(shmcast_publisher {
            space_fd,
            loan: None,
            publisher: NonNull::from(Box::leak(Box::new(publisher))),
            path,
            pod,
        });
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Stops publishing and frees the handle.
///
/// An outstanding loan is abandoned. Subscribers receive every message already published, then
/// `SHMCAST_EDISCONNECTED`. The socket file is removed and the background thread joined (this
/// may wait briefly for it). `NULL` is ignored. After this call `pub` and any loaned buffer are
/// invalid.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a handle from `shmcast_publisher_create` that has not been destroyed and
/// that no other thread is using.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_destroy(r#pub: *mut shmcast_publisher) {
    guard(|| {
        if !r#pub.is_null() {
            // SAFETY: the caller hands back a handle from `Box::into_raw` in
            // `shmcast_publisher_create`, for the last time.
            drop(unsafe { Box::from_raw(r#pub) });
        }
        Ok(())
    });
}

/// The socket path subscribers connect to (the topic resolved to a path).
///
/// Returns a NUL-terminated string owned by the handle, valid until `shmcast_publisher_destroy`,
/// or `NULL` if `pub` is `NULL`. Never blocks. Callable while a loan is outstanding.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_path(r#pub: *const shmcast_publisher) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: the caller promises null or a live handle not in use by another thread.
        match unsafe { r#pub.as_ref() } {
            Some(h) => h.path.as_ptr(),
            None => std::ptr::null(),
        }
    })
}

/// Lends a writable buffer of `len` bytes inside the ring, to be filled in place and then
/// published with `shmcast_publisher_publish` (or dropped with `shmcast_publisher_abandon`).
///
/// On success `*data` points to the buffer (16-byte aligned; for `len == 0` a valid but
/// unusable pointer), which belongs to the caller until publish/abandon/destroy. Only one loan
/// may be outstanding per publisher; while it is, every other call on the handle except
/// publish, abandon, path and destroy returns `SHMCAST_EBUSY`, and new subscribers wait to be
/// admitted, so publish promptly. On failure `*data` is set to `NULL`.
///
/// Blocking: `timeout_ms == -1` waits while gating subscribers hold the space (up to the stall
/// bound, if configured, after which the slowest is demoted and the loan proceeds); `0` never
/// waits (`SHMCAST_EAGAIN` if the ring is full); a positive value waits at most that long
/// (`SHMCAST_ETIMEDOUT`).
///
/// Errors: `SHMCAST_EINVAL` (null `pub`/`data`, `timeout_ms < -1`), `SHMCAST_EBUSY`,
/// `SHMCAST_ETOOLARGE` (`len` above the maximum message size), `SHMCAST_EAGAIN`,
/// `SHMCAST_ETIMEDOUT`, `SHMCAST_EIO`.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread; `data` is `NULL` or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_loan(
    r#pub: *mut shmcast_publisher,
    len: usize,
    timeout_ms: c_int,
    data: *mut *mut c_void,
) -> c_int {
    guard(|| {
        if data.is_null() {
            return Err(Failure::null("data"));
        }
        // SAFETY: `data` is non-null and writable (caller's promise).
        unsafe { data.write(std::ptr::null_mut()) };
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        let wait = Wait::from_ms(timeout_ms)?;
        let loan = h.lend(len, wait)?;
        // SAFETY: as above.
        unsafe { data.write(loan.as_mut_ptr().cast()) };
        Ok(())
    })
}

/// Publishes the outstanding loan to every subscriber and ends it.
///
/// The buffer from `shmcast_publisher_loan` must not be touched afterwards. Parked subscribers
/// are woken (one futex wake for all those blocked in a receive, one doorbell per subscriber
/// waiting on its descriptor, none if nobody is parked). Never blocks.
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, no loan is outstanding, or, on a topic that declares a
/// type, a loan of another length than the type's size: nothing is published and the loan
/// stays outstanding, to be abandoned).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_publish(r#pub: *mut shmcast_publisher) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        let loan = h
            .loan
            .as_ref()
            .ok_or_else(|| Failure::invalid("no loan is outstanding"))?;
        h.check_len(loan.len())?;
        if let Some(loan) = h.loan.take() {
            loan.publish();
        }
        Ok(())
    })
}

/// Publishes the first `len` bytes of the outstanding loan and ends it: for a message whose
/// length is known only once written, loan the most it may need, write, then publish what was
/// written. Subscribers receive exactly `len` bytes; the rest of the loan is free again at once.
///
/// `len` may be anything from 0 to the length loaned. A larger `len` is `SHMCAST_EINVAL` and
/// publishes nothing: the loan stays outstanding, to be published or abandoned. Otherwise as
/// `shmcast_publisher_publish` (the buffer must not be touched afterwards; never blocks).
///
/// ```c
/// void *buf;
/// int n;
/// shmcast_publisher_loan(pub, 256, -1, &buf);
/// n = snprintf(buf, 256, "job %d done", 17);
/// if (n >= 0 && n < 256) {
///     shmcast_publisher_publish_len(pub, (size_t)n);
/// } else {
///     shmcast_publisher_abandon(pub);
/// }
/// ```
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, no loan is outstanding, `len` above the length
/// loaned, or, on a topic that declares a type, `len` other than the type's size: the loan
/// stays outstanding).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_publish_len(
    r#pub: *mut shmcast_publisher,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        let loan = h
            .loan
            .as_mut()
            .ok_or_else(|| Failure::invalid("no loan is outstanding"))?;
        if len > loan.len() {
            return Err(Failure::invalid(format_args!(
                "cannot publish {len} bytes of a {}-byte loan; the loan is still outstanding",
                loan.len()
            )));
        }
        h.check_len(len)?;
        let Some(loan) = h.loan.as_mut() else {
            return Err(Failure::invalid("no loan is outstanding"));
        };
        loan.truncate(len);
        if let Some(loan) = h.loan.take() {
            loan.publish();
        }
        Ok(())
    })
}

/// Drops the outstanding loan without publishing it (subscribers never see it).
///
/// The buffer must not be touched afterwards. Never blocks.
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, or no loan is outstanding).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_abandon(r#pub: *mut shmcast_publisher) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        let loan = h
            .loan
            .take()
            .ok_or_else(|| Failure::invalid("no loan is outstanding"))?;
        loan.abandon();
        Ok(())
    })
}

/// Copies `len` bytes from `data` into the ring and publishes them: a loan, a copy and a
/// publish in one call.
///
/// `data` may be `NULL` when `len` is 0. Waits for space as `shmcast_publisher_loan` does,
/// according to `timeout_ms` (-1 without limit, 0 never, else at most that many milliseconds).
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, or null `data` with `len > 0`, `timeout_ms < -1`, or,
/// on a topic that declares a type, `len` other than the type's size: every message of such a
/// topic is one value of the type), `SHMCAST_EBUSY` (a loan is outstanding),
/// `SHMCAST_ETOOLARGE`, `SHMCAST_EAGAIN`,
/// `SHMCAST_ETIMEDOUT`, `SHMCAST_EIO`.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread; `data` is `NULL` or points to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_send(
    r#pub: *mut shmcast_publisher,
    data: *const c_void,
    len: usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        let payload: &[u8] = if len == 0 {
            &[]
        } else if data.is_null() {
            return Err(Failure::null("data"));
        } else {
            // SAFETY: non-null, and the caller promises `len` readable bytes; they are not in
            // the ring (the caller has no loan, checked by `lend`), so they do not overlap the
            // buffer we write.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        let wait = Wait::from_ms(timeout_ms)?;
        // An outstanding loan first (`SHMCAST_EBUSY`), then the message's length.
        h.idle()?;
        h.check_len(len)?;
        h.lend(len, wait)?.copy_from_slice(payload);
        let loan = h.loan.take();
        if let Some(loan) = loan {
            loan.publish();
        }
        Ok(())
    })
}

/// Stores a snapshot of the publisher's counters in `*out`.
///
/// Briefly takes the ring's writer lock; never waits otherwise.
///
/// Errors: `SHMCAST_EINVAL` (null argument), `SHMCAST_EBUSY` (a loan is outstanding).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread; `out` is `NULL` or points to writable storage for one `shmcast_publisher_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_get_stats(
    r#pub: *mut shmcast_publisher,
    out: *mut shmcast_publisher_stats,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let p = unsafe { handle(r#pub) }?.idle()?;
        let s = p.stats();
        let stats = shmcast_publisher_stats {
            messages: s.messages,
            wake_syscalls: s.wake_syscalls,
            full: s.full,
            space_waits: s.space_waits,
            demotions: s.demotions,
            admitted: s.admitted,
            refused: s.refused,
            departed: s.departed,
            subscribers: s.subscribers.len() as u64,
            max_message: p.max_message() as u64,
        };
        // SAFETY: `out` is non-null and writable (caller's promise).
        unsafe { out.write(stats) };
        Ok(())
    })
}

/// Counts `n` messages that the source this publisher republishes lost before they reached it
/// (a gap in a remote sequence, say), for a publisher created with `opts->imported = 1` or any
/// other that relays: `shmcast stat` shows the total as "lost upstream", so a loss before the
/// topic is never hidden from its readers' side. Losses on this host (a lossy subscriber's
/// `SHMCAST_ELAGGED`) are counted apart. Never blocks.
///
/// Errors: `SHMCAST_EINVAL` (null argument), `SHMCAST_EBUSY` (a loan is outstanding).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_note_upstream_lost(
    r#pub: *mut shmcast_publisher,
    n: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        unsafe { handle(r#pub) }?.idle()?.note_upstream_lost(n);
        Ok(())
    })
}

/// Describes the connected subscribers: stores up to `cap` entries in `out` and the number of
/// subscribers in `*count` (which may exceed `cap`: call again with a larger array to see all).
///
/// `out` may be `NULL` when `cap` is 0, to learn the count. Briefly takes the ring's writer
/// lock; never waits otherwise.
///
/// Errors: `SHMCAST_EINVAL` (null `pub`/`count`, null `out` with `cap > 0`), `SHMCAST_EBUSY`
/// (a loan is outstanding).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread; `out` is `NULL` or points to `cap` writable `shmcast_subscriber_info`; `count` is
/// `NULL` or points to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_subscribers(
    r#pub: *mut shmcast_publisher,
    out: *mut shmcast_subscriber_info,
    cap: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        if count.is_null() {
            return Err(Failure::null("count"));
        }
        if out.is_null() && cap > 0 {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let p = unsafe { handle(r#pub) }?.idle()?;
        let subscribers = p.stats().subscribers;
        for (i, s) in subscribers.iter().take(cap).enumerate() {
            let info = shmcast_subscriber_info {
                id: s.id.0,
                mode: match s.mode {
                    Mode::Gating => SHMCAST_MODE_GATING,
                    Mode::Lossy => SHMCAST_MODE_LOSSY,
                },
                parked: s.parked,
                cursor: s.cursor,
                lag_bytes: s.lag_bytes,
                lag_messages: s.lag_messages,
                received: s.received,
                lagged: s.lagged,
            };
            // SAFETY: `i < cap`, and the caller promises `cap` writable entries at `out`.
            unsafe { out.add(i).write(info) };
        }
        // SAFETY: `count` is non-null and writable (caller's promise).
        unsafe { count.write(subscribers.len()) };
        Ok(())
    })
}
