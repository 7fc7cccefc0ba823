//! shmcast topics across hosts, over Zenoh.
//!
//! A [`Bridge`] exports local topics to Zenoh and imports Zenoh key expressions into local
//! topics, so that a topic reaches other hosts while local subscribers on each host keep
//! reading in place with the normal [`shmcast`] API. Every message carries its sequence number,
//! where it comes from and its topic's contract ([`wire`]): an importer declares the same
//! contract locally, refuses messages of another, and counts every gap and restart in the
//! sequence of each exporting host ([`TopicStats`]). Per topic the user chooses
//! [`Reliability::Reliable`] (nothing lost while the path exists; the network's backpressure
//! reaches the local publisher, bounded by its stall bound) or [`Reliability::Lossy`] (the
//! network never slows the local publisher; losses are counted).
//! Every gap also reaches the local topic's publisher as messages lost upstream
//! ([`Publisher::note_upstream_lost`](shmcast::Publisher::note_upstream_lost)), so
//! `shmcast stat` on the importing host shows it next to the topic's own counters.
//!
//! No message can go round a loop: a bridge never re-exports what it imports
//! ([`BridgeConfig::validate`]), and an imported topic's publisher declares it imported
//! ([`PublisherBuilder::imported`](shmcast::PublisherBuilder::imported)), so that an export in
//! any other bridge on the host refuses it ([`Event::LoopRefused`]). The `shmcast bridge`
//! command runs one from flags or a JSON file.
//!
//! ```no_run
//! use shmcast_zenoh::{Bridge, BridgeConfig, Direction, TopicConfig};
//!
//! // Host A: export topic "ticks" on key shmcast/ticks, listening for host B.
//! let mut config = BridgeConfig::default();
//! config.listen.push("tcp/0.0.0.0:7447".into());
//! config.topics.push(TopicConfig::new("ticks", Direction::Export));
//! let bridge = Bridge::builder(config).on_event(|e| eprintln!("{e}")).start()?;
//! for t in bridge.stats() {
//!     println!("{}: {} messages", t.topic, t.messages);
//! }
//! # Ok::<(), shmcast_zenoh::BridgeError>(())
//! ```
//!
//! # Modules
//!
//! | module | role |
//! |---|---|
//! | `config` | [`BridgeConfig`], [`TopicConfig`], their checks, the loop checks |
//! | `spec` | a topic's options: [`TopicConfig::parse_spec`], each once, none against another |
//! | `contract` | an import's configured contract, checked by the rules of a publisher's |
//! | `json` | [`BridgeConfig::from_json`]: a configuration file, its errors in its own terms |
//! | `endpoint` | [`check_endpoint`], and Zenoh's errors without their source locations |
//! | `session` | the Zenoh session a configuration describes, and the watch on `connect` |
//! | [`wire`] | the header of a bridged message: origin, source, epoch, sequence number, contract |
//! | `source` | which stream of sequence numbers an exported topic is: its host and path, hashed |
//! | `export` | local subscriber → Zenoh publisher, one thread per topic; refuses imported topics |
//! | `import` | Zenoh subscriber → local publisher, declared imported; counts gaps |
//! | `follow` | the sequence numbers of each source an import hears: gaps, resets, fan-in |
//! | `stats` | per-topic counters, [`TopicStats`] |
//! | `event` | what a bridge reports, [`Event`] |
//! | `bridge` | [`Bridge`], its builder, [`BridgeError`] |
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod bridge;
mod config;
mod contract;
mod endpoint;
mod event;
mod export;
mod follow;
mod import;
mod json;
mod session;
mod source;
mod spec;
mod stats;
pub mod wire;

pub use bridge::{Bridge, BridgeBuilder, BridgeError};
pub use config::{BridgeConfig, ConfigError, Direction, Reliability, SessionMode, TopicConfig};
pub use endpoint::{PROTOCOLS, check_endpoint};
pub use event::Event;
pub use stats::TopicStats;
