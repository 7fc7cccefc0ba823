//! `--pin`: fixed CPUs for the processes of a stream trial, the same for every transport.
//!
//! Three busy processes on two cores (1 MiB to 2 subscribers) run at rates that depend on which
//! two share a core, for every transport alike (`docs/performance.md`, "Large messages through
//! a small ring: where the processes run"). Left to the scheduler, two transports of one run can
//! land in different placements, and their ratio then measures the placement. Pinned, each
//! trial runs in the placement given: the publishing thread on the first CPU, subscriber `i` on
//! CPU `i + 1`; subscribers beyond the list run where the scheduler puts them.

use std::io;

use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};

use crate::error::{BenchError, Result};

/// The environment variable that carries a child's CPU from [`Fleet::spawn_on`].
///
/// [`Fleet::spawn_on`]: crate::process::Fleet::spawn_on
pub const ENV: &str = "SHMCAST_BENCH_CPU";

/// Most CPUs a placement names: a publisher and seven subscribers.
const MAX: usize = 8;

/// A placement: the publisher's CPU, then one per subscriber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    cpus: [u16; MAX],
    len: usize,
}

impl Pin {
    /// Parses `--pin`'s value, `CPU,CPU,...`: at least the publisher's CPU, at most [`MAX`],
    /// each one this process may run on.
    pub fn parse(value: &str) -> Result<Pin> {
        let usage = |why: String| BenchError::Usage(format!("--pin {value}: {why}"));
        let allowed = sched_getaffinity(None).map_err(|e| usage(format!("no CPU set: {e}")))?;
        let mut pin = Pin {
            cpus: [0; MAX],
            len: 0,
        };
        for word in value.split(',') {
            let cpu: u16 = word
                .trim()
                .parse()
                .map_err(|_| usage(format!("{word:?} is not a CPU number")))?;
            if usize::from(cpu) >= CpuSet::MAX_CPU || !allowed.is_set(cpu.into()) {
                return Err(usage(format!(
                    "CPU {cpu} is not one this process may run on"
                )));
            }
            if pin.len == MAX {
                return Err(usage(format!("at most {MAX} CPUs")));
            }
            pin.cpus[pin.len] = cpu;
            pin.len += 1;
        }
        Ok(pin)
    }

    /// The publishing thread's CPU.
    pub fn publisher(&self) -> usize {
        self.cpus[0].into()
    }

    /// Subscriber `i`'s CPU, if the placement names one.
    pub fn subscriber(&self, i: usize) -> Option<usize> {
        self.cpus[1..self.len].get(i).map(|&c| c.into())
    }

    /// The placement as `--pin` takes it.
    pub fn label(&self) -> String {
        let cpus: Vec<String> = self.cpus[..self.len].iter().map(u16::to_string).collect();
        cpus.join(",")
    }
}

/// How a scenario's heading says where its processes ran: nothing for the scheduler's choice.
pub fn heading(pin: Option<Pin>) -> String {
    pin.map_or_else(String::new, |p| {
        format!(", pinned to CPUs {} (publisher first)", p.label())
    })
}

/// The placement in a scenario's JSON parameters: `null` for the scheduler's choice.
pub fn json(pin: Option<Pin>) -> serde_json::Value {
    pin.map_or(serde_json::Value::Null, |p| p.label().into())
}

/// The calling thread, on one CPU until this is dropped; then back on the CPUs it had.
#[derive(Debug)]
pub struct Pinned {
    cpu: usize,
    before: CpuSet,
}

impl Pinned {
    /// Moves the calling thread to `cpu`.
    pub fn thread(cpu: usize) -> io::Result<Pinned> {
        let before = sched_getaffinity(None)?;
        set(cpu)?;
        Ok(Pinned { cpu, before })
    }

    /// Fails unless the thread is still on its CPU: something else moved it during the trial.
    pub fn check(&self, who: &str) -> Result<()> {
        still_on(self.cpu, who)
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // The thread keeps running on the one CPU if this fails; the next trial pins it again.
        let _ = sched_setaffinity(None, &self.before);
    }
}

/// The child side: moves this process's thread to the CPU its parent gave it in [`ENV`], if any,
/// before the role starts any other thread (they inherit it).
pub fn child_from_env() -> Result<()> {
    let Some(value) = std::env::var_os(ENV) else {
        return Ok(());
    };
    let cpu = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| BenchError::Usage(format!("{ENV}={value:?} is not a CPU number")))?;
    set(cpu).map_err(|e| BenchError::Usage(format!("{ENV}={cpu}: {e}")))
}

/// The child side, after its role: fails unless this thread is still on the CPU its parent
/// gave it (a placement that did not hold would be measured as if it had).
pub fn child_check() -> Result<()> {
    match std::env::var(ENV).ok().and_then(|v| v.parse().ok()) {
        Some(cpu) => still_on(cpu, "a subscriber"),
        None => Ok(()),
    }
}

fn still_on(cpu: usize, who: &str) -> Result<()> {
    let now = sched_getcpu();
    if now == cpu {
        Ok(())
    } else {
        Err(BenchError::Usage(format!(
            "{who} pinned to CPU {cpu} ran on CPU {now}"
        )))
    }
}

/// `sched_setaffinity(0, {cpu})`: the calling thread on `cpu` alone.
fn set(cpu: usize) -> io::Result<()> {
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first CPU this process may run on.
    fn first_cpu() -> usize {
        let allowed = sched_getaffinity(None).unwrap();
        (0..CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).unwrap()
    }

    #[test]
    fn parses_a_placement_and_refuses_what_is_not_one() {
        let c = first_cpu();
        let pin = Pin::parse(&format!("{c},{c}")).unwrap();
        assert_eq!(pin.publisher(), c);
        assert_eq!(pin.subscriber(0), Some(c));
        assert_eq!(pin.subscriber(1), None);
        assert_eq!(pin.label(), format!("{c},{c}"));
        for bad in ["", "x", "0,,0", "-1", "0,0,0,0,0,0,0,0,0", "1023", "4096"] {
            assert!(Pin::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_pinned_thread_gets_its_cpus_back() {
        let before = sched_getaffinity(None).unwrap();
        let c = first_cpu();
        {
            let pinned = Pinned::thread(c).unwrap();
            let now = sched_getaffinity(None).unwrap();
            assert_eq!(now.count(), 1);
            assert!(now.is_set(c));
            pinned.check("this test").unwrap();
        }
        assert_eq!(sched_getaffinity(None).unwrap(), before);
    }
}
