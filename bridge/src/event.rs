//! What a bridge tells its operator: one [`Event`] per change of state or first fault of a kind,
//! handed to the sink given to [`BridgeBuilder::on_event`](crate::BridgeBuilder::on_event)
//! (`shmcast bridge` prints each as one line on standard error).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
    /// An import could not bind its local topic (another publisher serves it, the directory
    /// is unusable): it drops what arrives (counted in `local_dropped`) and tries again a
    /// second later (an import configured with its whole contract every second, messages or
    /// not; one that adopts the remote's with the next message). The bridge and its other
    /// topics carry on. Reported once per outage; [`Event::Bound`] says when it ends.
    BindFailed {
        /// The local topic.
        topic: String,
        /// The Zenoh key it imports.
        key: String,
        /// Why.
        reason: String,
    },
    /// An import heard a second source on its key: another host exports a topic to the same
    /// key. Each source's sequence numbers are followed apart (`sources` counts them), and
    /// their messages interleave on the local topic. Reported once per key.
    FanIn {
        /// The local topic.
        topic: String,
        /// The Zenoh key.
        key: String,
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
    /// A stopping bridge did not finish closing its Zenoh session, or an export did not end,
    /// within [`STOP_BOUND`](crate::Bridge::STOP_BOUND) (a peer that takes nothing, such as a
    /// stopped process): the bridge returns anyway and the rest finishes in the background, or
    /// when the process exits.
    StopIncomplete {
        /// What was still running.
        what: String,
        /// How long the bridge waited for it.
        waited: Duration,
    },
    /// Something failed that the bridge retries (connecting, putting).
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
            Event::BindFailed { topic, key, reason } => write!(
                f,
                "import {key} -> {topic}: cannot bind the local topic: {reason} (retrying every \
                 second; messages meanwhile are dropped and counted in local_dropped)"
            ),
            Event::FanIn { topic, key } => write!(
                f,
                "import {key} -> {topic}: a second source exports to this key; their sequence \
                 numbers are counted apart and their messages interleave on the local topic"
            ),
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
            Event::StopIncomplete { what, waited } => write!(
                f,
                "stopping: {what} did not end within {} s; left to finish in the background",
                waited.as_secs_f64()
            ),
            Event::Failed { topic, reason } => write!(f, "{topic}: {reason}"),
        }
    }
}

/// Where events go.
pub(crate) type Sink = Arc<dyn Fn(Event) + Send + Sync>;
