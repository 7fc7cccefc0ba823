//! Files: sealable memfds, their seals and sizes, read-only reopening, directory locks.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{MemfdFlags, Mode, OFlags};
use rustix::io::Errno;

use super::retry_eintr;

pub(crate) use rustix::fs::SealFlags;

/// `memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)`—Creates an anonymous file that can be
/// sealed.
///
/// Also asks for `MFD_NOEXEC_SEAL` (the file can never be made executable) and falls back to
/// asking without it on kernels older than 6.3, which reject the flag with `EINVAL`.
pub(crate) fn memfd_create_sealable(name: &str) -> io::Result<OwnedFd> {
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    match rustix::fs::memfd_create(name, flags | MemfdFlags::NOEXEC_SEAL) {
        Err(Errno::INVAL) => Ok(rustix::fs::memfd_create(name, flags)?),
        result => Ok(result?),
    }
}

/// `ftruncate(fd, len)`—Sets the size of a file.
pub(crate) fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    retry_eintr(|| rustix::fs::ftruncate(fd, len))
}

/// `fstat(fd).st_size`—Returns the size of a file in bytes.
pub(crate) fn fstat_size(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let stat = rustix::fs::fstat(fd)?;
    u64::try_from(stat.st_size).map_err(|_| Errno::OVERFLOW.into())
}

/// `fcntl(fd, F_ADD_SEALS, seals)`—Adds seals to a memfd; they can never be removed.
pub(crate) fn add_seals(fd: BorrowedFd<'_>, seals: SealFlags) -> io::Result<()> {
    Ok(rustix::fs::fcntl_add_seals(fd, seals)?)
}

/// `fcntl(fd, F_GET_SEALS)`—Returns the seals of a memfd.
///
/// Fails with [`io::ErrorKind::InvalidInput`] (`EINVAL`) when `fd` is not a sealable file.
pub(crate) fn get_seals(fd: BorrowedFd<'_>) -> io::Result<SealFlags> {
    Ok(rustix::fs::fcntl_get_seals(fd)?)
}

/// `open("/proc/self/fd/N", O_RDONLY | O_CLOEXEC)`—A new read-only descriptor for the file `fd`
/// refers to (a memfd, say), to hand to peers that must not get our read-write one.
pub(crate) fn reopen_readonly(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    Ok(rustix::fs::open(
        path.as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)` then `flock(LOCK_EX | LOCK_NB)`, retried
/// every millisecond for up to `timeout`—Takes an advisory lock on a directory, held until the
/// returned descriptor is dropped. [`io::ErrorKind::WouldBlock`] if another holder keeps it.
pub(crate) fn lock_dir(dir: &Path, timeout: Duration) -> io::Result<OwnedFd> {
    let fd = retry_eintr(|| {
        rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(Errno::INTR) => {}
            Err(Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// `open(path, O_PATH | O_NOFOLLOW)` + `fstat` + `chmod("/proc/self/fd/N", mode)`—Sets the
/// mode of the file at `path` only if it is still the file `id` (device, inode), never
/// following a symbolic link: in a directory others may write, the file could be replaced
/// between a check and a `chmod` of the path.
pub(crate) fn chmod_if_same(path: &Path, id: (u64, u64), mode: u32) -> io::Result<()> {
    chmod_checked(path, mode, |st| {
        ((st.st_dev, st.st_ino) == id)
            .then_some(())
            .ok_or("the file was replaced before its mode could be set")
    })
}

/// [`chmod_if_same`] for a socket this process has just bound at `path`, whose inode it cannot
/// learn from the socket: sets the mode only if the file there is a socket of our effective
/// uid. A file swapped in after `bind` (a symbolic link to a file of someone else's, in a
/// directory another uid may write) is refused, not changed; at worst another socket of ours
/// gets the mode.
pub(crate) fn chmod_own_socket(path: &Path, mode: u32) -> io::Result<()> {
    let uid = rustix::process::geteuid().as_raw();
    chmod_checked(path, mode, |st| {
        let socket =
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Socket;
        (socket && st.st_uid == uid)
            .then_some(())
            .ok_or("the socket was replaced before its mode could be set")
    })
}

/// Opens `path` without following a symbolic link, lets `check` look at what is there, and
/// sets its mode through the descriptor, so the file checked is the file changed.
fn chmod_checked(
    path: &Path,
    mode: u32,
    check: impl FnOnce(&rustix::fs::Stat) -> Result<(), &'static str>,
) -> io::Result<()> {
    let fd = retry_eintr(|| {
        rustix::fs::open(
            path,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    })?;
    let st = rustix::fs::fstat(&fd)?;
    check(&st).map_err(io::Error::other)?;
    let mode = Mode::from_raw_mode(mode);
    let by_fd = format!("/proc/self/fd/{}", fd.as_raw_fd());
    match rustix::fs::chmod(by_fd.as_str(), mode) {
        // No `/proc` (a bare container): the path again, still never following a final link
        // (`fchmodat2`, Linux 6.6).
        Err(Errno::NOENT) => Ok(rustix::fs::chmodat(
            rustix::fs::CWD,
            path,
            mode,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?),
        other => Ok(other?),
    }
}
