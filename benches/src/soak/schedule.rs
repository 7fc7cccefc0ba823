//! The soak's schedule: how many subscribers it keeps, how long they live, how often one is
//! killed or stopped and for how long, and how the publisher alternates bursts, trickles and
//! silences. Every random choice draws from the run's seeded [`Rng`].

use std::time::{Duration, Instant};

use shmcast_bench::rng::Rng;

/// Fewest subscribers the soak keeps (a leave may go below until the next housekeeping round).
pub const MIN_SUBS: usize = 2;

/// Most subscribers the soak keeps.
pub const MAX_SUBS: usize = 5;

/// How long a blocking loan waits on a stalled gating subscriber before demoting it.
pub const STALL_BOUND: Duration = Duration::from_millis(200);

/// How often the parent looks after its children: lines, exits, kills, stops, joins.
pub const TICK: Duration = Duration::from_millis(20);

/// How often the parent counts its descriptors and resident memory.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// How often a progress line goes to stderr.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Mean time between kills.
pub const KILL_EVERY: Duration = Duration::from_millis(1500);
/// Mean time between stops.
pub const STOP_EVERY: Duration = Duration::from_millis(2500);
/// Mean time between changes of the population target.
pub const RETARGET_EVERY: Duration = Duration::from_secs(3);

/// Share of joins killed on purpose, a random moment up to [`KILL_JOINING_WITHIN`] after the
/// spawn: before the exec, during the handshake or just after it. Random kills rarely find a
/// subscriber still starting.
pub const KILL_JOINING: f64 = 0.15;
/// The latest moment after its spawn at which a join is killed on purpose.
pub const KILL_JOINING_WITHIN: Duration = Duration::from_millis(5);

/// How long a stop lasts: from well below the stall bound to five times it.
pub const STOP_FOR: (Duration, Duration) = (Duration::from_millis(50), Duration::from_millis(1000));

/// How long a subscriber stays before it leaves by itself.
pub const LIFETIME: (Duration, Duration) = (Duration::from_millis(300), Duration::from_secs(8));

/// What the publisher is doing between two housekeeping rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// As fast as the ring allows.
    Burst,
    /// One message, then a pause of up to 2 ms.
    Trickle,
    /// Nothing: subscribers park.
    Quiet,
}

impl Phase {
    /// The next phase and when it ends.
    pub fn random(rng: &mut Rng, now: Instant) -> (Phase, Instant) {
        let (phase, lo, hi) = match rng.below(10) {
            0..4 => (Phase::Burst, 20, 300),
            4..8 => (Phase::Trickle, 100, 800),
            _ => (Phase::Quiet, 20, 500),
        };
        let length = rng.duration(Duration::from_millis(lo), Duration::from_millis(hi));
        (phase, now + length)
    }
}
