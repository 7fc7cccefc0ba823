//! The scenario's repetitions: every group of trials, the transports in a rotating order.

use super::group::Group;
use super::section::report;
use super::transport::{ALL, Transport};
use super::trial::{Trial, run_trial};
use crate::error::Result;
use crate::limits::Limits;
use crate::options::Options;
use crate::report::{Progress, Section, cores, rotated};
use crate::stats;

/// Runs the scenario.
pub fn run(o: &Options, limits: Option<&Limits>) -> Result<Section> {
    let progress = Progress::new("latency");
    let all: Vec<Transport> = ALL
        .iter()
        .copied()
        .filter(|t| o.runs(t.name(), *t == Transport::UnixDgram))
        .collect();
    let mut groups = vec![Group {
        listeners: o.listeners,
        outcomes: vec![Vec::new(); all.len()],
        transports: all.clone(),
    }];
    if o.listeners != 1 {
        let single: Vec<Transport> = all
            .iter()
            .copied()
            .filter(|&t| t != Transport::UnixRelay && t != Transport::ShmcastPoll)
            .collect();
        groups.push(Group {
            listeners: 1,
            outcomes: vec![Vec::new(); single.len()],
            transports: single,
        });
    }
    let cores = cores();
    for g in &groups {
        if g.listeners >= cores {
            progress.say(&format!(
                "WARNING: {} busy-polling listeners on {cores} cores: the spinning transports \
                 starve the publisher; their figures show that, not the transport",
                g.listeners
            ));
        }
    }
    for rep in 0..o.reps {
        for (k, g) in groups.iter_mut().enumerate() {
            for t in rotated(&g.transports, rep + k) {
                let outcome = run_trial(Trial {
                    transport: t,
                    listeners: g.listeners,
                    messages: o.messages,
                    interval: o.interval,
                })?;
                let p50s: Vec<String> = outcome
                    .samples
                    .iter()
                    .map(|s| format!("{:.1}", stats::percentiles_of(s).p50))
                    .collect();
                progress.say(&format!(
                    "rep {}/{}, {} listener(s), {:<14} p50 µs {}",
                    rep + 1,
                    o.reps,
                    g.listeners,
                    t.name(),
                    p50s.join(" / ")
                ));
                let i = g.transports.iter().position(|&x| x == t).expect("listed");
                g.outcomes[i].push(outcome);
            }
        }
    }
    Ok(report(o, &groups, limits, cores))
}
