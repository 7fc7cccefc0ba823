//! `shmcast hz TOPIC`: a lossy subscriber (it never slows the publisher) that reports the
//! topic's rate every `--interval`: messages/s, bytes/s, shortest, longest and mean interval
//! and its standard deviation, and messages missed, over the last `--window` messages.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;
use shmcast::{Mode, RecvError, Subscriber};

use crate::Place;
use crate::exit::{self, Failure};
use crate::window::{Rates, Window};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Messages the rates are measured over.
    #[arg(long, short, default_value_t = 1000, value_name = "N")]
    window: usize,
    /// Time between two reports, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    interval: u64,
    /// Stop this many seconds after connecting (default: when the publisher ends).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Print one JSON object a report.
    #[arg(long)]
    json: bool,
    /// Wait up to this many seconds for a publisher to appear (default: fail at once).
    #[arg(long, value_name = "SECS")]
    wait: Option<f64>,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let topic = args.topic.as_str();
    let mut builder = Subscriber::builder(topic).mode(Mode::Lossy);
    if let Some(dir) = &place.dir {
        builder = builder.directory(dir);
    }
    if let Some(wait) = args.wait {
        builder = builder.connect_timeout(exit::seconds("--wait", wait)?);
    }
    let duration = args
        .duration
        .map(|d| exit::seconds("--duration", d))
        .transpose()?;
    let interval = Duration::from_millis(args.interval.max(1));
    let mut sub = builder.connect().map_err(|e| Failure::connect(topic, e))?;
    // The duration counts from the connection, not from the wait for a publisher before it.
    let start = Instant::now();
    let end = duration.map(|d| start + d);
    let mut window = Window::new(args.window);
    let mut next_report = start + interval;
    loop {
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            return Ok(());
        }
        if now >= next_report {
            if !report(&args, window.rates()) {
                return Ok(());
            }
            next_report += interval;
            continue;
        }
        let until = end.map_or(next_report, |e| e.min(next_report));
        match sub.recv_timeout(until - now) {
            Ok(sample) => window.arrived(start.elapsed(), sample.len()),
            Err(RecvError::Lagged(n)) => window.missed(n),
            Err(RecvError::Timeout | RecvError::Demoted) => {}
            Err(RecvError::Disconnected) => return Ok(()),
            Err(e) => return Err(Failure::recv(topic, e)),
        }
    }
}

/// Prints one report; `false` when standard output is closed.
fn report(args: &Args, rates: Option<Rates>) -> bool {
    let line = match (args.json, rates) {
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
        (true, None) => json!({"topic": args.topic, "messages": 0, "rate": null}).to_string(),
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
        (false, None) => format!("{}: no messages yet", args.topic),
    };
    writeln!(std::io::stdout().lock(), "{line}").is_ok()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
