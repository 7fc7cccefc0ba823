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

/// `getrlimit(RLIMIT_FSIZE)`—The soft limit on the size of a file this process writes or
/// extends (`u64::MAX` when unlimited); growing a file past it raises `SIGXFSZ`, which kills
/// the process unless handled.
pub(crate) fn file_size_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Fsize)
        .current
        .unwrap_or(u64::MAX)
}

/// Listing `/proc/self/fd`—How many of this process's descriptor numbers below `limit` are in
/// use (the listing's own descriptor included), or `None` where the listing cannot be read.
///
/// The kernel gives out numbers below the limit only, lowest first, so the numbers free below
/// it are the descriptors this process can still open.
pub(crate) fn descriptors_in_use_below(limit: u64) -> Option<u64> {
    let mut used = 0u64;
    for entry in std::fs::read_dir("/proc/self/fd").ok()? {
        let number = entry.ok()?.file_name().to_str()?.parse::<u64>().ok()?;
        used += u64::from(number < limit);
    }
    Some(used)
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

/// `open`, `read` and `close` of `/sys/devices/system/cpu/online`—How many CPUs the machine
/// has online (what `sysconf(_SC_NPROCESSORS_ONLN)` reads), whatever this process's affinity;
/// `None` where the file cannot be read or parsed. Read once per process.
pub(crate) fn online_cpus() -> Option<u32> {
    static ONLINE: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *ONLINE.get_or_init(|| {
        let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
        count_cpu_list(text.trim())
    })
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`); `None` if it is not one.
fn count_cpu_list(list: &str) -> Option<u32> {
    list.split(',').try_fold(0u32, |n, part| {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let cpu = part.parse::<u32>().ok()?;
                (cpu, cpu)
            }
        };
        n.checked_add(last.checked_sub(first)? + 1)
    })
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

#[cfg(test)]
mod cpu_list_tests {
    use super::count_cpu_list;

    #[test]
    fn cpu_lists_are_counted_and_anything_else_refused() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        for bad in ["", "x", "3-1", "0-", "0,,1"] {
            assert_eq!(count_cpu_list(bad), None, "{bad:?}");
        }
    }
}
