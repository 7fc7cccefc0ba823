//! What `shmcast-bench` and `shmcast-soak` are made of: child processes, syscalls, message
//! formats, statistics and output, and the scenarios of the comparison.
//!
//! * `shmcast-bench` (`src/main.rs`) measures shmcast side by side with what one would use
//!   instead: [`comparison`] runs the scenarios.
//! * `shmcast-soak` (`src/soak/`) measures nothing: it churns subscriber processes under a
//!   publisher and fails on any lost, corrupted or miscounted message and on descriptor or
//!   memory growth.
//!
//! Modules, from the bottom up; each imports only from the rows above it.
//!
//! | layer | module | holds |
//! |---|---|---|
//! | 0 | [`error`] | why a run stopped, and the exit status |
//! | 0 | [`sys`] | every syscall the programs make themselves |
//! | 0 | [`rng`] | seeded random numbers |
//! | 0 | [`stats`] | medians, paired ratios and latency percentiles |
//! | 0 | [`table`], [`svg`] | plain-text tables and SVG charts |
//! | 1 | [`payload`] | the stream message format and its checks |
//! | 1 | [`process`] | child processes: spawning, watching, reaping, talking to the parent |
//! | 1 | [`report`] | a scenario's output, progress lines, the machine and its load |
//! | 1 | [`harness`] | what every trial shares: deadlines, topics, rings, admission |
//! | 1 | [`options`] | the comparison's command line |
//! | 2 | `iceoryx` | iceoryx2 as a peer transport (feature `iceoryx2`) |
//! | 3 | [`fanout`] | one stream trial: `memcpy`, `unix-stream`, `shmcast-*`, `iceoryx2` |
//! | 3 | [`limits`] | scenario: the machine's ceilings |
//! | 3 | [`ceiling`] | the publisher's fill alone, the ceiling of a stream trial |
//! | 4 | [`throughput`], [`small`], [`backpressure`] | scenarios over stream trials |
//! | 4 | [`latency`] | scenario: paced timestamps to blocked listeners |
//! | 4 | [`bridge`] | scenario: a topic through two Zenoh bridges against plain Zenoh |
//! | 5 | [`comparison`] | a whole run: the scenarios in order, the tables, JSON and charts |
#![deny(unsafe_code)]

pub mod backpressure;
pub mod bridge;
pub mod ceiling;
pub mod comparison;
pub mod error;
pub mod fanout;
pub mod harness;
#[cfg(feature = "iceoryx2")]
pub mod iceoryx;
pub mod latency;
pub mod limits;
pub mod options;
pub mod payload;
pub mod pin;
pub mod process;
pub mod report;
pub mod rng;
pub mod small;
pub mod stats;
pub mod svg;
pub mod sys;
pub mod table;
pub mod throughput;
