//! `shmcast pub TOPIC`: publish each line of standard input as one message (without its line
//! feed; with `--hex`, each line is hex), or with `--rate`/`--size` synthetic messages paced at
//! a rate. `--wait-subscribers N` waits for N subscribers before the first message, since
//! messages published before a subscriber connects never reach it. Ctrl-C or SIGTERM ends it
//! as cleanly as the end of its input (`signals`): no stale socket is left.

use std::io::BufRead;
use std::time::{Duration, Instant};

use shmcast::Publisher;

use crate::Place;
use crate::echo::parse_schema;
use crate::exit::{self, Failure};
use crate::format;
use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Publish synthetic messages at this many a second (instead of standard input). A message
    /// late by less than 100 ms is made up for by the next ones; after a longer stall (a full
    /// ring, a stopped process) the pace starts again from then, without a burst.
    #[arg(long, value_name = "HZ")]
    rate: Option<f64>,
    /// Size of each synthetic message in bytes (its first 8 bytes: its number, little-endian);
    /// without --rate, as fast as the subscribers allow.
    #[arg(long, value_name = "BYTES")]
    size: Option<usize>,
    /// Stop after this many synthetic messages (default: never).
    #[arg(long, short = 'n', value_name = "N")]
    count: Option<u64>,
    /// Wait for this many subscribers before the first message.
    #[arg(long, value_name = "N")]
    wait_subscribers: Option<usize>,
    /// How long --wait-subscribers waits, in seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    wait_timeout: f64,
    /// Read each line of standard input as hex (binary messages).
    #[arg(long)]
    hex: bool,
    /// The ring's capacity in bytes.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    capacity: u64,
    /// The largest message in bytes (default: a quarter of the capacity).
    #[arg(long, value_name = "BYTES")]
    max_message: Option<u64>,
    /// Declare that the topic carries this schema (`NAME@VERSION`).
    #[arg(long, value_name = "NAME@VERSION")]
    schema: Option<String>,
    /// How long the ring may stay full for a stopped gating subscriber before it is demoted
    /// to lossy, in seconds, or `none` to wait for it without end (default: 5).
    #[arg(long, value_name = "SECS|none")]
    stall_bound: Option<String>,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let topic = args.topic.as_str();
    let mut builder = Publisher::builder(topic).capacity(args.capacity);
    if let Some(dir) = &place.dir {
        builder = builder.directory(dir);
    }
    if let Some(max) = args.max_message {
        builder = builder.max_message(max);
    }
    if let Some(bound) = &args.stall_bound {
        let bound = match bound.as_str() {
            "none" => None,
            secs => match secs.parse::<f64>() {
                Ok(s) if s > 0.0 => Some(exit::seconds("--stall-bound", s)?),
                _ => {
                    return Err(Failure::usage(format!(
                        "--stall-bound {secs}: a positive number of seconds, or none"
                    )));
                }
            },
        };
        builder = builder.stall_bound(bound);
    }
    if let Some(spec) = &args.schema {
        let (name, version) = parse_schema(spec)?;
        builder = builder.schema(name, version);
    }
    if args.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(Failure::usage(
            "--rate must be a positive number of messages a second",
        ));
    }
    let wait = exit::seconds("--wait-timeout", args.wait_timeout)?;
    // Before the publisher starts its server thread, which inherits the blocked signals.
    let signals = crate::signals::block().map_err(|e| Failure::other(topic, e))?;
    let mut publisher = builder.bind().map_err(|e| Failure::bind(topic, e))?;
    signals
        .remove_on_signal(publisher.path())
        .map_err(|e| Failure::other(topic, e))?;
    if let Some(n) = args.wait_subscribers {
        publisher
            .wait_for_subscribers(n, wait)
            .map_err(|e| Failure::other(topic, e))?;
    }
    let mut progress = Progress::on_stderr();
    let sent = if args.rate.is_some() || args.size.is_some() {
        synthetic(&mut publisher, &args, &mut progress)?
    } else {
        lines(&mut publisher, &args, &mut progress)?
    };
    progress.finish();
    eprintln!("shmcast: {topic}: published {sent} messages");
    Ok(())
}

/// Publishes each line of standard input; returns how many.
fn lines(p: &mut Publisher, args: &Args, progress: &mut Progress) -> Result<u64, Failure> {
    let topic = args.topic.as_str();
    let mut sent = 0u64;
    for line in std::io::stdin().lock().split(b'\n') {
        let line = line.map_err(|e| Failure::other(topic, format!("standard input: {e}")))?;
        let payload = if args.hex {
            let text = String::from_utf8_lossy(&line);
            format::parse_hex(&text).map_err(|e| Failure::other(topic, e))?
        } else {
            line
        };
        p.send(&payload).map_err(|e| Failure::other(topic, e))?;
        sent += 1;
        progress.update(|| format!("{topic}: published {sent} messages"));
    }
    Ok(sent)
}

/// How late a paced message may be and still be made up for by the ones after it.
const MAX_CATCH_UP: Duration = Duration::from_millis(100);

/// Publishes numbered messages of `--size` bytes at `--rate`; returns how many.
fn synthetic(p: &mut Publisher, args: &Args, progress: &mut Progress) -> Result<u64, Failure> {
    let topic = args.topic.as_str();
    let size = args.size.unwrap_or(8);
    let period = args.rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let start = Instant::now();
    // The schedule: message `sent` is due `sent - paced_from.1` periods after `paced_from.0`.
    let mut paced_from = (start, 0u64);
    let mut sent = 0u64;
    while args.count.is_none_or(|n| sent < n) {
        if let Some(period) = period {
            // An absolute schedule: a message a little late does not delay the ones after it,
            // but a stall is not made up for with a burst.
            let due = paced_from.0 + period.mul_f64((sent - paced_from.1) as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            } else if now - due > MAX_CATCH_UP {
                paced_from = (now, sent);
            }
        }
        let mut loan = p.loan(size).map_err(|e| Failure::other(topic, e))?;
        let seq = sent.to_le_bytes();
        let n = size.min(seq.len());
        loan[..n].copy_from_slice(&seq[..n]);
        loan[n..].fill(0);
        loan.publish();
        sent += 1;
        progress.update(|| {
            let rate = sent as f64 / start.elapsed().as_secs_f64().max(1e-9);
            format!("{topic}: published {sent} messages ({rate:.1}/s)")
        });
    }
    Ok(sent)
}
