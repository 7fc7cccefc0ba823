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
//! * Spinning is only sane with fewer spinning threads than free cores. Before it spins, a
//!   waiter looks how many threads the machine runs or could run (`/proc/loadavg`, at most once
//!   per [`LOAD_CHECK_EVERY`]); with more than its CPUs, itself included, it sleeps at once,
//!   budget untouched: a busy machine gives the CPU a spinner holds to a thread that needs it,
//!   likely the one it waits for. The count is the whole machine's, so a process confined to
//!   some of its CPUs spins less than it could, never more.
//! * On a machine with one CPU the thread that ends the wait cannot run while the waiter spins:
//!   it never spins there.
//! * A spin never exceeds the waiter's limit ([`MAX_SPIN`] unless set, [`CAP`] at most), so a
//!   deadline or the stall bound is late by at most that.

use std::time::{Duration, Instant};

use crate::sys;

/// The longest spin by default: a few cross-CPU wakes.
pub(crate) const MAX_SPIN: Duration = Duration::from_micros(50);
/// The longest limit: a longer one counts as this.
pub(crate) const CAP: Duration = Duration::from_millis(10);
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

/// How long a look at the machine's runnable threads holds.
pub(crate) const LOAD_CHECK_EVERY: Duration = Duration::from_millis(1);

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
    /// CPUs this process may run on.
    cpus: u32,
    /// When the machine's runnable threads were last counted, and whether there were no more
    /// than `cpus`.
    load_checked: Option<(Instant, bool)>,
    /// The clock (`Instant::now` but in tests).
    clock: fn() -> Instant,
    /// Threads running or runnable on the machine, this one included (`None`: unknown).
    runnable: fn() -> Option<u32>,
}

impl Spin {
    /// A fresh budget of spins up to `limit`: the whole limit where another CPU can release
    /// meanwhile, none otherwise.
    pub(crate) fn new(limit: Duration) -> Spin {
        Spin::with_probes(limit, Instant::now, sys::process::runnable_threads)
    }

    /// [`new`](Self::new), reading time from `clock` and the machine's runnable threads from
    /// `runnable`.
    pub(crate) fn with_probes(
        limit: Duration,
        clock: fn() -> Instant,
        runnable: fn() -> Option<u32>,
    ) -> Spin {
        let limit = limit.min(CAP);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let useful = !limit.is_zero() && cpus > 1;
        let floor = MIN_SPIN.min(limit);
        Spin {
            budget: if useful { limit } else { Duration::ZERO },
            since_probe: 0,
            useful,
            limit,
            floor,
            cpus,
            load_checked: None,
            clock,
            runnable,
        }
    }

    /// Whether a core is free for a spinner: no more runnable threads on the machine than this
    /// process's CPUs, the caller included. Counted at most once per [`LOAD_CHECK_EVERY`].
    fn core_free(&mut self, now: Instant) -> bool {
        match self.load_checked {
            Some((at, free)) if now.saturating_duration_since(at) < LOAD_CHECK_EVERY => free,
            _ => {
                let free = (self.runnable)().is_none_or(|n| n <= self.cpus);
                self.load_checked = Some((now, free));
                free
            }
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
        let start = (self.clock)();
        if !self.core_free(start) {
            return false;
        }
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
                    let took = (self.clock)() - start;
                    self.budget = ((self.budget + took * 2) / 2).clamp(self.floor, self.limit);
                }
                return true;
            }
            polls += 1;
            if polls % POLLS_PER_CLOCK == 0 {
                let now = (self.clock)();
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

    /// A machine where only the caller runs.
    fn idle() -> Option<u32> {
        Some(1)
    }

    std::thread_local! {
        static LOOKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }

    /// A machine with more runnable threads than any CPU count; counts the looks.
    fn busy() -> Option<u32> {
        LOOKS.with(|l| l.set(l.get() + 1));
        Some(u32::MAX)
    }

    #[test]
    fn a_busy_machine_sleeps_at_once_and_is_looked_at_once_per_period() {
        let mut spin = Spin::with_probes(MAX_SPIN, fake_now, busy);
        let before = spin.budget();
        for _ in 0..PROBE_EVERY * 2 {
            assert!(!spin.spin(|| panic!("polled on a busy machine")));
        }
        assert_eq!(spin.budget(), before, "the budget is not what failed");
        assert_eq!(
            LOOKS.with(|l| l.get()),
            u32::from(multi_cpu()),
            "one look per period"
        );
        advance(LOAD_CHECK_EVERY);
        assert!(!spin.spin(|| panic!("polled on a busy machine")));
        assert_eq!(
            LOOKS.with(|l| l.get()),
            2 * u32::from(multi_cpu()),
            "looked again"
        );
    }

    #[test]
    fn failures_halve_the_budget_to_nothing_and_probes_resume() {
        if !multi_cpu() {
            return;
        }
        let mut spin = Spin::with_probes(MAX_SPIN, Instant::now, idle);
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

    std::thread_local! {
        /// A test clock: the first call's instant plus what the test advanced it by.
        static FAKE: std::cell::Cell<(Option<Instant>, Duration)> =
            const { std::cell::Cell::new((None, Duration::ZERO)) };
    }

    fn fake_now() -> Instant {
        FAKE.with(|f| {
            let (base, offset) = f.get();
            let base = base.unwrap_or_else(Instant::now);
            f.set((Some(base), offset));
            base + offset
        })
    }

    fn advance(by: Duration) {
        FAKE.with(|f| {
            let (base, offset) = f.get();
            f.set((base, offset + by));
        });
    }

    #[test]
    fn a_spin_that_lost_its_cpu_shrinks_the_budget_even_when_it_succeeds() {
        if !multi_cpu() {
            return;
        }
        let run = |gap: Duration| {
            let mut spin = Spin::with_probes(MAX_SPIN, fake_now, idle);
            let mut polls = 0;
            // Ready at the 9th poll, within the budget; between the first clock reads, `gap`.
            let found = spin.spin(|| {
                polls += 1;
                advance(if polls == 1 {
                    gap
                } else {
                    Duration::from_nanos(50)
                });
                polls == POLLS_PER_CLOCK + 1
            });
            assert!(found);
            spin.budget()
        };
        assert_eq!(run(PREEMPTED * 2), MAX_SPIN / 2, "preempted: halved");
        // 9 polls of 50 ns: towards twice that.
        let took = Duration::from_nanos(450);
        assert_eq!(
            run(Duration::from_nanos(50)),
            (MAX_SPIN + took * 2) / 2,
            "on its CPU: towards twice what it took"
        );
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
        let mut spin = Spin::with_probes(MAX_SPIN, Instant::now, idle);
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
