//! `shmcast list`: every topic socket in the topic directory, live or stale, with what its
//! publisher reports (its origin: `imported` for a topic republished from elsewhere, as a
//! bridge's import is, else `local`). The current rate comes from two snapshots `--interval` apart.
//! The publishers are asked side by side (`parallel`), so that stopped ones cost about one
//! `--timeout` in all; the rows stay in the order of the names.
//!
//! The directory is checked as every command that names a topic checks it: one another user
//! owns, or that others may enter, is refused (exit code 1) rather than listed. A missing one
//! has no topics, unless `--dir` names it (exit code 2: a wrong setting).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use shmcast::{InspectError, TopicInfo};

use crate::Place;
use crate::exit::{self, Failure};
use crate::out::Stdout;
use crate::peer::{self, Listener};
use crate::{flags, parallel, snapshot, table, words};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Time between the two snapshots the rate is measured over, in milliseconds; 0 measures
    /// no rate (RATE is `-`).
    #[arg(long, default_value_t = 200, value_name = "MS")]
    interval: u64,
    /// How long to wait for each publisher's answer, in milliseconds (the publishers are
    /// asked side by side: several that do not answer cost about one timeout).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    timeout: u64,
    /// Also trust publishers run by these users (`1001,1002`, or `any`): by default only ones
    /// of our own uid are, and another's is shown `refused`.
    #[arg(long, value_name = "UIDS|any", value_parser = flags::uids)]
    trust: Option<shmcast::Admission>,
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
    let ask = |path: &Path| {
        // A path (it contains `/`) is used as given, whatever the directory settings.
        let mut inspector = shmcast::Inspector::new(path.to_string_lossy()).timeout(timeout);
        if let Some(trust) = &args.trust {
            inspector = inspector.trust(trust.clone());
        }
        inspector.inspect()
    };
    let sockets = sockets(&dir)?;
    let mut entries: Vec<Entry> = parallel::map(&sockets, |(name, path)| {
        let state = ask(path);
        // Who did not answer, found while the others are asked.
        let listener = match state {
            Err(InspectError::Timeout) => peer::listener(path),
            _ => None,
        };
        Entry {
            name: name.clone(),
            path: path.clone(),
            state,
            rate: None,
            listener,
        }
    });
    // One snapshot has no rate: a rate of 0 would claim the publisher is idle.
    if args.interval > 0 && entries.iter().any(|e| e.state.is_ok()) {
        std::thread::sleep(Duration::from_millis(args.interval));
        let seconds = parallel::map(&entries, |e| e.state.is_ok().then(|| ask(&e.path)));
        for (e, second) in entries.iter_mut().zip(seconds) {
            if let Ok(first) = &e.state
                && let Some(Ok(second)) = second
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
        let _ = if dir.exists() {
            out.line(format_args!("no topics in {}", dir.display()))?
        } else {
            out.line(format_args!(
                "no topics: {} does not exist (a publisher creates it)",
                dir.display()
            ))?
        };
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
            v["error"] = json!(exit::inspect_cause(err));
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
