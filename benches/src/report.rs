//! What a scenario hands back: its tables, its JSON object and its charts; and the progress
//! lines on stderr.

use std::time::Instant;

/// The output of one scenario.
pub struct Section {
    /// Tables and notes for stdout.
    pub text: String,
    /// `{"scenario": .., "params": {..}, "results": [..]}`.
    pub json: serde_json::Value,
    /// SVG files: (file name, content).
    pub charts: Vec<(String, String)>,
}

/// Progress lines on stderr: `[12.3 s] scenario: what`.
pub struct Progress {
    started: Instant,
    scenario: &'static str,
}

impl Progress {
    /// Progress of `scenario`, timed from now.
    pub fn new(scenario: &'static str) -> Progress {
        Progress {
            started: Instant::now(),
            scenario,
        }
    }

    /// Prints one progress line.
    pub fn say(&self, what: &str) {
        eprintln!(
            "[{:6.1} s] {}: {what}",
            self.started.elapsed().as_secs_f64(),
            self.scenario
        );
    }
}

/// Number of CPUs this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A short description of the machine, for the JSON `params` and the table headers.
pub fn machine() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    serde_json::json!({
        "cores": cores(),
        "cpu": cpu,
        "kernel": kernel.trim(),
    })
}

/// `1.23 GB/s`-style figure: `bytes_per_s` in GB/s (10^9).
pub fn gbps(bytes_per_s: f64) -> f64 {
    bytes_per_s / 1e9
}

/// A rate in millions.
pub fn millions(per_s: f64) -> f64 {
    per_s / 1e6
}

/// Rotates `items` by `by`: transports run in a different order in every repetition, so none
/// always runs first (on a cold machine) or right after the same neighbour.
pub fn rotated<T: Copy>(items: &[T], by: usize) -> Vec<T> {
    let mut v = items.to_vec();
    if !v.is_empty() {
        let k = by % v.len();
        v.rotate_left(k);
    }
    v
}

/// CPU time used on the whole machine and by this run, to tell how much other processes took
/// while the run measured.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Busy time of every CPU so far (`/proc/stat`), ns.
    machine_busy_ns: u64,
    /// This process and its reaped children so far, ns.
    ours_ns: u64,
    at: Instant,
}

impl Load {
    /// A snapshot now.
    pub fn now() -> Load {
        Load {
            machine_busy_ns: machine_busy_ns(),
            ours_ns: crate::sys::cpu_self_ns() + crate::sys::cpu_children_ns(),
            at: Instant::now(),
        }
    }

    /// Cores' worth of CPU that other processes used between `self` and `later` (0 when
    /// `/proc/stat` is unreadable).
    pub fn others_since(&self, later: &Load) -> f64 {
        let secs = later.at.duration_since(self.at).as_secs_f64().max(1e-3);
        let busy = later.machine_busy_ns.saturating_sub(self.machine_busy_ns);
        let ours = later.ours_ns.saturating_sub(self.ours_ns);
        (busy.saturating_sub(ours) as f64 / 1e9 / secs).max(0.0)
    }
}

/// Busy (non-idle, non-iowait) time of all CPUs from `/proc/stat`, ns.
fn machine_busy_ns() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(line) = stat.lines().next() else {
        return 0;
    };
    let ticks: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...; guest time is already in user.
    let busy: u64 = ticks
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 3 && i != 4 && i < 8)
        .map(|(_, &t)| t)
        .sum();
    let hz = rustix::param::clock_ticks_per_second();
    busy * (1_000_000_000 / hz.max(1))
}
