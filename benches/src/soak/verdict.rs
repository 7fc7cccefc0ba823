//! The parent's checks on what a leaving subscriber reported: it started at a message published
//! while it joined, its received, overwritten and lagged messages add up to the distance it
//! covered, and one that saw the end of the stream saw every message up to the last. A report
//! that passes is added to the run's totals.

use shmcast::{Mode, Start};
use shmcast_bench::error::{BenchError, Result};
use shmcast_bench::process::Report;

use crate::member::Member;
use crate::tally::Totals;

/// Checks `r`, the report of member `m` of a soak over a ring of `capacity` bytes, against what
/// was published (`last`: the number of messages, once the stream has ended), and counts it.
pub fn check(
    m: &Member,
    r: &Report,
    last: Option<u64>,
    capacity: u64,
    totals: &mut Totals,
) -> Result<()> {
    let end: String = r.get("end")?;
    let start = optional(r, "start")?;
    let next = optional(r, "next")?;
    let received: u64 = r.get("received")?;
    let overwritten: u64 = r.get("overwritten")?;
    let lagged: u64 = r.get("lagged")?;
    let demoted: u64 = r.get("demoted")?;
    let Some(ready_seq) = m.ready_seq else {
        return Err(BenchError::Child {
            who: r.who.clone(),
            what: "reported before it was ready".into(),
        });
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
            Start::Oldest => m.joined_seq.saturating_sub(capacity / 16),
        };
        if !(lowest..=ready_seq).contains(&start) {
            return fail(format!(
                "started at message {start}, but {} had been published when it was started and \
                 {ready_seq} when it was connected",
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
        // No message: a lossy subscriber may still have been told it lagged (it leaves before
        // the message after), which gives no position to check.
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
                    "reached the end of the stream after message {next:?}, but {last} messages \
                     were published (it was connected at {ready_seq})"
                ));
            }
        }
        totals.stream_ends += 1;
    } else {
        totals.leaves += 1;
    }
    if demoted > 0 && m.plan.mode != Mode::Gating {
        return fail("a lossy subscriber was demoted".into());
    }
    totals.received += received;
    totals.bytes_verified += r.get::<u64>("bytes")?;
    totals.overwritten_after_demotion += overwritten;
    totals.demotions_told += demoted;
    let lost_after_demotion: u64 = r.get("lost_after_demotion")?;
    totals.lost_after_demotion += lost_after_demotion;
    totals.lagged += lagged - lost_after_demotion;
    totals.lag_reports += r.get::<u64>("lag_reports")?;
    Ok(())
}

/// The value of `key=`, or `None` for `key=none`.
fn optional(r: &Report, key: &str) -> Result<Option<u64>> {
    match r.get::<String>(key)?.as_str() {
        "none" => Ok(None),
        _ => r.get(key).map(Some),
    }
}
