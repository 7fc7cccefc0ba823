//! The `shmcast` command: see, drive and diagnose shmcast topics from a shell.
//!
//! `list` shows every topic in the topic directory, live or stale; `stat` asks a publisher for
//! its counters and one row per subscriber (mode, lag, parked, busy or stopped); `echo` prints messages;
//! `pub` publishes lines of standard input or synthetic messages at a rate; `hz` measures a
//! topic's rate; `clean` removes the sockets publishers that died left behind; `bridge` carries
//! topics to and from other hosts over Zenoh. Every read
//! command takes `--json`. Errors are one line naming the topic and the cause, with an exit code
//! of their kind ([`exit`]).
#![deny(unsafe_code)]

mod bridge;
mod clean;
mod echo;
mod exit;
mod format;
mod hz;
mod list;
mod progress;
mod publish;
mod signals;
mod snapshot;
mod stat;
mod table;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use exit::{EXIT_CODES, Failure};

/// See, drive and diagnose shmcast topics: zero-copy one-to-many messaging between processes.
///
/// Topic names resolve in the topic directory: `--dir`, else `$SHMCAST_DIR`, else
/// `$XDG_RUNTIME_DIR/shmcast/`, else `/tmp/shmcast-<uid>/`. A topic containing `/` is a socket
/// path, used as given.
#[derive(Debug, Parser)]
#[command(name = "shmcast", version, after_help = EXIT_CODES, after_long_help = EXIT_CODES)]
struct Cli {
    /// The topic directory (instead of $SHMCAST_DIR, $XDG_RUNTIME_DIR/shmcast/ or
    /// /tmp/shmcast-<uid>/).
    #[arg(long, global = true, value_name = "DIR")]
    dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every topic in the directory: live or stale, local or imported, its publisher, contract,
    /// capacity, subscribers, messages published and current rate.
    List(list::Args),
    /// A publisher's counters (with the messages lost upstream, before they reached it: a
    /// bridged topic's gaps) and one row per subscriber: pid, executable, mode, lag, parked,
    /// busy or stopped, received, lagged. Also `inspect`.
    #[command(visible_alias = "inspect")]
    Stat(stat::Args),
    /// Print a topic's messages (text, hex or JSON lines), reporting lags inline.
    Echo(echo::Args),
    /// Publish each line of standard input as one message, or synthetic messages at a rate.
    Pub(publish::Args),
    /// Measure a topic's rate: messages/s, bytes/s, intervals and lag over a sliding window.
    Hz(hz::Args),
    /// Remove sockets left by publishers that died (only sockets of ours that refuse
    /// connections).
    Clean(clean::Args),
    /// Export local topics to Zenoh and import Zenoh keys into local topics, so a topic
    /// reaches other hosts.
    Bridge(bridge::Args),
}

/// Where topic names resolve, as `--dir` says (`None`: the environment decides).
pub struct Place {
    /// The directory `--dir` names.
    pub dir: Option<PathBuf>,
}

impl Place {
    /// Inspection settings for `topic` in this place.
    pub fn inspector(&self, topic: &str, timeout: Duration) -> shmcast::Inspector {
        let mut i = shmcast::Inspector::new(topic).timeout(timeout);
        if let Some(dir) = &self.dir {
            i = i.directory(dir);
        }
        i
    }

    /// The directory that `list` and `clean` look in.
    pub fn directory(&self) -> Result<PathBuf, Failure> {
        match &self.dir {
            Some(dir) => Ok(dir.clone()),
            None => shmcast::TopicDir::from_env()
                .map(|d| d.path)
                .map_err(|e| Failure::other("topic directory", e)),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let place = Place { dir: cli.dir };
    let result = match cli.command {
        Command::List(args) => list::run(&place, args),
        Command::Stat(args) => stat::run(&place, args),
        Command::Echo(args) => echo::run(&place, args),
        Command::Pub(args) => publish::run(&place, args),
        Command::Hz(args) => hz::run(&place, args),
        Command::Clean(args) => clean::run(&place, args),
        Command::Bridge(args) => bridge::run(&place, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("shmcast: {}", failure.message);
            ExitCode::from(failure.code as u8)
        }
    }
}
