//! Live progress for long-running commands: a line redrawn in place on a terminal, nothing
//! extra when standard error is piped (the command prints its plain lines or summary instead).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the progress line is redrawn.
const REDRAW: Duration = Duration::from_millis(250);

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

    /// Redraws the line with `text` if it is due (at most four times a second).
    pub fn update(&mut self, text: impl FnOnce() -> String) {
        if !self.live || self.last.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", text());
        let _ = err.flush();
    }

    /// Ends the live line so that what follows starts on a line of its own.
    pub fn finish(&mut self) {
        if self.live && self.last.is_some() {
            eprintln!();
            self.last = None;
        }
    }
}
