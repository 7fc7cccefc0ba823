//! Ending a publisher on Ctrl-C, SIGTERM or SIGHUP as cleanly as a normal exit: the topic's
//! socket file is removed, so the topic is not left stale, and subscribers see the hang-up as
//! the end of the stream (after draining what was published).
//!
//! The signals are blocked in every thread (before the publisher starts its own) and taken by
//! one thread with `sigwait`, which has no async-signal-safety limits: it ends the stream
//! through the publisher's `Closer` (which removes the socket if it is still the file this
//! publisher bound, and tells subscribers the stream ended rather than that the publisher
//! vanished), says its last words (`pub`'s summary), then exits with 128 + the signal's
//! number.
#![allow(unsafe_code)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Longest wait for the publisher's writer when a signal ends the stream.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// The signals, blocked in this thread and every thread it starts from now on.
pub struct Blocked(libc::sigset_t);

/// Blocks the terminating signals; call before anything starts a thread.
pub fn block() -> io::Result<Blocked> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before any other use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live, writable sigset_t for each call.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
    }
    // SAFETY: `set` is initialised; a null old set is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(Blocked(set))
}

impl Blocked {
    /// Starts the thread that, on a signal, ends the stream with `closer` (which also removes
    /// the socket file), calls `last_words`, and exits.
    pub fn close_on_signal(
        self,
        closer: shmcast::Closer,
        last_words: impl FnOnce() + Send + 'static,
    ) -> io::Result<()> {
        std::thread::Builder::new()
            .name("shmcast-signals".into())
            .spawn(move || {
                let set = self.0;
                let mut signal: libc::c_int = 0;
                // SAFETY: `set` is an initialised sigset_t and `signal` a live int.
                let rc = unsafe { libc::sigwait(&set, &mut signal) };
                if rc != 0 {
                    return;
                }
                // A loan in progress holds the writer only while one message is copied.
                closer.close(CLOSE_WAIT);
                last_words();
                std::process::exit(128 + signal);
            })?;
        Ok(())
    }

    /// Starts the thread that, on a signal, stores it in the returned word (0 until then), for
    /// a command that ends its own work cleanly (`bridge`).
    pub fn flag_on_signal(self) -> io::Result<Arc<AtomicI32>> {
        let flag = Arc::new(AtomicI32::new(0));
        let seen = flag.clone();
        std::thread::Builder::new()
            .name("shmcast-signals".into())
            .spawn(move || {
                let set = self.0;
                let mut signal: libc::c_int = 0;
                // SAFETY: `set` is an initialised sigset_t and `signal` a live int.
                if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
                    seen.store(signal, Ordering::Relaxed);
                }
            })?;
        Ok(flag)
    }
}
