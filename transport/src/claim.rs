//! Claiming a topic's socket path for a publisher, giving it back, and cleaning up after
//! publishers that died.
//!
//! Only a socket that is provably ours and provably dead is ever removed: a socket file (as
//! `lstat` sees it, so not a symbolic link) owned by our uid that refuses connections. A
//! publisher killed by a signal leaves exactly that behind (its memory has no name, so nothing
//! else): the next publisher of the topic replaces it, and [`stale_topics`] and
//! [`remove_stale`] find and remove such files without binding.
//!
//! # Overload and failure
//!
//! * A live publisher answers on the path: [`BindError::TopicInUse`].
//! * Anything else than a socket at the path (a file, a FIFO, a directory, a symbolic link to
//!   anything): [`BindError::NotASocket`], naming what it is. A socket of another uid:
//!   [`BindError::ForeignSocket`]. Neither is touched.
//! * A socket of ours nobody listens on (left by a publisher that crashed) is replaced.
//!   Publishers binding in the same directory, and [`remove_stale`], take turns under a
//!   directory lock, so two that find the same stale socket cannot delete each other's live
//!   one; the socket is removed only if it is still the file found dead.
//! * A directory of the path that does not exist: [`BindError::NoDirectory`]; any other system
//!   error: [`BindError::Socket`], naming the path.
//! * On release, the file is removed only if it is still the one this claim created (a
//!   successor may have replaced it).

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{BindError, CleanError};
use crate::events;
use crate::sys::{self, fork::PrivateFd};
use crate::topic::FileKind;

/// Longest wait for another publisher binding in the same directory.
const BIND_LOCK_WAIT: Duration = Duration::from_secs(5);

/// Longest wait for a live publisher's backlog while probing its socket.
const PROBE_WAIT: Duration = Duration::from_secs(1);

/// A topic socket path this process listens on.
#[derive(Debug)]
pub(crate) struct Claim {
    path: PathBuf,
    /// Device and inode of the socket file we created; `None` once released.
    id: Option<(u64, u64)>,
    /// Whether dropping the claim releases it: the publisher's own claim, not a copy.
    release_on_drop: bool,
}

impl Claim {
    /// Binds a listening socket at `path`, replacing a stale one left by a dead publisher.
    /// The socket file's mode is 0600, or 0666 when `open_to_others` (a publisher that admits
    /// other uids: connecting needs write permission on the file, and the credential check
    /// decides who is admitted).
    pub(crate) fn bind(path: &Path, open_to_others: bool) -> Result<(Claim, PrivateFd), BindError> {
        let socket_error = |source| BindError::Socket {
            path: path.to_owned(),
            source,
        };
        let listener = bind_topic(path)?;
        let id = file_id(path).map_err(socket_error)?;
        let claim = Claim {
            path: path.to_owned(),
            id: Some(id),
            release_on_drop: true,
        };
        if open_to_others {
            // On failure the claim's drop removes the file.
            sys::fs::chmod_if_same(path, id, 0o666).map_err(socket_error)?;
        }
        Ok((claim, listener))
    }

    /// The socket path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A copy of this claim for another thread to release (a [`Closer`](crate::Closer)): it
    /// removes the file only if it is still the one this claim created, as `release` does, and
    /// only when told to: dropping the copy leaves the file alone.
    pub(crate) fn copy(&self) -> Claim {
        Claim {
            path: self.path.clone(),
            id: self.id,
            release_on_drop: false,
        }
    }

    /// Gives the socket file up without removing it: it belongs to another process (the one
    /// this copy was inherited from across `fork`).
    pub(crate) fn disown(&mut self) {
        self.id = None;
    }

    /// Removes the socket file if it is still the one this claim created; once.
    pub(crate) fn release(&mut self) {
        if let Some(id) = self.id.take()
            && file_id(&self.path).ok() == Some(id)
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.release_on_drop {
            self.release();
        }
    }
}

fn file_id(path: &Path) -> io::Result<(u64, u64)> {
    let m = std::fs::symlink_metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// What occupies a topic's socket path.
enum Found {
    /// Nothing (any more).
    Nothing,
    /// A socket of ours that a process listens on (or whose backlog stays full).
    Live,
    /// A socket of ours that refuses connections; its device and inode.
    Stale((u64, u64)),
    /// Something that is not a socket.
    NotASocket(FileKind),
    /// A socket owned by this uid.
    Foreign(u32),
}

/// Looks at what is at `path` without following a symbolic link; probes a socket of ours with
/// a connection.
fn inspect(path: &Path) -> io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Ok(Found::NotASocket(FileKind::of(meta.file_type())));
    }
    if meta.uid() != sys::process::getuid() {
        return Ok(Found::Foreign(meta.uid()));
    }
    match sys::net::seqpacket_connect(path, Some(PROBE_WAIT)) {
        Ok(_) => Ok(Found::Live),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Found::Live),
        // Nobody listens on this inode: the file is left over from a crash.
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            Ok(Found::Stale((meta.dev(), meta.ino())))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::Nothing),
        // Another program's stream or datagram socket: not ours to replace.
        Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
            Err(crate::connect::not_ours(e, io::ErrorKind::AddrInUse))
        }
        Err(e) => Err(e),
    }
}

/// Removes the stale socket `id` at `path`, unless the file there is another one by now.
fn remove_if_same(path: &Path, id: (u64, u64)) -> io::Result<()> {
    match file_id(path) {
        Ok(now) if now == id => {}
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Takes this process's turn at changing sockets in `path`'s directory: `Ok(None)` when the
/// directory cannot be opened (no read permission), which goes unlocked.
fn take_turn(path: &Path) -> io::Result<Option<OwnedFd>> {
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("/"),
    };
    match sys::fs::lock_dir(dir, BIND_LOCK_WAIT) {
        Ok(lock) => Ok(Some(lock)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(e),
        Err(_) => Ok(None),
    }
}

/// The error of a turn not taken: another process held the directory's lock throughout.
fn locked_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "another process kept the topic directory locked for {} s (publishers of its \
             topics take turns there, for milliseconds, to replace stale sockets)",
            BIND_LOCK_WAIT.as_secs()
        ),
    )
}

/// Binds the topic socket, replacing a stale one left by a dead publisher.
fn bind_topic(path: &Path) -> Result<PrivateFd, BindError> {
    let socket_error = |source| BindError::Socket {
        path: path.to_owned(),
        source,
    };
    // "Refused, so stale: remove it and listen" is two steps; without the lock, two publishers
    // that both found the same stale socket could each remove it, and the second would delete
    // the first one's live socket. Publishers of topics in one directory take turns here (for
    // milliseconds).
    let Ok(_turn) = take_turn(path) else {
        return Err(socket_error(locked_out()));
    };
    for _ in 0..3 {
        // Private: a child forked from the publisher never holds its listener.
        match PrivateFd::open(|| sys::net::seqpacket_listen(path)) {
            Ok(fd) => return Ok(fd),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(BindError::NoDirectory {
                    path: path.to_owned(),
                });
            }
            Err(e) => return Err(socket_error(e)),
        }
        match inspect(path).map_err(socket_error)? {
            Found::Nothing => {}
            Found::Live => return Err(BindError::TopicInUse(path.to_owned())),
            Found::Stale(id) => {
                remove_if_same(path, id).map_err(socket_error)?;
                events::stale_replaced(path);
            }
            Found::NotASocket(kind) => {
                return Err(BindError::NotASocket {
                    path: path.to_owned(),
                    kind,
                });
            }
            Found::Foreign(uid) => {
                return Err(BindError::ForeignSocket {
                    path: path.to_owned(),
                    uid,
                });
            }
        }
    }
    Err(BindError::TopicInUse(path.to_owned()))
}

/// Removes the topic socket at `path` if a publisher that died left it there: it must be a
/// socket file (not a symbolic link) owned by our uid that refuses connections. Anything else
/// is an error and stays as it is; so does a socket that a new publisher bound meanwhile.
///
/// This is what the next publisher of the topic would do; it takes turns with publishers
/// binding in the same directory, as they do with each other.
///
/// # Errors
///
/// [`CleanError::Live`] when a process listens on the socket, [`CleanError::NotASocket`] and
/// [`CleanError::ForeignSocket`] for what is not ours to remove, [`CleanError::Io`] when the
/// path does not exist or cannot be inspected or removed.
///
/// ```no_run
/// // What a publisher killed by a signal left behind.
/// for path in shmcast::stale_topics(&shmcast::TopicDir::from_env()?.path)? {
///     shmcast::remove_stale(&path)?;
///     println!("removed {}", path.display());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn remove_stale(path: &Path) -> Result<(), CleanError> {
    let io_error = |source| CleanError::Io {
        path: path.to_owned(),
        source,
    };
    let _turn = take_turn(path).map_err(|_| io_error(locked_out()))?;
    match inspect(path).map_err(io_error)? {
        Found::Nothing => Err(io_error(io::ErrorKind::NotFound.into())),
        Found::Live => Err(CleanError::Live(path.to_owned())),
        Found::Stale(id) => remove_if_same(path, id).map_err(io_error),
        Found::NotASocket(kind) => Err(CleanError::NotASocket {
            path: path.to_owned(),
            kind,
        }),
        Found::Foreign(uid) => Err(CleanError::ForeignSocket {
            path: path.to_owned(),
            uid,
        }),
    }
}

/// The stale topic sockets in `dir`, sorted: the sockets a publisher that died left there (ours,
/// refusing connections), which [`remove_stale`] removes. Other files, other users' sockets,
/// live sockets and entries that cannot be inspected are not listed. Each socket of ours is
/// probed with a connection, which a live publisher accepts and sees closed at once.
///
/// # Errors
///
/// [`CleanError::Io`] naming `dir` when it cannot be read (a missing directory included).
pub fn stale_topics(dir: &Path) -> Result<Vec<PathBuf>, CleanError> {
    let io_error = |source| CleanError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let path = entry.map_err(io_error)?.path();
        if let Ok(Found::Stale(_)) = inspect(&path) {
            stale.push(path);
        }
    }
    stale.sort();
    Ok(stale)
}
