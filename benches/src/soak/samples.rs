//! The parent's own descriptors and resident memory, sampled over the run, and the verdict on
//! their growth: at any subscriber count, the fewest descriptors seen in the last third of the
//! run must not exceed the fewest seen early on, resident memory must not grow by more than
//! [`RSS_GROWTH`], and once the publisher and every subscriber are gone the descriptors must be
//! back to their count before the publisher.

use std::time::Duration;

use shmcast_bench::error::{BenchError, Result, sys};

use crate::schedule::MAX_SUBS;

/// Most resident memory the publisher's process may gain from early on to the last third.
pub const RSS_GROWTH: u64 = 2 << 20;

/// Descriptor and memory samples, by part of the run.
#[derive(Debug, Default)]
pub struct Samples {
    /// Open before the publisher was bound.
    pub fds_before: usize,
    /// Open once it was bound.
    pub fds_with_publisher: usize,
    /// Open once it and every subscriber were gone.
    pub fds_at_end: Option<usize>,
    /// Fewest descriptors seen at each subscriber count while every subscriber was admitted and
    /// counted by the publisher: from 1/6 to 1/3 of the run, and in the last third.
    pub fds_early: [Option<usize>; MAX_SUBS + 1],
    /// The same in the last third.
    pub fds_late: [Option<usize>; MAX_SUBS + 1],
    /// Largest resident set from 1/6 to 1/3 of the run, bytes.
    pub rss_early: Option<u64>,
    /// Largest resident set in the last third, bytes.
    pub rss_late: Option<u64>,
    /// The latest descriptor count.
    pub fds_now: usize,
    /// The latest resident set, bytes.
    pub rss_now: u64,
}

/// Which part of the run a sample falls in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The first sixth: not sampled.
    WarmUp,
    /// To a third.
    Early,
    /// To two thirds: not sampled.
    Middle,
    /// The last third.
    Late,
}

impl Window {
    /// Which part of the run `elapsed` falls in.
    pub fn of(elapsed: Duration, total: Duration) -> Window {
        let f = elapsed.as_secs_f64() / total.as_secs_f64();
        match f {
            f if f < 1.0 / 6.0 => Window::WarmUp,
            f if f < 1.0 / 3.0 => Window::Early,
            f if f < 2.0 / 3.0 => Window::Middle,
            _ => Window::Late,
        }
    }
}

impl Samples {
    /// Counts the descriptors and resident memory now, in `window`, with `n` subscribers.
    /// `settled`, asked after counting, says whether every one of them was connected and counted
    /// by the publisher meanwhile (a departure the publisher is handling would show as fewer
    /// descriptors).
    pub fn take(&mut self, window: Window, n: usize, settled: impl FnOnce() -> bool) -> Result<()> {
        self.fds_now = fd_count()?;
        self.rss_now = shmcast_bench::sys::rss_bytes().map_err(sys("reading /proc/self/statm"))?;
        let settled = settled();
        let fewest = |slot: &mut Option<usize>, fds: usize| {
            *slot = Some(slot.map_or(fds, |f| f.min(fds)));
        };
        match window {
            Window::Early => {
                self.rss_early = self.rss_early.max(Some(self.rss_now));
                if settled && n <= MAX_SUBS {
                    fewest(&mut self.fds_early[n], self.fds_now);
                }
            }
            Window::Late => {
                self.rss_late = self.rss_late.max(Some(self.rss_now));
                if settled && n <= MAX_SUBS {
                    fewest(&mut self.fds_late[n], self.fds_now);
                }
            }
            Window::WarmUp | Window::Middle => {}
        }
        Ok(())
    }

    /// Counts the descriptors once the publisher and every subscriber are gone, and checks
    /// that nothing grew.
    pub fn check_at_end(&mut self) -> Result<()> {
        let fds = fd_count()?;
        self.fds_at_end = Some(fds);
        if fds != self.fds_before {
            return Err(BenchError::Check(format!(
                "{} descriptors open after the publisher and every subscriber are gone, {} \
                 before the publisher",
                fds, self.fds_before
            )));
        }
        for n in 0..=MAX_SUBS {
            if let (Some(early), Some(late)) = (self.fds_early[n], self.fds_late[n])
                && late > early
            {
                return Err(BenchError::Check(format!(
                    "descriptors grow: with {n} subscribers at least {late} were open in the last \
                     third of the run, {early} early on"
                )));
            }
        }
        if let (Some(early), Some(late)) = (self.rss_early, self.rss_late)
            && late > early + RSS_GROWTH
        {
            return Err(BenchError::Check(format!(
                "resident memory grows: {} in the last third of the run, {} early on (at most {} \
                 more allowed)",
                mib(late),
                mib(early),
                mib(RSS_GROWTH)
            )));
        }
        Ok(())
    }
}

/// This process's open descriptors.
pub fn fd_count() -> Result<usize> {
    shmcast_bench::sys::fd_count().map_err(sys("counting open descriptors"))
}

/// `bytes` in MiB, for messages.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}
