//! A loan's wait for space once the ring is full, shared by the blocking loans and the async
//! ones (`shmcast::tokio`): its deadline, the stall bound that demotes the slowest gating
//! subscriber, the short poll for space before sleeping, and the announcement that makes
//! releasing subscribers ring the publisher.
//!
//! # Overload and failure
//!
//! A stopped gating subscriber holds the publisher back by at most the stall bound, if one is
//! set: then it is demoted (and told) and the loan continues. Several stopped at once (a frozen
//! cgroup) cost at most two bounds together, not one each: when the bound expires, every gating
//! subscriber still holding the ring that has not moved since the stall began is demoted with
//! the slowest; one that moved meanwhile is alive, and gets a bound of its own. One stopped
//! while caught up holds nothing yet: it cannot be told from a live subscriber with nothing to
//! read, and it is demoted, with every other such, when the next stall's bound expires, once
//! the publisher has written up to a ring more.
//!
//! The stall counts from the moment loans first found the ring full, across loans
//! ([`Stall`]): a timed loan that gave up, an async loan dropped in a `select!` or a `try_loan`
//! that found the ring full leave it running, so a publisher that retries is bounded as one
//! that waits in a single loan. Without a bound only the caller's own timeout ends a wait; the
//! stall is reported once after [`DEFAULT_STALL_BOUND`].

use std::time::{Duration, Instant};

use shmcast_core::{SubscriberId, Writer};

use crate::error::LoanError;
use crate::events;
use crate::shared::Shared;
use crate::spin::Spin;
use crate::wake::{self, Link};
use std::os::fd::{AsFd, BorrowedFd};

/// The default [`PublisherBuilder::stall_bound`](crate::PublisherBuilder::stall_bound): 5 s. Far
/// longer than any scheduling delay, page fault storm or pause of a healthy subscriber on a
/// loaded machine (those are milliseconds), so a live subscriber is never demoted by accident;
/// short enough that a subscriber stopped for good costs the publisher one pause that a person
/// notices, not a freeze.
pub const DEFAULT_STALL_BOUND: Duration = Duration::from_secs(5);

/// How long a loan waits for space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `try_loan`: not at all.
    Never,
    /// `loan`: until space frees up (or the stall bound demotes the slowest subscriber).
    Forever,
    /// `loan_timeout`: at most this long.
    For(Duration),
}

/// What a loan that found the ring full does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Reserve again at once (space freed up, or a subscriber was demoted).
    Retry,
    /// The wait is announced: sleep on the space set at most this long, then call
    /// [`FullWait::end`] and reserve again.
    Sleep(Duration),
}

/// How long the ring has stayed full for the gating subscribers, across loans: the publisher
/// keeps one. Only a reservation that fits ends it (a demotion restarts it), so a timed loan
/// that gave up, a cancelled async loan or a `try_loan` that found the ring full leave it
/// running.
#[derive(Debug, Default)]
pub(crate) struct Stall {
    /// When loans first found the ring full since the last reservation that fit, or since the
    /// last demotion.
    since: Option<Instant>,
    /// Where each gating subscriber's cursor was at `since` (kept only under a stall bound).
    held: Vec<(SubscriberId, u64)>,
    /// Whether a stall without a bound was reported.
    reported: bool,
}

impl Stall {
    /// Starts the stall at `now`, noting where each gating subscriber stands if `bounded`.
    fn begin(&mut self, writer: &Writer<Link>, now: Instant, bounded: bool) -> Instant {
        self.since = Some(now);
        self.held.clear();
        if bounded {
            self.held.extend(writer.gating_cursors());
        }
        now
    }

    /// A reservation fit: the subscribers make progress.
    pub(crate) fn end(&mut self) {
        if self.since.is_some() {
            self.since = None;
            self.reported = false;
        }
    }
}

/// The clocks of one loan's wait. The clock is read only once the ring is found full: a loan
/// that fits at once (the common case) makes no clock read. The loan's timeout counts from
/// then; the stall from when loans first found the ring full ([`Stall`]).
pub(crate) struct FullWait {
    wait: Wait,
    /// Whether this wait runs on an event loop's or async runtime's thread, which a poll
    /// between yields would take from the loop's other work ([`in_event_loop`](Self::in_event_loop)).
    event_loop: bool,
    stall_bound: Option<Duration>,
    first_full: Option<Instant>,
}

impl FullWait {
    /// A loan waiting as `wait` says, under the publisher's `stall_bound`.
    pub(crate) fn new(wait: Wait, stall_bound: Option<Duration>) -> Self {
        FullWait {
            wait,
            event_loop: false,
            stall_bound,
            first_full: None,
        }
    }

    /// This wait, on an event loop's or async runtime's thread: it polls for space only where
    /// a core is free, never between yields, which would hold the loop's other work back; where
    /// none is, the loop waits for its doorbells at once.
    pub(crate) fn in_event_loop(self) -> Self {
        FullWait {
            event_loop: true,
            ..self
        }
    }

    /// The ring has no room for `len` bytes: gives up (`Full`, `Timeout`), demotes once the
    /// `stall` has lasted the stall bound, polls briefly for space, or announces the wait and
    /// says how long to sleep.
    pub(crate) fn on_full(
        &mut self,
        shared: &Shared,
        writer: &mut Writer<Link>,
        spin: &mut Spin,
        stall: &mut Stall,
        len: usize,
    ) -> Result<Next, LoanError> {
        let now = Instant::now();
        let since = match stall.since {
            Some(since) => since,
            None => stall.begin(writer, now, self.stall_bound.is_some()),
        };
        let first = *self.first_full.get_or_insert(now);
        let deadline = match self.wait {
            Wait::For(timeout) => first.checked_add(timeout),
            _ => None,
        };
        if deadline.is_some_and(|d| now >= d) {
            return Err(LoanError::Timeout);
        }
        let stall_at = self.stall_bound.map(|b| since + b);
        if stall_at.is_some_and(|t| now >= t) {
            let slowest = writer.slowest_gating();
            events::stalled(&shared.topic, now - since, conn_of(writer, slowest), true);
            if let Some(id) = slowest {
                demote(shared, writer, id);
            }
            // The next one holding the ring has had the same bound if it has not moved since
            // the stall began: stopped with the slowest, demoted with it.
            while !writer.has_space_for(len)
                && let Some(id) = writer.slowest_gating()
                && stall
                    .held
                    .contains(&(id, writer.gating_cursor(id).unwrap_or(u64::MAX)))
            {
                demote(shared, writer, id);
            }
            stall.begin(writer, now, true);
            return Ok(Next::Retry);
        }
        if self.wait == Wait::Never {
            return Err(LoanError::Full);
        }
        // Without a stall bound nothing ends the wait but the subscribers: say so once.
        if self.stall_bound.is_none() && !stall.reported && now >= since + DEFAULT_STALL_BOUND {
            stall.reported = true;
            let slowest = writer.slowest_gating();
            events::stalled(&shared.topic, now - since, conn_of(writer, slowest), false);
        }
        // A subscriber about to release usually frees the space within microseconds: poll for
        // it before announcing a wait (see `spin` for the budget and when it is none).
        if spin.spin_as(|| writer.has_space_for(len), !self.event_loop) {
            return Ok(Next::Retry);
        }
        // Cannot fail: the reservation accepted `len`.
        let sleep = writer
            .prepare_wait_for_space(len)
            .map_err(|_| LoanError::Full)?;
        if !sleep {
            writer.end_wait_for_space();
            return Ok(Next::Retry);
        }
        let until = match (deadline, stall_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = until
            .map(|t| t.saturating_duration_since(Instant::now()))
            .map_or(wake::PARK_RECHECK, |t| t.min(wake::PARK_RECHECK));
        Ok(Next::Sleep(timeout))
    }

    /// Ends a sleep that [`on_full`](Self::on_full) announced: withdraws the announcement and
    /// takes the doorbells of the `tokens` the space set reported.
    pub(crate) fn end(shared: &Shared, writer: &mut Writer<Link>, tokens: &[u64]) {
        writer.end_wait_for_space();
        shared.space.drain(writer, tokens);
    }
}

/// Ends a sleep announced by [`FullWait::on_full`] for a caller that waited elsewhere (in an
/// event loop, on a reactor) or gave up waiting: withdraws the announcement, then takes
/// whatever doorbells the space set holds, so that it is not left readable for nothing. A
/// subscriber that saw the announcement just before it was withdrawn may still ring after
/// that: the next wait takes its doorbell.
pub(crate) fn end_now(shared: &Shared) {
    let mut writer = shared.lock();
    writer.end_wait_for_space();
    let mut tokens = [0u64; wake::SPACE_EVENTS];
    // The set reports 16 at a time: a few rounds take what many subscribers rang, and the bound
    // keeps one that floods its connection to a few reads.
    for _ in 0..END_ROUNDS {
        let ready = shared.space.wait(&mut tokens, Duration::ZERO).unwrap_or(0);
        shared.space.drain(&writer, &tokens[..ready]);
        if ready < tokens.len() {
            break;
        }
    }
}

/// Most rounds of [`end_now`]: what 128 subscribers rang.
const END_ROUNDS: usize = 8;

/// Demotes `id` and wakes it so a parked subscriber learns of it.
pub(crate) fn demote(shared: &Shared, writer: &mut Writer<Link>, id: SubscriberId) {
    if writer.demote(id) {
        if let Some(conn) = conn_of(writer, Some(id)) {
            events::demoted(&shared.topic, conn, id);
        }
        shared.wake(writer, |w, wake| w.wake_one(id, wake));
    }
}

/// The connection of subscriber `id`, which events read the peer's credentials from.
fn conn_of(writer: &Writer<Link>, id: Option<SubscriberId>) -> Option<BorrowedFd<'_>> {
    id.and_then(|id| writer.attachment(id))
        .map(|link| link.conn.as_fd())
}
