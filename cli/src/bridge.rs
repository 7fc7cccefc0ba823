//! `shmcast bridge`: export local topics to Zenoh and import Zenoh keys into local topics
//! (`shmcast_zenoh::Bridge`), from flags or a JSON file (`--config`), until Ctrl-C, SIGTERM or
//! SIGHUP, which stop it cleanly (its last counters, its imported topics removed) and then end
//! it with 128 + the signal's number, as a signal ends every other command (130, 143, 129).
//!
//! Events (a topic connected, bound, a contract refused, an imported topic refused for export,
//! a failure retried, `--connect` endpoints that cannot be reached) go to standard error, one
//! line each. Every `--stats` seconds, and once more when the bridge ends, each topic's counters
//! (messages, gaps, refusals, drops) go to standard output as one JSON line; a reader that goes
//! away ends the bridge quietly.
//!
//! Endpoints, topics, options, keys, the prefix, `--stats`, the `--config` file and the topic
//! directory (a relative `SHMCAST_DIR`) are checked before anything starts: a mistake is a
//! usage error (exit code 2) in one line naming the flag, or the file's field (and both topics,
//! as given, for a topic bridged twice or a loop). What goes wrong with one topic once it runs
//! (its local topic in use, say) is said on standard error and retried; the others carry on.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use shmcast_zenoh::{
    Bridge, BridgeConfig, BridgeError, ConfigError, Direction, SessionMode, TopicConfig,
    TopicStats, check_endpoint,
};

use crate::Place;
use crate::exit::{self, Failure};

#[derive(Debug, clap::Args)]
#[command(after_help = TOPIC_SPEC)]
pub struct Args {
    /// Export a local topic to Zenoh (repeatable): TOPIC[,OPTION...], see below.
    #[arg(long, value_name = "SPEC")]
    export: Vec<String>,
    /// Import a Zenoh key into a local topic (repeatable): TOPIC[,OPTION...], see below.
    #[arg(long, value_name = "SPEC")]
    import: Vec<String>,
    /// A Zenoh endpoint to listen on, tcp/HOST:PORT such as tcp/0.0.0.0:7447 (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// A Zenoh endpoint to connect to, tcp/HOST:PORT such as tcp/192.0.2.7:7447 (repeatable;
    /// one that cannot be reached is retried, and reported once on standard error).
    #[arg(long, value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// Join Zenoh as a peer or as a client of a router, which --connect names (default: peer).
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<Mode>,
    /// Let Zenoh find peers by multicast and gossip scouting (default: only the endpoints).
    #[arg(long)]
    scouting: bool,
    /// The key prefix of topics without a key= option (default: shmcast; not empty).
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<String>,
    /// A JSON configuration (session and topics); flags add topics and endpoints to it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print each topic's counters as JSON lines every this many seconds (0: only at the end).
    #[arg(long, default_value_t = 0.0, value_name = "SECS")]
    stats: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A Zenoh peer.
    Peer,
    /// A client of a Zenoh router.
    Client,
}

const TOPIC_SPEC: &str = "\
A topic is named as `shmcast pub` takes it (A-Z a-z 0-9 . _ -); a socket path needs key=.
Topic options (comma-separated after the topic name):
  reliable              gating local subscriber, blocking Zenoh puts: nothing lost while the path
                        exists; the local publisher waits for the network up to its stall bound
                        (the default)
  lossy                 never slows the local publisher; every loss is a counted gap
  key=KEYEXPR           the Zenoh key (default: PREFIX/TOPIC)
  schema=NAME@VERSION   import: the local topic declares this schema; other messages are refused
  pod=NAME:SIZE:ALIGN   import: the local topic declares this Pod type
  bytes                 import: the local topic declares plain bytes
  max-message=BYTES     import: the local topic's largest message
  capacity=BYTES        import: the local ring's size, a power of two from 64 bytes to 1 TiB
Each option at most once; reliable and lossy exclude each other, as do schema=, pod= and bytes.
An import whose contract is not fully given adopts the first remote message's. A local topic an
import cannot bind (another publisher serves it) is said once and retried every second; the
other topics carry on.

Gaps in an import's remote sequence numbers (each exporting host's apart) are counted in its
`gaps` and shown on this host by `shmcast stat TOPIC` as \"lost upstream\". An imported topic
is marked imported (`shmcast list`, `shmcast stat`), and an export of any bridge refuses it, with
one event line, looking again every second: exporting what was imported could send messages
round a loop.";

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let config = configuration(place, &args)?;
    if config.topics.is_empty() {
        return Err(Failure::usage(
            "bridge: nothing to bridge: give --export, --import or --config with topics",
        ));
    }
    // Checked as every flag of seconds is: NaN, a negative, an endless or a too large number
    // is refused.
    let every = Some(exit::seconds("--stats", args.stats)?).filter(|d| !d.is_zero());
    // Before any thread exists, so that Zenoh's threads do not take the signals.
    let signals = crate::signals::block().map_err(|e| Failure::other("bridge", e))?;
    let bridge = Bridge::builder(config)
        .on_event(|e| say(format_args!("shmcast bridge: {e}")))
        .start()
        .map_err(|e| match e {
            BridgeError::Config(c) => Failure::usage(format!("bridge: {c}")),
            // A relative SHMCAST_DIR is a wrong setting, as for every command; a directory
            // others may enter is not.
            BridgeError::Directory(e) => Failure::topic("bridge", &e),
            e => Failure::other("bridge", e),
        })?;
    let signal = signals
        .flag_on_signal()
        .map_err(|e| Failure::other("bridge", e))?;
    say(format_args!(
        "shmcast bridge: running as {:016x} (Ctrl-C ends it)",
        bridge.id()
    ));
    let mut next = Instant::now();
    let taken = loop {
        let taken = signal.load(Ordering::Relaxed);
        if taken != 0 {
            break taken;
        }
        if let Some(every) = every
            && Instant::now() >= next
        {
            if !print_stats(bridge.stats())? {
                // The reader went away (`| head`): nothing more to print, so the bridge ends.
                bridge.stop();
                return Ok(());
            }
            next += every;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The final counters, once no message can move them.
    print_stats(bridge.stop())?;
    // The bridge has stopped as cleanly as a normal end; the code says a signal ended it.
    std::process::exit(128 + taken)
}

/// Prints one JSON line per topic; `false` once the reader has closed standard output (EPIPE,
/// a quiet end), a failure for any other write error (a full disk).
fn print_stats(stats: Vec<TopicStats>) -> Result<bool, Failure> {
    let mut out = std::io::stdout().lock();
    let mut text = String::new();
    for t in stats {
        text.push_str(&t.to_json().to_string());
        text.push('\n');
    }
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure::other("bridge: writing standard output", e)),
    }
}

/// One line on standard error; a failure to write it is ignored, as there is nowhere left to
/// tell it.
fn say(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn configuration(place: &Place, args: &Args) -> Result<BridgeConfig, Failure> {
    let file = args.config.as_ref().map(|p| p.display().to_string());
    let mut config = match &args.config {
        Some(path) => {
            // A file that cannot be read is a wrong flag, as a file that does not parse is.
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
            BridgeConfig::from_json(&text)
                .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?
        }
        None => BridgeConfig::default(),
    };
    if let Some(mode) = args.mode {
        config.mode = match mode {
            Mode::Peer => SessionMode::Peer,
            Mode::Client => SessionMode::Client,
        };
    }
    if let Some(prefix) = &args.prefix {
        BridgeConfig::check_prefix(prefix).map_err(|e| flag("--prefix", prefix, e))?;
        config.prefix = prefix.clone();
    }
    config.scouting |= args.scouting;
    let in_file = config.listen.len();
    for (flag_name, given, into) in [
        ("--listen", &args.listen, &mut config.listen),
        ("--connect", &args.connect, &mut config.connect),
    ] {
        for endpoint in given {
            check_endpoint(endpoint)
                .map_err(|why| Failure::usage(format!("{flag_name} {endpoint}: {why}")))?;
            let before = into.iter().position(|e| e == endpoint);
            if let (Some(at), "--listen") = (before, flag_name) {
                let whose = match &file {
                    Some(file) if at < in_file => format!("already in {file}'s listen"),
                    _ => "given twice".to_owned(),
                };
                return Err(Failure::usage(format!(
                    "--listen {endpoint}: {whose}: one endpoint is listened on once"
                )));
            }
            into.push(endpoint.clone());
        }
    }
    if config.mode == SessionMode::Client && config.connect.is_empty() && !config.scouting {
        return Err(Failure::usage(match (&file, args.mode) {
            (Some(file), None) => format!(
                "{file}: mode: \"client\" joins Zenoh through a router: give the router's \
                 endpoint in connect (or --connect ENDPOINT), or set scouting to true to find one"
            ),
            _ => "--mode client: a client joins Zenoh through a router: give --connect \
                  ENDPOINT (or --scouting to find one)"
                .to_owned(),
        }));
    }
    if let Some(dir) = &place.dir {
        config.directory = Some(dir.clone());
    }
    // How the user named each topic, for the errors that involve two of them.
    let mut names: Vec<String> = (0..config.topics.len())
        .map(|i| format!("topics[{i}]"))
        .collect();
    let from_file = names.len();
    for (specs, direction) in [
        (&args.export, Direction::Export),
        (&args.import, Direction::Import),
    ] {
        for spec in specs {
            let t = TopicConfig::parse_spec(spec, direction)
                .map_err(|e| Failure::usage(format!("--{direction} {spec}: {e}")))?;
            config.topics.push(t);
            names.push(format!("--{direction} {spec}"));
        }
    }
    // Everything else a bridge would refuse when it starts, refused before anything starts.
    config.validate().map_err(|e| {
        Failure::usage(match (e.topics(), &file) {
            (Some([a, b]), Some(file)) if b < from_file => {
                format!(
                    "{file}: {} and {}: {}",
                    names[a],
                    names[b],
                    e.without_topics()
                )
            }
            (Some([a, b]), Some(file)) if a < from_file => {
                format!(
                    "{file} {} and {}: {}",
                    names[a],
                    names[b],
                    e.without_topics()
                )
            }
            (Some([a, b]), _) => format!("{} and {}: {}", names[a], names[b], e.without_topics()),
            (None, _) => format!("bridge: {e}"),
        })
    })?;
    Ok(config)
}

/// A usage error about `flag VALUE`: what the value must be.
fn flag(flag: &str, value: &str, e: ConfigError) -> Failure {
    match e {
        ConfigError::Field { expected, .. } => {
            Failure::usage(format!("{flag} {value:?}: {expected}"))
        }
        e => Failure::usage(format!("{flag} {value:?}: {e}")),
    }
}
