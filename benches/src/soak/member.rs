//! One subscriber process as the parent tracks it, from its spawn to its report.

use std::time::Instant;

use shmcast_bench::process::Report;

use crate::plan::Plan;

/// One subscriber process, in the same order as the fleet's children.
pub struct Member {
    /// What it was told to do.
    pub plan: Plan,
    /// When it was spawned.
    pub spawned: Instant,
    /// Messages published when it was spawned: a `Newest` start is at least this.
    pub joined_seq: u64,
    /// Messages published when its `ready` line was seen: every start is at most this.
    pub ready_seq: Option<u64>,
    /// Until when it is stopped (`SIGSTOP`), if it is.
    pub stopped_until: Option<Instant>,
    /// Its `result` line, once read.
    pub result: Option<Report>,
}
