//! Why a run stopped, and how a program reports it.

use std::fmt;
use std::io;
use std::process::ExitCode;

/// Why a run (or a child process) stopped.
#[derive(Debug)]
pub enum BenchError {
    /// A command-line argument was not understood.
    Usage(String),
    /// A syscall failed.
    Sys {
        /// What the benchmark was doing.
        what: String,
        /// The error.
        err: io::Error,
    },
    /// A transport under test failed (connect, loan, receive...).
    Transport {
        /// Which transport and what it was doing.
        what: String,
        /// The transport's own error text.
        err: String,
    },
    /// A child process exited, stalled or said something unexpected.
    Child {
        /// The child's role and index.
        who: String,
        /// What went wrong.
        what: String,
    },
    /// A receiver got bytes that do not match what was sent.
    Corrupt(String),
    /// A soak found a lost message, a miscounted lag, a leak or a hang.
    Check(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(msg) => write!(f, "{msg}"),
            Self::Sys { what, err } => write!(f, "{what} failed: {err}"),
            Self::Transport { what, err } => write!(f, "{what}: {err}"),
            Self::Child { who, what } => write!(f, "{who}: {what}"),
            Self::Corrupt(msg) => write!(f, "corrupt message: {msg}"),
            Self::Check(msg) => write!(f, "check failed: {msg}"),
        }
    }
}

impl std::error::Error for BenchError {}

/// Wraps a failed syscall with what the benchmark was doing.
pub fn sys<E: Into<io::Error>>(what: impl Into<String>) -> impl FnOnce(E) -> BenchError {
    let what = what.into();
    move |err| BenchError::Sys {
        what,
        err: err.into(),
    }
}

/// Wraps a transport's error with what the benchmark was doing.
pub fn failed<E: fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> BenchError {
    let what = what.into();
    move |err| BenchError::Transport {
        what,
        err: err.to_string(),
    }
}

/// The result type of the benchmark.
pub type Result<T> = std::result::Result<T, BenchError>;

/// The exit status of program `who` that ended with `outcome`, after printing its error on
/// stderr, followed by `usage` when a command-line argument was not understood.
pub fn exit_code(outcome: Result<()>, who: &str, usage: &str) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err @ BenchError::Usage(_)) => {
            eprintln!("{who}: {err}\n\n{usage}");
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("{who}: {err}");
            ExitCode::FAILURE
        }
    }
}
