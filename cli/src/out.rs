//! Where the commands write: standard output through [`Stdout`], which reports a failed write
//! instead of panicking as `print!` does, and standard error through [`warn`].
//!
//! A reader that went away (`EPIPE`: `shmcast list | head -1`) ends a command quietly and
//! successfully, as it ends `cat` and `echo`; any other write error (`ENOSPC`: `> /dev/full`)
//! is a failure with exit code 1, since the output the user asked for was lost. Every write is
//! flushed at once, so that an error is seen where it happens, not at exit where nobody checks.

use std::fmt;
use std::io::{self, IsTerminal, Write};

use crate::exit::Failure;

/// Standard output, locked for the command's life.
pub struct Stdout {
    out: io::StdoutLock<'static>,
    /// What a failure names first (the topic), if anything.
    about: Option<String>,
}

/// Whether the reader still reads.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The text was written.
    Open,
    /// The reader closed its end (`EPIPE`): nothing more needs writing.
    Closed,
}

impl Stdout {
    /// Standard output for a command whose failures name nothing in particular.
    pub fn new() -> Stdout {
        Stdout {
            out: io::stdout().lock(),
            about: None,
        }
    }

    /// Standard output for a command about `topic`, which its failures name first.
    pub fn about(topic: &str) -> Stdout {
        Stdout {
            about: Some(topic.to_owned()),
            ..Stdout::new()
        }
    }

    /// Whether standard output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.out.is_terminal()
    }

    /// Writes `text` as it is and flushes it.
    pub fn write(&mut self, text: &str) -> Result<Written, Failure> {
        let done = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        match done {
            Ok(()) => Ok(Written::Open),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Written::Closed),
            Err(e) => Err(match &self.about {
                Some(topic) => Failure::other(topic, format!("writing standard output: {e}")),
                None => Failure::other("writing standard output", e),
            }),
        }
    }

    /// Writes `text` and a line feed, and flushes them.
    pub fn line(&mut self, text: impl fmt::Display) -> Result<Written, Failure> {
        self.write(&format!("{text}\n"))
    }
}

/// Writes one line on standard error. An error writing it is ignored: standard error is where
/// errors would be told, so there is nowhere left to tell it.
pub fn warn(line: impl fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Writes `text` on standard error as it is (no line feed added); errors are ignored as in
/// [`warn`].
pub fn warn_raw(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
