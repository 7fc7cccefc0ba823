//! `shmcast stat TOPIC`: the publisher's counters and one row per subscriber, asked of the
//! publisher over its topic socket. "lost upstream" counts messages that never reached the
//! publisher (for a topic a bridge imports, the gaps in the remote sequence numbers), and an
//! imported topic says so. `--watch` refreshes it: in place on a terminal, as a new
//! block (or JSON line) each time when piped.
//!
//! A publisher answers at most 20 requests a second, whoever asks, so a watch asks at most as
//! often (`--interval` of at least 50 ms) and takes a busy refusal (another `stat` or `list`
//! asked too) as a refresh to skip, saying so once; only refusals for [`BUSY_FOR`] on end it.
//! A watch ends quietly (exit code 0) when the publisher ends its topic; any other failure of a
//! refresh (a publisher that died or stopped answering) ends it with that failure's exit code,
//! as `stat` without `--watch` would.

use std::time::{Duration, Instant};

use shmcast::{InspectError, RefuseReason, TopicInfo};

use crate::Place;
use crate::exit::Failure;
use crate::out::{self, Stdout, Written};
use crate::{flags, peer, snapshot, table, words};

/// How long a watch goes on while every refresh is refused as busy.
const BUSY_FOR: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Print JSON (with --watch, one object a line).
    #[arg(long)]
    json: bool,
    /// Refresh until interrupted or the publisher ends its topic (exit code 0). A refresh the
    /// publisher refuses as busy (it answers 20 requests a second, from anyone) is skipped;
    /// refusals for 10 s on stop the watch with exit code 5. Any other failure of a refresh
    /// stops it with that failure's exit code, as without --watch: 4 when the publisher died,
    /// 1 when it did not answer.
    #[arg(long, short)]
    watch: bool,
    /// Time between refreshes with --watch, in milliseconds: at least 50, as a publisher
    /// answers 20 requests a second.
    #[arg(long, default_value_t = 1000, value_name = "MS", value_parser = flags::at_least::<50>)]
    interval: u64,
    /// With --watch, stop after this many refreshes.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// How long to wait for the publisher's answer, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    timeout: u64,
    /// Also trust a publisher run by these users (`1001,1002`, or `any`): by default only one
    /// of our own uid is (a socket path elsewhere may have been bound by anyone).
    #[arg(long, value_name = "UIDS|any", value_parser = flags::uids)]
    trust: Option<shmcast::Admission>,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let timeout = Duration::from_millis(args.timeout);
    let inspector = place.inspector(&args.topic, timeout, args.trust.as_ref());
    let mut out = Stdout::about(&args.topic);
    if !args.watch {
        let info = inspector
            .inspect()
            .map_err(|e| failure(place, &args.topic, timeout, e))?;
        let _ = out.write(&render(&args, &info))?;
        return Ok(());
    }
    let in_place = out.is_terminal() && !args.json;
    let mut shown = 0u64;
    // When the refusals as busy began, if the last refresh was refused so.
    let mut busy_since: Option<Instant> = None;
    loop {
        match inspector.inspect() {
            Ok(info) => {
                busy_since = None;
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
            }
            Err(
                e @ InspectError::Refused {
                    code: RefuseReason::Busy,
                    ..
                },
            ) => {
                let since = match busy_since {
                    Some(since) => since,
                    None => {
                        out::warn(format_args!(
                            "shmcast: {}: {e}; skipping refreshes until it answers",
                            args.topic
                        ));
                        *busy_since.insert(Instant::now())
                    }
                };
                if since.elapsed() >= BUSY_FOR {
                    let mut failure = failure(place, &args.topic, timeout, e);
                    failure.message.push_str(&format!(
                        " (for {}); stopped watching",
                        words::duration(since.elapsed())
                    ));
                    return Err(failure);
                }
            }
            // The publisher ended its topic (its socket is gone): the watch is over.
            Err(InspectError::NoPublisher { .. }) if shown > 0 => {
                out::warn(format_args!(
                    "shmcast: {}: the publisher ended the topic; stopped watching",
                    args.topic
                ));
                return Ok(());
            }
            Err(e) => {
                let mut failure = failure(place, &args.topic, timeout, e);
                if shown > 0 {
                    failure.message.push_str("; stopped watching");
                }
                return Err(failure);
            }
        }
        std::thread::sleep(Duration::from_millis(args.interval));
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
