//! Futexes: sleeping on a 32-bit word in shared memory, and waking its sleepers.

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use rustix::thread::futex::Flags as FutexFlags;

use rustix::event::Timespec;
use rustix::io::Errno;

/// `futex(word, FUTEX_WAIT, expected, timeout)`—Sleeps while `*word == expected`, at most
/// `timeout`, on a word in memory shared between processes (the ring's wake word).
///
/// Returns when woken, when the word no longer holds `expected`, on timeout or on a signal:
/// callers re-check their condition in every case, so all of these are `Ok`. Waiting needs only
/// read access, so it works on a read-only mapping.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) -> io::Result<()> {
    let timeout = Timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    match rustix::thread::futex::wait(word, FutexFlags::empty(), expected, Some(&timeout)) {
        Ok(()) | Err(Errno::AGAIN | Errno::TIMEDOUT | Errno::INTR) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// `futex(word, FUTEX_WAKE, INT_MAX)`—Wakes every process waiting on `word`; returns how many.
///
/// Cannot block, whatever any other process does with the word or its memory.
pub(crate) fn futex_wake_all(word: &AtomicU32) -> io::Result<usize> {
    Ok(rustix::thread::futex::wake(
        word,
        FutexFlags::empty(),
        i32::MAX as u32,
    )?)
}
