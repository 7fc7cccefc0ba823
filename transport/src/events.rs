//! Structured events for operators: what happened to a topic and to whom, through `tracing`
//! (cargo feature `tracing`, off by default).
//!
//! | event (message) | level | fields |
//! |---|---|---|
//! | `subscriber admitted` | info | `topic`, `pid`, `uid`, `subscriber`, `mode` |
//! | `connection refused` | warn | `topic`, `pid`, `uid`, `reason`, `detail` |
//! | `subscriber hung up` | info | `topic`, `pid`, `uid`, `subscriber` |
//! | `publisher stalled` | warn | `topic`, `waited_ms`, `pid`, `uid` (the slowest gating subscriber), `demoting` |
//! | `subscriber demoted` | warn | `topic`, `pid`, `uid`, `subscriber` |
//! | `stale socket replaced` | info | `topic` |
//!
//! Every event has the target `shmcast`. `pid` and `uid` are the peer's as the kernel reported
//! them when it connected (`SO_PEERCRED`; `pid` is 0 for a peer in another pid namespace).
//!
//! Nothing here is on the path of a message: events mark admissions, departures and stalls. With
//! the feature off every function below is empty and inlined away; with it on, an event whose
//! level no subscriber wants costs one check of tracing's cached interest, and the peer's
//! credentials are read only for an event that is recorded.

use std::os::fd::BorrowedFd;
use std::path::Path;
use std::time::Duration;

use shmcast_core::{Mode, SubscriberId};

use crate::handshake::RefuseReason;

#[cfg(feature = "tracing")]
mod on {
    use super::*;
    use crate::sys;

    /// The peer's pid (0 outside our pid namespace) and uid, or zeros when the kernel cannot
    /// tell.
    fn peer(conn: BorrowedFd<'_>) -> (i32, u32) {
        sys::net::peer_cred(conn).map_or((0, 0), |c| (c.pid.unwrap_or(0), c.uid))
    }

    pub(crate) fn admitted(topic: &Path, conn: BorrowedFd<'_>, id: SubscriberId, mode: Mode) {
        if tracing::enabled!(target: "shmcast", tracing::Level::INFO) {
            let (pid, uid) = peer(conn);
            tracing::info!(target: "shmcast", topic = %topic.display(), pid, uid,
                subscriber = id.0, mode = ?mode, "subscriber admitted");
        }
    }

    pub(crate) fn refused(topic: &Path, conn: BorrowedFd<'_>, reason: RefuseReason, detail: &str) {
        if tracing::enabled!(target: "shmcast", tracing::Level::WARN) {
            let (pid, uid) = peer(conn);
            tracing::warn!(target: "shmcast", topic = %topic.display(), pid, uid,
                reason = ?reason, detail, "connection refused");
        }
    }

    pub(crate) fn hung_up(topic: &Path, conn: BorrowedFd<'_>, id: SubscriberId) {
        if tracing::enabled!(target: "shmcast", tracing::Level::INFO) {
            let (pid, uid) = peer(conn);
            tracing::info!(target: "shmcast", topic = %topic.display(), pid, uid,
                subscriber = id.0, "subscriber hung up");
        }
    }

    pub(crate) fn stalled(
        topic: &Path,
        waited: Duration,
        slowest: Option<BorrowedFd<'_>>,
        demoting: bool,
    ) {
        if tracing::enabled!(target: "shmcast", tracing::Level::WARN) {
            let (pid, uid) = slowest.map_or((0, 0), peer);
            tracing::warn!(target: "shmcast", topic = %topic.display(),
                waited_ms = waited.as_millis() as u64, pid, uid, demoting, "publisher stalled");
        }
    }

    pub(crate) fn demoted(topic: &Path, conn: BorrowedFd<'_>, id: SubscriberId) {
        if tracing::enabled!(target: "shmcast", tracing::Level::WARN) {
            let (pid, uid) = peer(conn);
            tracing::warn!(target: "shmcast", topic = %topic.display(), pid, uid,
                subscriber = id.0, "subscriber demoted");
        }
    }

    pub(crate) fn stale_replaced(topic: &Path) {
        tracing::info!(target: "shmcast", topic = %topic.display(), "stale socket replaced");
    }
}

#[cfg(not(feature = "tracing"))]
mod on {
    use super::*;

    #[inline(always)]
    pub(crate) fn admitted(_: &Path, _: BorrowedFd<'_>, _: SubscriberId, _: Mode) {}
    #[inline(always)]
    pub(crate) fn refused(_: &Path, _: BorrowedFd<'_>, _: RefuseReason, _: &str) {}
    #[inline(always)]
    pub(crate) fn hung_up(_: &Path, _: BorrowedFd<'_>, _: SubscriberId) {}
    #[inline(always)]
    pub(crate) fn stalled(_: &Path, _: Duration, _: Option<BorrowedFd<'_>>, _: bool) {}
    #[inline(always)]
    pub(crate) fn demoted(_: &Path, _: BorrowedFd<'_>, _: SubscriberId) {}
    #[inline(always)]
    pub(crate) fn stale_replaced(_: &Path) {}
}

pub(crate) use on::{admitted, demoted, hung_up, refused, stale_replaced, stalled};
