//! `soak`: a long run that looks for what only time and churn bring out (a lost or corrupted
//! message, a miscounted lag, a descriptor or memory leak in the publisher), not for speed.
//!
//! This process publishes messages of random length up to `--max-size`, each carrying its
//! sequence number and checksum ([`payload::fill_soak`]), through a [`Publisher`] with a stall
//! bound of [`STALL_BOUND`]. It publishes in phases: bursts as fast as the ring allows, trickles
//! of single messages with pauses in between, and silences. Meanwhile it keeps
//! [`MIN_SUBS`]..=[`MAX_SUBS`] subscriber processes, gating and lossy, each with a random start
//! position, way of waiting and lifetime, after which it leaves cleanly. At random times it
//! stops one (`SIGSTOP` for up to a second, so that a stopped gating subscriber gets demoted) and
//! kills one (`SIGKILL`); it also kills about one join in seven while it starts: before, during
//! or just after its handshake.
//!
//! Every subscriber checks every byte of every message ([`payload::check_soak`]), and its
//! sequence number:
//! * gating: each message is the one after the previous one, from the one it joined at, and no
//!   `Lagged` arrives unless `Demoted` came first;
//! * lossy, and gating after `Demoted`: each message is the previous one plus one plus the
//!   `Lagged(n)` counts since, so received and missed messages add up to the sequence distance
//!   exactly;
//! * a gating subscriber's in-place sample may be overwritten once it is demoted (the documented
//!   end of the in-place promise): a sample that fails its check counts as overwritten only if
//!   the next receive says `Demoted`, and as corruption otherwise.
//!
//! A leaving subscriber reports its totals on its stdout; the parent checks that it started at a
//! message published while it joined, and that one that saw the end of the stream saw every
//! message up to the last. The parent samples its own descriptors and resident memory four
//! times a second. It fails if, at any subscriber count, the fewest descriptors seen in the last
//! third of the run exceed the fewest seen early on (a descriptor per departed subscriber would),
//! if resident memory grows by more than [`RSS_GROWTH`] from early on to the last third, or if
//! the descriptors are not back to their count before the publisher once it and every
//! subscriber are gone.

use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use shmcast::{LoanError, Mode, Publisher, PublisherStats, RecvError, Sample, Start, Subscriber};

use crate::error::{BenchError, Result, failed, sys};
use crate::fanout::{STARTUP, ring_capacity, unique_topic};
use crate::options::SoakOptions;
use crate::payload;
use crate::process::{self, Fleet, Report, Spec};
use crate::report::Progress;
use crate::rng::Rng;

/// The child role of a soak subscriber.
pub const ROLE: &str = "soak-subscriber";

/// How long a blocking loan waits on a stalled gating subscriber before demoting it.
pub const STALL_BOUND: Duration = Duration::from_millis(200);

/// Fewest subscribers the soak keeps (a leave may go below until the next housekeeping round).
pub const MIN_SUBS: usize = 2;

/// Most subscribers the soak keeps.
pub const MAX_SUBS: usize = 5;

/// Most resident memory the publisher's process may gain from early on to the last third.
pub const RSS_GROWTH: u64 = 2 << 20;

/// How often the parent looks after its children: lines, exits, kills, stops, joins.
const TICK: Duration = Duration::from_millis(20);

/// How often the parent counts its descriptors and resident memory.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// How often a progress line goes to stderr.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Mean time between kills, between stops, and between changes of the population target.
const KILL_EVERY: Duration = Duration::from_millis(1500);
const STOP_EVERY: Duration = Duration::from_millis(2500);
const RETARGET_EVERY: Duration = Duration::from_secs(3);

/// Share of joins killed on purpose, a random moment up to [`KILL_JOINING_WITHIN`] after the
/// spawn: before the exec, during the handshake or just after it. Random kills rarely find a
/// subscriber still starting.
const KILL_JOINING: f64 = 0.15;
const KILL_JOINING_WITHIN: Duration = Duration::from_millis(5);

/// How long a stop lasts: from well below the stall bound to five times it.
const STOP_FOR: (Duration, Duration) = (Duration::from_millis(50), Duration::from_millis(1000));

/// How long a subscriber stays before it leaves by itself.
const LIFETIME: (Duration, Duration) = (Duration::from_millis(300), Duration::from_secs(8));

/// A loan that waits this long despite the stall bound means the publisher hangs.
const LOAN_LIMIT: Duration = Duration::from_secs(30);

/// How long past its lifetime (or past the end of the stream) a subscriber may take to report.
const LATE: Duration = Duration::from_secs(30);

/// How long the publisher may keep counting a subscriber that is gone.
const DEPARTURE: Duration = Duration::from_secs(10);

/// How a subscriber waits for its next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// `recv_timeout`.
    Block,
    /// `try_recv`, and `poll` on the subscriber's descriptor when it is empty.
    Poll,
}

/// What one subscriber does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    mode: Mode,
    start: Start,
    wait: Wait,
    spin: u32,
    lifetime: Duration,
}

impl Plan {
    fn random(rng: &mut Rng) -> Plan {
        Plan {
            mode: rng.pick(&[Mode::Gating, Mode::Lossy]),
            start: rng.pick(&[Start::Newest, Start::Newest, Start::Oldest]),
            wait: rng.pick(&[Wait::Block, Wait::Poll]),
            spin: rng.pick(&[0, 0, 64]),
            lifetime: rng.duration(LIFETIME.0, LIFETIME.1),
        }
    }

    fn args(&self) -> [String; 5] {
        [
            mode_name(self.mode).into(),
            match self.start {
                Start::Newest => "newest",
                Start::Oldest => "oldest",
            }
            .into(),
            match self.wait {
                Wait::Block => "block",
                Wait::Poll => "poll",
            }
            .into(),
            self.spin.to_string(),
            self.lifetime.as_millis().to_string(),
        ]
    }

    fn parse(args: &[String]) -> Result<Plan> {
        let [mode, start, wait, spin, lifetime_ms] = args else {
            return Err(BenchError::Usage("a soak plan has 5 words".into()));
        };
        Ok(Plan {
            mode: match mode.as_str() {
                "gating" => Mode::Gating,
                "lossy" => Mode::Lossy,
                _ => return Err(BenchError::Usage(format!("unknown mode {mode:?}"))),
            },
            start: match start.as_str() {
                "newest" => Start::Newest,
                "oldest" => Start::Oldest,
                _ => return Err(BenchError::Usage(format!("unknown start {start:?}"))),
            },
            wait: match wait.as_str() {
                "block" => Wait::Block,
                "poll" => Wait::Poll,
                _ => return Err(BenchError::Usage(format!("unknown wait {wait:?}"))),
            },
            spin: process::parse_arg(spin)?,
            lifetime: Duration::from_millis(process::parse_arg(lifetime_ms)?),
        })
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Gating => "gating",
        Mode::Lossy => "lossy",
    }
}

/// One subscriber process, in the same order as the fleet's children.
struct Member {
    plan: Plan,
    spawned: Instant,
    /// Messages published when it was spawned: a `Newest` start is at least this.
    joined_seq: u64,
    /// Messages published when its `ready` line was seen: every start is at most this.
    ready_seq: Option<u64>,
    stopped_until: Option<Instant>,
    result: Option<Report>,
}

/// What the publisher is doing between two housekeeping rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// As fast as the ring allows.
    Burst,
    /// One message, then a pause of up to 2 ms.
    Trickle,
    /// Nothing: subscribers park.
    Quiet,
}

impl Phase {
    fn random(rng: &mut Rng, now: Instant) -> (Phase, Instant) {
        let (phase, lo, hi) = match rng.below(10) {
            0..4 => (Phase::Burst, 20, 300),
            4..8 => (Phase::Trickle, 100, 800),
            _ => (Phase::Quiet, 20, 500),
        };
        let length = rng.duration(Duration::from_millis(lo), Duration::from_millis(hi));
        (phase, now + length)
    }
}

/// Everything counted over the run.
#[derive(Debug, Default)]
struct Totals {
    bytes_published: u64,
    joins: u64,
    gating_joins: u64,
    leaves: u64,
    kills: u64,
    /// Kills before the subscriber said it was connected.
    kills_starting: u64,
    stream_ends: u64,
    stops: u64,
    received: u64,
    bytes_verified: u64,
    lag_reports: u64,
    lagged: u64,
    demotions_told: u64,
    lost_after_demotion: u64,
    overwritten_after_demotion: u64,
}

/// Descriptor and memory samples, by part of the run.
#[derive(Debug, Default)]
struct Samples {
    fds_before: usize,
    fds_with_publisher: usize,
    fds_at_end: Option<usize>,
    /// Fewest descriptors seen at each subscriber count while every subscriber was admitted and
    /// counted by the publisher: from 1/6 to 1/3 of the run, and in the last third.
    fds_early: [Option<usize>; MAX_SUBS + 1],
    fds_late: [Option<usize>; MAX_SUBS + 1],
    rss_early: Option<u64>,
    rss_late: Option<u64>,
    fds_now: usize,
    rss_now: u64,
}

/// Which part of the run a sample falls in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Window {
    WarmUp,
    Early,
    Middle,
    Late,
}

struct Soak {
    o: SoakOptions,
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
pub fn run(o: &SoakOptions) -> Result<()> {
    eprintln!(
        "shmcast-bench: soak for {} s with seed {} (repeat the message sizes with --seed {})",
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
    fn new(o: SoakOptions) -> Soak {
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
        let len = payload::soak_len(self.o.seed, seq, self.o.max_size);
        let mut loan = publisher
            .loan_timeout(len, LOAN_LIMIT)
            .map_err(|e| match e {
                LoanError::Timeout => BenchError::Check(format!(
                    "the publisher waited {LOAN_LIMIT:?} for ring space for message {seq} \
                     despite its stall bound of {STALL_BOUND:?}"
                )),
                e => failed(format!("loaning message {seq}"))(e),
            })?;
        payload::fill_soak(&mut loan, seq);
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
        self.check_result(i, &report, last)?;
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

    /// Checks a leaving subscriber's report against what was published, and counts it.
    fn check_result(&mut self, i: usize, r: &Report, last: Option<u64>) -> Result<()> {
        let m = &self.members[i];
        let end: String = r.get("end")?;
        let start = optional(r, "start")?;
        let next = optional(r, "next")?;
        let received: u64 = r.get("received")?;
        let overwritten: u64 = r.get("overwritten")?;
        let lagged: u64 = r.get("lagged")?;
        let demoted: u64 = r.get("demoted")?;
        let Some(ready_seq) = m.ready_seq else {
            return Err(self.child_error(i, "reported before it was ready".into()));
        };
        let fail = |what: String| Err(BenchError::Check(format!("{}: {what}", r.who)));
        match (end.as_str(), last) {
            ("left", _) | ("stream-end", Some(_)) => {}
            _ => {
                return fail(format!(
                    "ended with {end:?} while the stream was at {last:?}"
                ));
            }
        }
        if let Some(start) = start {
            let lowest = match m.plan.start {
                Start::Newest => m.joined_seq,
                // The oldest message in the ring is at most a ring of empty frames back.
                Start::Oldest => m.joined_seq.saturating_sub(self.capacity / 16),
            };
            if !(lowest..=ready_seq).contains(&start) {
                return fail(format!(
                    "started at message {start}, but {} had been published when it was started \
                     and {ready_seq} when it was connected",
                    m.joined_seq
                ));
            }
        }
        match (start, next) {
            (Some(start), Some(next)) if next - start != received + overwritten + lagged => {
                return fail(format!(
                    "messages {start}..{next}: {received} received, {overwritten} overwritten and \
                     {lagged} reported lagged do not add up"
                ));
            }
            // No message: a lossy subscriber may still have been told it lagged (it leaves
            // before the message after), which gives no position to check.
            (None, None) if received + overwritten == 0 => {}
            (Some(_), Some(_)) => {}
            _ => return fail(format!("inconsistent report {:?}", r.words)),
        }
        if let (Some(last), "stream-end") = (last, end.as_str()) {
            match next {
                Some(next) if next == last => {}
                None if ready_seq >= last => {}
                _ => {
                    return fail(format!(
                        "reached the end of the stream after message {next:?}, but {last} \
                         messages were published (it was connected at {ready_seq})"
                    ));
                }
            }
            self.totals.stream_ends += 1;
        } else {
            self.totals.leaves += 1;
        }
        if demoted > 0 && m.plan.mode != Mode::Gating {
            return fail("a lossy subscriber was demoted".into());
        }
        let t = &mut self.totals;
        t.received += received;
        t.bytes_verified += r.get::<u64>("bytes")?;
        t.overwritten_after_demotion += overwritten;
        t.demotions_told += demoted;
        let lost_after_demotion: u64 = r.get("lost_after_demotion")?;
        t.lost_after_demotion += lost_after_demotion;
        t.lagged += lagged - lost_after_demotion;
        t.lag_reports += r.get::<u64>("lag_reports")?;
        Ok(())
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
        let s = &mut self.samples;
        s.fds_now = fd_count()?;
        s.rss_now = crate::sys::rss_bytes().map_err(sys("reading /proc/self/statm"))?;
        let settled = self.members.iter().all(|m| m.ready_seq.is_some())
            && publisher.subscriber_count() == self.members.len();
        let n = self.members.len();
        let fewest = |slot: &mut Option<usize>, fds: usize| {
            *slot = Some(slot.map_or(fds, |f| f.min(fds)));
        };
        match window(now - self.started, self.o.duration) {
            Window::Early => {
                s.rss_early = s.rss_early.max(Some(s.rss_now));
                if settled && n <= MAX_SUBS {
                    fewest(&mut s.fds_early[n], s.fds_now);
                }
            }
            Window::Late => {
                s.rss_late = s.rss_late.max(Some(s.rss_now));
                if settled && n <= MAX_SUBS {
                    fewest(&mut s.fds_late[n], s.fds_now);
                }
            }
            Window::WarmUp | Window::Middle => {}
        }
        Ok(())
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

        let s = &mut self.samples;
        let fds = fd_count()?;
        s.fds_at_end = Some(fds);
        if fds != s.fds_before {
            return Err(BenchError::Check(format!(
                "{} descriptors open after the publisher and every subscriber are gone, {} \
                 before the publisher",
                fds, s.fds_before
            )));
        }
        for n in 0..=MAX_SUBS {
            if let (Some(early), Some(late)) = (s.fds_early[n], s.fds_late[n])
                && late > early
            {
                return Err(BenchError::Check(format!(
                    "descriptors grow: with {n} subscribers at least {late} were open in the last \
                     third of the run, {early} early on"
                )));
            }
        }
        if let (Some(early), Some(late)) = (s.rss_early, s.rss_late)
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

    fn child_error(&self, i: usize, what: String) -> BenchError {
        BenchError::Child {
            who: self.fleet.name(i).to_owned(),
            what,
        }
    }

    fn status(&self, publisher: &Publisher) -> String {
        let t = &self.totals;
        let gating = self
            .members
            .iter()
            .filter(|m| m.plan.mode == Mode::Gating)
            .count();
        let stopped = self
            .members
            .iter()
            .filter(|m| m.stopped_until.is_some())
            .count();
        format!(
            "{} messages ({}), {} subscribers ({gating} gating, {stopped} stopped); joins {}, \
             leaves {}, kills {}, stops {}, demotions {}; fds {}, RSS {}",
            self.published,
            gib(t.bytes_published),
            self.members.len(),
            t.joins,
            t.leaves,
            t.kills,
            t.stops,
            publisher.stats().demotions,
            self.samples.fds_now,
            mib(self.samples.rss_now),
        )
    }

    fn summary(&self, outcome: &Result<()>) -> String {
        let t = &self.totals;
        let s = &self.samples;
        let mut out = format!(
            "== soak: {} s, seed {}, messages of 0..={} bytes, {} KiB ring, stall bound {} ms, \
             {MIN_SUBS}..{MAX_SUBS} subscribers\n\n",
            self.o.duration.as_secs(),
            self.o.seed,
            self.o.max_size,
            self.capacity / 1024,
            STALL_BOUND.as_millis()
        );
        let mut line = |label: &str, text: String| {
            out.push_str(&format!("{label:<13}{text}\n"));
        };
        line(
            "published",
            format!("{} messages, {}", self.published, gib(t.bytes_published)),
        );
        line(
            "verified",
            format!(
                "{} messages, {}, every byte, by the subscribers together",
                t.received,
                gib(t.bytes_verified)
            ),
        );
        line(
            "subscribers",
            format!(
                "{} joined ({} gating, {} lossy); {} left, {} killed ({} while starting), {} \
                 read to the end of the stream; {} stops of {}..{} ms",
                t.joins,
                t.gating_joins,
                t.joins - t.gating_joins,
                t.leaves,
                t.kills,
                t.kills_starting,
                t.stream_ends,
                t.stops,
                STOP_FOR.0.as_millis(),
                STOP_FOR.1.as_millis()
            ),
        );
        line(
            "lag",
            format!(
                "{} Lagged reports for {} missed messages",
                t.lag_reports,
                t.lagged + t.lost_after_demotion
            ),
        );
        let demotions = self
            .publisher_stats
            .as_ref()
            .map_or("?".into(), |p| p.demotions.to_string());
        line(
            "demotions",
            format!(
                "{demotions} by the publisher; {} told to subscribers that went on receiving, \
                 which then missed {} messages and found {} held samples overwritten",
                t.demotions_told, t.lost_after_demotion, t.overwritten_after_demotion
            ),
        );
        if let Some(p) = &self.publisher_stats {
            line(
                "publisher",
                format!(
                    "{} admitted, {} refused, {} departed; {} wake syscalls, {} waits for space",
                    p.admitted, p.refused, p.departed, p.wake_syscalls, p.space_waits
                ),
            );
        }
        let counts = |fds: &[Option<usize>]| {
            fds.iter()
                .map(|f| f.map_or("-".into(), |f| f.to_string()))
                .collect::<Vec<_>>()
                .join("/")
        };
        line(
            "descriptors",
            format!(
                "{} before the publisher, {} with it, {} at the end; fewest with 0/1/2/3/4/5 \
                 subscribers: {} early, {} in the last third",
                s.fds_before,
                s.fds_with_publisher,
                s.fds_at_end.map_or("?".into(), |f| f.to_string()),
                counts(&s.fds_early),
                counts(&s.fds_late)
            ),
        );
        let show = |rss: Option<u64>| rss.map_or("?".into(), mib);
        line(
            "memory",
            format!(
                "RSS at most {} early, {} in the last third (growth allowed: {})",
                show(s.rss_early),
                show(s.rss_late),
                mib(RSS_GROWTH)
            ),
        );
        line(
            "result",
            match outcome {
                Ok(()) => "PASS".into(),
                Err(e) => format!("FAIL: {e}"),
            },
        );
        out
    }
}

/// Which part of the run `elapsed` falls in: warm-up (the first sixth), early (to a third),
/// middle, late (the last third).
fn window(elapsed: Duration, total: Duration) -> Window {
    let f = elapsed.as_secs_f64() / total.as_secs_f64();
    match f {
        f if f < 1.0 / 6.0 => Window::WarmUp,
        f if f < 1.0 / 3.0 => Window::Early,
        f if f < 2.0 / 3.0 => Window::Middle,
        _ => Window::Late,
    }
}

fn fd_count() -> Result<usize> {
    shmcast::test_support::open_fd_count().map_err(sys("counting open descriptors"))
}

fn sleep_until(t: Instant) {
    let left = t.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}

fn optional(r: &Report, key: &str) -> Result<Option<u64>> {
    match r.get::<String>(key)?.as_str() {
        "none" => Ok(None),
        _ => r.get(key).map(Some),
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// What a receive came to, for the subscriber's loop.
enum Step {
    /// A message or a lag report, checked.
    Went,
    /// Nothing yet.
    Idle,
    /// The publisher is gone and everything was received.
    End,
    /// An in-place sample failed its check: corruption, unless the publisher demoted this
    /// subscriber while it was reading.
    Suspect(BenchError),
}

/// A subscriber's bookkeeping and checks.
#[derive(Debug)]
struct Check {
    mode: Mode,
    seed: u64,
    max: usize,
    demoted: bool,
    /// Sequence number of the first message accounted for.
    start: Option<u64>,
    /// Sequence number the next message must carry.
    next: Option<u64>,
    /// Lagged counts before the first message.
    lag_before_first: u64,
    received: u64,
    bytes: u64,
    lagged: u64,
    lag_reports: u64,
    lost_after_demotion: u64,
    overwritten: u64,
}

impl Check {
    fn new(mode: Mode, seed: u64, max: usize) -> Check {
        Check {
            mode,
            seed,
            max,
            demoted: false,
            start: None,
            next: None,
            lag_before_first: 0,
            received: 0,
            bytes: 0,
            lagged: 0,
            lag_reports: 0,
            lost_after_demotion: 0,
            overwritten: 0,
        }
    }

    /// Whether samples are views of the ring (gating, not told of a demotion).
    fn in_place(&self) -> bool {
        self.mode == Mode::Gating && !self.demoted
    }

    fn take(&mut self, got: std::result::Result<Sample<'_>, RecvError>) -> Result<Step> {
        match got {
            Ok(sample) => {
                let seq = sample.seq();
                self.sequence(seq)?;
                match payload::check_soak(&sample, seq, self.seed, self.max) {
                    Ok(()) => {
                        self.received += 1;
                        self.bytes += sample.len() as u64;
                        Ok(Step::Went)
                    }
                    Err(e) if self.in_place() => Ok(Step::Suspect(e)),
                    Err(e) => Err(e),
                }
            }
            Err(RecvError::Empty | RecvError::Timeout) => Ok(Step::Idle),
            Err(RecvError::Lagged(n)) => {
                if self.in_place() {
                    return Err(BenchError::Check(format!(
                        "a gating subscriber was told Lagged({n}) without being told Demoted"
                    )));
                }
                if n == 0 {
                    return Err(BenchError::Check("told Lagged(0)".into()));
                }
                self.lagged += n;
                self.lag_reports += 1;
                if self.demoted {
                    self.lost_after_demotion += n;
                }
                match &mut self.next {
                    Some(next) => *next += n,
                    None => self.lag_before_first += n,
                }
                Ok(Step::Went)
            }
            Err(RecvError::Demoted) => {
                if !self.in_place() {
                    return Err(BenchError::Check(format!(
                        "told Demoted as a {} subscriber{}",
                        mode_name(self.mode),
                        if self.demoted { " already demoted" } else { "" }
                    )));
                }
                self.demoted = true;
                Ok(Step::Went)
            }
            Err(RecvError::Disconnected) => Ok(Step::End),
            Err(e) => Err(failed("soak receive")(e)),
        }
    }

    /// Checks that message `seq` is the one due.
    fn sequence(&mut self, seq: u64) -> Result<()> {
        match self.next {
            None => {
                let start = seq.checked_sub(self.lag_before_first).ok_or_else(|| {
                    BenchError::Check(format!(
                        "first message {seq} after {} reported lagged ones",
                        self.lag_before_first
                    ))
                })?;
                self.start = Some(start);
            }
            Some(next) if seq == next => {}
            Some(next) if self.in_place() => {
                return Err(BenchError::Check(format!(
                    "gating loss: message {seq} where {next} was due, without Demoted"
                )));
            }
            Some(next) => {
                return Err(BenchError::Check(format!(
                    "miscounted lag: message {seq} where {next} was due after the Lagged counts"
                )));
            }
        }
        self.next = Some(seq + 1);
        Ok(())
    }

    /// A sample that failed its check while the publisher demoted this subscriber.
    fn overwritten_after_demotion(&mut self) {
        self.demoted = true;
        self.overwritten += 1;
    }

    /// Compares the counts with the subscriber's own statistics.
    fn against(&self, stats: shmcast::SubscriberStats) -> Result<()> {
        if stats.received != self.received + self.overwritten
            || stats.lagged != self.lagged
            || stats.lag_events != self.lag_reports
            || stats.gating != self.in_place()
        {
            return Err(BenchError::Check(format!(
                "counted {} received, {} overwritten, {} lagged in {} reports, demoted {}; the \
                 subscriber's statistics say {stats:?}",
                self.received, self.overwritten, self.lagged, self.lag_reports, self.demoted
            )));
        }
        Ok(())
    }

    fn report(&self, end: &str) -> String {
        let show = |v: Option<u64>| v.map_or("none".into(), |v| v.to_string());
        format!(
            "result end={end} start={} next={} received={} overwritten={} lagged={} \
             lag_reports={} lost_after_demotion={} demoted={} bytes={}",
            show(self.start),
            show(self.next),
            self.received,
            self.overwritten,
            self.lagged,
            self.lag_reports,
            self.lost_after_demotion,
            u64::from(self.demoted),
            self.bytes
        )
    }
}

/// The child side: `soak-subscriber TOPIC SEED MAX_SIZE MODE START WAIT SPIN LIFETIME_MS`.
pub fn child(args: &[String]) -> Result<()> {
    let [topic, seed, max, plan @ ..] = args else {
        return Err(BenchError::Usage(format!(
            "{ROLE} takes 8 arguments, got {}",
            args.len()
        )));
    };
    let seed: u64 = process::parse_arg(seed)?;
    let max: usize = process::parse_arg(max)?;
    let plan = Plan::parse(plan)?;
    let connected = Subscriber::builder(topic.as_str())
        .mode(plan.mode)
        .start(plan.start)
        .spin(plan.spin)
        .connect_timeout(STARTUP)
        .connect();
    let mut sub = match connected {
        Ok(sub) => sub,
        Err(e) => return Err(failed("connecting a soak subscriber")(e)),
    };
    process::say("ready")?;
    let leave_at = Instant::now() + plan.lifetime;
    let mut check = Check::new(plan.mode, seed, max);
    let end = loop {
        let left = leave_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break "left";
        }
        let wait = left.min(Duration::from_secs(1));
        let step = match plan.wait {
            Wait::Block => check.take(sub.recv_timeout(wait))?,
            Wait::Poll => {
                let got = sub.try_recv();
                if let Err(RecvError::Empty) = got {
                    // The result may hold a sample, which borrows the subscriber until dropped.
                    drop(got);
                    crate::sys::wait_readable(sub.as_fd(), wait)
                        .map_err(sys("poll on a subscriber"))?;
                    Step::Idle
                } else {
                    check.take(got)?
                }
            }
        };
        match step {
            Step::Went | Step::Idle => {}
            Step::End => break "stream-end",
            // The sample is dropped (released) by now; a demotion shows at the next receive.
            Step::Suspect(err) => match sub.try_recv() {
                Err(RecvError::Demoted) => check.overwritten_after_demotion(),
                _ => return Err(err),
            },
        }
    };
    check.against(sub.stats())?;
    process::say(&check.report(end))
}
