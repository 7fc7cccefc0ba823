//! A subscriber's bookkeeping and checks: every message is the one due (after the previous one
//! and the `Lagged` counts since), holds what was sent, and `Lagged` and `Demoted` arrive only
//! when its mode allows; at the end its counts match the subscriber's own statistics.

use shmcast::{Mode, RecvError, Sample, SubscriberStats};
use shmcast_bench::error::{BenchError, Result, failed};

use crate::message;
use crate::plan::mode_name;

/// What a receive came to, for the subscriber's loop.
pub enum Step {
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
pub struct Check {
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
    /// A check of a `mode` subscriber in a run of `seed` and `max`.
    pub fn new(mode: Mode, seed: u64, max: usize) -> Check {
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

    /// Checks what a receive returned.
    pub fn take(&mut self, got: std::result::Result<Sample<'_>, RecvError>) -> Result<Step> {
        match got {
            Ok(sample) => {
                let seq = sample.seq();
                self.sequence(seq)?;
                match message::check(&sample, seq, self.seed, self.max) {
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
    pub fn overwritten_after_demotion(&mut self) {
        self.demoted = true;
        self.overwritten += 1;
    }

    /// Compares the counts with the subscriber's own statistics.
    pub fn against(&self, stats: SubscriberStats) -> Result<()> {
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

    /// The `result` line for the parent; `end`: `left` or `stream-end`.
    pub fn report(&self, end: &str) -> String {
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
