//! `shmcast-soak`: a long run that looks for what only time and churn bring out (a lost or
//! corrupted message, a miscounted lag, a descriptor or memory leak in the publisher), not for
//! speed.
//!
//! ```text
//! cargo run --release -p shmcast-bench --bin shmcast-soak                   # 60 s
//! cargo run --release -p shmcast-bench --bin shmcast-soak -- --seconds 600  # the long run
//! cargo run --release -p shmcast-bench --bin shmcast-soak -- --seed S       # repeat a run's sizes
//! ```
//!
//! `cargo test -p shmcast-bench` runs a 15 s soak (`tests/quick.rs`).
//!
//! This process publishes messages of random length up to `--max-size`, each carrying its
//! sequence number and checksum ([`message::fill`]), through a [`shmcast::Publisher`] with a
//! stall bound of [`schedule::STALL_BOUND`]. It publishes in phases ([`schedule::Phase`]): bursts
//! as fast as the ring allows, trickles of single messages with pauses in between, and silences.
//! Meanwhile it keeps [`schedule::MIN_SUBS`]..=[`schedule::MAX_SUBS`] subscriber processes,
//! gating and lossy, each with a random start position, way of waiting and lifetime
//! ([`plan::Plan`]), after which it leaves cleanly. At random times it stops one (`SIGSTOP` for
//! up to a second, so that a stopped gating subscriber gets demoted) and kills one (`SIGKILL`);
//! it also kills about one join in seven while it starts: before, during or just after its
//! handshake.
//!
//! Every subscriber ([`subscriber`]) checks every byte of every message ([`message::check`]),
//! and its sequence number ([`check::Check`]):
//! * gating: each message is the one after the previous one, from the one it joined at, and no
//!   `Lagged` arrives unless `Demoted` came first;
//! * lossy, and gating after `Demoted`: each message is the previous one plus one plus the
//!   `Lagged(n)` counts since, so received and missed messages add up to the sequence distance
//!   exactly;
//! * a gating subscriber's in-place sample may be overwritten once it is demoted (the documented
//!   end of the in-place promise): a sample that fails its check counts as overwritten only if
//!   the next receive says `Demoted`, and as corruption otherwise.
//!
//! A leaving subscriber reports its totals on its stdout; the parent ([`parent`]) checks that it
//! started at a message published while it joined, and that one that saw the end of the stream
//! saw every message up to the last ([`verdict`]). The parent samples its own descriptors and
//! resident memory four times a second ([`samples`]). It fails if, at any subscriber count, the
//! fewest descriptors seen in the last third of the run exceed the fewest seen early on (a
//! descriptor per departed subscriber would), if resident memory grows by more than
//! [`samples::RSS_GROWTH`] from early on to the last third, or if the descriptors are not back to
//! their count before the publisher once it and every subscriber are gone. It prints a summary
//! ([`summary`]) whose last line is `result PASS` or `result FAIL: why`.
//!
//! The processes, syscalls and stream messages come from the `shmcast_bench` library; the
//! subscribers are this binary re-executed with a hidden `__child` role.
#![deny(unsafe_code)]

mod check;
mod member;
mod message;
mod options;
mod parent;
mod plan;
mod samples;
mod schedule;
mod subscriber;
mod summary;
mod tally;
mod verdict;

use std::process::ExitCode;

use shmcast_bench::error::{BenchError, exit_code};
use shmcast_bench::process;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (outcome, who) = match process::child_args(&args) {
        Some(child) => (
            child.and_then(|(role, rest)| match role {
                subscriber::ROLE => subscriber::run(rest),
                other => Err(BenchError::Usage(format!("unknown child role {other:?}"))),
            }),
            "shmcast-soak child",
        ),
        None => (
            options::Options::parse(&args).and_then(|o| parent::run(&o)),
            "shmcast-soak",
        ),
    };
    exit_code(outcome, who, options::USAGE)
}
