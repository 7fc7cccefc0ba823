//! What a bridge tells its operator: one [`Event`] per change of state or first fault of a kind,
//! handed to the sink given to [`BridgeBuilder::on_event`](crate::BridgeBuilder::on_event)
//! (`shmcast bridge` prints each as one line on standard error).

use std::fmt;
use std::sync::Arc;

/// One thing that happened to a bridged topic.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// An export's local subscriber connected to its topic.
    Connected {
        /// The local topic.
        topic: String,
        /// The Zenoh key it is published on.
        key: String,
        /// The topic's contract, as the local publisher declared it.
        contract: String,
    },
    /// An export's local publisher went away; the bridge waits for the next one.
    PublisherGone {
        /// The local topic.
        topic: String,
    },
    /// An export's reliable subscriber was demoted to lossy by the local publisher's stall
    /// bound: from now on losses are possible (and counted by the importer).
    Demoted {
        /// The local topic.
        topic: String,
    },
    /// An export refused its local topic because the topic's publisher declares it imported
    /// (another bridge imports it from Zenoh): exporting it could send its messages round a
    /// loop. Reported once; the exporter looks again every second and exports the topic once a
    /// publisher that is not an import serves it.
    LoopRefused {
        /// The local topic.
        topic: String,
        /// The Zenoh key it would have been published on.
        key: String,
    },
    /// An import bound its local topic.
    Bound {
        /// The local topic.
        topic: String,
        /// The Zenoh key it imports.
        key: String,
        /// The contract it declares.
        contract: String,
    },
    /// An import refused messages whose contract is not the local topic's (reported once per
    /// remote contract).
    ContractRefused {
        /// The local topic.
        topic: String,
        /// The Zenoh key.
        key: String,
        /// What the remote messages carry.
        remote: String,
        /// What the local topic declares (or the configuration requires).
        local: String,
    },
    /// An import skipped a Zenoh payload that is not a bridge message (reported once per
    /// topic; every one is counted in `malformed`).
    Malformed {
        /// The local topic.
        topic: String,
        /// The Zenoh key.
        key: String,
        /// Why.
        reason: String,
    },
    /// No Zenoh peer or router has been connected for a few seconds although the bridge has
    /// `connect` endpoints: none of them can be reached (a refused connection, a host down,
    /// a wrong address). Zenoh keeps retrying them by itself. Reported once, and again only
    /// after [`Event::Reached`]. (A peer that connects to one of the bridge's `listen`
    /// endpoints counts as connected too.)
    Unreachable {
        /// The `connect` endpoints.
        endpoints: Vec<String>,
    },
    /// After [`Event::Unreachable`], a Zenoh peer or router is connected again.
    Reached {
        /// The `connect` endpoints.
        endpoints: Vec<String>,
    },
    /// Something failed that the bridge retries (binding, connecting, putting).
    Failed {
        /// The local topic.
        topic: String,
        /// What failed.
        reason: String,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Connected {
                topic,
                key,
                contract,
            } => write!(f, "export {topic} -> {key}: connected ({contract})"),
            Event::PublisherGone { topic } => {
                write!(
                    f,
                    "export {topic}: the local publisher is gone, waiting for the next"
                )
            }
            Event::Demoted { topic } => write!(
                f,
                "export {topic}: demoted to lossy by the local publisher's stall bound"
            ),
            Event::LoopRefused { topic, key } => write!(
                f,
                "export {topic} -> {key}: refused: the local topic is imported from Zenoh by a \
                 bridge, and exporting it again could loop (waiting for a publisher that is not \
                 an import)"
            ),
            Event::Bound {
                topic,
                key,
                contract,
            } => write!(f, "import {key} -> {topic}: publishing ({contract})"),
            Event::ContractRefused {
                topic,
                key,
                remote,
                local,
            } => write!(
                f,
                "import {key} -> {topic}: contract mismatch, refused: the remote topic carries \
                 {remote}; the local topic declares {local}"
            ),
            Event::Malformed { topic, key, reason } => {
                write!(
                    f,
                    "import {key} -> {topic}: skipped a malformed message: {reason}"
                )
            }
            Event::Unreachable { endpoints } => write!(
                f,
                "connect {}: cannot be reached, retrying (no Zenoh peer is connected)",
                endpoints.join(", ")
            ),
            Event::Reached { endpoints } => write!(
                f,
                "connect {}: a Zenoh peer is connected again",
                endpoints.join(", ")
            ),
            Event::Failed { topic, reason } => write!(f, "{topic}: {reason}"),
        }
    }
}

/// Where events go.
pub(crate) type Sink = Arc<dyn Fn(Event) + Send + Sync>;
