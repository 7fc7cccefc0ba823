//! This process: its descriptor limit and count, its uid.

#[cfg(any(test, feature = "test-support"))]
use std::io;

/// `getrlimit(RLIMIT_NOFILE)`—The soft limit on this process's descriptors (`u64::MAX` when
/// unlimited or unknown).
pub(crate) fn descriptor_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

#[cfg(any(test, feature = "test-support"))]
/// Counts this process's open descriptors by listing `/proc/self/fd`, for leak checks.
///
/// Exact only while no other thread opens or closes descriptors.
pub(crate) fn fd_count() -> io::Result<usize> {
    // The listing includes the directory's own descriptor.
    Ok(std::fs::read_dir("/proc/self/fd")?
        .count()
        .saturating_sub(1))
}

/// `getuid()`—Returns the real user id of this process.
pub(crate) fn getuid() -> u32 {
    rustix::process::getuid().as_raw()
}
