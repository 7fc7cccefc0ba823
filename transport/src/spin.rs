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
//!   a failure whatever it found: on a machine with no free core, spinning continuously only
//!   takes the CPU from the thread it waits for.
//! * Spinning continuously is only sane with fewer spinning threads than free cores. Before it
//!   spins, a waiter looks how many threads the machine runs or could run (`/proc/loadavg`, at
//!   most once per [`LOAD_CHECK_EVERY`]). With more than its CPUs, itself included, it polls
//!   between yields instead (`sched_yield`): every thread its CPU could run, likely the one it
//!   waits for or a third one that shares the core with both, runs before its next poll, and
//!   the spin learns from what it found as a continuous one does (losing the CPU is what a
//!   yield is for, so that is no failure there). Both counts are the whole machine's: a
//!   process confined to one CPU (pinned, as latency-bound programs often are) still polls,
//!   since the thread that ends its wait may run on another; one that shares its CPU with that
//!   thread loses its spins to preemption, and its budget falls to none as on a busy machine.
//!   On a 2-core machine running three threads of one stream, or a stream beside a busy loop,
//!   sleeping at once there cost a wake per message where a yield found the message a moment
//!   later ("With no free core, a waiter polls between yields" in `docs/performance.md`).
//! * On a machine with one CPU the thread that ends the wait cannot run while the waiter spins:
//!   it never spins there.
//! * A spin never exceeds the waiter's limit ([`MAX_SPIN`] unless set, [`CAP`] at most), so a
//!   deadline or the stall bound is late by at most that.
//!
//! # Patient waits
//!
//! A subscriber that sleeps while the publisher fills a large ring costs the publisher one wake
//! and gains a batch. Through a small ring the same sleep stops the publisher: the ring fills
//! before the sleeper is awake, the publisher sleeps for space, and the two then sleep and wake
//! each other by turns, a ringful per round trip of two cross-CPU wakes. A subscriber that
//! finds its ring nearly full after a sleep ([`PATIENT_AFTER`]) therefore becomes
//! *patient* ([`Spin::after_sleep`]) until a sleep leaves it less than an eighth full
//! ([`HASTY_AFTER`]):
//!
//! * its smallest budget is [`PATIENT_MIN_SPIN`], half the default limit, not [`MIN_SPIN`]:
//!   with a floor of a few microseconds the budget of such a pair falls to none whenever one
//!   wait takes a little longer, and the sleeping by turns resumes;
//! * it polls about once per [`POLL_GAP`] ([`Spin::spaced`]), not continuously: a subscriber
//!   close behind the publisher would otherwise take the cache line the publisher commits into
//!   at every poll, holding both to one message per round trip of that line. A spin that ends
//!   with a message ends up to one gap later than its poll could have.
//!
//! Measured with 64-byte messages through a 2 KiB ring: 1.4 million messages a second with
//! continuous polls and a 2 µs floor, 2.1 with a 16 µs floor, 3.9–4.8 with a 25 µs floor and
//! polls a microsecond apart (0.02 wake syscalls per message against 0.001). Through a 1 MiB
//! ring a subscriber stays hasty: there, spinning close behind the publisher halved its rate.
//! The publisher's wait for space polls continuously with the ordinary floor, and an explicit
//! busy spin (`SubscriberBuilder::spin`) polls continuously, for the lowest latency.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::sys;

/// The longest spin by default: a few cross-CPU wakes.
pub(crate) const MAX_SPIN: Duration = Duration::from_micros(50);
/// The longest limit: a longer one counts as this.
pub(crate) const CAP: Duration = Duration::from_millis(10);
/// The smallest budget: below it, the budget is none.
pub(crate) const MIN_SPIN: Duration = Duration::from_micros(2);
/// The smallest budget of a patient waiter ([`Spin::after_sleep`]): half the default limit.
pub(crate) const PATIENT_MIN_SPIN: Duration = Duration::from_micros(25);
/// With no budget left, every this many waits spin for the whole limit anyway.
pub(crate) const PROBE_EVERY: u32 = 32;
/// Continuous polls between two clock reads (a clock read costs about as much as a few polls).
const POLLS_PER_CLOCK: u32 = 8;
/// About how far apart a patient [`Spin::spaced`] spin polls.
pub(crate) const POLL_GAP: Duration = Duration::from_micros(1);
/// The most pause instructions between two spaced polls, whatever the calibration says.
const MAX_PAUSES: u32 = 4096;
/// A subscriber that finds at least this much of its ring (in 1/256ths, seven eighths) waiting
/// after a sleep becomes patient: the publisher most likely found it full.
const PATIENT_AFTER: u32 = 224;
/// A patient subscriber that finds less than this much of its ring (in 1/256ths) waiting after
/// a sleep stops being patient.
const HASTY_AFTER: u32 = 32;
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
    /// CPUs of the machine ([`machine_cpus`]).
    cpus: u32,
    /// When the machine's runnable threads were last counted, and whether there were no more
    /// than `cpus`.
    load_checked: Option<(Instant, bool)>,
    /// The clock (`Instant::now` but in tests).
    clock: fn() -> Instant,
    /// Threads running or runnable on the machine, this one included (`None`: unknown).
    runnable: fn() -> Option<u32>,
    /// Gives this thread's CPU to any other thread that can run there (`sched_yield` but in
    /// tests).
    yield_cpu: fn(),
    /// Whether a patient spin spaces its polls.
    spaced: bool,
    /// Whether this waiter is patient ([`set_patient`](Self::set_patient)).
    patient: bool,
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
        let cpus = machine_cpus();
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
            yield_cpu: std::thread::yield_now,
            spaced: false,
            patient: false,
        }
    }

    /// This spin, polling about once per [`POLL_GAP`] instead of continuously while it is
    /// patient (see "Patient waits" above).
    pub(crate) fn spaced(self) -> Spin {
        Spin {
            spaced: true,
            ..self
        }
    }

    /// Takes what a woken sleep left waiting, in 1/256ths of the ring
    /// (`Reader::backlog_256ths`): a nearly full ring makes this waiter patient, a nearly
    /// empty one ends that (see "Patient waits" above).
    pub(crate) fn after_sleep(&mut self, backlog_256ths: u32) {
        if backlog_256ths >= PATIENT_AFTER {
            self.set_patient(true);
        } else if backlog_256ths < HASTY_AFTER {
            self.set_patient(false);
        }
    }

    /// Whether this waiter is patient ([`after_sleep`](Self::after_sleep)).
    pub(crate) fn is_patient(&self) -> bool {
        self.patient
    }

    /// Makes this waiter patient, or not. Becoming patient gives a waiter whose budget fell
    /// below the patient floor that floor again.
    fn set_patient(&mut self, patient: bool) {
        if patient == self.patient {
            return;
        }
        self.patient = patient;
        let floor = if patient { PATIENT_MIN_SPIN } else { MIN_SPIN };
        self.floor = floor.min(self.limit);
        if patient && self.useful {
            self.budget = self.budget.max(self.floor);
        }
    }

    /// Pause instructions between two polls: about [`POLL_GAP`]'s worth for a patient spaced
    /// spin, else 1.
    fn pauses(&self) -> u32 {
        if self.patient && self.spaced {
            pauses_per_gap()
        } else {
            1
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
    pub(crate) fn spin(&mut self, ready: impl FnMut() -> bool) -> bool {
        self.spin_as(ready, true)
    }

    /// [`spin`](Self::spin), polling between yields where no core is free only if `yields`; a
    /// waiter on an async runtime's thread passes `false`: yields would hold the runtime's other
    /// tasks back, so where no core is free it does not poll at all (budget untouched).
    pub(crate) fn spin_as(&mut self, mut ready: impl FnMut() -> bool, yields: bool) -> bool {
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
            return yields && self.yielding(budget, start, ready);
        }
        let mut last = start;
        let mut preempted = false;
        let mut polls = 0u32;
        let pauses = self.pauses();
        let polls_per_clock = (POLLS_PER_CLOCK / pauses).max(1);
        loop {
            if ready() {
                // Not the gap since the last clock read: `ready` may have done the work it
                // waited for (a subscriber's copy of a large message).
                if preempted {
                    self.shrink();
                } else {
                    self.learn((self.clock)() - start);
                }
                return true;
            }
            polls += 1;
            if polls % polls_per_clock == 0 {
                let now = (self.clock)();
                preempted |= now - last > PREEMPTED;
                last = now;
                if now - start >= budget {
                    self.shrink();
                    return false;
                }
            }
            for _ in 0..pauses {
                std::hint::spin_loop();
            }
        }
    }

    /// The spin of a waiter with no free core: polls `ready` with a `sched_yield` between two
    /// polls, so that every thread this CPU could run (the one it waits for, if it is queued
    /// here) runs first. Learns like a continuous spin, except that losing the CPU is what a
    /// yield is for, not a failure.
    fn yielding(
        &mut self,
        budget: Duration,
        start: Instant,
        mut ready: impl FnMut() -> bool,
    ) -> bool {
        loop {
            if ready() {
                self.learn((self.clock)() - start);
                return true;
            }
            if (self.clock)() - start >= budget {
                self.shrink();
                return false;
            }
            (self.yield_cpu)();
        }
    }

    /// Moves the budget towards twice what a spin that found what it waited for took,
    /// smoothed so one lucky spin does not set it.
    fn learn(&mut self, took: Duration) {
        self.budget = ((self.budget + took * 2) / 2).clamp(self.floor, self.limit);
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

    /// This spin, yielding its CPU with `yield_cpu` on a busy machine.
    #[cfg(test)]
    fn yield_with(self, yield_cpu: fn()) -> Spin {
        Spin { yield_cpu, ..self }
    }
}

/// The CPUs the machine has online, whatever this process's affinity: a waiter confined to one
/// CPU still gains by polling while the thread that ends its wait runs on another (a publisher
/// and a subscriber each pinned to a core of their own). One that shares its only CPU with that
/// thread loses its spins to preemption, which takes its budget to none as on a busy machine.
fn machine_cpus() -> u32 {
    sys::process::online_cpus()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

/// The pause instructions ([`std::hint::spin_loop`]) that take about [`POLL_GAP`] on this
/// CPU, measured once per process (the fastest of a few short runs, so that a run that lost
/// its CPU does not count; a few microseconds in all).
fn pauses_per_gap() -> u32 {
    static PAUSES: OnceLock<u32> = OnceLock::new();
    *PAUSES.get_or_init(|| {
        const RUN: u32 = 256;
        let fastest = (0..5)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..RUN {
                    std::hint::spin_loop();
                }
                start.elapsed()
            })
            .min()
            .unwrap_or(Duration::ZERO);
        let pauses = POLL_GAP.as_nanos() * u128::from(RUN) / fastest.as_nanos().max(1);
        u32::try_from(pauses)
            .unwrap_or(MAX_PAUSES)
            .clamp(1, MAX_PAUSES)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn multi_cpu() -> bool {
        machine_cpus() > 1
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

    std::thread_local! {
        static YIELDS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }

    /// A yield after which other threads ran for 5 µs.
    fn fake_yield() {
        YIELDS.with(|y| y.set(y.get() + 1));
        advance(Duration::from_micros(5));
    }

    /// With no free core a waiter polls between yields, learns from what it found like a
    /// continuous spin (a yield that gave its CPU away is no failure), falls to no budget when
    /// nothing comes, and counts the machine's threads once per period.
    #[test]
    fn a_busy_machine_polls_between_yields_and_is_looked_at_once_per_period() {
        if !multi_cpu() {
            return;
        }
        let mut spin = Spin::with_probes(MAX_SPIN, fake_now, busy).yield_with(fake_yield);
        let mut polls = 0;
        assert!(spin.spin(|| {
            polls += 1;
            polls == 4
        }));
        assert_eq!(YIELDS.with(|y| y.get()), 3, "a yield between two polls");
        let took = Duration::from_micros(15);
        assert_eq!(
            spin.budget(),
            (MAX_SPIN + took * 2) / 2,
            "learned, not shrunk"
        );
        for _ in 0..10 {
            assert!(spin.spin(|| true));
        }
        assert_eq!(LOOKS.with(|l| l.get()), 1, "one look per period");
        advance(LOAD_CHECK_EVERY);
        assert!(spin.spin(|| true));
        assert_eq!(LOOKS.with(|l| l.get()), 2, "looked again");
        // A peer that never comes: each spin ends at its budget, which halves to none.
        let mut failures = 0;
        while !spin.budget().is_zero() {
            let before = YIELDS.with(|y| y.get());
            assert!(!spin.spin(|| false));
            let yields = YIELDS.with(|y| y.get()) - before;
            assert!(yields >= 1, "every failed poll yields");
            failures += 1;
            assert!(failures < 20, "the budget halves on each failure");
        }
        let before = YIELDS.with(|y| y.get());
        for _ in 0..PROBE_EVERY - 1 {
            assert!(!spin.spin(|| panic!("polled with no budget")));
        }
        assert_eq!(
            YIELDS.with(|y| y.get()),
            before,
            "no budget: no yields either"
        );
    }

    /// A waiter on an async runtime's thread never polls between yields: on a busy machine it
    /// sleeps at once, budget untouched; with a free core it polls as any other.
    #[test]
    fn a_waiter_in_a_reactor_does_not_poll_on_a_busy_machine() {
        let mut spin = Spin::with_probes(MAX_SPIN, fake_now, busy).yield_with(fake_yield);
        let before = spin.budget();
        for _ in 0..PROBE_EVERY * 2 {
            assert!(!spin.spin_as(|| panic!("polled on a busy machine"), false));
        }
        assert_eq!(spin.budget(), before, "the budget is not what failed");
        assert_eq!(YIELDS.with(|y| y.get()), 0, "no yields");
        if multi_cpu() {
            let mut free = Spin::with_probes(MAX_SPIN, Instant::now, idle);
            assert!(free.spin_as(|| true, false), "a free core: polls");
        }
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

    /// A patient spaced spin polls about once per gap: tens of times in a failed spin of 50 µs,
    /// where continuous polling looks thousands of times (an upper bound only: a loaded
    /// machine polls less); its floor is the patient one, and it resumes polling at once. A
    /// hasty one has the ordinary floor and polls continuously.
    #[test]
    fn a_patient_spin_has_a_higher_floor_and_spaced_polls() {
        if !multi_cpu() {
            return;
        }
        let mut spin = Spin::with_probes(MAX_SPIN, Instant::now, idle).spaced();
        assert_eq!((spin.pauses(), spin.floor), (1, MIN_SPIN), "hasty at first");
        while !spin.budget().is_zero() {
            assert!(!spin.spin(|| false));
        }
        spin.after_sleep(PATIENT_AFTER);
        assert_eq!(spin.budget(), PATIENT_MIN_SPIN, "polling again at once");
        spin.budget = MAX_SPIN;
        let mut polls = 0u32;
        assert!(!spin.spin(|| {
            polls += 1;
            false
        }));
        let gaps = (MAX_SPIN.as_nanos() / POLL_GAP.as_nanos()) as u32;
        assert!(
            (1..=gaps * 10).contains(&polls),
            "{polls} polls in {MAX_SPIN:?}"
        );
        assert_eq!(
            spin.budget(),
            PATIENT_MIN_SPIN,
            "halved to the patient floor"
        );
        assert!(!spin.spin(|| false));
        assert!(spin.budget().is_zero(), "below the patient floor: none");
        spin.after_sleep(HASTY_AFTER);
        assert_eq!(spin.floor, PATIENT_MIN_SPIN, "between the two: unchanged");
        spin.after_sleep(HASTY_AFTER - 1);
        assert_eq!((spin.pauses(), spin.floor), (1, MIN_SPIN));
        // Unspaced: patient means the higher floor only.
        let mut plain = Spin::with_probes(MAX_SPIN, Instant::now, idle);
        plain.after_sleep(256);
        assert_eq!((plain.pauses(), plain.floor), (1, PATIENT_MIN_SPIN));
    }

    /// A thread pinned to one CPU of a machine with more still polls: the thread that ends its
    /// wait may run on another CPU (it did not poll at all when the count was its affinity's).
    #[test]
    fn a_waiter_pinned_to_one_cpu_of_several_polls() {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
        if !multi_cpu() {
            return;
        }
        let before = sched_getaffinity(None).unwrap();
        let first = (0..CpuSet::MAX_CPU).find(|&c| before.is_set(c)).unwrap();
        let mut one = CpuSet::new();
        one.set(first);
        sched_setaffinity(None, &one).unwrap();
        let mut spin = Spin::with_probes(MAX_SPIN, Instant::now, idle);
        let budget = spin.budget();
        let polled = spin.spin(|| true);
        sched_setaffinity(None, &before).unwrap();
        assert_eq!(budget, MAX_SPIN);
        assert!(polled, "a pinned waiter did not poll");
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
