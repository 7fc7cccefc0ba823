//! One error type per operation. Errors speak the domain; system errors stay behind
//! [`std::io::Error`] where nothing more specific applies.
//!
//! `publishing` holds the errors of a publisher, `receiving` those of a subscriber.

mod publishing;
mod receiving;

pub use publishing::{BindError, CleanError, LoanError, WaitError};
pub use receiving::{ConnectError, MapError, PodError, ProtocolError, RecvError};
