//! A watchdog for tests that run in this process only: it aborts the whole test binary, with
//! the test's name, when the test it guards hangs. (Waits on child processes are bounded by
//! [`super::child::WATCHDOG`] instead, and fail only their own test.)
//!
//! Only a hang reaches the bound; it is no measure of speed.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// Aborts the process if it is still alive `bound` after it was started; dropping it (at the
/// end of the test, or while a failing test unwinds) disarms it.
pub struct Watchdog {
    done: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Arms a watchdog for the test `name`.
    pub fn start(name: &str, bound: Duration) -> Watchdog {
        let (done, wait) = mpsc::channel::<()>();
        let name = name.to_owned();
        let thread = std::thread::spawn(move || {
            // A hung test cannot be unwound from another thread: abort, saying which one hung.
            if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(bound) {
                eprintln!("watchdog: `{name}` still running after {bound:?}: aborting");
                std::process::abort();
            }
        });
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
