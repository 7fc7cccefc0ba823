//! Deadlines from caller-given timeouts, which may be too long for the clock.

use std::time::{Duration, Instant};

/// The instant `timeout` from now; a timeout past what `Instant` can hold (`Duration::MAX`)
/// ends a century from now, which no wait reaches: a wait without end, not a wait of none.
pub(crate) fn after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 60 * 60))
}
