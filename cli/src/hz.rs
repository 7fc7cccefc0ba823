//! `shmcast hz TOPIC`: a lossy subscriber (it never slows the publisher) that reports the
//! topic's rate every `--interval`: messages/s, bytes/s, shortest, longest and mean interval
//! and its standard deviation, and messages missed, over the last `--window` messages. The
//! last report comes at the end, after the last full interval or a part of one: at the end of
//! `--duration`, or when the publisher ends (or goes away), if anything arrived since the report
//! before, so that a stream shorter than an interval, or its last part, is measured too.

use std::time::{Duration, Instant};

use serde_json::json;
use shmcast::{Mode, RecvError, Subscriber};

use crate::Place;
use crate::exit::Failure;
use crate::flags;
use crate::out::{Stdout, Written};
use crate::window::Window;
use crate::{subscribe, words};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Messages the rates are measured over (at least 2: a rate needs two arrivals).
    #[arg(long, short, default_value_t = 1000, value_name = "N",
          value_parser = flags::at_least::<2>)]
    window: u64,
    /// Time between two reports, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    interval: u64,
    /// Stop this many seconds after connecting, with a last report (default: when the
    /// publisher ends, with a last report of what arrived since the one before).
    #[arg(long, value_name = "SECS", value_parser = flags::seconds)]
    duration: Option<Duration>,
    /// Print one JSON object a report.
    #[arg(long)]
    json: bool,
    /// Wait up to this many seconds for a publisher to appear (default: fail at once), and
    /// for its answer no longer than that (at least 0.2 s, at most the default 5 s).
    #[arg(long, value_name = "SECS", value_parser = flags::seconds)]
    wait: Option<Duration>,
    /// Also trust a publisher run by these users (`1001,1002`, or `any`): by default only one
    /// of our own uid is (a socket path elsewhere may have been bound by anyone).
    #[arg(long, value_name = "UIDS|any", value_parser = flags::uids)]
    trust: Option<shmcast::Admission>,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let topic = args.topic.as_str();
    let interval = Duration::from_millis(args.interval.max(1));
    let mut builder = Subscriber::builder(topic).mode(Mode::Lossy);
    if let Some(trusted) = &args.trust {
        builder = builder.publisher(trusted.clone());
    }
    let mut sub = subscribe::connect(place, topic, args.wait, builder)?;
    let mut out = Stdout::about(topic);
    // The duration counts from the connection, not from the wait for a publisher before it.
    let start = Instant::now();
    let end = args.duration.map(|d| start + d);
    let mut window = Window::new(usize::try_from(args.window).unwrap_or(usize::MAX));
    let mut next_report = start + interval;
    // Whether anything arrived (or was missed) since the last report.
    let mut unreported = false;
    loop {
        let now = Instant::now();
        let ended = end.is_some_and(|e| now >= e);
        // A report is due at each interval, and at the end of the duration whether or not it
        // ends an interval.
        if now >= next_report || ended {
            if report(&mut out, &args, &window)? == Written::Closed || ended {
                return Ok(());
            }
            unreported = false;
            next_report += interval;
            continue;
        }
        let until = end.map_or(next_report, |e| e.min(next_report));
        match sub.recv_timeout(until - now) {
            Ok(sample) => window.arrived(start.elapsed(), sample.len()),
            Err(RecvError::Lagged(n)) => window.missed(n),
            Err(RecvError::Timeout | RecvError::Demoted) => continue,
            Err(RecvError::Disconnected) => break,
            Err(e) => return Err(Failure::recv(topic, e)),
        }
        unreported = true;
    }
    // The stream ended between two reports: what came since the last one is reported.
    if unreported && report(&mut out, &args, &window)? == Written::Closed {
        return Ok(());
    }
    Failure::ended(topic, &sub)
}

/// Prints one report of `window`.
fn report(out: &mut Stdout, args: &Args, window: &Window) -> Result<Written, Failure> {
    let line = match (args.json, window.rates()) {
        (true, Some(r)) => json!({
            "topic": args.topic,
            "messages": r.messages,
            "rate": r.rate,
            "bytes_per_s": r.bytes_per_s,
            "min_interval_s": r.min.as_secs_f64(),
            "max_interval_s": r.max.as_secs_f64(),
            "mean_interval_s": r.mean.as_secs_f64(),
            "std_dev_s": r.std_dev.as_secs_f64(),
            "lagged": r.lagged,
        })
        .to_string(),
        (true, None) => {
            json!({"topic": args.topic, "messages": window.len(), "rate": null}).to_string()
        }
        (false, Some(r)) => format!(
            "{}: {:.2} msg/s  {:.1} B/s  interval min {:.3} ms max {:.3} ms mean {:.3} ms \
             std dev {:.3} ms  lagged {}  (window {})",
            args.topic,
            r.rate,
            r.bytes_per_s,
            ms(r.min),
            ms(r.max),
            ms(r.mean),
            ms(r.std_dev),
            r.lagged,
            r.messages
        ),
        (false, None) if window.len() == 0 => format!("{}: no messages yet", args.topic),
        // A rate needs two arrivals some time apart.
        (false, None) => format!(
            "{}: {}, no rate yet",
            args.topic,
            words::count(window.len() as u64, "message")
        ),
    };
    out.line(line)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
