//! What a C caller passes, checked and turned into the transport's types: the option structs
//! into builders (with their stamps, ranges and strings), `timeout_ms` arguments into waits,
//! topic strings into names.

use crate::contract::Fields;
use crate::error::{Failure, SHMCAST_EINVAL, SHMCAST_ETOPIC};
use crate::options::{
    SHMCAST_ADMIT_ANY_UID, SHMCAST_ADMIT_SAME_UID, SHMCAST_ADMIT_UIDS, SHMCAST_CACHE_WINDOW_NONE,
    SHMCAST_MODE_GATING, SHMCAST_MODE_LOSSY, SHMCAST_OPTIONS_VERSION, SHMCAST_RESUME_NEWEST,
    SHMCAST_RESUME_OLDEST, SHMCAST_RESUME_SLACK, SHMCAST_SPIN_LIMIT_MAX_US, SHMCAST_SPIN_NONE,
    SHMCAST_START_NEWEST, SHMCAST_START_OLDEST, shmcast_publisher_options,
    shmcast_subscriber_options,
};
use shmcast_transport::{
    Admission, DEFAULT_CACHE_WINDOW, DEFAULT_SPIN_LIMIT, Mode, PublisherBuilder, Resume, Start,
    SubscriberBuilder,
};
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

/// Waiting "without limit" for a publisher: long enough to never end, short enough that the
/// transport's deadline arithmetic does not overflow.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

fn check_stamp(abi_version: u32, reserved: &[u32], what: &str) -> Result<(), Failure> {
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

/// The limit a `spin_limit_us` field asks for: 0 the default, `SHMCAST_SPIN_NONE` none.
fn spin_limit(us: u32) -> Result<Duration, Failure> {
    match us {
        0 => Ok(DEFAULT_SPIN_LIMIT),
        SHMCAST_SPIN_NONE => Ok(Duration::ZERO),
        us if us <= SHMCAST_SPIN_LIMIT_MAX_US => Ok(Duration::from_micros(us.into())),
        us => Err(Failure::invalid(format_args!(
            "spin_limit_us must be at most {SHMCAST_SPIN_LIMIT_MAX_US} or SHMCAST_SPIN_NONE, \
             not {us}"
        ))),
    }
}

/// The window in bytes a `cache_window_kib` field asks for: 0 the default,
/// `SHMCAST_CACHE_WINDOW_NONE` none.
fn cache_window(kib: u32) -> u64 {
    match kib {
        0 => DEFAULT_CACHE_WINDOW,
        SHMCAST_CACHE_WINDOW_NONE => 0,
        kib => u64::from(kib) << 10,
    }
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
/// readable `u32`s; `opts.type_name`, `opts.schema_name` and `opts.directory` are each null or
/// a NUL-terminated string.
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
    if o.admission != SHMCAST_ADMIT_UIDS && o.admit_uid_count != 0 {
        return Err(Failure::invalid(
            "admit_uids is read only with admission SHMCAST_ADMIT_UIDS",
        ));
    }
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
    let imported = match o.imported {
        0 => false,
        1 => true,
        n => {
            return Err(Failure::invalid(format_args!(
                "imported must be 0 or 1, not {n}"
            )));
        }
    };
    let mut b = PublisherBuilder::new(topic)
        .imported(imported)
        .capacity(o.capacity)
        .admission(admission)
        .stall_bound(stall_bound)
        .spin_limit(spin_limit(o.spin_limit_us)?)
        .cache_window(cache_window(o.cache_window_kib))
        .handshake_timeout(Duration::from_millis(o.handshake_timeout_ms.into()))
        .max_pending_handshakes(o.max_pending_handshakes as usize)
        .max_subscribers(match o.max_subscribers {
            0 => None,
            n => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        });
    if o.max_message != 0 {
        b = b.max_message(o.max_message);
    }
    // SAFETY: the caller's promise for `directory`.
    if let Some(dir) = unsafe { directory_arg(o.directory) }? {
        b = b.directory(dir);
    }
    let declared = Fields {
        prefix: "",
        type_name: o.type_name,
        type_size: o.type_size,
        type_align: o.type_align,
        schema_name: o.schema_name,
        schema_version: o.schema_version,
    };
    // SAFETY: the caller's promise for both names.
    if let Some(message) = unsafe { declared.message_type() }? {
        b = b.declare(message);
    }
    Ok(b)
}

/// The builder for `topic` with the caller's options (`None`: the defaults).
///
/// # Safety
///
/// `opts.expect_type_name`, `opts.expect_schema_name` and `opts.directory` are each null or a
/// NUL-terminated string.
pub(crate) unsafe fn subscriber_builder(
    topic: &str,
    opts: Option<&shmcast_subscriber_options>,
) -> Result<SubscriberBuilder, Failure> {
    let o = opts.copied().unwrap_or_default();
    check_stamp(o.abi_version, &[], "shmcast_subscriber")?;
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
    let resume = match o.resume {
        SHMCAST_RESUME_SLACK => Resume::Slack,
        SHMCAST_RESUME_NEWEST => Resume::Newest,
        SHMCAST_RESUME_OLDEST => Resume::Oldest,
        other => return Err(Failure::invalid(format_args!("unknown resume {other}"))),
    };
    if o.handshake_timeout_ms == 0 {
        return Err(Failure::invalid("handshake_timeout_ms must be at least 1"));
    }
    let publisher = admission(o.publisher_admission, "publisher_admission", || {
        Ok(vec![o.publisher_uid])
    })?;
    if o.publisher_admission != SHMCAST_ADMIT_UIDS && o.publisher_uid != 0 {
        return Err(Failure::invalid(
            "publisher_uid is read only with publisher_admission SHMCAST_ADMIT_UIDS",
        ));
    }
    // SAFETY: the caller's promise for `directory`.
    let directory = unsafe { directory_arg(o.directory) }?;
    let mut b = SubscriberBuilder::new(topic)
        .mode(mode)
        .start(start)
        .resume(resume)
        .spin(o.spin)
        .spin_limit(spin_limit(o.spin_limit_us)?)
        .publisher(publisher)
        .handshake_timeout(Duration::from_millis(o.handshake_timeout_ms.into()));
    if let Some(dir) = directory {
        b = b.directory(dir);
    }
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
    let expected = Fields {
        prefix: "expect_",
        type_name: o.expect_type_name,
        type_size: o.expect_type_size,
        type_align: o.expect_type_align,
        schema_name: o.expect_schema_name,
        schema_version: o.expect_schema_version,
    };
    // SAFETY: the caller's promise for both names.
    if let Some(message) = unsafe { expected.message_type() }? {
        b = b.expect(message);
    }
    if o.expect_max_message != 0 {
        let bytes = usize::try_from(o.expect_max_message).unwrap_or(usize::MAX);
        b = b.expect_max_message(bytes);
    }
    Ok(b)
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

/// The `directory` option as a path: `None` for `NULL`. Any bytes but NUL name a path; an empty
/// string is refused (`NULL` asks for the default).
///
/// # Safety
///
/// `dir` is null or points to a NUL-terminated string that stays unchanged during the call.
unsafe fn directory_arg(dir: *const c_char) -> Result<Option<PathBuf>, Failure> {
    if dir.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(dir) }.to_bytes();
    if bytes.is_empty() {
        return Err(Failure::invalid(
            "opts->directory is empty: use NULL for the default topic directory",
        ));
    }
    Ok(Some(PathBuf::from(OsStr::from_bytes(bytes))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::guard;
    use shmcast_transport::MAX_SPIN_LIMIT;

    fn code<T>(r: Result<T, Failure>) -> c_int {
        guard(|| r.map(drop))
    }

    #[test]
    fn spin_limit_zero_is_the_default_and_none_disables() {
        assert_eq!(spin_limit(0).unwrap(), DEFAULT_SPIN_LIMIT);
        assert_eq!(spin_limit(SHMCAST_SPIN_NONE).unwrap(), Duration::ZERO);
        assert_eq!(spin_limit(1).unwrap(), Duration::from_micros(1));
        assert_eq!(
            spin_limit(SHMCAST_SPIN_LIMIT_MAX_US).unwrap(),
            MAX_SPIN_LIMIT
        );
        for us in [SHMCAST_SPIN_LIMIT_MAX_US + 1, SHMCAST_SPIN_NONE - 1] {
            assert_eq!(code(spin_limit(us)), SHMCAST_EINVAL as c_int, "{us}");
        }
    }

    #[test]
    fn cache_window_zero_is_the_default_and_none_turns_it_off() {
        assert_eq!(cache_window(0), DEFAULT_CACHE_WINDOW);
        assert_eq!(cache_window(SHMCAST_CACHE_WINDOW_NONE), 0);
        assert_eq!(cache_window(64), 64 << 10);
        assert_eq!(cache_window(u32::MAX - 1), u64::from(u32::MAX - 1) << 10);
    }

    /// An initialised struct has the bytes the previous version's `_init` wrote where
    /// `spin_limit_us` now is, so a caller that copies or zeroes structs keeps the default.
    #[test]
    fn init_leaves_the_new_fields_zero() {
        let (p, s) = (
            shmcast_publisher_options::default(),
            shmcast_subscriber_options::default(),
        );
        assert_eq!(
            (p.spin_limit_us, p.imported, p.cache_window_kib, p.reserved),
            (0, 0, 0, [0; 1])
        );
        assert_eq!(cache_window(p.cache_window_kib), DEFAULT_CACHE_WINDOW);
        assert_eq!(s.spin_limit_us, 0);
    }

    #[test]
    fn out_of_range_spin_limits_are_refused_on_both_sides() {
        let p = shmcast_publisher_options {
            spin_limit_us: SHMCAST_SPIN_LIMIT_MAX_US + 1,
            ..Default::default()
        };
        // SAFETY: no pointer fields are set.
        let built = unsafe { publisher_builder("t", Some(&p)) };
        assert_eq!(code(built), SHMCAST_EINVAL as c_int);
        let s = shmcast_subscriber_options {
            spin_limit_us: SHMCAST_SPIN_LIMIT_MAX_US + 1,
            ..Default::default()
        };
        // SAFETY: no pointer fields are set.
        let built = unsafe { subscriber_builder("t", Some(&s)) };
        assert_eq!(code(built), SHMCAST_EINVAL as c_int);
    }
}
