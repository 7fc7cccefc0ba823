//! What every transport integration test shares: the descriptor-leak guard, child processes in
//! roles, deterministic messages, and the roles more than one test binary starts.
// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod child;
pub mod fds;
pub mod message;
pub mod rng;
pub mod roles;

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
