//! The option structs a C caller fills in and their defaults (`translate` turns them into the
//! transport's builders).
//!
//! Each struct is initialised by its `_init` function, which writes every field's default and
//! stamps `abi_version`; create/connect refuse a struct without the stamp (an uninitialised
//! one) and one whose `reserved` words are not zero. New options take reserved words, so a
//! caller compiled against an older header keeps working: a zero in a word that was reserved
//! means what the library did before the option existed. The subscriber options have no
//! reserved word left.
//!
//! # Layout
//!
//! The structs are ABI: their size and the offset of every field are asserted at compile time
//! below (for 64-bit targets), so a new option that does not fit the reserved words fails the
//! build instead of moving the fields a compiled caller writes.

use crate::error::{Failure, guard};
use shmcast_transport::MAX_SPIN_LIMIT;
use std::ffi::{c_char, c_int};

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

/// `resume`: after a lag, continue two of the largest messages ahead of where the publisher
/// overwrites next, so that the next read has time to finish (default).
pub const SHMCAST_RESUME_SLACK: i32 = 0;
/// `resume`: after a lag, continue with the newest message.
pub const SHMCAST_RESUME_NEWEST: i32 = 1;
/// `resume`: after a lag, continue with the oldest message still in the ring.
pub const SHMCAST_RESUME_OLDEST: i32 = 2;

/// `spin_limit_us`: never poll before a wait sleeps.
pub const SHMCAST_SPIN_NONE: u32 = u32::MAX;
/// The largest `spin_limit_us` besides `SHMCAST_SPIN_NONE`: 10000 (10 ms).
pub const SHMCAST_SPIN_LIMIT_MAX_US: u32 = 10_000;

/// `cache_window_kib`: no cache window; the stream always cycles through the whole ring.
pub const SHMCAST_CACHE_WINDOW_NONE: u32 = u32::MAX;

const _: () = assert!(SHMCAST_SPIN_LIMIT_MAX_US as u128 == MAX_SPIN_LIMIT.as_micros());

/// Settings for `shmcast_publisher_create`. Initialise with `shmcast_publisher_options_init`,
/// then change the fields you need.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmcast_publisher_options {
    /// Set by `shmcast_publisher_options_init` to `SHMCAST_OPTIONS_VERSION`; do not change.
    pub abi_version: u32,
    /// Who may subscribe: `SHMCAST_ADMIT_SAME_UID` (default), `SHMCAST_ADMIT_UIDS` or
    /// `SHMCAST_ADMIT_ANY_UID`. Checked against the connecting process's credentials before
    /// anything is sent to it. Admitting other uids also makes the socket file writable by
    /// everyone (mode 0666 instead of 0600), as connecting needs; the topic directory stays
    /// private, so give such a topic as a socket path in a directory the other users can enter.
    pub admission: i32,
    /// Ring data size in bytes: a power of two from 64 to 2^40 (1 TiB). Default: 1 MiB.
    pub capacity: u64,
    /// Largest message in bytes, at most half the capacity minus 16. Default 0: a quarter of
    /// the capacity.
    pub max_message: u64,
    /// With `SHMCAST_ADMIT_UIDS`: the uids admitted besides the publisher's own. Read during
    /// `shmcast_publisher_create` only. May be `NULL` when `admit_uid_count` is 0. A non-zero
    /// `admit_uid_count` with any other `admission` is `SHMCAST_EINVAL`.
    pub admit_uids: *const u32,
    /// Number of entries in `admit_uids`.
    pub admit_uid_count: usize,
    /// Milliseconds the ring may stay full for a stalled gating subscriber before a loan demotes
    /// it to lossy and goes on, counted from when loans first found the ring full until one
    /// fits, across loans (timed loans that give up and are retried count, as do tries).
    /// Default 5000 (the Rust API's `DEFAULT_STALL_BOUND`), so that one stopped subscriber
    /// cannot freeze the publisher forever; -1: never demote (each loan waits as long as its own
    /// timeout), an explicit choice.
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
    /// Declares that every message is one plain-data value of this type: its name (1 to 128
    /// bytes of UTF-8 without control characters; a Rust peer names a type by its name without
    /// module paths, `Tick` for `app::Tick`), with `type_size` and `type_align`. Subscribers
    /// read the declaration, and one that expects another type fails with
    /// `SHMCAST_ECONTRACT`. Sends and publishes of any other length than `type_size` are then
    /// refused (`SHMCAST_EINVAL`). Default `NULL`: nothing declared (bytes of no declared type).
    /// Read during `shmcast_publisher_create` only. Set this or `schema_name`, not both.
    pub type_name: *const c_char,
    /// Declares that messages are bytes in this schema (a format and message type, e.g.
    /// `"proto:app.Tick"`; 1 to 128 bytes of UTF-8 without control characters), at
    /// `schema_version`. Default `NULL`. Read during `shmcast_publisher_create` only.
    pub schema_name: *const c_char,
    /// With `type_name`: `sizeof` the type, at most the maximum message size. Else 0.
    pub type_size: u64,
    /// With `type_name`: `_Alignof` the type, a power of two up to 16. Else 0.
    pub type_align: u32,
    /// With `schema_name`: the schema's version, compared exactly. Else 0.
    pub schema_version: u32,
    /// The directory a topic name's socket is created in, instead of `$SHMCAST_DIR`,
    /// `$XDG_RUNTIME_DIR/shmcast/` or `/tmp/shmcast-<uid>/`: made with mode 0700 if missing
    /// (its parent must exist); an existing one must be ours and closed to group and others
    /// (`SHMCAST_ETOPIC` otherwise). Subscribers must look in the same directory. Ignored for a
    /// topic that is a socket path. A relative directory (or socket path) is taken from the
    /// working directory during `shmcast_publisher_create` and kept absolute, so the socket is
    /// removed there even after a `chdir`. Default `NULL`: the default directory. Read during
    /// `shmcast_publisher_create` only.
    pub directory: *const c_char,
    /// Microseconds a loan that found the ring full polls for space before it sleeps: 1 to
    /// `SHMCAST_SPIN_LIMIT_MAX_US` (10000; more is `SHMCAST_EINVAL`), `SHMCAST_SPIN_NONE` to
    /// sleep at once, or 0 (default) for the library's default, 50 µs. Within this limit the
    /// publisher learns how long to poll from its last waits, and stops polling while
    /// subscribers do not release in time; while the machine has no core free it polls between
    /// `sched_yield`s, so that the subscribers run first; it never polls on a single-CPU
    /// machine. Polling saves the sleep and a cross-CPU wake when a gating subscriber
    /// is about to release, the normal state of a small ring. A loan may end up to this much
    /// past its timeout.
    pub spin_limit_us: u32,
    /// 1: the topic republishes messages imported from elsewhere (a gateway's local topic), so
    /// subscribers learn it (`shmcast_subscriber_imported`), `shmcast stat` and `shmcast list`
    /// show it, and a bridge never exports it again (which could loop). 0 (default): a topic of
    /// this host's own. Other values are `SHMCAST_EINVAL`. Count what the source lost with
    /// `shmcast_publisher_note_upstream_lost`.
    pub imported: u32,
    /// Keeps a stream whose subscribers keep up in the front `cache_window_kib` KiB of the
    /// ring (plus a message), where it stays in the CPU caches, instead of cycling the whole
    /// ring through memory: 0 (default) for the library's default, 4096 (4 MiB);
    /// `SHMCAST_CACHE_WINDOW_NONE` to use the whole ring always; any other value in KiB (a
    /// ring no larger than the window is used whole anyway). The publisher starts the next lap
    /// early only while every subscriber is gating and has caught up, so it never waits or
    /// overwrites anything for it, and a subscriber that falls behind gets the whole ring.
    /// Large messages through a large ring gain most. The price: while it applies, a
    /// subscriber that connects with `SHMCAST_START_OLDEST` finds the messages of the window,
    /// not of the whole ring. `shmcast stat` counts the laps started early (early wraps).
    pub cache_window_kib: u32,
    /// Reserved for future options: zeroed by the `_init` function, must stay zero.
    pub reserved: [u32; 1],
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
            stall_bound_ms: shmcast_transport::DEFAULT_STALL_BOUND.as_millis() as i64,
            handshake_timeout_ms: 2000,
            max_pending_handshakes: 64,
            max_subscribers: 0,
            type_name: std::ptr::null(),
            schema_name: std::ptr::null(),
            type_size: 0,
            type_align: 0,
            schema_version: 0,
            directory: std::ptr::null(),
            spin_limit_us: 0,
            imported: 0,
            cache_window_kib: 0,
            reserved: [0; 1],
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
    /// Milliseconds to wait for a publisher to appear (one gone or silent during the handshake
    /// counts as not there yet): 0 (default) fails at once with `SHMCAST_ENOPUBLISHER`, -1 waits
    /// without limit. A connect takes at most this and one `handshake_timeout_ms` more.
    pub connect_timeout_ms: i32,
    /// Milliseconds the publisher may take to answer the handshake (at least 1). Default: 5000.
    pub handshake_timeout_ms: u32,
    /// How many times a waiting receive polls before it blocks, on top of its adaptive poll
    /// (up to 50 µs, and only while the machine has a core free). Default 0. Only worth it
    /// with fewer spinning subscribers than idle cores.
    pub spin: u32,
    /// Which publishers to trust, checked against the credentials of the process serving the
    /// socket before anything is sent to it: `SHMCAST_ADMIT_SAME_UID` (default: our own uid),
    /// `SHMCAST_ADMIT_UIDS` (our own and `publisher_uid`) or `SHMCAST_ADMIT_ANY_UID`. Another
    /// publisher is `SHMCAST_EREFUSED`. A named topic lies in our private directory; a socket
    /// path may lie where others can bind.
    pub publisher_admission: i32,
    /// With `SHMCAST_ADMIT_UIDS`: the publisher uid trusted besides our own. A non-zero value
    /// with any other `publisher_admission` is `SHMCAST_EINVAL`.
    pub publisher_uid: u32,
    /// Requires the topic to declare this plain-data type, with `expect_type_size` and
    /// `expect_type_align` (see `shmcast_publisher_options.type_name`); any difference fails
    /// the connect with `SHMCAST_ECONTRACT`, naming both sides in the error message. Default
    /// `NULL`: any. Read during `shmcast_subscriber_connect` only. Set this or
    /// `expect_schema_name`, not both.
    pub expect_type_name: *const c_char,
    /// Requires the topic to declare this schema at exactly `expect_schema_version`
    /// (`SHMCAST_ECONTRACT` otherwise). Default `NULL`: any.
    pub expect_schema_name: *const c_char,
    /// With `expect_type_name`: the type's size in bytes. Else 0.
    pub expect_type_size: u64,
    /// With `expect_type_name`: the type's alignment. Else 0.
    pub expect_type_align: u32,
    /// With `expect_schema_name`: the schema's version. Else 0.
    pub expect_schema_version: u32,
    /// Requires the topic's maximum message size to be at least this many bytes
    /// (`SHMCAST_ECONTRACT` otherwise). Default 0: any.
    pub expect_max_message: u64,
    /// The directory to look for a topic name's socket in (the publisher's), instead of
    /// `$SHMCAST_DIR`, `$XDG_RUNTIME_DIR/shmcast/` or `/tmp/shmcast-<uid>/`. An existing one
    /// must be ours and closed to group and others (`SHMCAST_ETOPIC` otherwise). Ignored for a
    /// topic that is a socket path. A relative directory (or socket path) is taken from the
    /// working directory during `shmcast_subscriber_connect`. Default `NULL`: the default
    /// directory. Read during `shmcast_subscriber_connect` only.
    pub directory: *const c_char,
    /// Where a lossy subscriber continues after a lag (`SHMCAST_ELAGGED`, whose count is exact
    /// whatever this says): `SHMCAST_RESUME_SLACK` (default), `SHMCAST_RESUME_NEWEST` or
    /// `SHMCAST_RESUME_OLDEST`.
    pub resume: i32,
    /// Microseconds a blocking receive that found nothing polls for a message before it sleeps:
    /// 1 to `SHMCAST_SPIN_LIMIT_MAX_US` (10000; more is `SHMCAST_EINVAL`), `SHMCAST_SPIN_NONE`
    /// to sleep at once, or 0 (default) for the library's default, 50 µs. Within this limit the
    /// subscriber learns how long to poll from its last waits, and stops polling while no
    /// message comes in time; while the machine has no core free it polls between
    /// `sched_yield`s, so that the publisher (or a reader sharing its core) runs first; it never
    /// polls on a single-CPU machine. Polling saves the sleep, the publisher's wake and a cross-CPU wake
    /// when the publisher is about to publish. A receive with `timeout_ms` 0 never polls; a
    /// timed one may end up to this much past its timeout. `spin` adds to it.
    pub spin_limit_us: u32,
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
            expect_type_name: std::ptr::null(),
            expect_schema_name: std::ptr::null(),
            expect_type_size: 0,
            expect_type_align: 0,
            expect_schema_version: 0,
            expect_max_message: 0,
            directory: std::ptr::null(),
            resume: SHMCAST_RESUME_SLACK,
            spin_limit_us: 0,
        }
    }
}

/// Asserts that `$ty` is `$size` bytes with each field at its offset.
macro_rules! assert_layout {
    ($ty:ty, $size:expr, { $($field:ident: $offset:expr),* $(,)? }) => {
        const _: () = assert!(size_of::<$ty>() == $size);
        $(const _: () = assert!(std::mem::offset_of!($ty, $field) == $offset);)*
    };
}

// The layout callers compiled against SHMCAST_OPTIONS_VERSION 2 write: `spin_limit_us` took
// the first reserved word of each struct, `imported` and `cache_window_kib` the publisher's
// next ones.
#[cfg(target_pointer_width = "64")]
assert_layout!(shmcast_publisher_options, 120, {
    abi_version: 0, admission: 4, capacity: 8, max_message: 16, admit_uids: 24,
    admit_uid_count: 32, stall_bound_ms: 40, handshake_timeout_ms: 48,
    max_pending_handshakes: 52, max_subscribers: 56, type_name: 64, schema_name: 72,
    type_size: 80, type_align: 88, schema_version: 92, directory: 96, spin_limit_us: 104,
    imported: 108, cache_window_kib: 112, reserved: 116,
});
#[cfg(target_pointer_width = "64")]
assert_layout!(shmcast_subscriber_options, 88, {
    abi_version: 0, mode: 4, start: 8, connect_timeout_ms: 12, handshake_timeout_ms: 16,
    spin: 20, publisher_admission: 24, publisher_uid: 28, expect_type_name: 32,
    expect_schema_name: 40, expect_type_size: 48, expect_type_align: 56,
    expect_schema_version: 60, expect_max_message: 64, directory: 72, resume: 80,
    spin_limit_us: 84,
});

/// Fills `opts` with the defaults: a 1 MiB ring, messages up to a quarter of it, same-uid
/// admission, a 5 s stall bound, 2 s handshake timeout, 64 pending handshakes.
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
/// publisher exists, 5 s handshake timeout, no fixed spinning (a blocking receive still polls
/// for up to 50 µs before it sleeps, while the machine has a core free).
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
