//! `shmcast pub TOPIC`: publish each line of standard input as one message (without its line
//! feed; with `--hex`, each line is hex), or with `--rate`/`--size` synthetic messages paced at
//! a rate. `--wait-subscribers N` waits for N subscribers before the first message, since
//! messages published before a subscriber connects never reach it. Ctrl-C, SIGTERM or SIGHUP
//! ends it as cleanly as the end of its input (`signals`): no stale socket is left, the same
//! summary is printed, and the exit code is 128 + the signal's number (130, 143, 129), also
//! when the signal came while it waited for space or for subscribers. A signal ignored when it
//! started (`nohup`, a background job of a script) stays ignored.
//!
//! A line is read up to the largest message and no further: a longer one (a file without line
//! feeds, say) is refused by its line number without being held in memory.

use std::io::{self, BufRead};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shmcast::{MAX_CAPACITY, MIN_CAPACITY, Publisher, RingConfig};

use crate::Place;
use crate::exit::Failure;
use crate::flags::{self, Bound, Schema};
use crate::format;
use crate::out;
use crate::progress::{CLEAR_LINE, Progress};
use crate::words;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Publish synthetic messages at this many a second (instead of standard input), at least
    /// 1e-9 (one message every 31.7 years). A message late by less than 100 ms is made up for by
    /// the next ones; after a longer stall (a full ring, a stopped process) the pace starts again
    /// from then, without a burst.
    #[arg(long, value_name = "HZ")]
    rate: Option<f64>,
    /// Size of each synthetic message in bytes (its first 8 bytes: its number, little-endian),
    /// at most the largest message (--max-message); without --rate, as fast as the subscribers
    /// allow.
    #[arg(long, value_name = "BYTES")]
    size: Option<usize>,
    /// Stop after this many messages (default: at the end of standard input; never with
    /// --rate or --size).
    #[arg(long, short = 'n', value_name = "N")]
    count: Option<u64>,
    /// Wait for this many subscribers before the first message.
    #[arg(long, value_name = "N")]
    wait_subscribers: Option<usize>,
    /// How long --wait-subscribers waits, in seconds.
    #[arg(long, default_value = "60", value_name = "SECS", value_parser = flags::seconds)]
    wait_timeout: Duration,
    /// Read each line of standard input as hex (binary messages); not with --rate or --size.
    #[arg(long, conflicts_with_all = ["rate", "size"])]
    hex: bool,
    /// The ring's capacity in bytes: a power of two from 64 to 2^40 (1 TiB).
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    capacity: u64,
    /// The largest message in bytes, at least 1 and at most half the capacity less 16
    /// (default: a quarter of the capacity). A longer line of standard input is refused.
    #[arg(long, value_name = "BYTES")]
    max_message: Option<u64>,
    /// Declare that the topic carries this schema (`NAME@VERSION`).
    #[arg(long, value_name = "NAME@VERSION", value_parser = flags::schema)]
    schema: Option<Schema>,
    /// How long the ring may stay full for a stopped gating subscriber before it is demoted
    /// to lossy, in seconds, or `none` to wait for it without end (default: 5).
    #[arg(long, value_name = "SECS|none", value_parser = flags::bound)]
    stall_bound: Option<Bound>,
    /// Also admit subscribers of these users (`1001,1002`, or `any`), checked against each
    /// one's credentials; the socket file is then open to all (mode 0666). Give the topic as a
    /// socket path in a directory they can enter: the topic directory is private.
    #[arg(long, value_name = "UIDS|any", value_parser = flags::uids)]
    admit: Option<shmcast::Admission>,
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
    if let Some(admission) = &args.admit {
        builder = builder.admission(admission.clone());
    }
    if let Some(Bound(bound)) = args.stall_bound {
        builder = builder.stall_bound(bound);
    }
    if let Some(schema) = &args.schema {
        builder = builder.schema(schema.name.clone(), schema.version);
    }
    if let Some(rate) = args.rate {
        check_rate(rate)?;
    }
    if let Some(size) = args.size {
        check_size(size, args.capacity, args.max_message)?;
    }
    let wait = args.wait_timeout;
    // Before the publisher starts its server thread, which inherits the blocked signals.
    let signals = crate::signals::block().map_err(|e| Failure::other(topic, e))?;
    let mut publisher = builder.bind().map_err(|e| Failure::bind(topic, e))?;
    // What the signal thread reports: the count as it stood when the signal came.
    let sent = Arc::new(AtomicU64::new(0));
    let seen = sent.clone();
    let name = topic.to_owned();
    let mut progress = Progress::on_stderr();
    let live = progress.is_live();
    let ending = signals
        .close_on_signal(&publisher, move || {
            if live {
                out::warn_raw(CLEAR_LINE);
            }
            out::warn(summary(&name, seen.load(Ordering::Relaxed)));
        })
        .map_err(|e| Failure::other(topic, e))?;
    let done = publish(&mut publisher, &args, wait, &mut progress, &sent);
    // A signal closes the stream under a loan or a wait, which then fails: the signal thread,
    // not that failure, has the last word (the signal's exit code and the summary).
    ending.take_over();
    progress.finish();
    done?;
    out::warn(summary(topic, sent.load(Ordering::Relaxed)));
    Ok(())
}

/// Waits for `--wait-subscribers`, then publishes standard input or synthetic messages,
/// counting them in `sent`.
fn publish(
    publisher: &mut Publisher,
    args: &Args,
    wait: Duration,
    progress: &mut Progress,
    sent: &AtomicU64,
) -> Result<(), Failure> {
    let topic = args.topic.as_str();
    if let Some(n) = args.wait_subscribers {
        publisher.wait_for_subscribers(n, wait).map_err(|e| {
            Failure::other(
                topic,
                format!(
                    "timed out after {} waiting for {} ({} connected)",
                    words::duration(e.waited),
                    words::count(e.wanted as u64, "subscriber"),
                    e.connected
                ),
            )
        })?;
    }
    if args.rate.is_some() || args.size.is_some() {
        synthetic(publisher, args, progress, sent)
    } else {
        lines(publisher, args, progress, sent)
    }
}

/// The line `pub` ends with: `shmcast: TOPIC: published N messages`.
fn summary(topic: &str, sent: u64) -> String {
    format!(
        "shmcast: {topic}: published {}",
        words::count(sent, "message")
    )
}

/// Publishes each line of standard input (up to `--count`), counting them in `sent`.
fn lines(
    p: &mut Publisher,
    args: &Args,
    progress: &mut Progress,
    sent: &AtomicU64,
) -> Result<(), Failure> {
    let topic = args.topic.as_str();
    let max = p.max_message();
    // A hex line holds two digits a byte, and whitespace between them.
    let limit = if args.hex {
        max.saturating_mul(3).saturating_add(64)
    } else {
        max
    };
    let too_long = |number: u64| {
        Failure::other(
            topic,
            format!(
                "line {number} of standard input is longer than the largest message, {} \
                 (--max-message sets it, up to half the --capacity)",
                words::count(max as u64, "byte")
            ),
        )
    };
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut count = 0u64;
    while args.count.is_none_or(|n| count < n) {
        number += 1;
        match read_line(&mut input, &mut line, limit)
            .map_err(|e| Failure::other(topic, format!("standard input: {e}")))?
        {
            Line::End => break,
            Line::TooLong => return Err(too_long(number)),
            Line::Read => {}
        }
        let payload = if args.hex {
            let text = String::from_utf8_lossy(&line);
            let bytes = format::parse_hex(&text)
                .map_err(|e| Failure::other(topic, format!("line {number}: {e}")))?;
            if bytes.len() > max {
                return Err(too_long(number));
            }
            std::borrow::Cow::Owned(bytes)
        } else {
            std::borrow::Cow::Borrowed(&line[..])
        };
        p.send(&payload).map_err(|e| Failure::other(topic, e))?;
        count += 1;
        sent.store(count, Ordering::Relaxed);
        progress.update(|| format!("{topic}: published {}", words::count(count, "message")));
    }
    Ok(())
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line, without its line feed (the last one of the input may have none).
    Read,
    /// A line longer than the limit; what was read of it is dropped, the rest left unread.
    TooLong,
    /// The end of the input.
    End,
}

/// Reads the next line of `input` into `line`, holding at most `limit` bytes of it.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, limit: usize) -> io::Result<Line> {
    line.clear();
    let mut started = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if started { Line::Read } else { Line::End });
        }
        started = true;
        let (chunk, feed) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        if line.len() + chunk.len() > limit {
            line.clear();
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(chunk);
        let used = chunk.len() + usize::from(feed);
        input.consume(used);
        if feed {
            return Ok(Line::Read);
        }
    }
}

/// The slowest `--rate`, in messages a second: one every 10^9 s (31.7 years). Every due time
/// then fits a clock reading with room to spare; a rate near 5e-20 would not fit even one
/// period.
const MIN_RATE: f64 = 1e-9;

/// Refuses a `--rate` that is not a number of messages a second the pace can keep.
fn check_rate(rate: f64) -> Result<(), Failure> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(Failure::usage(
            "--rate must be a positive number of messages a second",
        ));
    }
    if rate < MIN_RATE {
        return Err(Failure::usage(format!(
            "--rate {rate:e}: too slow: the slowest rate is {MIN_RATE:e} a second (one message \
             every 31.7 years)"
        )));
    }
    Ok(())
}

/// Refuses a `--size` larger than the largest message the ring will take, before anything is
/// bound or waited for. A `--capacity` or `--max-message` the ring cannot have passes here:
/// binding refuses it in its own words.
fn check_size(size: usize, capacity: u64, max_message: Option<u64>) -> Result<(), Failure> {
    if !capacity.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
        return Ok(());
    }
    // The default the publisher takes.
    let max = max_message.unwrap_or(RingConfig::default_max_payload(capacity));
    let Ok(ring) = RingConfig::new(capacity, max) else {
        return Ok(());
    };
    if max == 0 {
        return Ok(());
    }
    if size <= ring.max_payload() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "--size {size}: larger than the largest message, {} (--max-message sets it, up to half \
         the --capacity)",
        words::count(ring.max_payload() as u64, "byte")
    )))
}

/// How late a paced message may be and still be made up for by the ones after it.
const MAX_CATCH_UP: Duration = Duration::from_millis(100);

/// Publishes numbered messages of `--size` bytes at `--rate`, counting them in `sent`.
fn synthetic(
    p: &mut Publisher,
    args: &Args,
    progress: &mut Progress,
    sent_total: &AtomicU64,
) -> Result<(), Failure> {
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
        sent_total.store(sent, Ordering::Relaxed);
        progress.update(|| {
            let rate = sent as f64 / start.elapsed().as_secs_f64().max(1e-9);
            format!(
                "{topic}: published {} ({rate:.1}/s)",
                words::count(sent, "message")
            )
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Line, MIN_RATE, check_rate, check_size, read_line};

    #[test]
    fn rates_too_slow_to_pace_are_refused_naming_the_slowest() {
        assert!(check_rate(MIN_RATE).is_ok());
        assert!(check_rate(1e9).is_ok());
        for rate in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e-10,
            1e-300,
            f64::MIN_POSITIVE,
        ] {
            let e = check_rate(rate).unwrap_err();
            assert_eq!(e.code, crate::exit::Exit::Usage, "{rate}");
            assert!(e.message.starts_with("--rate"), "{}", e.message);
        }
        let e = check_rate(1e-300).unwrap_err();
        assert_eq!(
            e.message,
            "--rate 1e-300: too slow: the slowest rate is 1e-9 a second (one message every 31.7 \
             years)"
        );
    }

    #[test]
    fn a_size_larger_than_a_message_is_refused_naming_both_flags() {
        assert!(check_size(262_144, 1 << 20, None).is_ok());
        let e = check_size(262_145, 1 << 20, None).unwrap_err();
        assert_eq!(e.code, crate::exit::Exit::Usage);
        assert_eq!(
            e.message,
            "--size 262145: larger than the largest message, 262144 bytes (--max-message sets \
             it, up to half the --capacity)"
        );
        assert!(check_size(1000, 1 << 20, Some(1000)).is_ok());
        assert!(check_size(1001, 1 << 20, Some(1000)).is_err());
        // The smallest ring: its default largest message is 16 bytes.
        assert!(check_size(16, 64, None).is_ok());
        assert!(check_size(17, 64, None).is_err());
        // Settings the ring cannot have are left to binding, which names them.
        for (capacity, max) in [
            (1000, None),
            (32, None),
            (1 << 20, Some(1 << 20)),
            (64, Some(0)),
        ] {
            assert!(
                check_size(1 << 30, capacity, max).is_ok(),
                "{capacity} {max:?}"
            );
        }
    }

    #[test]
    fn lines_are_read_up_to_the_limit() {
        let mut input: &[u8] = b"ab\n\nabcd\nabcde\nxy";
        let mut line = Vec::new();
        let mut next = |line: &mut Vec<u8>| read_line(&mut input, line, 4).unwrap();
        assert_eq!((next(&mut line), &line[..]), (Line::Read, &b"ab"[..]));
        assert_eq!((next(&mut line), &line[..]), (Line::Read, &b""[..]));
        assert_eq!((next(&mut line), &line[..]), (Line::Read, &b"abcd"[..]));
        assert_eq!(next(&mut line), Line::TooLong);
        let mut input: &[u8] = b"xy";
        assert_eq!(read_line(&mut input, &mut line, 4).unwrap(), Line::Read);
        assert_eq!(line, b"xy");
        assert_eq!(read_line(&mut input, &mut line, 4).unwrap(), Line::End);
    }
}
