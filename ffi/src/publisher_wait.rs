//! The publisher's waits outside a loan: for subscribers, and for space from the caller's
//! event loop through the space descriptor.

use crate::error::{Failure, SHMCAST_EAGAIN, SHMCAST_EINVAL, SHMCAST_ETIMEDOUT, guard};
use crate::publisher::{handle, shmcast_publisher};
use crate::translate::Wait;
use std::ffi::c_int;
use std::time::Duration;

/// The publisher's space descriptor, for a publisher in an event loop (`poll`, `select`,
/// epoll, libuv, libevent) that waits for space instead of blocking in a send.
///
/// Returns a descriptor (>= 0) owned by the publisher, or `SHMCAST_EINVAL` if `pub` is `NULL`.
/// It is readable (`POLLIN`) only after `shmcast_publisher_watch_space` returned
/// `SHMCAST_EAGAIN`, when the publisher should try again: a gating subscriber released space,
/// one left, the stall bound passed (the next send then demotes the slowest gating subscriber
/// and goes through), or 100 ms went by (a re-check that a subscriber withholding its wakeups
/// cannot prevent); and it stays so until the next send, loan or watch, or
/// `shmcast_publisher_unwatch_space`. It may stay in the loop's set for good; readiness may be
/// spurious (the send then returns `SHMCAST_EAGAIN` again). Works with `poll()`,
/// level-triggered and edge-triggered epoll, libuv and libevent (setting `O_NONBLOCK` on it
/// does no harm). Do not read, write or close it; it closes with `shmcast_publisher_destroy`.
/// Never blocks; callable while a loan is outstanding.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_space_fd(r#pub: *const shmcast_publisher) -> c_int {
    let mut fd = SHMCAST_EINVAL as c_int;
    let code = guard(|| {
        // SAFETY: the caller promises null or a live handle; only the cached descriptor is read.
        let h = unsafe { r#pub.as_ref() }.ok_or_else(|| Failure::null("pub"))?;
        fd = h.space_fd;
        Ok(())
    });
    if code == 0 { fd } else { code }
}

/// Arms the space descriptor for a publisher in an event loop whose send or loan with
/// `timeout_ms == 0` returned `SHMCAST_EAGAIN` (a gating subscriber's ring is full). Never
/// blocks, but for a poll of at most the spin limit while a core is free.
///
/// Returns `SHMCAST_OK` (0) if `len` bytes fit now: nothing is armed, send at once. Returns
/// `SHMCAST_EAGAIN` once armed: gating subscribers now wake the publisher as they release, and
/// `shmcast_publisher_space_fd(pub)` becomes readable when the publisher should try again. Then
/// send (or loan) with `timeout_ms == 0` again; any send, loan or watch first withdraws what
/// this call armed. The stall bound counts across these retries from the first send that
/// found the ring full.
///
/// ```c
/// int rc = shmcast_publisher_send(pub, msg, len, 0);
/// if (rc == SHMCAST_EAGAIN && shmcast_publisher_watch_space(pub, len) == SHMCAST_EAGAIN)
///     wait_for_pollin(shmcast_publisher_space_fd(pub)); // then send again
/// ```
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, or on a topic that declares a type a `len` other than
/// its size), `SHMCAST_EBUSY` (a loan is outstanding), `SHMCAST_ETOOLARGE` (`len` above the
/// maximum message size), `SHMCAST_EIO`.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_watch_space(
    r#pub: *mut shmcast_publisher,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        h.idle()?;
        h.check_len(len)?;
        if h.idle()?.watch_space(len)? {
            Ok(())
        } else {
            Err(Failure::new(
                SHMCAST_EAGAIN,
                "the ring is full: wait for the space descriptor to become readable",
            ))
        }
    })
}

/// Withdraws what `shmcast_publisher_watch_space` armed, for a loop that gives up on the
/// message it waited to send (drops it, defers it, shuts down): subscribers stop waking the
/// publisher for it, and the space descriptor is quiet until the next watch. Every send, loan
/// and watch withdraws an armed wait first; an armed descriptor left without any of them
/// becomes readable and stays so. Does nothing if nothing is armed, or while a loan is
/// outstanding (taking it withdrew the watch). Never blocks.
///
/// Errors: `SHMCAST_EINVAL` (null `pub`).
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_unwatch_space(r#pub: *mut shmcast_publisher) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let h = unsafe { handle(r#pub) }?;
        if let Ok(p) = h.idle() {
            p.unwatch_space();
        }
        Ok(())
    })
}

/// Waits until at least `n` subscribers are connected: at most `timeout_ms` milliseconds (-1
/// without limit, 0 only looks). Messages published before a subscriber connects never reach
/// it: call this before the first message when every subscriber must see the whole stream.
///
/// Errors: `SHMCAST_EINVAL` (null `pub`, `timeout_ms < -1`), `SHMCAST_EBUSY` (a loan is
/// outstanding), `SHMCAST_EAGAIN` (`timeout_ms == 0` and fewer than `n` connected),
/// `SHMCAST_ETIMEDOUT` (fewer than `n` connected in time); the message of either says how many
/// were.
///
/// Threads: callable from any thread, but not concurrently with another call on the same
/// handle.
///
/// # Safety
///
/// `pub` is `NULL` or a live handle from `shmcast_publisher_create`, not in use by another
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_wait_for_subscribers(
    r#pub: *mut shmcast_publisher,
    n: usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: the caller promises null or a live handle used by this thread only.
        let p = unsafe { handle(r#pub) }?.idle()?;
        let timeout = match Wait::from_ms(timeout_ms)? {
            Wait::Never => Duration::ZERO,
            Wait::Forever => Duration::MAX,
            Wait::For(t) => t,
        };
        p.wait_for_subscribers(n, timeout).map(drop).map_err(|e| {
            if timeout.is_zero() {
                let (wanted, connected) = (e.wanted, e.connected);
                Failure::new(
                    SHMCAST_EAGAIN,
                    format_args!("would wait for {wanted} subscribers ({connected} connected)"),
                )
            } else {
                Failure::new(SHMCAST_ETIMEDOUT, e)
            }
        })
    })
}
