//! The sliding window `hz` measures over: the last N arrivals, with their sizes and the
//! messages missed before each. Times are passed in, so the arithmetic is testable without a
//! clock.

use std::collections::VecDeque;
use std::time::Duration;

/// One arrival: when (since the start), how many bytes, and how many messages were missed
/// just before it.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: Duration,
    bytes: usize,
    missed: u64,
}

/// The last `capacity` arrivals.
pub struct Window {
    capacity: usize,
    arrivals: VecDeque<Arrival>,
    missed: u64,
}

/// What a window holds, summed up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// Messages in the window.
    pub messages: usize,
    /// Messages a second.
    pub rate: f64,
    /// Payload bytes a second.
    pub bytes_per_s: f64,
    /// Shortest, longest and mean time between two arrivals, and its standard deviation.
    pub min: Duration,
    pub max: Duration,
    pub mean: Duration,
    pub std_dev: Duration,
    /// Messages missed (lagged) within the window.
    pub lagged: u64,
}

impl Window {
    pub fn new(capacity: usize) -> Window {
        Window {
            capacity: capacity.max(2),
            arrivals: VecDeque::new(),
            missed: 0,
        }
    }

    /// Notes that `n` messages were missed before the next arrival.
    pub fn missed(&mut self, n: u64) {
        self.missed = self.missed.saturating_add(n);
    }

    /// Notes a message of `bytes` arriving at `at`.
    pub fn arrived(&mut self, at: Duration, bytes: usize) {
        if self.arrivals.len() == self.capacity {
            self.arrivals.pop_front();
        }
        self.arrivals.push_back(Arrival {
            at,
            bytes,
            missed: std::mem::take(&mut self.missed),
        });
    }

    /// The arrivals the window holds.
    pub fn len(&self) -> usize {
        self.arrivals.len()
    }

    /// The rates over the window; `None` before two arrivals.
    pub fn rates(&self) -> Option<Rates> {
        let first = self.arrivals.front()?;
        let last = self.arrivals.back()?;
        let span = last.at.checked_sub(first.at)?.as_secs_f64();
        if self.arrivals.len() < 2 || span <= 0.0 {
            return None;
        }
        let intervals: Vec<f64> = self
            .arrivals
            .iter()
            .zip(self.arrivals.iter().skip(1))
            .map(|(a, b)| b.at.saturating_sub(a.at).as_secs_f64())
            .collect();
        let n = intervals.len() as f64;
        let mean = intervals.iter().sum::<f64>() / n;
        let var = intervals.iter().map(|i| (i - mean).powi(2)).sum::<f64>() / n;
        let min = intervals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = intervals.iter().copied().fold(0.0, f64::max);
        // Every arrival but the first ends an interval of the span.
        let bytes: usize = self.arrivals.iter().skip(1).map(|a| a.bytes).sum();
        Some(Rates {
            messages: self.arrivals.len(),
            rate: n / span,
            bytes_per_s: bytes as f64 / span,
            min: Duration::from_secs_f64(min),
            max: Duration::from_secs_f64(max),
            mean: Duration::from_secs_f64(mean),
            std_dev: Duration::from_secs_f64(var.sqrt()),
            lagged: self.arrivals.iter().skip(1).map(|a| a.missed).sum(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_stream_gives_its_rate() {
        let mut w = Window::new(5);
        assert_eq!(w.rates(), None);
        for i in 0..20u64 {
            if i == 18 {
                w.missed(3);
            }
            w.arrived(Duration::from_millis(10 * i), 100);
        }
        let r = w.rates().unwrap();
        assert_eq!(r.messages, 5);
        assert!((r.rate - 100.0).abs() < 1e-6, "{r:?}");
        assert!((r.bytes_per_s - 10_000.0).abs() < 1e-3, "{r:?}");
        assert_eq!(r.min, r.max);
        assert!(r.std_dev < Duration::from_micros(1));
        assert_eq!(r.lagged, 3);
    }
}
