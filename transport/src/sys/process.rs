//! This process: its descriptor limit and count, its uid; and how busy the machine's CPUs are.

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

/// `open`, `read` and `close` of `/proc/loadavg`—How many threads of the whole machine are
/// running or runnable at this moment, the caller included (its fourth field, the kernel's
/// `nr_running`), or `None` where it cannot be read. Opens the file each time, so no descriptor
/// outlives the call.
pub(crate) fn runnable_threads() -> Option<u32> {
    use std::io::Read;
    let mut buf = [0u8; 128];
    let n = std::fs::File::open("/proc/loadavg")
        .and_then(|mut f| f.read(&mut buf))
        .ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.split_ascii_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}
