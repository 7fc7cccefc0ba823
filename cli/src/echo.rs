//! `shmcast echo TOPIC`: subscribe and print each message (text, hex or JSON lines), reporting
//! lags and a demotion inline; ends after `--count` messages or when the publisher ends. How a
//! message prints follows what the topic declares (`format`): every message of a Pod topic is
//! binary.

use std::time::Duration;

use clap::ValueEnum;
use serde_json::json;
use shmcast::{Mode, RecvError, Start, Subscriber};

use crate::Place;
use crate::exit::Failure;
use crate::flags::{self, Schema};
use crate::format::{self, Format, Payloads};
use crate::out::{self, Stdout, Written};
use crate::{subscribe, words};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: a name in the topic directory, or a socket path.
    topic: String,
    /// Exit after this many messages.
    #[arg(long, short = 'n', value_name = "N")]
    count: Option<u64>,
    /// Subscribe lossy: never slow the publisher, report what is missed instead.
    #[arg(long)]
    lossy: bool,
    /// Start with the newest message to come, or the oldest still in the ring.
    #[arg(long, value_enum, default_value_t = From::Newest, value_name = "WHERE")]
    from: From,
    /// How to print each message.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    format: Format,
    /// The same as `--format json`, as on every read command.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Wait up to this many seconds for a publisher to appear (default: fail at once), and
    /// for its answer no longer than that (at least 0.2 s, at most the default 5 s).
    #[arg(long, value_name = "SECS", value_parser = flags::seconds)]
    wait: Option<Duration>,
    /// Refuse a topic that does not declare this schema (`NAME@VERSION`); exit code 6.
    #[arg(long, value_name = "NAME@VERSION", value_parser = flags::schema)]
    expect_schema: Option<Schema>,
    /// Also trust a publisher run by these users (`1001,1002`, or `any`): by default only one
    /// of our own uid is (a socket path elsewhere may have been bound by anyone).
    #[arg(long, value_name = "UIDS|any", value_parser = flags::uids)]
    trust: Option<shmcast::Admission>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// Messages published from now on.
    Newest,
    /// Also the history still in the ring.
    Oldest,
}

pub fn run(place: &Place, mut args: Args) -> Result<(), Failure> {
    if args.json {
        args.format = Format::Json;
    }
    let topic = args.topic.as_str();
    let mut builder = Subscriber::builder(topic)
        .mode(if args.lossy {
            Mode::Lossy
        } else {
            Mode::Gating
        })
        .start(match args.from {
            From::Newest => Start::Newest,
            From::Oldest => Start::Oldest,
        });
    if let Some(schema) = &args.expect_schema {
        builder = builder.expect_schema(schema.name.clone(), schema.version);
    }
    if let Some(trusted) = &args.trust {
        builder = builder.publisher(trusted.clone());
    }
    let mut sub = subscribe::connect(place, topic, args.wait, builder)?;
    let kind = Payloads::of(&sub.contract().message);
    let mut out = Stdout::about(topic);
    let mut received = 0u64;
    let mut disconnected = false;
    while args.count.is_none_or(|n| received < n) {
        let line = match sub.recv() {
            Ok(sample) => {
                received += 1;
                Some(format::render(args.format, kind, sample.seq(), &sample))
            }
            Err(RecvError::Lagged(n)) => notice(args.format, topic, Some(n)),
            Err(RecvError::Demoted) => notice(args.format, topic, None),
            Err(RecvError::Disconnected) => {
                disconnected = true;
                break;
            }
            Err(e) => return Err(Failure::recv(topic, e)),
        };
        let Some(line) = line else { continue };
        // A closed pipe (`| head`) ends the command quietly; a full disk is a failure.
        if out.line(line)? == Written::Closed {
            return Ok(());
        }
    }
    if disconnected {
        return Failure::ended(topic, &sub);
    }
    Ok(())
}

/// A lag (`n` messages missed) or a demotion (`n` is 0): a line for standard output in JSON
/// output; otherwise said on standard error, so that standard output holds only messages.
fn notice(format: Format, topic: &str, lagged: Option<u64>) -> Option<String> {
    if format == Format::Json {
        return Some(match lagged {
            Some(n) => json!({"lagged": n}).to_string(),
            None => json!({"demoted": true}).to_string(),
        });
    }
    match lagged {
        Some(n) => out::warn(format_args!(
            "shmcast: {topic}: missed {}",
            words::count(n, "message")
        )),
        None => out::warn(format_args!("shmcast: {topic}: too slow, demoted to lossy")),
    }
    None
}
