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
mod flags;
mod format;
mod hz;
mod list;
mod occupant;
mod out;
mod parallel;
mod peer;
mod progress;
mod publish;
mod signals;
mod snapshot;
mod stat;
mod subscribe;
mod table;
mod window;
mod words;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use exit::{EXIT_CODES, Exit, Failure};

/// See, drive and diagnose shmcast topics: zero-copy one-to-many messaging between processes.
///
/// Topic names resolve in the topic directory: `--dir`, else `$SHMCAST_DIR`, else
/// `$XDG_RUNTIME_DIR/shmcast/`, else `/tmp/shmcast-<uid>/`. A topic containing `/` is a socket
/// path, used as given.
#[derive(Debug, Parser)]
#[command(name = "shmcast", version, after_help = EXIT_CODES, after_long_help = EXIT_CODES)]
struct Cli {
    /// The topic directory, an absolute path as SHMCAST_DIR must be (instead of $SHMCAST_DIR,
    /// $XDG_RUNTIME_DIR/shmcast/ or /tmp/shmcast-<uid>/).
    #[arg(long, global = true, value_name = "DIR")]
    dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every topic in the directory: live or stale, local or imported, its publisher, contract,
    /// capacity, subscribers, messages published and current rate.
    ///
    /// STATE is one of: `live` (its publisher answered); `stale` (a socket left by a publisher
    /// that died: `shmcast clean` removes it); `stopped` (its publisher's process is stopped by
    /// a signal or a debugger, so it cannot answer: PID says which; `kill -CONT PID` resumes
    /// it); `no answer` (its publisher did not answer within --timeout: busy, or overloaded);
    /// `refused` (its publisher refused us, or is another user's: --trust trusts it); `error`
    /// (anything else, such as a socket of another program: --json says what). Columns a
    /// publisher did not answer are `-`.
    List(list::Args),
    /// A publisher's counters (with the messages lost upstream, before they reached it: a
    /// bridged topic's gaps) and one row per subscriber: pid, executable, mode, lag, parked,
    /// busy or stopped, received, lagged.
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
    /// The place `--dir` names, refused as a relative `SHMCAST_DIR` is (exit code 2): processes
    /// in other working directories would resolve it elsewhere.
    pub fn new(dir: Option<PathBuf>) -> Result<Place, Failure> {
        if let Some(dir) = &dir
            && !dir.is_absolute()
        {
            return Err(Failure::usage(format!(
                "--dir {} is not an absolute path: processes in other working directories \
                 would look for topics elsewhere",
                dir.display()
            )));
        }
        Ok(Place { dir })
    }

    /// Inspection settings for `topic` in this place, trusting publishers of our own uid and
    /// `trust`.
    pub fn inspector(
        &self,
        topic: &str,
        timeout: Duration,
        trust: Option<&shmcast::Admission>,
    ) -> shmcast::Inspector {
        let mut i = shmcast::Inspector::new(topic).timeout(timeout);
        if let Some(dir) = &self.dir {
            i = i.directory(dir);
        }
        if let Some(trust) = trust {
            i = i.trust(trust.clone());
        }
        i
    }

    /// The directory that `list` and `clean` look in, refused as every command that names a
    /// topic there refuses it, in the same words (`refusing topic directory DIR: owned by uid
    /// 0`): another user's, one others may enter, a symbolic link. A missing directory the
    /// environment names passes (nothing was published there yet); one `--dir` names is a
    /// wrong setting (exit code 2), a typing error more likely than an empty place.
    pub fn directory(&self) -> Result<PathBuf, Failure> {
        let dir = match &self.dir {
            Some(dir) => shmcast::TopicDir {
                path: dir.clone(),
                source: shmcast::DirSource::Builder,
            },
            None => {
                shmcast::TopicDir::from_env().map_err(|e| Failure::topic("topic directory", &e))?
            }
        };
        dir.check()
            .map_err(|e| Failure::new(Exit::Other, e.to_string()))?;
        if dir.source == shmcast::DirSource::Builder
            && std::fs::symlink_metadata(&dir.path)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Err(Failure::usage(format!(
                "--dir {}: no such directory",
                dir.path.display()
            )));
        }
        Ok(dir.path)
    }

    /// The socket path `topic` names here (`None`: the topic directory is unknown).
    pub fn socket_path(&self, topic: &str) -> Option<PathBuf> {
        if topic.contains('/') {
            return Some(PathBuf::from(topic));
        }
        self.directory().ok().map(|d| d.join(topic))
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help, the version, or a wrong command line (exit code 2), printed by clap; what it
        // could not print is an error of its own (a closed pipe is not: the reader is done).
        Err(e) => {
            return match e.print() {
                Err(io) if !e.use_stderr() && io.kind() != std::io::ErrorKind::BrokenPipe => {
                    out::warn(format_args!("shmcast: writing the help: {io}"));
                    ExitCode::from(Exit::Other as u8)
                }
                _ => ExitCode::from(e.exit_code().clamp(0, 255) as u8),
            };
        }
    };
    let result = Place::new(cli.dir).and_then(|place| match cli.command {
        Command::List(args) => list::run(&place, args),
        Command::Stat(args) => stat::run(&place, args),
        Command::Echo(args) => echo::run(&place, args),
        Command::Pub(args) => publish::run(&place, args),
        Command::Hz(args) => hz::run(&place, args),
        Command::Clean(args) => clean::run(&place, args),
        Command::Bridge(args) => bridge::run(&place, args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            out::warn(format_args!("shmcast: {}", failure.message));
            ExitCode::from(failure.code as u8)
        }
    }
}
