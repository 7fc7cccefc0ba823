//! Topics: a name resolves to a unix socket in a private per-user directory, or a path is used
//! as given.
//!
//! # Where a name's socket lives
//!
//! In the first of these directories ([`TopicDir`], [`DirSource`]):
//!
//! 1. the one given to the builder ([`PublisherBuilder::directory`],
//!    [`SubscriberBuilder::directory`]; C: the `directory` option);
//! 2. `$SHMCAST_DIR`, which must be an absolute path (set but empty counts as unset);
//! 3. `$XDG_RUNTIME_DIR/shmcast/`, if `XDG_RUNTIME_DIR` is an absolute path (the XDG base
//!    directory rules ignore a relative one);
//! 4. `/tmp/shmcast-<uid>/`.
//!
//! A publisher creates the directory if it is missing (mode 0700; its parent must exist).
//! Whichever way it was chosen, an existing directory must be a directory (not a symbolic link)
//! owned by our uid, with no permission for group or others: a directory someone else can write
//! could hold a hostile socket under a topic's name. A topic that needs a shared directory is
//! given as a socket path instead, and the subscriber's trust check
//! ([`SubscriberBuilder::publisher`]) decides whom to believe there.
//!
//! # Failure
//!
//! Every error names what was wrong ([`TopicError`]): a name with other characters, a socket
//! path longer than a unix socket address holds ([`MAX_SOCKET_PATH`] bytes), a relative
//! `SHMCAST_DIR`, an unsafe directory, or a directory that cannot be created or inspected.
//!
//! [`PublisherBuilder::directory`]: crate::PublisherBuilder::directory
//! [`SubscriberBuilder::directory`]: crate::SubscriberBuilder::directory
//! [`SubscriberBuilder::publisher`]: crate::SubscriberBuilder::publisher

use crate::sys;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The longest socket path in bytes: a unix socket address holds 108 bytes, and the path is
/// stored there with the NUL that ends it. A topic name's limit is this minus its directory's
/// length and the `/` between: 84 characters in `/run/user/1000/shmcast/`, 92 in
/// `/tmp/shmcast-0/`.
pub const MAX_SOCKET_PATH: usize = sys::net::SUN_PATH_LEN - 1;

/// Why a topic could not be turned into a socket path.
#[derive(Debug)]
#[non_exhaustive]
pub enum TopicError {
    /// Names are made of `A-Z a-z 0-9 . _ -`, at least one, and do not start with `.`; anything
    /// with a `/` is taken as a socket path instead.
    InvalidName(String),
    /// The topic is a path that names a directory (it ends in `/`, `.` or `..`), not a socket
    /// in one.
    NotASocket(PathBuf),
    /// The socket path is longer than a unix socket address holds.
    PathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The longest path a socket address holds: [`MAX_SOCKET_PATH`].
        max: usize,
    },
    /// `SHMCAST_DIR` is set to a relative path, which processes in other working directories
    /// would resolve elsewhere.
    RelativeDirectory(PathBuf),
    /// The topic directory exists but is not a directory, another user owns it, or others may
    /// enter it.
    InsecureDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The topic directory could not be created or inspected.
    Io {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

impl fmt::Display for TopicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopicError::InvalidName(n) => write!(
                f,
                "invalid topic name {n:?}: use A-Z a-z 0-9 . _ - (not starting with '.'), or a path with '/'"
            ),
            TopicError::NotASocket(path) => write!(
                f,
                "topic path {} names a directory, not a socket: end it with the socket's name \
                 (for example {})",
                path.display(),
                path.join("prices").display()
            ),
            TopicError::PathTooLong { path, len, max } => write!(
                f,
                "socket path {} is {len} bytes, more than the {max} a unix socket address holds: \
                 use a shorter topic name or a shorter directory (SHMCAST_DIR or the `directory` option)",
                path.display()
            ),
            TopicError::RelativeDirectory(dir) => write!(
                f,
                "SHMCAST_DIR={} is not an absolute path: processes in other working directories \
                 would look for topics elsewhere",
                dir.display()
            ),
            TopicError::InsecureDirectory { path, reason } => {
                write!(f, "refusing topic directory {}: {reason}", path.display())
            }
            TopicError::Io { path, source } => {
                write!(f, "topic directory {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for TopicError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TopicError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// How a topic's socket path was found: the source of the directory a name resolved in, or
/// that the topic was itself a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DirSource {
    /// The topic contains a `/`: it is the socket path, and no directory was looked up.
    SocketPath,
    /// The directory given to the builder (C: the `directory` option).
    Builder,
    /// The `SHMCAST_DIR` environment variable.
    ShmcastDir,
    /// `$XDG_RUNTIME_DIR/shmcast/`.
    XdgRuntimeDir,
    /// `/tmp/shmcast-<uid>/`: neither `SHMCAST_DIR` nor `XDG_RUNTIME_DIR` is set.
    Fallback,
}

impl fmt::Display for DirSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DirSource::SocketPath => "the topic is a socket path",
            DirSource::Builder => "the topic directory given by the `directory` option",
            DirSource::ShmcastDir => "the topic directory from SHMCAST_DIR",
            DirSource::XdgRuntimeDir => "the topic directory from XDG_RUNTIME_DIR",
            DirSource::Fallback => {
                "the default topic directory, as neither SHMCAST_DIR nor XDG_RUNTIME_DIR is set"
            }
        })
    }
}

impl DirSource {
    /// How to look for a topic elsewhere, for an error that found no publisher where this
    /// source pointed; `None` where the caller chose the place itself.
    pub fn elsewhere(self) -> Option<&'static str> {
        match self {
            DirSource::SocketPath | DirSource::Builder => None,
            DirSource::ShmcastDir => {
                Some("change SHMCAST_DIR or set the `directory` option to look elsewhere")
            }
            DirSource::XdgRuntimeDir | DirSource::Fallback => {
                Some("set SHMCAST_DIR or the `directory` option to look elsewhere")
            }
        }
    }

    /// Writes "no publisher on PATH (where it looked[, which does not exist][; how to look
    /// elsewhere])". Whether the directory exists is looked up as the error is written: a
    /// missing one is the likelier mistake (a typo, another user's session) than a publisher not
    /// yet started.
    pub(crate) fn no_publisher(self, f: &mut fmt::Formatter<'_>, path: &Path) -> fmt::Result {
        write!(f, "no publisher on {} ({self}", path.display())?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && std::fs::symlink_metadata(parent)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            match self {
                DirSource::SocketPath => {
                    write!(f, "; its directory {} does not exist", parent.display())?;
                }
                _ => f.write_str(", which does not exist")?,
            }
        }
        match self.elsewhere() {
            Some(hint) => write!(f, "; {hint})"),
            None => f.write_str(")"),
        }
    }
}

/// A topic directory, and why it is the one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicDir {
    /// The directory.
    pub path: PathBuf,
    /// Where it came from.
    pub source: DirSource,
}

impl TopicDir {
    /// The directory topic names resolve in when no builder names one: `$SHMCAST_DIR`, else
    /// `$XDG_RUNTIME_DIR/shmcast/`, else `/tmp/shmcast-<uid>/`. Reads only the environment:
    /// the directory may not exist, and is not checked.
    ///
    /// Fails with [`TopicError::RelativeDirectory`] when `SHMCAST_DIR` is a relative path.
    ///
    /// ```
    /// let dir = shmcast::TopicDir::from_env()?;
    /// println!("topics live in {} ({})", dir.path.display(), dir.source);
    /// # Ok::<(), shmcast::TopicError>(())
    /// ```
    pub fn from_env() -> Result<TopicDir, TopicError> {
        choose(None, std::env::var_os, sys::process::getuid())
    }

    /// Checks the directory as publishers and subscribers do before they use a topic name in
    /// it: it must be a directory (not a symbolic link) of our own uid, closed to group and
    /// others ([`TopicError::InsecureDirectory`] otherwise, which names the fault). A missing
    /// directory passes: a publisher creates it.
    ///
    /// ```
    /// let dir = shmcast::TopicDir::from_env()?;
    /// dir.check()?;
    /// # Ok::<(), shmcast::TopicError>(())
    /// ```
    pub fn check(&self) -> Result<(), TopicError> {
        check_directory(&self.path)
    }
}

impl fmt::Display for TopicDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path.display(), self.source)
    }
}

/// The directory for topic names: `explicit`, else as [`TopicDir::from_env`] says, reading
/// variables through `var`.
fn choose(
    explicit: Option<&Path>,
    var: impl Fn(&'static str) -> Option<OsString>,
    uid: u32,
) -> Result<TopicDir, TopicError> {
    let dir = |path: PathBuf, source| Ok(TopicDir { path, source });
    if let Some(path) = explicit {
        return dir(path.to_owned(), DirSource::Builder);
    }
    match var("SHMCAST_DIR").map(PathBuf::from) {
        Some(path) if path.as_os_str().is_empty() => {}
        Some(path) if path.is_absolute() => return dir(path, DirSource::ShmcastDir),
        Some(path) => return Err(TopicError::RelativeDirectory(path)),
        None => {}
    }
    match var("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() => {
            dir(runtime.join("shmcast"), DirSource::XdgRuntimeDir)
        }
        _ => dir(
            PathBuf::from(format!("/tmp/shmcast-{uid}")),
            DirSource::Fallback,
        ),
    }
}

/// A topic's socket path and how it was found.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub(crate) path: PathBuf,
    pub(crate) source: DirSource,
}

/// Checks `topic` as publishers and subscribers take it, without looking anywhere: a name of
/// `A-Z a-z 0-9 . _ -` not starting with `.`, or a socket path (with a `/`) that ends with the
/// socket's name and fits a socket address. For programs that take topics from their
/// configuration and want to refuse a bad one before anything starts.
///
/// ```
/// assert!(shmcast::check_topic("prices.eu").is_ok());
/// assert!(shmcast::check_topic("bad name").is_err());
/// assert!(shmcast::check_topic("/run/app/").is_err());
/// ```
pub fn check_topic(topic: &str) -> Result<(), TopicError> {
    if topic.contains('/') {
        let path = PathBuf::from(topic);
        // `Path::file_name` passes over a trailing `/` and `.`, which a socket path may not have.
        if path.file_name().is_none() || topic.ends_with('/') || topic.ends_with("/.") {
            return Err(TopicError::NotASocket(path));
        }
        return check_len(&path);
    }
    let valid = !topic.is_empty()
        && !topic.starts_with('.')
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !valid {
        return Err(TopicError::InvalidName(topic.to_owned()));
    }
    Ok(())
}

/// The socket path for `topic`, a name resolved in `directory` (or the default directory) or a
/// path, either made absolute from the working directory. With `create`, makes the topic
/// directory if needed.
pub(crate) fn resolve(
    topic: &str,
    directory: Option<&Path>,
    create: bool,
) -> Result<Resolved, TopicError> {
    check_topic(topic)?;
    if topic.contains('/') {
        let path = absolute(PathBuf::from(topic))?;
        check_len(&path)?;
        return Ok(Resolved {
            path,
            source: DirSource::SocketPath,
        });
    }
    let mut dir = choose(directory, std::env::var_os, sys::process::getuid())?;
    dir.path = absolute(dir.path)?;
    let path = dir.path.join(topic);
    check_len(&path)?;
    if create {
        match std::fs::DirBuilder::new().mode(0o700).create(&dir.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(TopicError::Io {
                    path: dir.path,
                    source,
                });
            }
        }
    }
    check_directory(&dir.path)?;
    Ok(Resolved {
        path,
        source: dir.source,
    })
}

/// `path` from the working directory if it is relative, as it is now: a publisher that later
/// changes directory still removes its own socket, and every error and listing names the place
/// itself.
fn absolute(path: PathBuf) -> Result<PathBuf, TopicError> {
    if path.is_absolute() {
        return Ok(path);
    }
    std::path::absolute(&path).map_err(|source| TopicError::Io { path, source })
}

/// Refuses a socket path that a socket address cannot hold, before anything is created.
fn check_len(path: &Path) -> Result<(), TopicError> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(TopicError::PathTooLong {
            path: path.to_owned(),
            len,
            max: MAX_SOCKET_PATH,
        });
    }
    Ok(())
}

/// A missing directory is fine (nobody published yet); an existing one must be ours and private.
fn check_directory(dir: &Path) -> Result<(), TopicError> {
    // Without its trailing slashes: `lstat` of `link/` follows the link.
    let dir: &Path = &dir.components().collect::<PathBuf>();
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(TopicError::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let insecure = |reason: String| TopicError::InsecureDirectory {
        path: dir.to_owned(),
        reason,
    };
    if !meta.is_dir() {
        return Err(insecure(format!(
            "it is {}, not a directory",
            FileKind::of(meta.file_type())
        )));
    }
    if meta.uid() != sys::process::getuid() {
        return Err(insecure(format!("owned by uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(insecure(format!(
            "mode {:o} lets others in",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// What kind of file occupies a path, as `lstat` sees it (a symbolic link is not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (to anything, or nothing).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl FileKind {
    /// The kind of a file of type `t`.
    pub(crate) fn of(t: std::fs::FileType) -> FileKind {
        if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_dir() {
            FileKind::Directory
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Regular
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let dir = Path::new("/d");
        let named = resolve("sensors.imu-1_a", Some(dir), false).unwrap();
        assert_eq!(named.path, PathBuf::from("/d/sensors.imu-1_a"));
        assert_eq!(named.source, DirSource::Builder);
        let given = resolve("/x/y.sock", Some(dir), false).unwrap();
        assert_eq!(given.path, PathBuf::from("/x/y.sock"));
        assert_eq!(given.source, DirSource::SocketPath);
        for bad in ["", ".hidden", "a b", "a\0b", "é"] {
            assert!(
                matches!(resolve(bad, None, false), Err(TopicError::InvalidName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_socket_path_limit_counts_the_directory() {
        assert_eq!(MAX_SOCKET_PATH, 107);
        let dir = Path::new("/run/user/1000/shmcast");
        let fits = "n".repeat(MAX_SOCKET_PATH - dir.as_os_str().len() - 1);
        assert_eq!(fits.len(), 84);
        assert_eq!(
            resolve(&fits, Some(dir), false)
                .unwrap()
                .path
                .as_os_str()
                .len(),
            MAX_SOCKET_PATH
        );
        let long = format!("{fits}n");
        let Err(TopicError::PathTooLong { path, len, max }) = resolve(&long, Some(dir), false)
        else {
            panic!("a name one byte too long is refused")
        };
        assert_eq!((path, len, max), (dir.join(&long), 108, 107));
    }

    #[test]
    fn directory_precedence() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let both = env(&[("SHMCAST_DIR", "/s"), ("XDG_RUNTIME_DIR", "/x")]);
        let pick = |explicit, var: &dyn Fn(&str) -> Option<OsString>| {
            let d = choose(explicit, var, 7).unwrap();
            (d.path, d.source)
        };
        let p = PathBuf::from;
        assert_eq!(
            pick(Some(Path::new("b")), &both),
            (p("b"), DirSource::Builder)
        );
        assert_eq!(pick(None, &both), (p("/s"), DirSource::ShmcastDir));
        let xdg = env(&[("SHMCAST_DIR", ""), ("XDG_RUNTIME_DIR", "/x")]);
        assert_eq!(
            pick(None, &xdg),
            (p("/x/shmcast"), DirSource::XdgRuntimeDir)
        );
        let relative_xdg = env(&[("XDG_RUNTIME_DIR", "x")]);
        assert_eq!(
            pick(None, &relative_xdg),
            (p("/tmp/shmcast-7"), DirSource::Fallback)
        );
        let relative = env(&[("SHMCAST_DIR", "topics"), ("XDG_RUNTIME_DIR", "/x")]);
        assert!(matches!(
            choose(None, relative, 7),
            Err(TopicError::RelativeDirectory(d)) if d == Path::new("topics")
        ));
    }

    #[test]
    fn relative_directories_and_socket_paths_resolve_from_the_working_directory() {
        let cwd = std::env::current_dir().unwrap();
        let r = resolve("ticks", Some(Path::new("no-such-topics")), false).unwrap();
        assert_eq!(r.path, cwd.join("no-such-topics/ticks"));
        assert_eq!(r.source, DirSource::Builder);
        let r = resolve("no-such-dir/ticks.sock", None, false).unwrap();
        assert_eq!(r.path, cwd.join("no-such-dir/ticks.sock"));
        assert_eq!(r.source, DirSource::SocketPath);
    }

    #[test]
    fn refuses_an_open_directory_and_a_link() {
        let dir = std::env::temp_dir().join(format!("shmcast-topic-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert!(matches!(
            check_directory(&dir),
            Err(TopicError::InsecureDirectory { .. })
        ));
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        check_directory(&dir).unwrap();
        let link = dir.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let err = check_directory(&link).unwrap_err().to_string();
        assert!(
            err.contains("it is a symbolic link, not a directory"),
            "{err}"
        );
        // Trailing slashes (`lstat` of `link/` would follow the link) change nothing.
        let mut slashed = link.clone().into_os_string();
        slashed.push("//");
        let err = check_directory(Path::new(&slashed))
            .unwrap_err()
            .to_string();
        assert!(err.contains("it is a symbolic link"), "{err}");
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }
}
