//! `shmcast stat TOPIC`: the publisher's counters and one row per subscriber, asked of the
//! publisher over its topic socket. "lost upstream" counts messages that never reached the
//! publisher (for a topic a bridge imports, the gaps in the remote sequence numbers), and an
//! imported topic says so. `--watch` refreshes it: in place on a terminal, as a new
//! block (or JSON line) each time when piped. A watch ends quietly (exit code 0) when the
//! publisher ends its topic; any other failure of a refresh (a busy refusal, a publisher that
//! died or stopped answering) ends it with that failure's exit code, as `stat` without
//! `--watch` would.

use std::time::Duration;

use shmcast::{InspectError, TopicInfo};

use crate::Place;
use crate::exit::Failure;
use crate::out::{self, Stdout, Written};
use crate::{peer, snapshot, table, words};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Print JSON (with --watch, one object a line).
    #[arg(long)]
    json: bool,
    /// Refresh until interrupted or the publisher ends its topic (exit code 0). A refresh that
    /// fails otherwise stops the watch with that failure's exit code, as without --watch: 5
    /// when the publisher refuses (busy: it answers 20 requests a second), 4 when it died, 1
    /// when it did not answer.
    #[arg(long, short)]
    watch: bool,
    /// Time between refreshes with --watch, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    interval: u64,
    /// With --watch, stop after this many refreshes.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// How long to wait for the publisher's answer, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    timeout: u64,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let timeout = Duration::from_millis(args.timeout);
    let inspector = place.inspector(&args.topic, timeout);
    let first = inspector
        .inspect()
        .map_err(|e| failure(place, &args.topic, timeout, e))?;
    let mut out = Stdout::about(&args.topic);
    if !args.watch {
        let _ = out.write(&render(&args, &first))?;
        return Ok(());
    }
    let in_place = out.is_terminal() && !args.json;
    let mut info = first;
    let mut shown = 0u64;
    loop {
        let text = render(&args, &info);
        let written = if in_place {
            out.write(&format!("\x1b[H\x1b[2J{text}"))
        } else if args.json {
            out.write(&text)
        } else {
            out.line(text)
        };
        // A closed pipe (`| head`) ends the watch; a full disk is a failure.
        if written? == Written::Closed {
            return Ok(());
        }
        shown += 1;
        if args.count.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(args.interval));
        info = match inspector.inspect() {
            Ok(info) => info,
            // The publisher ended its topic (its socket is gone): the watch is over.
            Err(e @ InspectError::NoPublisher { .. }) => {
                out::warn(format_args!(
                    "shmcast: {}: {e}; stopped watching",
                    args.topic
                ));
                return Ok(());
            }
            Err(e) => {
                let mut failure = failure(place, &args.topic, timeout, e);
                failure.message.push_str("; stopped watching");
                return Err(failure);
            }
        };
    }
}

/// Why asking the publisher of `topic` failed, with the exit code of its kind.
fn failure(place: &Place, topic: &str, timeout: Duration, e: InspectError) -> Failure {
    match e {
        InspectError::Timeout => peer::unanswered(place, topic, timeout),
        e => Failure::inspect(topic, e),
    }
}

/// The snapshot as text (or one JSON line), ending with a newline.
fn render(args: &Args, info: &TopicInfo) -> String {
    if args.json {
        return format!("{}\n", snapshot::info_json(&args.topic, info));
    }
    let p = &info.publisher;
    let c = &info.counters;
    let mut out = format!(
        "topic {}: publisher pid {} uid {} ({}), up {:.1} s\n\
         contract: {}; capacity {}{}\n\
         messages {}  wakes {}  full {}  demotions {}  admitted {}  refused {}  departed {}  \
         lost upstream {}  early wraps {}\n\n",
        args.topic,
        snapshot::pid(p),
        p.uid,
        p.exe
            .as_ref()
            .map_or("-".into(), |e| e.display().to_string()),
        info.uptime.as_secs_f64(),
        info.contract,
        words::bytes(info.capacity),
        if info.imported {
            "; imported (republished from elsewhere)"
        } else {
            ""
        },
        c.messages,
        c.wake_syscalls,
        c.full,
        c.demotions,
        c.admitted,
        c.refused,
        c.departed,
        c.upstream_lost,
        c.early_wraps,
    );
    if info.subscribers.is_empty() {
        out.push_str("no subscribers\n");
        return out;
    }
    let rows: Vec<Vec<String>> = info
        .subscribers
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                snapshot::pid(&r.process),
                snapshot::exe(&r.process),
                snapshot::mode(r).to_owned(),
                snapshot::state(r).to_owned(),
                r.lag_messages.to_string(),
                words::bytes(r.lag_bytes),
                r.received.to_string(),
                r.lagged.to_string(),
            ]
        })
        .collect();
    out.push_str(&table::render(
        &[
            "ID",
            "PID",
            "EXE",
            "MODE",
            "STATE",
            "LAG",
            "LAG BYTES",
            "RECEIVED",
            "LAGGED",
        ],
        &rows,
    ));
    if info.subscriber_count > info.subscribers.len() {
        out.push_str(&format!(
            "... and {} more\n",
            info.subscriber_count - info.subscribers.len()
        ));
    }
    out
}
