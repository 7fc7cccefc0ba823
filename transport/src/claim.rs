//! Claiming a topic's socket path for a publisher, and giving it back.
//!
//! # Overload and failure
//!
//! * A live publisher answers on the path: [`BindError::TopicInUse`].
//! * A socket file nobody listens on (left by a publisher that crashed) is replaced. Publishers
//!   binding in the same directory take turns under a directory lock, so two that find the same
//!   stale socket cannot delete each other's live one.
//! * On release, the file is removed only if it is still the one this claim created (a
//!   successor may have replaced it).

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BindError;
use crate::sys;

/// Longest wait for another publisher binding in the same directory.
const BIND_LOCK_WAIT: Duration = Duration::from_secs(5);

/// A topic socket path this process listens on.
#[derive(Debug)]
pub(crate) struct Claim {
    path: PathBuf,
    /// Device and inode of the socket file we created.
    id: (u64, u64),
}

impl Claim {
    /// Binds a listening socket at `path`, replacing a stale one left by a dead publisher.
    pub(crate) fn bind(path: &Path) -> Result<(Claim, OwnedFd), BindError> {
        let listener = bind_topic(path)?;
        let id = file_id(path)?;
        Ok((
            Claim {
                path: path.to_owned(),
                id,
            },
            listener,
        ))
    }

    /// The socket path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if file_id(&self.path).ok() == Some(self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn file_id(path: &Path) -> io::Result<(u64, u64)> {
    let m = std::fs::symlink_metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// Binds the topic socket, replacing a stale one left by a dead publisher.
fn bind_topic(path: &Path) -> Result<OwnedFd, BindError> {
    // "Refused, so stale: remove it and listen" is two steps; without the lock, two publishers
    // that both found the same stale socket could each remove it, and the second would delete
    // the first one's live socket. Publishers of topics in one directory take turns here (for
    // milliseconds). A directory we may not open (no read permission) goes unlocked.
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("/"),
    };
    let _turn = match sys::fs::lock_dir(dir, BIND_LOCK_WAIT) {
        Ok(lock) => Some(lock),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            return Err(BindError::TopicInUse(path.to_owned()));
        }
        Err(_) => None,
    };
    for _ in 0..3 {
        match sys::net::seqpacket_listen(path) {
            Ok(fd) => return Ok(fd),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {}
            Err(e) => return Err(e.into()),
        }
        match sys::net::seqpacket_connect(path, Some(Duration::from_secs(1))) {
            // Somebody answers: a live publisher.
            Ok(_) => return Err(BindError::TopicInUse(path.to_owned())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(BindError::TopicInUse(path.to_owned()));
            }
            // Nobody listens: the file is left over from a crash.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(BindError::TopicInUse(path.to_owned()))
}
