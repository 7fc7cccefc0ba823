//! `shmcast clean`: remove the sockets that publishers which died left in the topic directory,
//! and only those: a socket file of our uid that refuses connections (see
//! `shmcast::remove_stale`). Anything else in the directory is left as it is.

use serde_json::json;

use crate::Place;
use crate::exit::{Exit, Failure};
use crate::out::{self, Stdout, Written};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only list what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object: the paths removed (or, with --dry-run, stale).
    #[arg(long)]
    json: bool,
}

pub fn run(place: &Place, args: Args) -> Result<(), Failure> {
    let dir = place.directory()?;
    let stale = match shmcast::stale_topics(&dir) {
        Ok(s) => s,
        // No directory: nothing was ever published there, so nothing is stale.
        Err(_) if !dir.exists() => Vec::new(),
        // The error names the directory itself.
        Err(e) => return Err(Failure::new(Exit::Other, e.to_string())),
    };
    let mut removed = Vec::new();
    for path in stale {
        if args.dry_run {
            removed.push(path);
            continue;
        }
        match shmcast::remove_stale(&path) {
            Ok(()) => removed.push(path),
            // Replaced by a live publisher meanwhile, or gone: not ours to remove any more.
            // The error names the path itself.
            Err(e) => out::warn(format_args!("shmcast: not removed: {e}")),
        }
    }
    let mut out = Stdout::new();
    if args.json {
        let key = if args.dry_run { "stale" } else { "removed" };
        let paths: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        let _ = out.line(json!({ key: paths }))?;
    } else {
        let verb = if args.dry_run { "stale" } else { "removed" };
        for path in &removed {
            if out.line(format_args!("{verb} {}", path.display()))? == Written::Closed {
                break;
            }
        }
    }
    Ok(())
}
