//! Adaptive spinning: how long a waiter polls before it announces a wait and sleeps — a
//! publisher that found the ring full polling for space, a subscriber blocked in a receive
//! that found nothing polling for a message.
//!
//! A sleep costs a syscall on each side (the doorbell or `FUTEX_WAKE` that ends it, the sleep
//! itself) and a cross-CPU wake of 20–30 µs on the virtual machines we measure on; a gating
//! subscriber that is about to release usually frees space within a few microseconds, and a
//! publisher that is about to commit fills an empty ring as soon. So the waiter first polls for
//! a while, and learns how long to: it starts with the whole limit; a spin that ended with what
//! it waited for moves the budget towards twice what it took; one that ended without it halves
//! the budget, down to none.
//!
//! # Overload and failure
//!
//! * A stopped or dead subscriber makes every spin fail, and the budget falls to zero within a
//!   few waits: no busy core while nothing can progress. With no budget, one wait in
//!   [`PROBE_EVERY`] spins for the whole limit to notice that the subscribers are back (a wait
//!   for a stopped subscriber lasts until the stall bound, so this costs nothing measurable).
//! * More runnable threads than cores (more spinners than free cores, or the thread that would
//!   end the wait preempted by the spinner) make spins fail, which shrinks the budget the same
//!   way. A spin that lost its CPU meanwhile (two clock reads more than [`PREEMPTED`] apart) is
//!   a failure whatever it found: on a machine with no free core, spinning only takes the CPU
//!   from the thread it waits for.
//! * On a machine with one CPU the releasing subscriber cannot run while the publisher spins:
//!   it never spins there.
//! * A spin never exceeds the publisher's limit ([`MAX_SPIN`] unless set, 10 ms at most), so a
//!   deadline or the stall bound is late by at most that.

use std::time::{Duration, Instant};

/// The longest spin by default: a few cross-CPU wakes.
pub(crate) const MAX_SPIN: Duration = Duration::from_micros(50);
/// The smallest budget: below it, the budget is none.
pub(crate) const MIN_SPIN: Duration = Duration::from_micros(2);
/// With no budget left, every this many waits spin for the whole limit anyway.
pub(crate) const PROBE_EVERY: u32 = 32;
/// Polls between two clock reads (a clock read costs about as much as a few polls).
const POLLS_PER_CLOCK: u32 = 8;
/// A gap between two clock reads of one spin longer than this means the spinner lost its CPU:
/// [`POLLS_PER_CLOCK`] polls take well under a microsecond, a scheduler's time slice
/// milliseconds.
pub(crate) const PREEMPTED: Duration = Duration::from_micros(20);

/// The learned budget of one waiter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spin {
    /// Current budget; zero: sleep at once (but see `since_probe`).
    budget: Duration,
    /// Waits since the budget fell to zero, to probe every [`PROBE_EVERY`].
    since_probe: u32,
    /// Whether spinning can help at all (more than one CPU, a limit above zero).
    useful: bool,
    /// The longest spin.
    limit: Duration,
    /// The smallest budget: [`MIN_SPIN`], or `limit` if lower.
    floor: Duration,
}

impl Spin {
    /// A fresh budget of spins up to `limit`: the whole limit where another CPU can release
    /// meanwhile, none otherwise.
    pub(crate) fn new(limit: Duration) -> Spin {
        let limit = limit.min(Duration::from_millis(10));
        let useful =
            !limit.is_zero() && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        let floor = MIN_SPIN.min(limit);
        Spin {
            budget: if useful { limit } else { Duration::ZERO },
            since_probe: 0,
            useful,
            limit,
            floor,
        }
    }

    /// Polls `ready` until it holds or the budget is spent; returns whether it held. Adapts the
    /// budget to the outcome.
    pub(crate) fn spin(&mut self, mut ready: impl FnMut() -> bool) -> bool {
        if !self.useful {
            return false;
        }
        let budget = if self.budget.is_zero() {
            self.since_probe += 1;
            if self.since_probe < PROBE_EVERY {
                return false;
            }
            self.since_probe = 0;
            self.limit
        } else {
            self.budget
        };
        let start = Instant::now();
        let mut last = start;
        let mut preempted = false;
        let mut polls = 0u32;
        loop {
            if ready() {
                // Not the gap since the last clock read: `ready` may have done the work it
                // waited for (a subscriber's copy of a large message).
                if preempted {
                    self.shrink();
                } else {
                    // Towards twice what it took, smoothed so one lucky spin does not set it.
                    let took = start.elapsed();
                    self.budget = ((self.budget + took * 2) / 2).clamp(self.floor, self.limit);
                }
                return true;
            }
            polls += 1;
            if polls % POLLS_PER_CLOCK == 0 {
                let now = Instant::now();
                preempted |= now - last > PREEMPTED;
                last = now;
                if now - start >= budget {
                    self.shrink();
                    return false;
                }
            }
            std::hint::spin_loop();
        }
    }

    /// Halves the budget after a failed spin, to none below the floor.
    fn shrink(&mut self) {
        self.budget /= 2;
        if self.budget < self.floor {
            self.budget = Duration::ZERO;
        }
    }

    /// The current budget.
    #[cfg(test)]
    pub(crate) fn budget(&self) -> Duration {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn multi_cpu() -> bool {
        std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
    }

    #[test]
    fn failures_halve_the_budget_to_nothing_and_probes_resume() {
        if !multi_cpu() {
            return;
        }
        let mut spin = Spin::new(MAX_SPIN);
        assert!(spin.spin(|| true), "ready at once");
        assert!(spin.budget() >= MIN_SPIN);
        let mut failures = 0;
        while !spin.budget().is_zero() {
            assert!(!spin.spin(|| false));
            failures += 1;
            assert!(failures < 20, "the budget halves on each failure");
        }
        // With no budget: no polling at all until the probe.
        let mut polled = 0;
        for _ in 0..PROBE_EVERY - 1 {
            assert!(!spin.spin(|| {
                polled += 1;
                false
            }));
        }
        assert_eq!(polled, 0, "a zero budget sleeps at once");
        assert!(spin.spin(|| true), "the probe polls");
        assert_eq!(spin.budget(), MIN_SPIN);
    }

    #[test]
    fn a_zero_limit_never_polls() {
        let mut spin = Spin::new(Duration::ZERO);
        for _ in 0..PROBE_EVERY * 2 {
            assert!(!spin.spin(|| panic!("polled")));
        }
    }

    #[test]
    fn the_budget_stays_within_its_bounds() {
        if !multi_cpu() {
            return;
        }
        let mut spin = Spin::new(MAX_SPIN);
        for _ in 0..10 {
            // Ready only after the budget: each spin fails or barely succeeds.
            let start = Instant::now();
            spin.spin(|| start.elapsed() >= MAX_SPIN * 4);
            assert!(spin.budget() <= MAX_SPIN);
        }
        assert!(!spin.spin(|| false));
        assert!(spin.budget() <= MAX_SPIN / 2);
    }
}
