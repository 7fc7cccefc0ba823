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
//!
//! A signal ignored when the command started (`nohup` ignores SIGHUP; a shell that is not
//! interactive ignores SIGINT in its `&` jobs) stays ignored: it is neither blocked nor waited
//! for, since `sigwait` would take a blocked signal even though its action is to ignore it.
//! With all three ignored, no thread is started.
//!
//! Once a signal is taken, the signal thread alone ends the process: closing the stream makes
//! the command's own work fail (a loan or a wait refused as closed), and that failure, which
//! the signal caused, must not be reported as one. The command asks [`Ending::take_over`]
//! before it ends the process itself, which never returns when a signal got there first.
#![allow(unsafe_code)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Longest wait for the publisher's writer when a signal ends the stream.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// The thread that takes the signals, as `ps -L` and debuggers show it.
const THREAD_NAME: &str = "shmcast-signals";

/// The signals, blocked in this thread and every thread it starts from now on.
pub struct Blocked {
    set: libc::sigset_t,
    /// Whether `set` holds any signal (all three may have been ignored from the start).
    any: bool,
}

/// Blocks the terminating signals that are not ignored; call before anything starts a thread.
pub fn block() -> io::Result<Blocked> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before any other use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    let mut any = false;
    for s in SIGNALS {
        if ignored(s)? {
            continue;
        }
        // SAFETY: `set` is an initialised, writable sigset_t and `s` a valid signal number.
        unsafe { libc::sigaddset(&mut set, s) };
        any = true;
    }
    // SAFETY: `set` is initialised; a null old set is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(Blocked { set, any })
}

/// Whether `signal`'s action is to ignore it (as `nohup` and shells set it for their jobs).
fn ignored(signal: libc::c_int) -> io::Result<bool> {
    // SAFETY: sigaction is plain data, fully written by the call below before it is read.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `current`, a live struct.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(current.sa_sigaction == libc::SIG_IGN)
}

/// Who ends the process: the signal thread, once it has taken a signal, or the command.
pub struct Ending {
    /// Set by whichever comes first (`None`: no signal is waited for).
    taken: Option<Arc<AtomicBool>>,
}

impl Ending {
    /// Returns when the command may end the process itself (done, or failed); never returns
    /// if a signal is ending it, since the signal thread then exits with the signal's code and
    /// its last words. A signal that comes later is ignored: the command is ending anyway.
    pub fn take_over(&self) {
        let Some(taken) = &self.taken else { return };
        // Relaxed: the flag only elects one side; nothing else is published through it.
        if taken.swap(true, Ordering::Relaxed) {
            loop {
                std::thread::park();
            }
        }
    }
}

impl Blocked {
    /// Starts the thread that, on a signal, ends `publisher`'s stream (which also removes the
    /// socket file), calls `last_words`, and exits.
    pub fn close_on_signal(
        self,
        publisher: &shmcast::Publisher,
        last_words: impl FnOnce() + Send + 'static,
    ) -> io::Result<Ending> {
        if !self.any {
            // No closer is made: dropping one unused would remove the socket file.
            return Ok(Ending { taken: None });
        }
        let closer = publisher.closer();
        let taken = Arc::new(AtomicBool::new(false));
        let ours = taken.clone();
        spawn(move || {
            let Some(signal) = self.wait() else { return };
            if ours.swap(true, Ordering::Relaxed) {
                // The command is ending the process itself.
                return;
            }
            // A loan in progress holds the writer only while one message is copied.
            closer.close(CLOSE_WAIT);
            last_words();
            std::process::exit(128 + signal);
        })?;
        Ok(Ending { taken: Some(taken) })
    }

    /// Starts the thread that, on a signal, stores it in the returned word (0 until then), for
    /// a command that ends its own work cleanly (`bridge`).
    pub fn flag_on_signal(self) -> io::Result<Arc<AtomicI32>> {
        let flag = Arc::new(AtomicI32::new(0));
        if !self.any {
            return Ok(flag);
        }
        let seen = flag.clone();
        spawn(move || {
            if let Some(signal) = self.wait() {
                seen.store(signal, Ordering::Relaxed);
            }
        })?;
        Ok(flag)
    }

    /// Waits for one of the blocked signals; `None` if the wait failed.
    fn wait(&self) -> Option<libc::c_int> {
        let mut signal: libc::c_int = 0;
        // SAFETY: `self.set` is an initialised sigset_t and `signal` a live int.
        let rc = unsafe { libc::sigwait(&self.set, &mut signal) };
        (rc == 0).then_some(signal)
    }
}

/// Starts the signal thread; an error says that it was this thread that could not start.
fn spawn(f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    match std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(f)
    {
        Ok(_) => Ok(()),
        Err(e) => Err(spawn_error(e)),
    }
}

/// `e`, the error of starting the signal thread, saying so.
fn spawn_error(e: io::Error) -> io::Error {
    let hint = if e.kind() == io::ErrorKind::WouldBlock {
        " (too many processes or threads: see ulimit -u)"
    } else {
        ""
    };
    io::Error::new(
        e.kind(),
        format!("starting the signal thread ({THREAD_NAME}): {e}{hint}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_names_the_thread() {
        let e = spawn_error(io::Error::from_raw_os_error(libc::EAGAIN));
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        let text = e.to_string();
        assert!(
            text.starts_with("starting the signal thread (shmcast-signals): ")
                && text.ends_with("(too many processes or threads: see ulimit -u)"),
            "{text}"
        );
    }
}
