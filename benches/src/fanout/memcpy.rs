//! `memcpy`: the single-process reference. One buffer filled, copied into one buffer per
//! subscriber and checked there, all on this thread.

use super::trial::{Outcome, Trial};
use crate::error::Result;
use crate::payload::{self, Verifier};
use crate::sys::{cpu_self_ns, now_ns};

/// Runs one trial in this process.
pub(super) fn publish(trial: Trial) -> Result<Outcome> {
    let mut src = vec![0u8; trial.size];
    let mut dst = vec![vec![0u8; trial.size]; trial.subs];
    let mut verifiers: Vec<Verifier> = (0..trial.subs)
        .map(|_| Verifier::new(trial.size, false))
        .collect();
    let cpu0 = cpu_self_ns();
    let t0 = now_ns();
    let end = t0 + trial.duration.as_nanos() as u64;
    let every = trial.clock_every();
    let mut seq = 0u64;
    loop {
        payload::fill(&mut src, seq);
        for (d, v) in dst.iter_mut().zip(&mut verifiers) {
            d.copy_from_slice(&src);
            v.message(d)?;
        }
        seq += 1;
        if seq % every == 0 && now_ns() >= end {
            break;
        }
    }
    let t1 = now_ns();
    let cpu = cpu_self_ns() - cpu0;
    Ok(Outcome {
        published: seq,
        delivered: verifiers.iter().map(|v| v.messages).sum(),
        elapsed: (t1 - t0) as f64 / 1e9,
        cpu_ns: cpu,
        cpu_lifetime_ns: cpu,
        publisher_syscalls: 0,
        publisher_waits: 0,
        behind: 0,
    })
}
