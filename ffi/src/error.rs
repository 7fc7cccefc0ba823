//! Error codes, their static messages, the calling thread's last error, and the barrier that
//! turns panics into [`SHMCAST_EPANIC`] before they reach C.
//!
//! Every export runs its body through [`guard`]; a failure is recorded for
//! [`shmcast_last_error_message`] (and, for a lag, [`shmcast_last_lagged_count`]) on the calling
//! thread and returned as its code. Successful calls leave the record alone, as `errno` does.

use shmcast_transport::{BindError, ConnectError, LoanError, RecvError, TopicError};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_int};
use std::fmt::Display;
use std::panic::{self, AssertUnwindSafe};

/// The codes every fallible function returns: 0 for success, negative for an error.
///
/// Functions return them as `int`; `shmcast_strerror` describes one.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmcast_error {
    /// Success.
    SHMCAST_OK = 0,
    /// An argument is invalid: a null pointer, a value out of range, or an options struct that was
    /// not initialised by its `_init` function.
    SHMCAST_EINVAL = -1,
    /// The handle has an outstanding loan (publisher) or sample (subscriber); end it first.
    SHMCAST_EBUSY = -2,
    /// The call would have to wait (`timeout_ms == 0`): no message is ready (receive), the ring
    /// is full (loan or send), or fewer subscribers than asked for are connected
    /// (`shmcast_publisher_wait_for_subscribers`). From `shmcast_publisher_watch_space`: the
    /// ring is full and the space descriptor is armed; wait for it to become readable.
    SHMCAST_EAGAIN = -3,
    /// The timeout passed before a message, ring space or the handshake's answer arrived, or
    /// (connecting) while the publisher's queue of connections stayed full.
    SHMCAST_ETIMEDOUT = -4,
    /// This subscriber missed messages: overwritten before it read them, and skipped to where it
    /// resumes. The exact count is in `shmcast_last_lagged_count()`. Receiving again continues in
    /// order where the `resume` option of `shmcast_subscriber_options` says: by default
    /// (`SHMCAST_RESUME_SLACK`) two of the largest messages ahead of where the publisher
    /// overwrites next, so that the next read has time to finish; `SHMCAST_RESUME_OLDEST`
    /// continues with the oldest message still in the ring, `SHMCAST_RESUME_NEWEST` with the
    /// newest.
    SHMCAST_ELAGGED = -5,
    /// The publisher is gone and every message it published has been received.
    SHMCAST_EDISCONNECTED = -6,
    /// This gating subscriber stalled past the publisher's stall bound and was demoted to lossy
    /// (reported once; receiving again continues, possibly with `SHMCAST_ELAGGED`).
    SHMCAST_EDEMOTED = -7,
    /// The publisher evicted this subscriber.
    SHMCAST_EEVICTED = -8,
    /// The shared memory holds something no correct publisher writes.
    SHMCAST_ECORRUPT = -9,
    /// No publisher serves the topic (after the connect timeout). The detail names the socket
    /// path looked for and why that directory (the `directory` option, `SHMCAST_DIR`,
    /// `XDG_RUNTIME_DIR` or the default).
    SHMCAST_ENOPUBLISHER = -10,
    /// The publisher refused the subscriber (admission policy, version, overload), or its
    /// socket's file mode keeps this uid out, or the subscriber does not trust the uid serving
    /// the socket (`publisher_admission`).
    SHMCAST_EREFUSED = -11,
    /// The publisher's handshake or shared memory broke the protocol.
    SHMCAST_EPROTOCOL = -12,
    /// The topic name is invalid, its socket path is longer than a socket address holds (107
    /// bytes), `SHMCAST_DIR` is relative, or its directory is unsafe, missing or cannot be
    /// created (the detail names the path).
    SHMCAST_ETOPIC = -13,
    /// Another live publisher serves this topic.
    SHMCAST_EINUSE = -14,
    /// The ring geometry is impossible (capacity not a power of two, or maximum message too large
    /// for it).
    SHMCAST_ECONFIG = -15,
    /// The message is longer than the publisher's maximum message size.
    SHMCAST_ETOOLARGE = -16,
    /// The caller's buffer is too small for the message; the message is kept for the next receive
    /// and its length was stored.
    SHMCAST_EMSGSIZE = -17,
    /// A system call failed (the detail names it).
    SHMCAST_EIO = -18,
    /// An internal error (a bug in the library) was caught before it could reach the caller.
    SHMCAST_EPANIC = -19,
    /// The topic's contract (its declared message type or maximum message size) does not meet
    /// what the subscriber expects; the detail names both. `shmcast_subscriber_contract` on a
    /// subscriber that expects nothing reads the declaration.
    SHMCAST_ECONTRACT = -20,
    /// Something a publisher may not replace occupies the topic's socket path: a file, a FIFO,
    /// a directory, a symbolic link, or a socket of another user (the detail says which). It
    /// was left as it was; only a stale socket of our own is ever replaced. From
    /// `shmcast_subscriber_connect`: what is at the path is no topic socket (a file, or another
    /// program's stream or datagram socket).
    SHMCAST_EEXIST = -21,
}

pub use shmcast_error::*;

impl shmcast_error {
    /// Every code, for lookups by value.
    const ALL: [shmcast_error; 22] = [
        SHMCAST_OK,
        SHMCAST_EINVAL,
        SHMCAST_EBUSY,
        SHMCAST_EAGAIN,
        SHMCAST_ETIMEDOUT,
        SHMCAST_ELAGGED,
        SHMCAST_EDISCONNECTED,
        SHMCAST_EDEMOTED,
        SHMCAST_EEVICTED,
        SHMCAST_ECORRUPT,
        SHMCAST_ENOPUBLISHER,
        SHMCAST_EREFUSED,
        SHMCAST_EPROTOCOL,
        SHMCAST_ETOPIC,
        SHMCAST_EINUSE,
        SHMCAST_ECONFIG,
        SHMCAST_ETOOLARGE,
        SHMCAST_EMSGSIZE,
        SHMCAST_EIO,
        SHMCAST_EPANIC,
        SHMCAST_ECONTRACT,
        SHMCAST_EEXIST,
    ];

    /// The code with this value, if any.
    pub(crate) fn from_code(code: c_int) -> Option<shmcast_error> {
        Self::ALL.into_iter().find(|&e| e as c_int == code)
    }
}

/// A failed call: its code and the detail for [`shmcast_last_error_message`].
#[derive(Debug)]
pub(crate) struct Failure {
    code: shmcast_error,
    message: String,
    lagged: Option<u64>,
}

impl Failure {
    pub(crate) fn new(code: shmcast_error, message: impl Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            lagged: None,
        }
    }

    /// A null pointer where `what` was required.
    pub(crate) fn null(what: &str) -> Failure {
        Failure::new(SHMCAST_EINVAL, format_args!("`{what}` is NULL"))
    }

    pub(crate) fn invalid(message: impl Display) -> Failure {
        Failure::new(SHMCAST_EINVAL, message)
    }

    pub(crate) fn busy(message: impl Display) -> Failure {
        Failure::new(SHMCAST_EBUSY, message)
    }

    /// Stores the detail for this thread and returns the code.
    fn record(self) -> c_int {
        // Thread-local storage is gone only while the thread exits; the code still tells.
        let _ = LAST_MESSAGE.try_with(|last| {
            *last.borrow_mut() = CString::new(self.message.replace('\0', " ")).ok();
        });
        if let Some(n) = self.lagged {
            let _ = LAST_LAGGED.try_with(|last| last.set(n));
        }
        self.code as c_int
    }
}

impl From<TopicError> for Failure {
    fn from(e: TopicError) -> Failure {
        Failure::new(SHMCAST_ETOPIC, e)
    }
}

impl From<BindError> for Failure {
    fn from(e: BindError) -> Failure {
        let code = match &e {
            BindError::Topic(_) => SHMCAST_ETOPIC,
            BindError::TopicInUse(_) => SHMCAST_EINUSE,
            BindError::NotASocket { .. } | BindError::ForeignSocket { .. } => SHMCAST_EEXIST,
            BindError::NoDirectory { .. } => SHMCAST_ETOPIC,
            BindError::Socket { .. } => SHMCAST_EIO,
            BindError::Config(_) => SHMCAST_ECONFIG,
            BindError::Contract(_) | BindError::InvalidOption { .. } => SHMCAST_EINVAL,
            BindError::Io(_) => SHMCAST_EIO,
        };
        Failure::new(code, e)
    }
}

impl From<ConnectError> for Failure {
    fn from(e: ConnectError) -> Failure {
        let code = match &e {
            ConnectError::Topic(_) => SHMCAST_ETOPIC,
            ConnectError::NoPublisher { .. } => SHMCAST_ENOPUBLISHER,
            // Something other than a topic socket at the path (a file, another program's
            // socket): named in the detail, as the publisher's `SHMCAST_EEXIST` is.
            ConnectError::Socket { source, .. }
                if source.kind() == std::io::ErrorKind::InvalidInput =>
            {
                SHMCAST_EEXIST
            }
            // The socket's file mode keeps this uid out: the publisher does not admit it.
            ConnectError::Socket { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                SHMCAST_EREFUSED
            }
            // The publisher's queue of connections stayed full for the whole wait.
            ConnectError::Socket { source, .. }
                if source.kind() == std::io::ErrorKind::TimedOut =>
            {
                SHMCAST_ETIMEDOUT
            }
            ConnectError::Socket { .. } => SHMCAST_EIO,
            ConnectError::Refused { .. } | ConnectError::UntrustedPublisher { .. } => {
                SHMCAST_EREFUSED
            }
            ConnectError::HandshakeTimeout => SHMCAST_ETIMEDOUT,
            ConnectError::ContractMismatch { .. } => SHMCAST_ECONTRACT,
            ConnectError::InvalidExpectation(_) | ConnectError::InvalidOption { .. } => {
                SHMCAST_EINVAL
            }
            ConnectError::Protocol(_) | ConnectError::Layout(_) => SHMCAST_EPROTOCOL,
            ConnectError::Io(_) => SHMCAST_EIO,
        };
        Failure::new(code, e)
    }
}

impl From<LoanError> for Failure {
    fn from(e: LoanError) -> Failure {
        let code = match &e {
            LoanError::TooLarge { .. } => SHMCAST_ETOOLARGE,
            LoanError::Full => SHMCAST_EAGAIN,
            LoanError::Timeout => SHMCAST_ETIMEDOUT,
            LoanError::Unaligned { .. }
            | LoanError::WrongType { .. }
            | LoanError::WrongLength { .. } => SHMCAST_EINVAL,
            LoanError::Io(_) => SHMCAST_EIO,
            LoanError::Closed => SHMCAST_EDISCONNECTED,
        };
        Failure::new(code, e)
    }
}

impl From<RecvError> for Failure {
    fn from(e: RecvError) -> Failure {
        let code = match &e {
            RecvError::Empty => SHMCAST_EAGAIN,
            RecvError::Timeout => SHMCAST_ETIMEDOUT,
            RecvError::Lagged(_) => SHMCAST_ELAGGED,
            RecvError::Disconnected => SHMCAST_EDISCONNECTED,
            RecvError::Demoted => SHMCAST_EDEMOTED,
            RecvError::Evicted => SHMCAST_EEVICTED,
            RecvError::Corrupt(_) => SHMCAST_ECORRUPT,
            RecvError::Io(_) => SHMCAST_EIO,
        };
        let lagged = match e {
            RecvError::Lagged(n) => Some(n),
            _ => None,
        };
        Failure {
            lagged,
            ..Failure::new(code, e)
        }
    }
}

thread_local! {
    static LAST_MESSAGE: RefCell<Option<CString>> = const { RefCell::new(None) };
    static LAST_LAGGED: Cell<u64> = const { Cell::new(0) };
}

/// Runs an export's body: a failure is recorded for this thread and becomes its code; a panic
/// is caught and becomes [`SHMCAST_EPANIC`], so nothing unwinds into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> c_int {
    // The handles a body touches are either left consistent or dropped by a panic: a loan or
    // sample being created is stored only after it exists, and the transport's locks tolerate
    // poisoning.
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SHMCAST_OK as c_int,
        Ok(Err(failure)) => failure.record(),
        Err(payload) => Failure::new(
            SHMCAST_EPANIC,
            format_args!("internal error: {}", panic_text(&*payload)),
        )
        .record(),
    }
}

/// Runs an export that cannot fail (it returns a value, not a code); a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "panic"
    }
}

/// A static, human-readable description of an error code.
///
/// Returns a NUL-terminated string with static storage duration (never `NULL`, never to be
/// freed); an unknown code gives `"unknown shmcast error code"`. Never blocks. Thread-safe.
///
/// # Safety
///
/// None: any `code` is accepted, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn shmcast_strerror(code: c_int) -> *const c_char {
    guard_value(c"internal error".as_ptr(), || strerror(code).as_ptr())
}

fn strerror(code: c_int) -> &'static CStr {
    let Some(code) = shmcast_error::from_code(code) else {
        return c"unknown shmcast error code";
    };
    match code {
        SHMCAST_OK => c"success",
        SHMCAST_EINVAL => c"invalid argument",
        SHMCAST_EBUSY => c"a loan or sample is outstanding on this handle",
        SHMCAST_EAGAIN => c"operation would block",
        SHMCAST_ETIMEDOUT => c"timed out",
        SHMCAST_ELAGGED => c"messages were missed (lagged)",
        SHMCAST_EDISCONNECTED => c"publisher disconnected",
        SHMCAST_EDEMOTED => c"demoted from gating to lossy",
        SHMCAST_EEVICTED => c"evicted by the publisher",
        SHMCAST_ECORRUPT => c"corrupt shared memory",
        SHMCAST_ENOPUBLISHER => c"no publisher on the topic",
        SHMCAST_EREFUSED => c"refused by the publisher",
        SHMCAST_EPROTOCOL => c"protocol error",
        SHMCAST_ETOPIC => c"invalid or unusable topic",
        SHMCAST_EINUSE => c"topic in use by another publisher",
        SHMCAST_ECONFIG => c"invalid ring configuration",
        SHMCAST_ETOOLARGE => c"message larger than the maximum",
        SHMCAST_EMSGSIZE => c"buffer too small for the message",
        SHMCAST_EIO => c"system call failed",
        SHMCAST_EPANIC => c"internal error",
        SHMCAST_ECONTRACT => c"topic contract mismatch",
        SHMCAST_EEXIST => c"the topic path holds a file that is not a stale socket of ours",
    }
}

/// The detail of the most recent failed call on the calling thread.
///
/// Returns a NUL-terminated string owned by the library (never `NULL`; empty if no call on
/// this thread has failed). It stays valid until the next failing shmcast call on the same
/// thread; copy it to keep it. Successful calls do not change it. Never blocks. Thread-safe:
/// each thread has its own.
///
/// # Safety
///
/// None: callable at any time from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn shmcast_last_error_message() -> *const c_char {
    guard_value(c"".as_ptr(), || {
        LAST_MESSAGE
            .try_with(|last| last.borrow().as_ref().map(|m| m.as_ptr()))
            .ok()
            .flatten()
            .unwrap_or(c"".as_ptr())
    })
}

/// How many messages the most recent `SHMCAST_ELAGGED` on the calling thread reported missing.
///
/// Returns 0 if no receive on this thread has reported a lag. Read it right after the receive
/// that returned `SHMCAST_ELAGGED`; later lags on the same thread replace it. Never blocks.
/// Thread-safe: each thread has its own. (Each subscriber's running total is in its statistics.)
///
/// # Safety
///
/// None: callable at any time from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn shmcast_last_lagged_count() -> u64 {
    guard_value(0, || LAST_LAGGED.try_with(Cell::get).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn text(code: c_int) -> &'static str {
        // SAFETY: `shmcast_strerror` returns static NUL-terminated strings.
        unsafe { CStr::from_ptr(shmcast_strerror(code)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn every_code_has_its_own_message() {
        let mut seen = std::collections::HashSet::new();
        for code in shmcast_error::ALL {
            assert_eq!(shmcast_error::from_code(code as c_int), Some(code));
            assert!(
                seen.insert(text(code as c_int)),
                "{code:?} shares its message"
            );
        }
        assert_eq!(text(1), "unknown shmcast error code");
        assert_eq!(text(-22), "unknown shmcast error code");
    }

    #[test]
    fn failures_are_recorded_per_thread_and_panics_are_caught() {
        let last = || {
            // SAFETY: the returned string stays valid until the next failure on this thread.
            unsafe { CStr::from_ptr(shmcast_last_error_message()) }
                .to_string_lossy()
                .into_owned()
        };
        let rc = guard(|| Err(Failure::invalid("bad \0 thing")));
        assert_eq!(rc, SHMCAST_EINVAL as c_int);
        assert_eq!(last(), "bad   thing");
        assert_eq!(guard(|| Ok(())), 0);
        assert_eq!(last(), "bad   thing", "success leaves the record alone");
        let rc = guard(|| Err(RecvError::Lagged(42).into()));
        assert_eq!(rc, SHMCAST_ELAGGED as c_int);
        assert_eq!(shmcast_last_lagged_count(), 42);
        std::thread::spawn(|| assert_eq!(shmcast_last_lagged_count(), 0))
            .join()
            .unwrap();
        let rc = guard(|| panic!("boom"));
        assert_eq!(rc, SHMCAST_EPANIC as c_int);
        assert_eq!(last(), "internal error: boom");
    }
}
