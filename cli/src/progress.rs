//! Live progress for long-running commands: a line redrawn in place on a terminal, nothing
//! extra when standard error is piped (the command prints its plain lines or summary instead).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::out;

/// How often the progress line is redrawn.
const REDRAW: Duration = Duration::from_millis(250);

/// Back to the start of the line, and clear it.
pub const CLEAR_LINE: &str = "\r\x1b[2K";

pub struct Progress {
    live: bool,
    last: Option<Instant>,
}

impl Progress {
    /// Progress on standard error, live only when it is a terminal.
    pub fn on_stderr() -> Progress {
        Progress {
            live: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    /// Whether the line is drawn at all (standard error is a terminal).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Redraws the line with `text` if it is due (at most four times a second).
    pub fn update(&mut self, text: impl FnOnce() -> String) {
        if !self.live || self.last.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last = Some(Instant::now());
        out::warn_raw(&format!("{CLEAR_LINE}{}", text()));
    }

    /// Ends the live line so that what follows starts on a line of its own.
    pub fn finish(&mut self) {
        if self.live && self.last.is_some() {
            out::warn("");
            self.last = None;
        }
    }
}
