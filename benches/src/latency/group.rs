//! The outcomes of one group of trials (a listener count and the transports run with it) and the
//! figures drawn from them: percentiles per listener, per-repetition medians, the best socket.

use super::transport::Transport;
use super::trial::Outcome;
use crate::stats::{self, Percentiles};

/// One group of trials: a listener count and the transports run with it.
pub(super) struct Group {
    /// Listeners of every trial of the group.
    pub(super) listeners: usize,
    /// The transports run, in their order in the tables.
    pub(super) transports: Vec<Transport>,
    /// Per transport, one outcome per repetition.
    pub(super) outcomes: Vec<Vec<Outcome>>,
}

impl Group {
    /// Transport `t`'s outcomes, one per repetition.
    pub(super) fn outcomes(&self, t: Transport) -> &[Outcome] {
        let i = self
            .transports
            .iter()
            .position(|&x| x == t)
            .expect("listed");
        &self.outcomes[i]
    }

    /// Percentiles of listener `l` over every repetition.
    pub(super) fn percentiles(&self, t: Transport, l: usize) -> Percentiles {
        let mut hist = stats::histogram();
        for o in self.outcomes(t) {
            stats::record(&mut hist, &o.samples[l]);
        }
        stats::percentiles(&hist)
    }

    /// Listener `l`'s median in each repetition, µs.
    pub(super) fn rep_p50s(&self, t: Transport, l: usize) -> Vec<f64> {
        self.outcomes(t)
            .iter()
            .map(|o| stats::percentiles_of(&o.samples[l]).p50)
            .collect()
    }

    /// The socket transport with the lowest p50 for listener `l`.
    pub(super) fn best_socket(&self, l: usize) -> Option<Transport> {
        self.transports
            .iter()
            .copied()
            .filter(|t| t.socket())
            .min_by(|&a, &b| {
                self.percentiles(a, l)
                    .p50
                    .total_cmp(&self.percentiles(b, l).p50)
            })
    }

    /// The sum of `f` over transport `t`'s outcomes, per message sent.
    pub(super) fn per_msg(&self, t: Transport, f: fn(&Outcome) -> u64, messages: usize) -> f64 {
        let outcomes = self.outcomes(t);
        outcomes.iter().map(f).sum::<u64>() as f64 / (outcomes.len() * messages).max(1) as f64
    }
}
