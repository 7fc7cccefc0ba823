//! What the models share: loom's bounds for each shape, and the wake word's sleep.
// Each model file uses part of this module.
#![allow(dead_code)]

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::{Condvar, Mutex};

/// Preemptions per execution for models of three threads. Their state space grows about
/// tenfold with each further preemption (the two-reader models took minutes each at 2); one
/// preemption still finds every broken ordering the models were shown to catch
/// (`docs/architecture.md`, "Loom models"). `SHMCAST_LOOM_DEEP=1` runs them at loom's own bound
/// (`LOOM_MAX_PREEMPTIONS`) instead.
const THREE_THREAD_PREEMPTIONS: usize = 1;

/// Runs `f` as a loom model of three threads.
pub fn three_threads(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("SHMCAST_LOOM_DEEP").is_none() {
        builder.preemption_bound = Some(
            builder
                .preemption_bound
                .map_or(THREE_THREAD_PREEMPTIONS, |b| {
                    b.min(THREE_THREAD_PREEMPTIONS)
                }),
        );
    }
    builder.check(f);
}

/// A sleep on the ring's wake word, as the transport's futex provides it and as far as the
/// protocol relies on it: `wait` sleeps only if the word still holds the expected value, checked
/// atomically with respect to `wake_all`.
pub struct WordSleep {
    lock: Mutex<()>,
    cv: Condvar,
}

impl WordSleep {
    /// Nobody asleep.
    pub fn new() -> Self {
        WordSleep {
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Sleeps until `wake_all` if `word` still holds `expected`.
    pub fn wait(&self, word: &AtomicU32, expected: u32) {
        let guard = self.lock.lock().unwrap();
        if word.load(Ordering::Relaxed) == expected {
            drop(self.cv.wait(guard).unwrap());
        }
    }

    /// Wakes every sleeper.
    pub fn wake_all(&self) {
        let _guard = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}
