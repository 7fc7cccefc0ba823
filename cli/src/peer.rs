//! Who serves a topic socket that did not answer: the process listening on it, found without
//! its help, and whether it is stopped.
//!
//! The library finds the listener (`shmcast::socket_owner`); /proc says whether it is stopped.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use shmcast::ProcessInfo;

use crate::Place;
use crate::exit::Failure;
use crate::words;

/// The process listening on a topic socket.
#[derive(Clone, Debug)]
pub struct Listener {
    pub process: ProcessInfo,
    /// Stopped by a signal or a debugger, as /proc says.
    pub stopped: bool,
}

impl Listener {
    /// The state a table shows for a publisher that did not answer: `stopped` or `no answer`.
    pub fn state(&self) -> &'static str {
        if self.stopped { "stopped" } else { "no answer" }
    }
}

impl fmt::Display for Listener {
    /// "pid 42", or "uid 1000" for a process outside our pid namespace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.process.pid {
            Some(pid) => write!(f, "pid {pid}"),
            None => write!(f, "uid {}", self.process.uid),
        }
    }
}

/// The process listening on the socket at `path`, if one is and the kernel says who.
pub fn listener(path: &Path) -> Option<Listener> {
    let process = shmcast::socket_owner(path)?;
    Some(Listener {
        stopped: process.pid.is_some_and(stopped),
        process,
    })
}

/// Whether process `pid` is stopped (state `T` or `t` in /proc/PID/stat).
pub fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // "PID (COMM) STATE ...": COMM may hold anything, so the state follows the last ')'.
        s.rfind(')')
            .and_then(|i| s[i + 1..].trim_start().chars().next())
            .is_some_and(|c| c == 'T' || c == 't')
    })
}

/// The failure of a publisher of `topic` that accepted the connection but did not answer
/// within `waited`, naming its process and saying whether it is stopped.
pub fn unanswered(place: &Place, topic: &str, waited: Duration) -> Failure {
    let listener = place.socket_path(topic).and_then(|path| listener(&path));
    let within = words::duration(waited);
    let message = match listener {
        Some(l) if l.stopped => {
            let resume = l.process.pid.map_or(String::new(), |pid| {
                format!(" (`kill -CONT {pid}` resumes it)")
            });
            format!("the publisher ({l}) did not answer within {within}: it is stopped{resume}")
        }
        Some(l) => format!("the publisher ({l}) did not answer within {within}"),
        None => format!("the publisher did not answer within {within}"),
    };
    Failure::other(topic, message)
}
