//! The descriptor-leak guard every transport integration test holds.
//!
//! Open descriptors are counted per process, and the tests of one binary run on parallel
//! threads, so the guard also serializes the tests that hold it: while one test holds a guard,
//! no other guarded test runs, and every change in the open descriptors is that test's own.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long descriptors may take to close after the test let go of what held them: the
/// publisher's control thread closes a departed subscriber's descriptors when it sees the
/// hang-up, not when the test kills the subscriber.
const SETTLE: Duration = Duration::from_secs(2);

/// Held by the guard of the running test.
static SERIAL: Mutex<()> = Mutex::new(());

/// The descriptors open at one moment, by number, with what each refers to (the target of
/// `/proc/self/fd/N`: `socket:[…]`, `anon_inode:[eventfd]`, `/memfd:… (deleted)`, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenFds(BTreeMap<i32, String>);

impl OpenFds {
    fn now() -> OpenFds {
        let numbers: Vec<i32> = std::fs::read_dir("/proc/self/fd")
            .expect("list /proc/self/fd")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        // The listing's own descriptor is closed by now, so its link no longer resolves.
        OpenFds(
            numbers
                .into_iter()
                .filter_map(|fd| {
                    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
                    Some((fd, target.to_string_lossy().into_owned()))
                })
                .collect(),
        )
    }

    /// Number of open descriptors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Lists the entries of `self` that `other` does not have.
    fn minus(&self, other: &OpenFds) -> String {
        let mut out = String::new();
        for (fd, target) in &self.0 {
            if other.0.get(fd) != Some(target) {
                let _ = write!(out, "\n    {fd} -> {target}");
            }
        }
        if out.is_empty() {
            out.push_str(" none");
        }
        out
    }
}

/// Records the open descriptors when created; [`check`](FdGuard::check) (or dropping the guard
/// outside a panic) asserts that exactly those are open again, waiting up to [`SETTLE`] for
/// asynchronous closes. Serializes the tests that hold one (see the module docs).
pub struct FdGuard {
    baseline: OpenFds,
    checked: Cell<bool>,
    _serial: MutexGuard<'static, ()>,
}

impl FdGuard {
    /// Waits for the running guarded test to finish, then records the open descriptors.
    pub fn new() -> FdGuard {
        // A test that failed while holding the guard poisons the lock; the next one still runs.
        let serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        FdGuard {
            baseline: OpenFds::now(),
            checked: Cell::new(false),
            _serial: serial,
        }
    }

    /// The descriptors open now, for a later [`expect`](FdGuard::expect).
    pub fn snapshot(&self) -> OpenFds {
        OpenFds::now()
    }

    /// Asserts that exactly the descriptors of `then` are open (same numbers, same targets, and
    /// the same count by `shmcast::test_support::open_fd_count`), retrying for up to [`SETTLE`].
    pub fn expect(&self, then: &OpenFds, when: &str) {
        let start = Instant::now();
        loop {
            let now = OpenFds::now();
            let count = shmcast::test_support::open_fd_count().expect("count open descriptors");
            if now == *then && count == then.len() {
                return;
            }
            if start.elapsed() >= SETTLE {
                panic!(
                    "descriptors {when}: {} expected, {count} open after waiting {SETTLE:?}\n  \
                     not closed:{}\n  missing:{}",
                    then.len(),
                    now.minus(then),
                    then.minus(&now),
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Asserts that the descriptors open when the guard was made, and only those, are open.
    ///
    /// Takes `&self`: a failing test keeps the guard, and so the other tests out, until its own
    /// descriptors are dropped.
    pub fn check(&self) {
        self.checked.set(true);
        self.expect(&self.baseline, "at the end of the test");
    }
}

impl Drop for FdGuard {
    fn drop(&mut self) {
        if !self.checked.get() && !std::thread::panicking() {
            self.expect(&self.baseline, "when the guard was dropped");
        }
    }
}
