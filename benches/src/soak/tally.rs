//! Everything the parent counts over the run, for the summary.

/// Everything counted over the run.
#[derive(Debug, Default)]
pub struct Totals {
    /// Bytes of every message published.
    pub bytes_published: u64,
    /// Subscribers spawned.
    pub joins: u64,
    /// Of those, gating ones.
    pub gating_joins: u64,
    /// Subscribers that left by themselves before the end of the stream.
    pub leaves: u64,
    /// Subscribers killed.
    pub kills: u64,
    /// Kills before the subscriber said it was connected.
    pub kills_starting: u64,
    /// Subscribers that read to the end of the stream.
    pub stream_ends: u64,
    /// Stops (`SIGSTOP`).
    pub stops: u64,
    /// Messages the departed subscribers checked, together.
    pub received: u64,
    /// Their bytes.
    pub bytes_verified: u64,
    /// `Lagged` reports.
    pub lag_reports: u64,
    /// Messages reported lagged before any demotion.
    pub lagged: u64,
    /// `Demoted` told to subscribers.
    pub demotions_told: u64,
    /// Messages reported lagged after a demotion.
    pub lost_after_demotion: u64,
    /// Held samples found overwritten after a demotion.
    pub overwritten_after_demotion: u64,
}
