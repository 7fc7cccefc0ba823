//! `shmcast list`: every topic socket in the topic directory, live or stale, with what its
//! publisher reports (its origin: `imported` for a topic republished from elsewhere, as a
//! bridge's import is, else `local`). The current rate comes from two snapshots `--interval` apart.
//!
//! The directory is checked as every command that names a topic checks it: one another user
//! owns, or that others may enter, is refused (exit code 1) rather than listed.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use shmcast::{InspectError, TopicInfo};

use crate::Place;
use crate::exit::Failure;
use crate::out::Stdout;
use crate::peer::{self, Listener};
use crate::{snapshot, table, words};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Time between the two snapshots the rate is measured over, in milliseconds; 0 measures
    /// no rate (RATE is `-`).
    #[arg(long, default_value_t = 200, value_name = "MS")]
    interval: u64,
    /// How long to wait for each publisher's answer, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    timeout: u64,
}

/// One topic socket and what became of asking its publisher.
struct Entry {
    name: String,
    path: PathBuf,
    state: Result<TopicInfo, InspectError>,
    rate: Option<f64>,
    /// Who listens on a socket whose publisher did not answer.
    listener: Option<Listener>,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let dir = place.directory()?;
    let timeout = Duration::from_millis(args.timeout);
    let mut entries: Vec<Entry> = sockets(&dir)?
        .into_iter()
        .map(|(name, path)| Entry {
            state: ask(&path, timeout),
            name,
            path,
            rate: None,
            listener: None,
        })
        .collect();
    for e in &mut entries {
        if matches!(e.state, Err(InspectError::Timeout)) {
            e.listener = peer::listener(&e.path);
        }
    }
    // One snapshot has no rate: a rate of 0 would claim the publisher is idle.
    if args.interval > 0 && entries.iter().any(|e| e.state.is_ok()) {
        std::thread::sleep(Duration::from_millis(args.interval));
        for e in &mut entries {
            if let Ok(first) = &e.state
                && let Ok(second) = ask(&e.path, timeout)
            {
                e.rate = rate(first, &second);
                e.state = Ok(second);
            }
        }
    }
    let mut out = Stdout::new();
    if args.json {
        let all: Vec<Value> = entries.iter().map(entry_json).collect();
        let _ = out.line(Value::Array(all))?;
        return Ok(());
    }
    if entries.is_empty() {
        let _ = out.line(format_args!("no topics in {}", dir.display()))?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = entries.iter().map(entry_cells).collect();
    let header = [
        "TOPIC", "STATE", "ORIGIN", "PID", "UID", "EXE", "CONTRACT", "CAPACITY", "SUBS",
        "MESSAGES", "RATE",
    ];
    let _ = out.write(&table::render(&header, &rows))?;
    Ok(())
}

/// The sockets in `dir`, by name (a missing directory has none).
fn sockets(dir: &Path) -> Result<Vec<(String, PathBuf)>, Failure> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Failure::other(&dir.display().to_string(), e)),
    };
    let mut out = Vec::new();
    for entry in read.flatten() {
        let is_socket = entry.file_type().is_ok_and(|t| t.is_socket());
        if is_socket {
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

fn ask(path: &Path, timeout: Duration) -> Result<TopicInfo, InspectError> {
    // A path (it contains `/`) is used as given, whatever the directory settings.
    shmcast::Inspector::new(path.to_string_lossy())
        .timeout(timeout)
        .inspect()
}

/// Messages a second between two snapshots of one publisher.
fn rate(first: &TopicInfo, second: &TopicInfo) -> Option<f64> {
    let dt = second.uptime.checked_sub(first.uptime)?.as_secs_f64();
    let dn = second
        .counters
        .messages
        .checked_sub(first.counters.messages)?;
    (dt > 0.0).then(|| dn as f64 / dt)
}

/// The STATE column, as `list --help` describes it.
fn state_name(e: &Entry) -> &'static str {
    match &e.state {
        Ok(_) => "live",
        Err(InspectError::Stale(_)) => "stale",
        Err(InspectError::Refused { .. } | InspectError::UntrustedPublisher { .. }) => "refused",
        Err(InspectError::Timeout) => e.listener.as_ref().map_or("no answer", Listener::state),
        Err(_) => "error",
    }
}

fn entry_json(e: &Entry) -> Value {
    let mut v = json!({
        "topic": e.name,
        "path": e.path.display().to_string(),
        "state": state_name(e),
    });
    match &e.state {
        Ok(info) => {
            let c = &info.counters;
            v["publisher"] = snapshot::process_json(&info.publisher);
            v["contract"] = snapshot::contract_json(&info.contract);
            v["imported"] = json!(info.imported);
            v["capacity"] = json!(info.capacity);
            v["subscriber_count"] = json!(info.subscriber_count);
            v["messages"] = json!(c.messages);
            v["rate"] = json!(e.rate);
        }
        Err(InspectError::Stale(_)) => {}
        Err(err) => {
            if let Some(l) = &e.listener {
                v["publisher"] = snapshot::process_json(&l.process);
            }
            v["error"] = json!(err.to_string());
        }
    }
    v
}

fn entry_cells(e: &Entry) -> Vec<String> {
    let mut cells = vec![e.name.clone(), state_name(e).to_owned()];
    match &e.state {
        Ok(info) => cells.extend([
            snapshot::origin(info).to_owned(),
            snapshot::pid(&info.publisher),
            info.publisher.uid.to_string(),
            snapshot::exe(&info.publisher),
            snapshot::contract(&info.contract),
            words::bytes(info.capacity),
            info.subscriber_count.to_string(),
            info.counters.messages.to_string(),
            e.rate.map_or("-".into(), |r| format!("{r:.1}/s")),
        ]),
        Err(_) => match &e.listener {
            // Who did not answer, for `kill -CONT` or a debugger.
            Some(l) => {
                cells.push("-".to_owned());
                cells.extend([
                    snapshot::pid(&l.process),
                    l.process.uid.to_string(),
                    snapshot::exe(&l.process),
                ]);
                cells.extend(std::iter::repeat_n("-".to_owned(), 5));
            }
            None => cells.extend(std::iter::repeat_n("-".to_owned(), 9)),
        },
    }
    cells
}
