//! `wakeprobe` measures the two ways a publisher can wake N parked subscriber processes, side by
//! side in one run, and prints medians and the ratio between them.
//!
//! * **A, per-subscriber**: every subscriber blocks in `read()` on its own eventfd; the publisher
//!   writes the eventfd of each parked subscriber, N syscalls.
//! * **A', per-subscriber through epoll**: the same N writes, but every subscriber waits in
//!   `epoll_wait` on an epoll instance that holds a second eventfd of its own. It waits exactly as
//!   in B, so B against A' isolates one write against N; it is also how a hybrid would wake a
//!   few subscribers one by one.
//! * **B, shared**: one eventfd for everyone; each subscriber registers it in its own epoll
//!   instance with `EPOLLIN | EPOLLET`, never reads it, and blocks in `epoll_wait`; the publisher
//!   writes it once.
//! * **B, busy**: the same single write while every subscriber is registered but not waiting in
//!   its epoll instance. This is what the shared eventfd costs a publisher whose subscribers all
//!   keep up: the kernel still walks every registration.
//!
//! Subscribers are real processes. The binary re-executes itself as `wakeprobe subscriber ...` and
//! each child inherits exactly four descriptors: the shared page (a memfd), two eventfds of its own
//! and the shared eventfd. The four kinds of round are shuffled in blocks of four, so that the noise
//! of the machine lands on all of them alike.
//!
//! Each subscriber count runs twice, with a fresh set of subscribers: once where the scheduler
//! places every process as it likes ([`Placement::Free`]; on a small machine the woken subscriber
//! often runs on the publisher's CPU and preempts it), and once with the publisher alone on one CPU
//! and the subscribers on the others ([`Placement::Split`]; every wake crosses CPUs). Besides the
//! wall time around the write(s), the publisher records its own CPU time around them (which leaves
//! out time spent preempted), whether it was preempted, and on which CPU each subscriber woke.
//!
//! # Round protocol
//!
//! For round `r` a subscriber drains its epoll instance without blocking, stores `parked = r` in
//! its line of the shared page, then blocks as round `r`'s kind says ([`mode_of`], which both sides
//! compute). The publisher waits until every subscriber has stored `parked = r` *and* the kernel
//! reports it sleeping (`S` in `/proc/<pid>/stat`), so that every timed write really wakes a
//! sleeper. It then takes a `CLOCK_MONOTONIC` timestamp, writes, takes another, and waits for
//! every subscriber to store its own wake timestamp and `done = r`.
//!
//! # Failure
//!
//! Every wait of the publisher has a deadline. A subscriber that exits or stops responding ends
//! the probe with a message naming it and a non-zero exit status. Subscribers die with the
//! publisher (`PR_SET_PDEATHSIG`), and the publisher kills and reaps all of them on every path out.

#![deny(unsafe_code)]

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, epoll, eventfd};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use rustix::time::{ClockId, Timespec, clock_gettime};

use crate::sys::Page;

/// First argument that turns the binary into a subscriber.
const SUBSCRIBER_ARG: &str = "subscriber";

/// How long the publisher waits for one subscriber step before it gives up on the subscriber.
const STALL_DEADLINE: Duration = Duration::from_secs(5);

/// How long the publisher waits for freshly spawned subscribers to reach their first park.
const STARTUP_DEADLINE: Duration = Duration::from_secs(20);

/// How often a waiting publisher checks that the subscriber it waits for is still alive.
const LIVENESS_CHECK: Duration = Duration::from_millis(10);

/// The value every eventfd write adds. Counters are never reset on the shared eventfd, which the
/// kernel saturates only after 2^64 − 2 writes; this probe makes far fewer.
const ONE: [u8; 8] = 1u64.to_ne_bytes();

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = if args.first().map(String::as_str) == Some(SUBSCRIBER_ARG) {
        subscriber::run(&args[1..])
    } else {
        publisher::run(&args)
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("wakeprobe: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Why the probe stopped.
#[derive(Debug)]
enum ProbeError {
    /// A command-line argument was not understood.
    Usage(String),
    /// A syscall failed.
    Sys { what: &'static str, err: io::Error },
    /// A subscriber process exited while the publisher waited for it.
    Exited {
        subscriber: usize,
        pid: u32,
        round: u64,
        step: Step,
        status: ExitStatus,
    },
    /// A subscriber did not take a step before its deadline.
    Stalled {
        subscriber: usize,
        pid: u32,
        round: u64,
        step: Step,
        state: char,
        waited: Duration,
    },
    /// A subscriber reported a wake that happened before the publisher's write: it was not
    /// really asleep, so the round would measure nothing.
    EarlyWake { subscriber: usize, round: u64 },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(msg) => write!(
                f,
                "{msg}\nusage: wakeprobe [--quick] [--rounds K] [--subs N,N,...]"
            ),
            Self::Sys { what, err } => write!(f, "{what} failed: {err}"),
            Self::Exited {
                subscriber,
                pid,
                round,
                step,
                status,
            } => write!(
                f,
                "subscriber {subscriber} (pid {pid}) exited ({status}) while the publisher \
                 waited for it to {step} in round {round}"
            ),
            Self::Stalled {
                subscriber,
                pid,
                round,
                step,
                state,
                waited,
            } => write!(
                f,
                "subscriber {subscriber} (pid {pid}) did not {step} in round {round} within \
                 {waited:?} (process state {state})"
            ),
            Self::EarlyWake { subscriber, round } => write!(
                f,
                "subscriber {subscriber} woke before the publisher's write in round {round}"
            ),
        }
    }
}

impl std::error::Error for ProbeError {}

/// Wraps a failed syscall with what the probe was doing.
fn sys<E: Into<io::Error>>(what: &'static str) -> impl FnOnce(E) -> ProbeError {
    move |err| ProbeError::Sys {
        what,
        err: err.into(),
    }
}

/// A subscriber step the publisher waits for.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Store `parked = r`.
    Park,
    /// Be asleep in the kernel.
    Sleep,
    /// Store its wake timestamp and `done = r`.
    Wake,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Park => "announce parked",
            Self::Sleep => "fall asleep",
            Self::Wake => "report its wake",
        })
    }
}

/// What kind of wake a round measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A: subscribers block in `read()` on their own eventfd; the publisher writes each one.
    PerSubscriber,
    /// A': subscribers block in `epoll_wait` on an epoll instance holding a second eventfd of
    /// their own (and the shared one); the publisher writes each one. Same waiting as B, so B
    /// against A' isolates one write against N; it is also the per-subscriber path of a hybrid.
    PerSubscriberEpoll,
    /// B: subscribers block in `epoll_wait` on the shared eventfd; the publisher writes it once.
    Shared,
    /// B with nobody waiting: subscribers block in `read()` on their own eventfd while the
    /// publisher writes the shared one (timed), then releases them through their own (untimed).
    SharedBusy,
}

/// Every kind of round. The first [`WAKING`] wake parked subscribers and have latencies.
const MODES: [Mode; 4] = [
    Mode::PerSubscriber,
    Mode::PerSubscriberEpoll,
    Mode::Shared,
    Mode::SharedBusy,
];

/// How many of [`MODES`] wake parked subscribers.
const WAKING: usize = 3;

/// The kind of round `round` (from 1). Rounds come in blocks holding each kind once, in an order
/// shuffled per block from a fixed pseudo-random sequence, so both processes agree on it without
/// talking and no kind always follows another.
fn mode_of(round: u64) -> Mode {
    let index = round.saturating_sub(1);
    let block = index / MODES.len() as u64;
    let mut order = [0, 1, 2, 3];
    // Fisher–Yates, drawing from splitmix64(block).
    let mut bits = splitmix64(block);
    for i in (1..order.len()).rev() {
        let j = (bits % (i as u64 + 1)) as usize;
        bits /= i as u64 + 1;
        order.swap(i, j);
    }
    MODES[order[(index % MODES.len() as u64) as usize]]
}

/// Where the processes may run. Each subscriber count is measured under both, one fleet each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Every process on every allowed CPU, as the scheduler likes.
    Free,
    /// The publisher alone on the first allowed CPU, the subscribers on the others: a wake
    /// always crosses CPUs and subscribers never preempt the publisher.
    Split,
}

/// One step of the splitmix64 generator: a well-mixed hash of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds; the clock is the same in every process.
fn now_ns() -> u64 {
    ns(clock_gettime(ClockId::Monotonic))
}

/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` in nanoseconds: CPU time this thread has run, which
/// excludes any time it spent preempted.
fn thread_cpu_ns() -> u64 {
    ns(clock_gettime(ClockId::ThreadCPUTime))
}

fn ns(Timespec { tv_sec, tv_nsec }: Timespec) -> u64 {
    // Both clocks start at zero and never read negative.
    (tv_sec as u64) * 1_000_000_000 + tv_nsec as u64
}

/// The only code that needs `unsafe`: the shared page and descriptors crossing `exec`.
/// The bench crate's syscall helpers, shared with the comparison binary.
#[allow(dead_code)]
#[path = "../sys.rs"]
mod shared_sys;

mod sys {
    #![allow(unsafe_code)]

    use std::io;
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
    use std::ptr::NonNull;
    use std::sync::atomic::AtomicU64;

    use rustix::fs::{MemfdFlags, fstat, ftruncate, memfd_create};
    use rustix::io::{FdFlags, fcntl_setfd};
    use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};
    use rustix::process::{Signal, set_parent_process_death_signal};
    use rustix::thread::{CpuSet, sched_setaffinity};

    /// One subscriber's line of the shared page. Only that subscriber writes it; the publisher
    /// only reads it. One line per subscriber, so subscribers never share a cache line.
    ///
    /// # Layout
    ///
    /// ```text
    /// 0        8        16        24         32          128
    /// | parked | done   | woke_ns | woke_cpu | (padding) |
    /// ```
    #[repr(C, align(128))]
    pub struct Slot {
        /// Round the subscriber is parked for (about to sleep or asleep); 0 before round 1.
        pub parked: AtomicU64,
        /// Last round whose wake the subscriber has reported; 0 before round 1.
        pub done: AtomicU64,
        /// `CLOCK_MONOTONIC` nanoseconds at which the subscriber's wait for round `done` returned.
        pub woke_ns: AtomicU64,
        /// CPU the subscriber ran on right after that wait returned.
        pub woke_cpu: AtomicU64,
    }

    const _: () = assert!(size_of::<Slot>() == 128);
    const _: () = assert!(align_of::<Slot>() == 128);

    /// A shared mapping of `slots` [`Slot`]s over a memfd, in the publisher or a subscriber.
    pub struct Page {
        base: NonNull<Slot>,
        slots: usize,
    }

    impl Page {
        /// Creates the memfd for `slots` subscribers (zero-filled: every round counter at 0) and
        /// maps it.
        pub fn create(slots: usize) -> io::Result<(OwnedFd, Self)> {
            let fd = memfd_create("shmcast-wakeprobe", MemfdFlags::CLOEXEC)?;
            ftruncate(&fd, (slots * size_of::<Slot>()) as u64)?;
            let page = Self::map(&fd, slots)?;
            Ok((fd, page))
        }

        /// Maps a page made by [`Page::create`], after checking that it holds `slots` slots.
        pub fn map(fd: impl AsFd, slots: usize) -> io::Result<Self> {
            let len = slots.checked_mul(size_of::<Slot>()).filter(|&len| len > 0);
            let Some(len) = len else {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "no slots"));
            };
            if (fstat(&fd)?.st_size as u64) < len as u64 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "page smaller than its slots",
                ));
            }
            // SAFETY: a fresh shared mapping at an address the kernel picks aliases no Rust
            // object; the file is at least `len` bytes long (checked above) and nobody shrinks it,
            // so no access within `len` faults.
            let base = unsafe {
                mmap(
                    std::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED,
                    fd,
                    0,
                )?
            };
            let base =
                NonNull::new(base.cast::<Slot>()).expect("mmap never returns null on success");
            Ok(Self { base, slots })
        }

        /// Slot `index`. Panics if `index` is out of range.
        pub fn slot(&self, index: usize) -> &Slot {
            assert!(index < self.slots, "slot {index} of {}", self.slots);
            // SAFETY: `index < slots`, the mapping holds `slots` page-aligned (so 128-aligned)
            // slots for as long as `self` lives, and a `Slot` is only atomics, which other
            // processes may write concurrently.
            unsafe { &*self.base.as_ptr().add(index) }
        }
    }

    impl Drop for Page {
        fn drop(&mut self) {
            // SAFETY: `base`/`len` are exactly the mapping made in `map`, and every `&Slot`
            // borrowed from `self` has ended.
            let _ = unsafe { munmap(self.base.as_ptr().cast(), self.slots * size_of::<Slot>()) };
        }
    }

    /// Runs in the forked child between `fork` and `exec`: lets exactly `fds` survive the `exec`,
    /// asks for `SIGKILL` when the publisher dies and confines the child to `cpus`. Only raw
    /// syscalls, no allocation, so async-signal-safe.
    pub fn prepare_child(fds: &[RawFd], cpus: &CpuSet) -> io::Result<()> {
        sched_setaffinity(None, cpus)?;
        for &fd in fds {
            // SAFETY: the child is a copy of the publisher, which keeps every fd in `fds` open
            // across the spawn; the borrow ends before `exec`.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            fcntl_setfd(fd, FdFlags::empty())?;
        }
        set_parent_process_death_signal(Some(Signal::KILL))?;
        Ok(())
    }

    /// `sched_getcpu()`: the CPU the calling thread runs on (a plain load on current glibc).
    pub fn sched_getcpu() -> u64 {
        // SAFETY: no arguments, no memory touched; returns -1 only where unsupported.
        let cpu = unsafe { libc::sched_getcpu() };
        u64::try_from(cpu).unwrap_or(u64::MAX)
    }

    /// `getrusage(RUSAGE_THREAD)`: how often the calling thread has been preempted
    /// (`ru_nivcsw`).
    pub fn preemptions() -> u64 {
        // SAFETY: `rusage` is plain integers, so all-zero is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        if rc == 0 {
            u64::try_from(usage.ru_nivcsw).unwrap_or(0)
        } else {
            0
        }
    }

    /// Takes ownership of a descriptor the publisher handed down across `exec`.
    pub use super::shared_sys::adopt_inherited;
}

/// The subscriber process: parks round after round and reports when it wakes.
mod subscriber {
    use super::*;

    /// Entry point of
    /// `wakeprobe subscriber INDEX SLOTS PAGE_FD OWN_FD OWN_EPOLL_FD SHARED_FD PARENT_PID`.
    pub fn run(args: &[String]) -> Result<(), ProbeError> {
        let [
            index,
            slots,
            page_fd,
            own_fd,
            own_epoll_fd,
            shared_fd,
            parent,
        ] = args
        else {
            return Err(ProbeError::Usage(format!(
                "subscriber takes 7 arguments, got {}",
                args.len()
            )));
        };
        let index: usize = parse(index)?;
        let slots: usize = parse(slots)?;
        let parent: u32 = parse(parent)?;
        // The death signal was armed before exec; if the publisher died before that, the
        // child was re-parented and must not carry on alone.
        if std::os::unix::process::parent_id() != parent {
            return Err(ProbeError::Usage("the publisher is gone".into()));
        }
        if index >= slots {
            return Err(ProbeError::Usage(format!(
                "index {index} out of {slots} slots"
            )));
        }
        let page_fd = sys::adopt_inherited(parse(page_fd)?).map_err(sys("adopting the page"))?;
        let own = sys::adopt_inherited(parse(own_fd)?).map_err(sys("adopting the own eventfd"))?;
        let own_epoll = sys::adopt_inherited(parse(own_epoll_fd)?)
            .map_err(sys("adopting the second own eventfd"))?;
        let shared =
            sys::adopt_inherited(parse(shared_fd)?).map_err(sys("adopting the shared eventfd"))?;
        let page = Page::map(&page_fd, slots).map_err(sys("mapping the page"))?;
        let slot = page.slot(index);

        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(sys("epoll_create"))?;
        epoll::add(
            &epoll,
            &shared,
            epoll::EventData::new_u64(0),
            epoll::EventFlags::IN | epoll::EventFlags::ET,
        )
        .map_err(sys("epoll_ctl(ADD)"))?;
        // Level-triggered and read after every wake, as a hybrid's per-subscriber path would be.
        epoll::add(
            &epoll,
            &own_epoll,
            epoll::EventData::new_u64(1),
            epoll::EventFlags::IN,
        )
        .map_err(sys("epoll_ctl(ADD)"))?;
        let mut events: Vec<epoll::Event> = Vec::with_capacity(4);
        let no_wait = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };

        for round in 1u64.. {
            // A busy round leaves the shared write's event pending; consume it so that every
            // round starts with the registration off the ready list, as after a real wake.
            events.clear();
            retry(|| {
                epoll::wait(
                    &epoll,
                    rustix::buffer::spare_capacity(&mut events),
                    Some(&no_wait),
                )
            })
            .map_err(sys("epoll_wait(0)"))?;

            // SYNC(park): Release; pairs with the Acquire load in `Fleet::wait_for(Step::Park)`.
            slot.parked.store(round, Release);
            let mode = mode_of(round);
            let mut counter = [0u8; 8];
            match mode {
                Mode::PerSubscriber | Mode::SharedBusy => {
                    retry(|| rustix::io::read(&own, &mut counter)).map_err(sys("read(eventfd)"))?;
                }
                Mode::PerSubscriberEpoll | Mode::Shared => loop {
                    events.clear();
                    retry(|| {
                        epoll::wait(&epoll, rustix::buffer::spare_capacity(&mut events), None)
                    })
                    .map_err(sys("epoll_wait"))?;
                    if !events.is_empty() {
                        break;
                    }
                },
            }
            let woke = now_ns();
            if mode == Mode::PerSubscriberEpoll {
                retry(|| rustix::io::read(&own_epoll, &mut counter))
                    .map_err(sys("read(eventfd)"))?;
            }
            slot.woke_ns.store(woke, Relaxed);
            slot.woke_cpu.store(sys::sched_getcpu(), Relaxed);
            // SYNC(done): Release publishes `woke_ns`; pairs with the Acquire load in
            // `Fleet::wait_for(Step::Wake)`.
            slot.done.store(round, Release);
        }
        Ok(())
    }

    fn parse<T: std::str::FromStr>(arg: &str) -> Result<T, ProbeError> {
        arg.parse()
            .map_err(|_| ProbeError::Usage(format!("bad subscriber argument {arg:?}")))
    }

    /// Repeats `f` while it fails with `EINTR`.
    fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
        loop {
            match f() {
                Err(rustix::io::Errno::INTR) => continue,
                other => return other,
            }
        }
    }
}

/// The publisher: spawns the subscribers, runs the rounds, prints the report.
mod publisher {
    use super::*;

    /// What to run.
    struct Plan {
        /// Subscriber counts, one fleet each.
        subs: Vec<usize>,
        /// Measured rounds of each kind, per subscriber count (`None`: the default for that count).
        rounds: Option<usize>,
        quick: bool,
    }

    impl Plan {
        fn parse(args: &[String]) -> Result<Self, ProbeError> {
            let mut plan = Plan {
                subs: vec![1, 3, 8, 32, 64],
                rounds: None,
                quick: false,
            };
            let mut args = args.iter();
            while let Some(arg) = args.next() {
                match arg.as_str() {
                    "--quick" => plan.quick = true,
                    "--rounds" => {
                        let value = args.next().and_then(|v| v.parse().ok()).filter(|&k| k > 0);
                        let Some(value) = value else {
                            return Err(ProbeError::Usage(
                                "--rounds takes a positive count".into(),
                            ));
                        };
                        plan.rounds = Some(value);
                    }
                    "--subs" => {
                        let value = args.next().map(|v| {
                            v.split(',')
                                .map(str::parse)
                                .collect::<Result<Vec<usize>, _>>()
                        });
                        let Some(Ok(subs)) =
                            value.filter(|s| s.as_ref().is_ok_and(|s| !s.is_empty()))
                        else {
                            return Err(ProbeError::Usage("--subs takes a list like 1,3,8".into()));
                        };
                        if subs.contains(&0) {
                            return Err(ProbeError::Usage("--subs counts start at 1".into()));
                        }
                        plan.subs = subs;
                    }
                    other => return Err(ProbeError::Usage(format!("unknown argument {other:?}"))),
                }
            }
            Ok(plan)
        }

        /// Measured rounds of each kind for `n` subscribers. A large fleet takes longer per round,
        /// so it gets fewer; the defaults keep a run well under a minute and `--quick` at a tenth.
        fn rounds_for(&self, n: usize) -> usize {
            if let Some(rounds) = self.rounds {
                return rounds;
            }
            let full = match n {
                0..=3 => 12_000,
                4..=8 => 6_000,
                9..=32 => 2_500,
                _ => 1_200,
            };
            if self.quick { full / 10 } else { full }
        }
    }

    pub fn run(args: &[String]) -> Result<(), ProbeError> {
        let plan = Plan::parse(args)?;
        let started = Instant::now();
        let cpus = Cpus::probe()?;
        let floor = report::Floor {
            clock: clock_overhead(now_ns),
            cpu_clock: clock_overhead(thread_cpu_ns),
        };
        let placements: &[Placement] = if cpus.split.is_some() {
            &[Placement::Free, Placement::Split]
        } else {
            eprintln!("wakeprobe: one CPU allowed, measuring only the free placement");
            &[Placement::Free]
        };
        let mut results = Vec::new();
        for &n in &plan.subs {
            for &placement in placements {
                let rounds = plan.rounds_for(n);
                let fleet_started = Instant::now();
                let result = cpus.pinned(placement, || measure(n, rounds, placement, &cpus));
                let result = result?;
                eprintln!(
                    "wakeprobe: {n} subscriber(s), {placement:?}, {rounds} rounds of each kind, \
                     {:.1} s",
                    fleet_started.elapsed().as_secs_f64()
                );
                results.push(result);
            }
        }
        report::print(&results, &floor, started.elapsed());
        Ok(())
    }

    /// The CPUs the probe may use and how each placement divides them.
    struct Cpus {
        /// Every CPU the publisher was allowed at start.
        all: CpuSet,
        /// For [`Placement::Split`]: the publisher's CPU and the subscribers' CPUs.
        split: Option<(CpuSet, CpuSet)>,
    }

    impl Cpus {
        fn probe() -> Result<Self, ProbeError> {
            let all = sched_getaffinity(None).map_err(sys("sched_getaffinity"))?;
            let allowed: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| all.is_set(c)).collect();
            let split = match allowed.split_first() {
                Some((&first, rest)) if !rest.is_empty() => {
                    let mut publisher = CpuSet::new();
                    publisher.set(first);
                    let mut subscribers = all;
                    subscribers.unset(first);
                    Some((publisher, subscribers))
                }
                _ => None,
            };
            Ok(Self { all, split })
        }

        /// The CPUs subscribers run on under `placement`.
        fn subscribers(&self, placement: Placement) -> CpuSet {
            match (placement, &self.split) {
                (Placement::Split, Some((_, subscribers))) => *subscribers,
                _ => self.all,
            }
        }

        /// Runs `f` with the publisher confined as `placement` says, then frees it again.
        fn pinned<T>(
            &self,
            placement: Placement,
            f: impl FnOnce() -> Result<T, ProbeError>,
        ) -> Result<T, ProbeError> {
            let publisher = match (placement, &self.split) {
                (Placement::Split, Some((publisher, _))) => *publisher,
                _ => self.all,
            };
            sched_setaffinity(None, &publisher).map_err(sys("sched_setaffinity"))?;
            let result = f();
            sched_setaffinity(None, &self.all).map_err(sys("sched_setaffinity"))?;
            result
        }
    }

    /// Median of two back-to-back reads of `clock`: the floor under every figure taken with it.
    fn clock_overhead(clock: fn() -> u64) -> u64 {
        let mut samples: Vec<u64> = (0..10_000)
            .map(|_| {
                let t0 = clock();
                clock() - t0
            })
            .collect();
        stats::percentile(&mut samples, 50.0)
    }

    /// Figures for one subscriber count.
    pub struct Measured {
        pub subs: usize,
        pub placement: Placement,
        pub rounds: usize,
        /// Write to an eventfd nobody waits on or has registered, ns per write.
        pub bare: Vec<u64>,
        /// Publisher-side cost per round, ns, indexed like [`MODES`].
        pub cost: [Vec<u64>; 4],
        /// Wake latency per subscriber index, ns, for the first [`WAKING`] of [`MODES`].
        pub latency: [Vec<Vec<u64>>; WAKING],
        /// Per round, the latency of the last subscriber to wake, ns, indexed like `latency`.
        pub last: [Vec<u64>; WAKING],
        /// Publisher CPU time per round around the write(s), ns, indexed like [`MODES`]. Unlike
        /// `cost` it leaves out time the publisher spent preempted, and it includes one read of
        /// the CPU-time clock.
        pub cpu: [Vec<u64>; 4],
        /// Rounds in which the publisher was preempted around the write(s), indexed like [`MODES`].
        pub preempted: [usize; 4],
        /// Subscriber wakes that ran on the publisher's CPU, indexed like `latency`.
        pub same_cpu: [usize; WAKING],
    }

    fn measure(
        n: usize,
        rounds: usize,
        placement: Placement,
        cpus: &Cpus,
    ) -> Result<Measured, ProbeError> {
        let mut fleet = Fleet::spawn(n, cpus.subscribers(placement))?;
        let bare = bare_writes(2000)?;
        let kinds = MODES.len() as u64;
        let warmup = kinds * 20;
        let total = warmup + kinds * rounds as u64;
        let mut out = Measured {
            subs: n,
            placement,
            rounds,
            bare,
            cost: Default::default(),
            latency: std::array::from_fn(|_| vec![Vec::with_capacity(rounds); n]),
            last: Default::default(),
            cpu: Default::default(),
            preempted: [0; 4],
            same_cpu: [0; WAKING],
        };
        for round in 1..=total {
            let deadline = if round == 1 {
                STARTUP_DEADLINE
            } else {
                STALL_DEADLINE
            };
            fleet.wait_for(Step::Park, round, deadline)?;
            fleet.wait_for(Step::Sleep, round, STALL_DEADLINE)?;
            let mode = mode_of(round);
            let preemptions = sys::preemptions();
            let publisher_cpu = sys::sched_getcpu();
            let c0 = thread_cpu_ns();
            let (t0, t1) = match mode {
                Mode::PerSubscriber => {
                    let t0 = now_ns();
                    for fd in &fleet.own {
                        rustix::io::write(fd, &ONE).map_err(sys("write(own eventfd)"))?;
                    }
                    (t0, now_ns())
                }
                Mode::PerSubscriberEpoll => {
                    let t0 = now_ns();
                    for fd in &fleet.own_epoll {
                        rustix::io::write(fd, &ONE).map_err(sys("write(own eventfd)"))?;
                    }
                    (t0, now_ns())
                }
                Mode::Shared | Mode::SharedBusy => {
                    let t0 = now_ns();
                    rustix::io::write(&fleet.shared, &ONE).map_err(sys("write(shared eventfd)"))?;
                    (t0, now_ns())
                }
            };
            let c1 = thread_cpu_ns();
            let preempted = sys::preemptions() != preemptions;
            if mode == Mode::SharedBusy {
                for fd in &fleet.own {
                    rustix::io::write(fd, &ONE).map_err(sys("write(own eventfd)"))?;
                }
            }
            fleet.wait_for(Step::Wake, round, STALL_DEADLINE)?;
            if round <= warmup {
                continue;
            }
            let kind = MODES
                .iter()
                .position(|&m| m == mode)
                .expect("every mode is listed");
            out.cost[kind].push(t1 - t0);
            out.cpu[kind].push(c1 - c0);
            out.preempted[kind] += usize::from(preempted);
            if mode == Mode::SharedBusy {
                continue;
            }
            let mut last = 0;
            for i in 0..n {
                // Ordered after the Acquire load of `done` in `wait_for(Step::Wake)`.
                let woke = fleet.page.slot(i).woke_ns.load(Relaxed);
                let cpu = fleet.page.slot(i).woke_cpu.load(Relaxed);
                out.same_cpu[kind] += usize::from(cpu == publisher_cpu);
                let Some(latency) = woke.checked_sub(t0) else {
                    return Err(ProbeError::EarlyWake {
                        subscriber: i,
                        round,
                    });
                };
                out.latency[kind][i].push(latency);
                last = last.max(latency);
            }
            out.last[kind].push(last);
        }
        Ok(out)
    }

    /// Times `count` writes to an eventfd that nobody waits on or has registered.
    fn bare_writes(count: usize) -> Result<Vec<u64>, ProbeError> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC).map_err(sys("eventfd"))?;
        let mut samples = Vec::with_capacity(count);
        for _ in 0..count {
            let t0 = now_ns();
            rustix::io::write(&fd, &ONE).map_err(sys("write(bare eventfd)"))?;
            samples.push(now_ns() - t0);
        }
        Ok(samples)
    }

    /// The subscriber processes of one run and what the publisher holds for them. Dropping it
    /// kills and reaps every subscriber, on success and on every error.
    struct Fleet {
        children: Vec<Child>,
        /// `/proc/<pid>/stat` of each child, kept open and re-read from offset 0.
        stat: Vec<File>,
        /// Each subscriber's own eventfd, waited on with `read()`.
        own: Vec<OwnedFd>,
        /// Each subscriber's second own eventfd, registered in its epoll instance.
        own_epoll: Vec<OwnedFd>,
        shared: OwnedFd,
        page: Page,
        _page_fd: OwnedFd,
    }

    impl Fleet {
        fn spawn(n: usize, cpus: CpuSet) -> Result<Self, ProbeError> {
            let (page_fd, page) = Page::create(n).map_err(sys("creating the shared page"))?;
            let shared = eventfd(0, EventfdFlags::CLOEXEC).map_err(sys("eventfd"))?;
            let exe: PathBuf = std::env::current_exe().map_err(sys("locating the executable"))?;
            let mut fleet = Fleet {
                children: Vec::with_capacity(n),
                stat: Vec::with_capacity(n),
                own: Vec::with_capacity(n),
                own_epoll: Vec::with_capacity(n),
                shared,
                page,
                _page_fd: page_fd,
            };
            for index in 0..n {
                let own = eventfd(0, EventfdFlags::CLOEXEC).map_err(sys("eventfd"))?;
                let own_epoll = eventfd(0, EventfdFlags::CLOEXEC).map_err(sys("eventfd"))?;
                let keep: [RawFd; 4] = [
                    fleet._page_fd.as_raw_fd(),
                    own.as_raw_fd(),
                    own_epoll.as_raw_fd(),
                    fleet.shared.as_raw_fd(),
                ];
                let mut command = Command::new(&exe);
                command
                    .arg(SUBSCRIBER_ARG)
                    .arg(index.to_string())
                    .arg(n.to_string())
                    .args(keep.map(|fd| fd.to_string()))
                    .arg(std::process::id().to_string())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null());
                #[allow(unsafe_code)]
                // SAFETY: the hook only makes raw syscalls (sched_setaffinity, fcntl, prctl) on
                // descriptors that the publisher keeps open across the spawn.
                unsafe {
                    std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                        sys::prepare_child(&keep, &cpus)
                    });
                }
                let child = command.spawn().map_err(sys("spawning a subscriber"))?;
                let pid = child.id();
                fleet.children.push(child);
                fleet.own.push(own);
                fleet.own_epoll.push(own_epoll);
                let stat = File::open(format!("/proc/{pid}/stat"))
                    .map_err(sys("opening a subscriber's /proc stat"))?;
                fleet.stat.push(stat);
            }
            Ok(fleet)
        }

        /// Waits until every subscriber has taken `step` for `round`, or fails naming the first
        /// one that did not within `deadline`.
        fn wait_for(
            &mut self,
            step: Step,
            round: u64,
            deadline: Duration,
        ) -> Result<(), ProbeError> {
            let started = Instant::now();
            let mut spins = 0u32;
            let mut next_check = LIVENESS_CHECK;
            for i in 0..self.children.len() {
                loop {
                    let ready = match step {
                        // SYNC(park): Acquire; pairs with the Release store in `subscriber::run`.
                        Step::Park => self.page.slot(i).parked.load(Acquire) == round,
                        Step::Sleep => self.state(i) == Some('S'),
                        // SYNC(done): Acquire; pairs with the Release store in `subscriber::run`.
                        Step::Wake => self.page.slot(i).done.load(Acquire) == round,
                    };
                    if ready {
                        break;
                    }
                    // Spin briefly, then give the core away: subscribers need it more.
                    if spins < 64 {
                        spins += 1;
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                    let waited = started.elapsed();
                    if waited > next_check {
                        // A dead subscriber is reported at once, not at the deadline.
                        next_check = waited + LIVENESS_CHECK;
                        if let Ok(Some(status)) = self.children[i].try_wait() {
                            let pid = self.children[i].id();
                            return Err(ProbeError::Exited {
                                subscriber: i,
                                pid,
                                round,
                                step,
                                status,
                            });
                        }
                    }
                    if waited > deadline {
                        return Err(self.stalled(i, round, step, waited));
                    }
                }
            }
            Ok(())
        }

        /// The scheduler state letter of subscriber `i` (`R`, `S`, `D`, `Z`...), if readable.
        fn state(&self, i: usize) -> Option<char> {
            let mut buf = [0u8; 512];
            let len = self.stat[i].read_at(&mut buf, 0).ok()?;
            let text = &buf[..len];
            // The command name may contain spaces or ')': the state follows the last ')'.
            let close = text.iter().rposition(|&b| b == b')')?;
            text.get(close + 2).map(|&b| char::from(b))
        }

        fn stalled(&mut self, i: usize, round: u64, step: Step, waited: Duration) -> ProbeError {
            let pid = self.children[i].id();
            if let Ok(Some(status)) = self.children[i].try_wait() {
                return ProbeError::Exited {
                    subscriber: i,
                    pid,
                    round,
                    step,
                    status,
                };
            }
            let state = self.state(i).unwrap_or('?');
            ProbeError::Stalled {
                subscriber: i,
                pid,
                round,
                step,
                state,
                waited,
            }
        }
    }

    impl Drop for Fleet {
        fn drop(&mut self) {
            for child in &mut self.children {
                let _ = child.kill();
            }
            for child in &mut self.children {
                let _ = child.wait();
            }
        }
    }
}

/// Percentiles.
mod stats {
    /// Nearest-rank percentile `p` (0–100) of `samples`, which it sorts. 0 for no samples.
    pub fn percentile(samples: &mut [u64], p: f64) -> u64 {
        if samples.is_empty() {
            return 0;
        }
        samples.sort_unstable();
        let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
        samples[rank.clamp(1, samples.len()) - 1]
    }

    /// Median and 99th percentile of `samples`.
    pub fn p50_p99(samples: &[u64]) -> (u64, u64) {
        let mut sorted = samples.to_vec();
        (percentile(&mut sorted, 50.0), percentile(&mut sorted, 99.0))
    }
}

/// The printed tables.
mod report {
    use super::Placement;
    use super::publisher::Measured;
    use super::stats::{p50_p99, percentile};
    use std::time::Duration;

    /// Indices into [`super::MODES`] (and into the per-wake arrays for the first three).
    const A: usize = 0;
    const A_EPOLL: usize = 1;
    const B: usize = 2;
    const BUSY: usize = 3;

    /// Calibration printed above the tables.
    pub struct Floor {
        /// Median of two back-to-back `CLOCK_MONOTONIC` reads, ns.
        pub clock: u64,
        /// Median of two back-to-back `CLOCK_THREAD_CPUTIME_ID` reads, ns.
        pub cpu_clock: u64,
    }

    fn us(ns: u64) -> String {
        format!("{:.2}", ns as f64 / 1000.0)
    }

    fn ratio(num: u64, den: u64) -> String {
        format!("{:.2}", num as f64 / den.max(1) as f64)
    }

    fn pct(part: usize, whole: usize) -> String {
        format!("{:.0}%", 100.0 * part as f64 / whole.max(1) as f64)
    }

    fn p50(samples: &[u64]) -> u64 {
        p50_p99(samples).0
    }

    /// The largest of the subscribers' medians (`p99 == false`) or 99th percentiles.
    fn max_over_subs(latency: &[Vec<u64>], p99: bool) -> u64 {
        latency
            .iter()
            .map(|l| {
                let (p50, p99v) = p50_p99(l);
                if p99 { p99v } else { p50 }
            })
            .max()
            .unwrap_or(0)
    }

    pub fn print(results: &[Measured], floor: &Floor, elapsed: Duration) {
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        println!("wakeprobe: waking N parked subscriber processes");
        println!(
            "  {cpus} CPUs, Linux {}, run took {:.1} s; a clock read costs {} ns (inside every \
             cost), a CPU-time read {} ns (inside every cpu figure)",
            kernel.trim(),
            elapsed.as_secs_f64(),
            floor.clock,
            floor.cpu_clock
        );
        println!("  A    = own eventfd per subscriber, subscriber blocked in read(); N writes");
        println!(
            "  A'   = own eventfd per subscriber, in its epoll, blocked in epoll_wait; N writes"
        );
        println!(
            "  B    = one shared eventfd, EPOLLIN|EPOLLET in each subscriber's own epoll; 1 write"
        );
        println!("  busy = B's write while every subscriber is registered but not in epoll_wait");
        println!("  bare = a write to an eventfd that nobody waits on or has registered");
        println!(
            "  cost = publisher wall time around the write(s); cpu = its CPU time around them"
        );
        println!(
            "  latency = publisher timestamp before the write(s) -> subscriber timestamp after"
        );
        println!(
            "            its read()/epoll_wait returned; last = slowest subscriber of a round"
        );
        println!(
            "  times in µs, medians over rounds unless marked p99; all kinds of round interleaved"
        );
        for (placement, title) in [
            (
                Placement::Free,
                "free placement: every process may run on every CPU",
            ),
            (
                Placement::Split,
                "split placement: publisher alone on one CPU, subscribers on the others",
            ),
        ] {
            let group: Vec<&Measured> = results
                .iter()
                .filter(|m| m.placement == placement)
                .collect();
            if !group.is_empty() {
                println!();
                println!("== {title}");
                print_group(&group);
            }
        }
    }

    fn print_group(results: &[&Measured]) {
        println!();
        println!("publisher cost per wake (µs, p50)");
        println!(
            "{:>3} {:>6} | {:>6} {:>8} {:>8} {:>8} {:>6} | {:>5} {:>5} {:>6} | {:>8}",
            "N", "rounds", "bare", "A", "A'", "B", "busy", "B/A", "B/A'", "A'/A", "busy/sub"
        );
        for m in results {
            let bare = p50(&m.bare);
            let [a, a_ep, b, busy] = [A, A_EPOLL, B, BUSY].map(|k| p50(&m.cost[k]));
            let per_entry = busy.saturating_sub(bare) as f64 / m.subs as f64;
            println!(
                "{:>3} {:>6} | {:>6} {:>8} {:>8} {:>8} {:>6} | {:>5} {:>5} {:>6} | {:>5.0} ns",
                m.subs,
                m.rounds,
                us(bare),
                us(a),
                us(a_ep),
                us(b),
                us(busy),
                ratio(b, a),
                ratio(b, a_ep),
                ratio(a_ep, a),
                per_entry,
            );
        }
        println!("  busy/sub = (busy - bare) / N: what each registered-but-busy subscriber adds");
        println!();
        println!("publisher cost, tail and CPU (µs)");
        println!(
            "{:>3} | {:>8} {:>8} {:>8} {:>5} | {:>7} {:>7} {:>7} {:>5} | {:>5} {:>5} {:>5}",
            "N",
            "A p99",
            "A' p99",
            "B p99",
            "B/A",
            "A cpu",
            "A' cpu",
            "B cpu",
            "B/A",
            "A pre",
            "A'pre",
            "B pre"
        );
        for m in results {
            let [a99, a_ep99, b99] = [A, A_EPOLL, B].map(|k| p50_p99(&m.cost[k]).1);
            let [a_cpu, a_ep_cpu, b_cpu] = [A, A_EPOLL, B].map(|k| p50(&m.cpu[k]));
            println!(
                "{:>3} | {:>8} {:>8} {:>8} {:>5} | {:>7} {:>7} {:>7} {:>5} | {:>5} {:>5} {:>5}",
                m.subs,
                us(a99),
                us(a_ep99),
                us(b99),
                ratio(b99, a99),
                us(a_cpu),
                us(a_ep_cpu),
                us(b_cpu),
                ratio(b_cpu, a_cpu),
                pct(m.preempted[A], m.rounds),
                pct(m.preempted[A_EPOLL], m.rounds),
                pct(m.preempted[B], m.rounds),
            );
        }
        println!(
            "  cpu = publisher CPU time (leaves out time it spent preempted); pre = rounds in"
        );
        println!("  which the publisher was preempted around its write(s)");
        println!();
        println!("wake latency (µs)");
        println!(
            "{:>3} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>5} {:>5} | {:>8} {:>8} {:>8} | {:>6} {:>6}",
            "N",
            "A sub0",
            "A last",
            "A' last",
            "B sub0",
            "B last",
            "B/A",
            "B/A'",
            "A max99",
            "A' max99",
            "B max99",
            "A same",
            "B same"
        );
        for m in results {
            let [a_last, a_ep_last, b_last] = [A, A_EPOLL, B].map(|k| p50(&m.last[k]));
            let [a99, a_ep99, b99] = [A, A_EPOLL, B].map(|k| max_over_subs(&m.latency[k], true));
            println!(
                "{:>3} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>5} {:>5} | {:>8} {:>8} {:>8} | {:>6} {:>6}",
                m.subs,
                us(p50(&m.latency[A][0])),
                us(a_last),
                us(a_ep_last),
                us(p50(&m.latency[B][0])),
                us(b_last),
                ratio(b_last, a_last),
                ratio(b_last, a_ep_last),
                us(a99),
                us(a_ep99),
                us(b99),
                pct(m.same_cpu[A], m.rounds * m.subs),
                pct(m.same_cpu[B], m.rounds * m.subs),
            );
        }
        println!(
            "  sub0 = first subscriber (A writes in index order); B/A and B/A' compare `last`;"
        );
        println!(
            "  max99 = largest per-subscriber p99; same = wakes that ran on the publisher's CPU"
        );
        println!();
        println!("latency per subscriber index, µs p50/p99");
        for m in results {
            for (k, name) in [(A, "A "), (A_EPOLL, "A'"), (B, "B ")] {
                let cells: Vec<String> = m.latency[k]
                    .iter()
                    .map(|l| {
                        let mut s = l.clone();
                        let p50 = percentile(&mut s, 50.0);
                        let p99 = percentile(&mut s, 99.0);
                        format!("{:.1}/{:.1}", p50 as f64 / 1000.0, p99 as f64 / 1000.0)
                    })
                    .collect();
                println!(
                    "  N={:<2} {name}: max p50 {:>7}, max p99 {:>7} | {}",
                    m.subs,
                    us(max_over_subs(&m.latency[k], false)),
                    us(max_over_subs(&m.latency[k], true)),
                    cells.join(" ")
                );
            }
        }
    }
}
