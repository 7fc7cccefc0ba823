//! The option structs a C caller fills in, their defaults, and their translation into the
//! transport's builders.
//!
//! Each struct is initialised by its `_init` function, which writes every field's default and
//! stamps `abi_version`; create/connect refuse a struct without the stamp (an uninitialised
//! one) and one whose `reserved` words are not zero. New options take reserved words, so a
//! caller compiled against an older header keeps working.

use crate::error::{Failure, SHMCAST_EINVAL, SHMCAST_ETOPIC, guard};
use shmcast_transport::{Admission, Mode, PublisherBuilder, Start, SubscriberBuilder};
use std::ffi::{CStr, c_char, c_int};
use std::time::Duration;

/// The stamp `shmcast_*_options_init` writes into `abi_version`.
pub const SHMCAST_OPTIONS_VERSION: u32 = 2;

/// Admission: only processes of the publisher's own uid (the default).
pub const SHMCAST_ADMIT_SAME_UID: i32 = 0;
/// Admission: the publisher's own uid and those listed in `admit_uids`.
pub const SHMCAST_ADMIT_UIDS: i32 = 1;
/// Admission: any process that can reach the socket (its file mode, 0600, still applies).
pub const SHMCAST_ADMIT_ANY_UID: i32 = 2;

/// Delivery: reliable; the publisher never overwrites what this subscriber has not released
/// (the default).
pub const SHMCAST_MODE_GATING: i32 = 0;
/// Delivery: never slows the publisher; missed messages are reported as `SHMCAST_ELAGGED`.
pub const SHMCAST_MODE_LOSSY: i32 = 1;

/// Start with the next message published after connecting (the default).
pub const SHMCAST_START_NEWEST: i32 = 0;
/// Start with the oldest message still in the ring (late-joiner history).
pub const SHMCAST_START_OLDEST: i32 = 1;

/// Settings for `shmcast_publisher_create`. Initialise with `shmcast_publisher_options_init`,
/// then change the fields you need.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmcast_publisher_options {
    /// Set by `shmcast_publisher_options_init` to `SHMCAST_OPTIONS_VERSION`; do not change.
    pub abi_version: u32,
    /// Who may subscribe: `SHMCAST_ADMIT_SAME_UID` (default), `SHMCAST_ADMIT_UIDS` or
    /// `SHMCAST_ADMIT_ANY_UID`. Checked against the connecting process's credentials before
    /// anything is sent to it.
    pub admission: i32,
    /// Ring data size in bytes: a power of two, at least 64. Default: 1 MiB.
    pub capacity: u64,
    /// Largest message in bytes, at most half the capacity minus 16. Default 0: a quarter of
    /// the capacity.
    pub max_message: u64,
    /// With `SHMCAST_ADMIT_UIDS`: the uids admitted besides the publisher's own. Read during
    /// `shmcast_publisher_create` only. May be `NULL` when `admit_uid_count` is 0.
    pub admit_uids: *const u32,
    /// Number of entries in `admit_uids`.
    pub admit_uid_count: usize,
    /// Milliseconds a blocking loan waits on a stalled gating subscriber before demoting it to
    /// lossy and going on. Default -1: never demote (wait as long as the loan's own timeout).
    pub stall_bound_ms: i64,
    /// Milliseconds a connecting client may take to send its request before it is dropped
    /// (at least 1). Default: 2000.
    pub handshake_timeout_ms: u32,
    /// Most clients in the middle of a handshake at once; more are refused as busy (at least
    /// 1). Default: 64.
    pub max_pending_handshakes: u32,
    /// Most subscribers admitted at once; more are refused (`SHMCAST_EREFUSED` on their side)
    /// until one leaves. Default 0: no limit. Whatever this limit, no subscriber is admitted
    /// while that would leave the process fewer than an eighth of its descriptor limit
    /// (`RLIMIT_NOFILE`, between 16 and 256) free.
    pub max_subscribers: u64,
    /// Reserved for future options: zeroed by the `_init` function, must stay zero.
    pub reserved: [u64; 7],
}

impl Default for shmcast_publisher_options {
    fn default() -> Self {
        shmcast_publisher_options {
            abi_version: SHMCAST_OPTIONS_VERSION,
            admission: SHMCAST_ADMIT_SAME_UID,
            capacity: 1 << 20,
            max_message: 0,
            admit_uids: std::ptr::null(),
            admit_uid_count: 0,
            stall_bound_ms: -1,
            handshake_timeout_ms: 2000,
            max_pending_handshakes: 64,
            max_subscribers: 0,
            reserved: [0; 7],
        }
    }
}

/// Settings for `shmcast_subscriber_connect`. Initialise with
/// `shmcast_subscriber_options_init`, then change the fields you need.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmcast_subscriber_options {
    /// Set by `shmcast_subscriber_options_init` to `SHMCAST_OPTIONS_VERSION`; do not change.
    pub abi_version: u32,
    /// `SHMCAST_MODE_GATING` (default: reliable, may slow the publisher) or
    /// `SHMCAST_MODE_LOSSY` (never slows it; told how many messages it missed).
    pub mode: i32,
    /// `SHMCAST_START_NEWEST` (default) or `SHMCAST_START_OLDEST`.
    pub start: i32,
    /// Milliseconds to wait for a publisher to appear: 0 (default) fails at once with
    /// `SHMCAST_ENOPUBLISHER`, -1 waits without limit.
    pub connect_timeout_ms: i32,
    /// Milliseconds the publisher may take to answer the handshake (at least 1). Default: 5000.
    pub handshake_timeout_ms: u32,
    /// How many times a waiting receive polls before it blocks. Default 0. Only worth it with
    /// fewer spinning subscribers than idle cores.
    pub spin: u32,
    /// Which publishers to trust, checked against the credentials of the process serving the
    /// socket before anything is sent to it: `SHMCAST_ADMIT_SAME_UID` (default: our own uid),
    /// `SHMCAST_ADMIT_UIDS` (our own and `publisher_uid`) or `SHMCAST_ADMIT_ANY_UID`. Another
    /// publisher is `SHMCAST_EREFUSED`. A named topic lies in our private directory; a socket
    /// path may lie where others can bind.
    pub publisher_admission: i32,
    /// With `SHMCAST_ADMIT_UIDS`: the publisher uid trusted besides our own.
    pub publisher_uid: u32,
    /// Reserved for future options: zeroed by the `_init` function, must stay zero.
    pub reserved: [u64; 7],
}

impl Default for shmcast_subscriber_options {
    fn default() -> Self {
        shmcast_subscriber_options {
            abi_version: SHMCAST_OPTIONS_VERSION,
            mode: SHMCAST_MODE_GATING,
            start: SHMCAST_START_NEWEST,
            connect_timeout_ms: 0,
            handshake_timeout_ms: 5000,
            spin: 0,
            publisher_admission: SHMCAST_ADMIT_SAME_UID,
            publisher_uid: 0,
            reserved: [0; 7],
        }
    }
}

/// Waiting "without limit" for a publisher: long enough to never end, short enough that the
/// transport's deadline arithmetic does not overflow.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

fn check_stamp(abi_version: u32, reserved: &[u64], what: &str) -> Result<(), Failure> {
    if abi_version != SHMCAST_OPTIONS_VERSION {
        return Err(Failure::invalid(format_args!(
            "{what} options were not initialised with {what}_options_init (abi_version {abi_version})"
        )));
    }
    if reserved.iter().any(|&w| w != 0) {
        return Err(Failure::invalid(format_args!(
            "{what} options: reserved fields must be zero"
        )));
    }
    Ok(())
}

/// The `Admission` a `SHMCAST_ADMIT_*` code in option `field` names; `uids` gives the list of
/// `SHMCAST_ADMIT_UIDS`.
fn admission(
    code: i32,
    field: &str,
    uids: impl FnOnce() -> Result<Vec<u32>, Failure>,
) -> Result<Admission, Failure> {
    match code {
        SHMCAST_ADMIT_SAME_UID => Ok(Admission::SameUid),
        SHMCAST_ADMIT_ANY_UID => Ok(Admission::AnyUid),
        SHMCAST_ADMIT_UIDS => Ok(Admission::Uids(uids()?)),
        other => Err(Failure::invalid(format_args!("unknown {field} {other}"))),
    }
}

/// The builder for `topic` with the caller's options (`None`: the defaults).
///
/// # Safety
///
/// If `opts.admit_uid_count` is non-zero, `opts.admit_uids` is null or points to that many
/// readable `u32`s.
pub(crate) unsafe fn publisher_builder(
    topic: &str,
    opts: Option<&shmcast_publisher_options>,
) -> Result<PublisherBuilder, Failure> {
    let o = opts.copied().unwrap_or_default();
    check_stamp(o.abi_version, &o.reserved, "shmcast_publisher")?;
    let admission = admission(o.admission, "admission", || {
        if o.admit_uid_count == 0 {
            Ok(Vec::new())
        } else if o.admit_uids.is_null() {
            Err(Failure::null("opts->admit_uids"))
        } else {
            // SAFETY: non-null, and the caller promises `admit_uid_count` readable u32s.
            Ok(unsafe { std::slice::from_raw_parts(o.admit_uids, o.admit_uid_count) }.to_vec())
        }
    })?;
    let stall_bound = match o.stall_bound_ms {
        -1 => None,
        ms if ms >= 0 => Some(Duration::from_millis(ms as u64)),
        ms => {
            return Err(Failure::invalid(format_args!(
                "stall_bound_ms must be -1 or at least 0, not {ms}"
            )));
        }
    };
    if o.handshake_timeout_ms == 0 {
        return Err(Failure::invalid("handshake_timeout_ms must be at least 1"));
    }
    if o.max_pending_handshakes == 0 {
        return Err(Failure::invalid(
            "max_pending_handshakes must be at least 1",
        ));
    }
    let mut b = PublisherBuilder::new(topic)
        .capacity(o.capacity)
        .admission(admission)
        .stall_bound(stall_bound)
        .handshake_timeout(Duration::from_millis(o.handshake_timeout_ms.into()))
        .max_pending_handshakes(o.max_pending_handshakes as usize)
        .max_subscribers(match o.max_subscribers {
            0 => None,
            n => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        });
    if o.max_message != 0 {
        b = b.max_message(o.max_message);
    }
    Ok(b)
}

/// The builder for `topic` with the caller's options (`None`: the defaults).
pub(crate) fn subscriber_builder(
    topic: &str,
    opts: Option<&shmcast_subscriber_options>,
) -> Result<SubscriberBuilder, Failure> {
    let o = opts.copied().unwrap_or_default();
    check_stamp(o.abi_version, &o.reserved, "shmcast_subscriber")?;
    let mode = match o.mode {
        SHMCAST_MODE_GATING => Mode::Gating,
        SHMCAST_MODE_LOSSY => Mode::Lossy,
        other => return Err(Failure::invalid(format_args!("unknown mode {other}"))),
    };
    let start = match o.start {
        SHMCAST_START_NEWEST => Start::Newest,
        SHMCAST_START_OLDEST => Start::Oldest,
        other => return Err(Failure::invalid(format_args!("unknown start {other}"))),
    };
    if o.handshake_timeout_ms == 0 {
        return Err(Failure::invalid("handshake_timeout_ms must be at least 1"));
    }
    let publisher = admission(o.publisher_admission, "publisher_admission", || {
        Ok(vec![o.publisher_uid])
    })?;
    let mut b = SubscriberBuilder::new(topic)
        .mode(mode)
        .start(start)
        .spin(o.spin)
        .publisher(publisher)
        .handshake_timeout(Duration::from_millis(o.handshake_timeout_ms.into()));
    match o.connect_timeout_ms {
        0 => {}
        -1 => b = b.connect_timeout(FOREVER),
        ms if ms > 0 => b = b.connect_timeout(Duration::from_millis(ms as u64)),
        ms => {
            return Err(Failure::invalid(format_args!(
                "connect_timeout_ms must be -1 or at least 0, not {ms}"
            )));
        }
    }
    Ok(b)
}

/// Fills `opts` with the defaults: a 1 MiB ring, messages up to a quarter of it, same-uid
/// admission, no stall bound, 2 s handshake timeout, 64 pending handshakes.
///
/// Returns 0, or `SHMCAST_EINVAL` if `opts` is `NULL`. Never blocks. Thread-safe.
///
/// # Safety
///
/// `opts` is `NULL` or points to writable memory for one `shmcast_publisher_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_publisher_options_init(
    opts: *mut shmcast_publisher_options,
) -> c_int {
    guard(|| {
        if opts.is_null() {
            return Err(Failure::null("opts"));
        }
        // SAFETY: non-null, and the caller promises room for one struct; `write` does not read
        // the (possibly uninitialised) old contents.
        unsafe { opts.write(shmcast_publisher_options::default()) };
        Ok(())
    })
}

/// Fills `opts` with the defaults: gating, start at the newest message, fail at once if no
/// publisher exists, 5 s handshake timeout, no spinning.
///
/// Returns 0, or `SHMCAST_EINVAL` if `opts` is `NULL`. Never blocks. Thread-safe.
///
/// # Safety
///
/// `opts` is `NULL` or points to writable memory for one `shmcast_subscriber_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmcast_subscriber_options_init(
    opts: *mut shmcast_subscriber_options,
) -> c_int {
    guard(|| {
        if opts.is_null() {
            return Err(Failure::null("opts"));
        }
        // SAFETY: non-null, and the caller promises room for one struct; `write` does not read
        // the (possibly uninitialised) old contents.
        unsafe { opts.write(shmcast_subscriber_options::default()) };
        Ok(())
    })
}

/// How long a call may wait, from its `timeout_ms` argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// `0`: never wait.
    Never,
    /// `-1`: wait without limit.
    Forever,
    /// A positive number of milliseconds.
    For(Duration),
}

impl Wait {
    pub(crate) fn from_ms(timeout_ms: c_int) -> Result<Wait, Failure> {
        match timeout_ms {
            -1 => Ok(Wait::Forever),
            0 => Ok(Wait::Never),
            ms if ms > 0 => Ok(Wait::For(Duration::from_millis(ms as u64))),
            ms => Err(Failure::new(
                SHMCAST_EINVAL,
                format_args!("timeout_ms must be -1, 0 or positive, not {ms}"),
            )),
        }
    }
}

/// The topic argument as a string.
///
/// # Safety
///
/// `topic` is null or points to a NUL-terminated string that stays unchanged during the call.
pub(crate) unsafe fn topic_arg<'a>(topic: *const c_char) -> Result<&'a str, Failure> {
    if topic.is_null() {
        return Err(Failure::null("topic"));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(topic) }
        .to_str()
        .map_err(|_| Failure::new(SHMCAST_ETOPIC, "topic is not valid UTF-8"))
}
