//! What the transport's integration tests share, one idea per module:
//!
//! - [`fds`]: the descriptor-leak guard every test holds, which also runs them one at a time;
//! - [`child`]: child processes in roles, every wait on them bounded by a watchdog, and
//!   [`roles`]: the roles more than one test binary starts;
//! - [`attack`]: a publisher publishing to a good subscriber process while another attacks;
//! - [`watchdog`]: aborts a hung test that has no child process to bound its waits;
//! - [`message`]: deterministic messages any process can rebuild and check (test input comes
//!   from `shmcast_core::testing::Rng`, the workspace's one generator);
//! - a hostile publisher played by hand: [`memfd`] (shared memory the test writes at will),
//!   [`abi`] (where the words of the layout are), [`image`] (rings built by the real writer),
//!   [`fake_publisher`] (serving them to the real subscriber) and [`expect`] (what the
//!   subscriber must answer).
// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod abi;
pub mod attack;
pub mod child;
pub mod dying;
pub mod expect;
pub mod fake_publisher;
pub mod fds;
pub mod image;
pub mod memfd;
pub mod message;
pub mod roles;
pub mod watchdog;

pub use fds::FdGuard;

use std::time::{Duration, Instant};

/// A gating subscriber of `topic`, waiting up to 30 s for its publisher to appear (a child
/// process may start before the publisher binds).
pub fn connect(topic: &str) -> shmcast::Subscriber {
    connect_as(topic, shmcast::Mode::Gating)
}

/// [`connect`] in `mode`.
pub fn connect_as(topic: &str, mode: shmcast::Mode) -> shmcast::Subscriber {
    shmcast::Subscriber::builder(topic)
        .mode(mode)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap()
}

/// Polls `done` until it holds; panics with `what` if the [`WATCHDOG`](child::WATCHDOG)
/// expires first.
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + child::WATCHDOG;
    while !done() {
        assert!(Instant::now() < deadline, "watchdog: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// CPU time this thread has used.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `poll()` on one descriptor for input, up to `timeout`; whether it became readable.
pub fn poll_readable(fd: std::os::fd::RawFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as i32) };
        if n >= 0 {
            return n > 0;
        }
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EINTR)
        );
    }
}
