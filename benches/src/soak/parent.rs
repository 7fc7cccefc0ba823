//! The parent process: binds the publisher, publishes in random phases, and churns the
//! subscriber processes (joins, leaves, stops, kills) every [`TICK`]; at the end it closes the
//! stream, waits for every subscriber's report and checks that nothing leaked.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use shmcast::{LoanError, Mode, Publisher, PublisherStats};
use shmcast_bench::error::{BenchError, Result, failed};
use shmcast_bench::harness::{STARTUP, ring_capacity, unique_topic};
use shmcast_bench::process::{Fleet, Spec};
use shmcast_bench::report::Progress;
use shmcast_bench::rng::Rng;

use crate::member::Member;
use crate::message;
use crate::options::Options;
use crate::plan::{Plan, mode_name};
use crate::samples::{Samples, Window, fd_count};
use crate::schedule::{
    KILL_EVERY, KILL_JOINING, KILL_JOINING_WITHIN, MAX_SUBS, MIN_SUBS, PROGRESS_EVERY, Phase,
    RETARGET_EVERY, SAMPLE_EVERY, STALL_BOUND, STOP_EVERY, STOP_FOR, TICK,
};
use crate::subscriber::ROLE;
use crate::summary;
use crate::tally::Totals;
use crate::verdict;

/// A loan that waits this long despite the stall bound means the publisher hangs.
const LOAN_LIMIT: Duration = Duration::from_secs(30);

/// How long past its lifetime (or past the end of the stream) a subscriber may take to report.
const LATE: Duration = Duration::from_secs(30);

/// How long the publisher may keep counting a subscriber that is gone.
const DEPARTURE: Duration = Duration::from_secs(10);

/// The parent's state over the run.
struct Soak {
    o: Options,
    capacity: u64,
    rng: Rng,
    fleet: Fleet,
    members: Vec<Member>,
    next_id: u64,
    /// Messages published; the next message's sequence number.
    published: u64,
    target: usize,
    totals: Totals,
    samples: Samples,
    publisher_stats: Option<PublisherStats>,
    /// Since when the publisher has counted more subscribers than are alive.
    excess_since: Option<Instant>,
    started: Instant,
    last_tick: Instant,
    next_sample: Instant,
    next_progress: Instant,
    progress: Progress,
}

/// Runs a soak and prints its summary.
pub fn run(o: &Options) -> Result<()> {
    eprintln!(
        "shmcast-soak: soak for {} s with seed {} (repeat the message sizes with --seed {})",
        o.duration.as_secs(),
        o.seed,
        o.seed
    );
    let mut soak = Soak::new(*o);
    let outcome = soak.run();
    println!("{}", soak.summary(&outcome));
    outcome
}

impl Soak {
    fn new(o: Options) -> Soak {
        let now = Instant::now();
        Soak {
            o,
            capacity: ring_capacity(o.max_size),
            rng: Rng::new(o.seed),
            fleet: Fleet::new(),
            members: Vec::new(),
            next_id: 0,
            published: 0,
            target: MIN_SUBS,
            totals: Totals::default(),
            samples: Samples::default(),
            publisher_stats: None,
            excess_since: None,
            started: now,
            last_tick: now,
            next_sample: now,
            next_progress: now + PROGRESS_EVERY,
            progress: Progress::new("soak"),
        }
    }

    fn run(&mut self) -> Result<()> {
        self.samples.fds_before = fd_count()?;
        let topic = unique_topic("soak");
        let mut publisher = Publisher::builder(topic.as_str())
            .capacity(self.capacity)
            .max_message(self.o.max_size as u64)
            .stall_bound(Some(STALL_BOUND))
            .bind()
            .map_err(failed("binding the soak publisher"))?;
        self.samples.fds_with_publisher = fd_count()?;
        self.started = Instant::now();
        let end = self.started + self.o.duration;
        let (mut phase, mut phase_end) = Phase::random(&mut self.rng, self.started);
        let mut next_tick = self.started;
        loop {
            let now = Instant::now();
            if now >= end {
                break;
            }
            if now >= next_tick {
                self.tick(&publisher, &topic, now)?;
                next_tick = now + TICK;
            }
            if now >= phase_end {
                (phase, phase_end) = Phase::random(&mut self.rng, now);
            }
            let until = next_tick.min(phase_end).min(end);
            match phase {
                Phase::Burst => {
                    while Instant::now() < until {
                        self.publish(&mut publisher)?;
                    }
                }
                Phase::Trickle => {
                    self.publish(&mut publisher)?;
                    let pause = self.rng.duration(Duration::ZERO, Duration::from_millis(2));
                    sleep_until((Instant::now() + pause).min(until));
                }
                Phase::Quiet => sleep_until(until),
            }
        }
        self.finish(publisher)
    }

    fn publish(&mut self, publisher: &mut Publisher) -> Result<()> {
        let seq = self.published;
        let len = message::len(self.o.seed, seq, self.o.max_size);
        let mut loan = publisher
            .loan_timeout(len, LOAN_LIMIT)
            .map_err(|e| match e {
                LoanError::Timeout => BenchError::Check(format!(
                    "the publisher waited {LOAN_LIMIT:?} for ring space for message {seq} \
                     despite its stall bound of {STALL_BOUND:?}"
                )),
                e => failed(format!("loaning message {seq}"))(e),
            })?;
        message::fill(&mut loan, seq);
        loan.publish();
        self.published += 1;
        self.totals.bytes_published += len as u64;
        Ok(())
    }

    /// One housekeeping round: children's lines and exits, stops ending, random kills and
    /// stops, joins up to the target, samples and progress.
    fn tick(&mut self, publisher: &Publisher, topic: &str, now: Instant) -> Result<()> {
        let dt = now.saturating_duration_since(self.last_tick).as_secs_f64();
        self.last_tick = now;
        self.service(None)?;
        for i in 0..self.members.len() {
            if self.members[i].stopped_until.is_some_and(|t| now >= t) {
                self.fleet.signal(i, Signal::CONT)?;
                self.members[i].stopped_until = None;
            }
        }
        self.check_departures(publisher, now)?;
        if self.members.len() > MIN_SUBS && self.rng.chance(dt / KILL_EVERY.as_secs_f64()) {
            let i = self.rng.below(self.members.len() as u64) as usize;
            self.kill(i, None)?;
        }
        if self.rng.chance(dt / STOP_EVERY.as_secs_f64()) {
            let running: Vec<usize> = (0..self.members.len())
                .filter(|&i| self.members[i].stopped_until.is_none())
                .collect();
            if !running.is_empty() {
                let i = self.rng.pick(&running);
                self.fleet.signal(i, Signal::STOP)?;
                self.members[i].stopped_until =
                    Some(now + self.rng.duration(STOP_FOR.0, STOP_FOR.1));
                self.totals.stops += 1;
            }
        }
        if self.rng.chance(dt / RETARGET_EVERY.as_secs_f64()) {
            self.target = MIN_SUBS + self.rng.below((MAX_SUBS - MIN_SUBS + 1) as u64) as usize;
        }
        if self.members.len() < self.target {
            self.spawn(topic)?;
        }
        if now >= self.next_sample {
            self.sample(publisher, now)?;
            self.next_sample = now + SAMPLE_EVERY;
        }
        if now >= self.next_progress {
            self.progress.say(&self.status(publisher));
            self.next_progress = now + PROGRESS_EVERY;
        }
        Ok(())
    }

    fn spawn(&mut self, topic: &str) -> Result<()> {
        let plan = Plan::random(&mut self.rng);
        let id = self.next_id;
        self.next_id += 1;
        let mut args = vec![
            topic.to_owned(),
            self.o.seed.to_string(),
            self.o.max_size.to_string(),
        ];
        args.extend(plan.args());
        self.fleet.spawn(Spec {
            name: format!(
                "soak subscriber {id} ({} from the {}, {})",
                mode_name(plan.mode),
                args[4],
                args[5]
            ),
            role: ROLE,
            args,
            fds: Vec::new(),
        })?;
        self.members.push(Member {
            plan,
            spawned: Instant::now(),
            joined_seq: self.published,
            ready_seq: None,
            stopped_until: None,
            result: None,
        });
        self.totals.joins += 1;
        if plan.mode == Mode::Gating {
            self.totals.gating_joins += 1;
        }
        if self.rng.chance(KILL_JOINING) {
            std::thread::sleep(self.rng.duration(Duration::ZERO, KILL_JOINING_WITHIN));
            self.kill(self.members.len() - 1, None)?;
        }
        Ok(())
    }

    /// Reads every child's lines and handles those that exited. `last`: the number of messages
    /// published, once the stream has ended.
    fn service(&mut self, last: Option<u64>) -> Result<()> {
        let now = Instant::now();
        let mut i = 0;
        while i < self.members.len() {
            self.read_lines(i)?;
            match self.fleet.try_exit(i)? {
                Some(status) => self.departed(i, status, last)?,
                None => {
                    let m = &self.members[i];
                    if m.ready_seq.is_none() && now > m.spawned + STARTUP + STOP_FOR.1 {
                        return Err(
                            self.child_error(i, format!("not connected within {STARTUP:?}"))
                        );
                    }
                    if now > m.spawned + m.plan.lifetime + LATE {
                        return Err(self.child_error(
                            i,
                            format!("still there {LATE:?} after its lifetime ended"),
                        ));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }

    fn read_lines(&mut self, i: usize) -> Result<()> {
        while let Some(line) = self.fleet.try_next(i)? {
            let m = &mut self.members[i];
            match line.tag.as_str() {
                "ready" if m.ready_seq.is_none() => m.ready_seq = Some(self.published),
                "result" if m.result.is_none() => m.result = Some(line),
                _ => {
                    let what = format!("unexpected line {:?} {:?}", line.tag, line.words);
                    return Err(self.child_error(i, what));
                }
            }
        }
        Ok(())
    }

    /// Child `i` exited by itself: checks its report and takes it out.
    fn departed(&mut self, i: usize, status: ExitStatus, last: Option<u64>) -> Result<()> {
        self.read_lines(i)?;
        if !status.success() {
            return Err(self.child_error(i, format!("failed ({status}); its own message is above")));
        }
        let Some(report) = self.members[i].result.take() else {
            return Err(self.child_error(i, "exited without reporting".into()));
        };
        verdict::check(
            &self.members[i],
            &report,
            last,
            self.capacity,
            &mut self.totals,
        )?;
        self.fleet.remove(i);
        self.members.remove(i);
        Ok(())
    }

    /// Kills child `i` (it may have left by itself just before).
    fn kill(&mut self, i: usize, last: Option<u64>) -> Result<()> {
        let status = self.fleet.kill(i)?;
        self.read_lines(i)?;
        if status.signal() == Some(libc::SIGKILL) {
            self.totals.kills += 1;
            if self.members[i].ready_seq.is_none() {
                self.totals.kills_starting += 1;
            }
            self.fleet.remove(i);
            self.members.remove(i);
            Ok(())
        } else {
            self.departed(i, status, last)
        }
    }

    /// Fails if the publisher keeps counting a subscriber that is gone for [`DEPARTURE`].
    fn check_departures(&mut self, publisher: &Publisher, now: Instant) -> Result<()> {
        let counted = publisher.subscriber_count();
        if counted <= self.members.len() {
            self.excess_since = None;
            return Ok(());
        }
        let since = *self.excess_since.get_or_insert(now);
        if now - since > DEPARTURE {
            return Err(BenchError::Check(format!(
                "the publisher has counted {counted} subscribers for {DEPARTURE:?} while only {} \
                 are alive: it missed a departure",
                self.members.len()
            )));
        }
        Ok(())
    }

    fn sample(&mut self, publisher: &Publisher, now: Instant) -> Result<()> {
        let members = &self.members;
        self.samples.take(
            Window::of(now - self.started, self.o.duration),
            members.len(),
            || {
                members.iter().all(|m| m.ready_seq.is_some())
                    && publisher.subscriber_count() == members.len()
            },
        )
    }

    /// Ends the stream and checks that everything is as it was before the publisher.
    fn finish(&mut self, publisher: Publisher) -> Result<()> {
        // Subscribers still in their handshake would wait for a publisher that is gone.
        let mut i = 0;
        while i < self.members.len() {
            if self.members[i].ready_seq.is_none() {
                self.kill(i, None)?;
            } else {
                if self.members[i].stopped_until.take().is_some() {
                    self.fleet.signal(i, Signal::CONT)?;
                }
                i += 1;
            }
        }
        let stats = publisher.stats();
        if stats.messages != self.published {
            return Err(BenchError::Check(format!(
                "the publisher counts {} messages, {} were published",
                stats.messages, self.published
            )));
        }
        self.publisher_stats = Some(stats);
        drop(publisher);
        let last = Some(self.published);
        let deadline = Instant::now() + LATE;
        while !self.members.is_empty() {
            self.service(last)?;
            if Instant::now() > deadline {
                let names: Vec<&str> = (0..self.members.len())
                    .map(|i| self.fleet.name(i))
                    .collect();
                return Err(BenchError::Check(format!(
                    "{} did not report within {LATE:?} of the end of the stream",
                    names.join(", ")
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }

        self.samples.check_at_end()
    }

    fn child_error(&self, i: usize, what: String) -> BenchError {
        BenchError::Child {
            who: self.fleet.name(i).to_owned(),
            what,
        }
    }

    fn status(&self, publisher: &Publisher) -> String {
        summary::status(
            self.published,
            &self.totals,
            &self.members,
            publisher.stats().demotions,
            &self.samples,
        )
    }

    fn summary(&self, outcome: &Result<()>) -> String {
        summary::summary(
            &self.o,
            self.capacity,
            self.published,
            &self.totals,
            &self.samples,
            self.publisher_stats.as_ref(),
            outcome,
        )
    }
}

fn sleep_until(t: Instant) {
    let left = t.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}
