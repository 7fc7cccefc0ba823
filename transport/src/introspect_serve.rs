//! The publisher's side of introspection: the snapshot its server thread takes for an INSPECT
//! request, and the bound on how often it takes one.
//!
//! # Overload and failure
//!
//! * A client is admitted to ask as a subscriber is (credentials first, then the pending
//!   handshake limit); it gets one INFO record, never a descriptor, and its connection is closed.
//! * At most [`ANSWERS_PER_SECOND`] snapshots a second: more requests are refused as busy, so a
//!   client asking in a loop costs the publisher a bounded share of a lock it publishes under.
//! * The writer's lock is held only to copy its counters and subscriber table; reading each
//!   peer's credentials and executable happens after it is released.
//! * A record that the client's socket cannot take at once is dropped with the connection.

use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shmcast_core::{Mode, SubscriberId};

use crate::contract::{Contract, MessageType};
use crate::introspect::{
    MAX_ROWS, ProcessInfo, SubscriberRow, TopicCounters, TopicInfo, shown_exe,
};
use crate::shared::Shared;
use crate::sys;

/// Most INFO records a publisher sends in one second.
pub(crate) const ANSWERS_PER_SECOND: u32 = 20;

/// Counts answers in the current one-second window.
pub(crate) struct AnswerBudget {
    window: Instant,
    used: u32,
}

impl AnswerBudget {
    pub(crate) fn new(now: Instant) -> AnswerBudget {
        AnswerBudget {
            window: now,
            used: 0,
        }
    }

    /// Whether one more answer fits the budget at `now` (and takes it if so).
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.used = 0;
        }
        if self.used >= ANSWERS_PER_SECOND {
            return false;
        }
        self.used += 1;
        true
    }
}

/// The topic's state now. `peer` gives each subscriber's connection and the mode it asked for.
pub(crate) fn snapshot<'a>(
    shared: &Shared,
    started: Instant,
    message: &MessageType,
    peer: impl Fn(SubscriberId) -> Option<(BorrowedFd<'a>, Mode)>,
) -> TopicInfo {
    let (stats, cfg, count, mut table) = {
        let w = shared.lock();
        let table: Vec<_> = w.subscribers().take(MAX_ROWS).collect();
        (w.stats(), w.config(), w.subscriber_count(), table)
    };
    table.sort_by_key(|s| s.id);
    let subscribers = table
        .into_iter()
        .map(|s| {
            let (process, requested) = match peer(s.id) {
                Some((conn, requested)) => (process_of(conn), requested),
                None => (
                    ProcessInfo {
                        pid: None,
                        uid: u32::MAX,
                        exe: None,
                    },
                    s.mode,
                ),
            };
            SubscriberRow {
                id: s.id.0,
                process,
                // A lossy subscriber asked for lossy; only a gating one can be demoted.
                requested: if s.mode == Mode::Gating {
                    Mode::Gating
                } else {
                    requested
                },
                mode: s.mode,
                parked: s.parked,
                cursor: s.cursor,
                lag_bytes: s.lag_bytes,
                lag_messages: s.lag_messages,
                received: s.received,
                lagged: s.lagged,
            }
        })
        .collect();
    TopicInfo {
        publisher: ProcessInfo {
            pid: Some(std::process::id()),
            uid: sys::process::getuid(),
            exe: std::env::current_exe().ok().map(|e| shown_exe(&e)),
        },
        uptime: started.elapsed(),
        contract: Contract::new(message.clone(), cfg.max_payload()),
        capacity: cfg.capacity(),
        counters: TopicCounters {
            messages: stats.messages,
            wake_syscalls: shared.wake_syscalls.load(Ordering::Relaxed),
            full: stats.full,
            demotions: stats.demotions,
            admitted: shared.admitted.load(Ordering::Relaxed),
            refused: shared.refused.load(Ordering::Relaxed),
            departed: shared.departed.load(Ordering::Relaxed),
            upstream_lost: shared.upstream_lost.load(Ordering::Relaxed),
            early_wraps: stats.early_wraps,
        },
        imported: shared.imported,
        subscriber_count: count,
        subscribers,
    }
}

/// The process at the other end of `conn`, as far as this process may see it; its executable
/// made printable (the process chose that name, and it is gathered to be shown).
pub(crate) fn process_of(conn: BorrowedFd<'_>) -> ProcessInfo {
    let Ok(cred) = sys::net::peer_cred(conn) else {
        return ProcessInfo {
            pid: None,
            uid: u32::MAX,
            exe: None,
        };
    };
    let pid = cred.pid.and_then(|p| u32::try_from(p).ok());
    ProcessInfo {
        pid,
        uid: cred.uid,
        exe: pid
            .and_then(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok())
            .map(|e| shown_exe(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refills_each_second() {
        let t0 = Instant::now();
        let mut budget = AnswerBudget::new(t0);
        for _ in 0..ANSWERS_PER_SECOND {
            assert!(budget.take(t0));
        }
        assert!(!budget.take(t0 + Duration::from_millis(999)));
        assert!(budget.take(t0 + Duration::from_secs(1)));
    }
}
