//! What occupies a topic's path when no shmcast publisher can be reached there, said in the same
//! words by `pub`, `echo`, `hz`, `stat` and `list`: a symbolic link and what it leads to (which
//! connecting follows and binding does not), a file that is no socket, or a socket of another
//! type (a stream or datagram socket, which the library reports with the system's
//! `EPROTOTYPE` as the source of its error).

use std::fs::FileType;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Whether `e`, from connecting to or binding a topic's socket, says the socket there is of
/// another type.
pub fn other_socket_type(e: &io::Error) -> bool {
    let cause = e
        .get_ref()
        .and_then(|inner| inner.source())
        .and_then(|source| source.downcast_ref::<io::Error>());
    [Some(e), cause]
        .into_iter()
        .flatten()
        .any(|e| e.raw_os_error() == Some(libc::EPROTOTYPE))
}

/// `PATH is a socket of another type ..., not a shmcast topic socket`.
pub fn socket_of_another_type(path: &Path) -> String {
    format!(
        "{} is a socket of another type (stream or datagram), not a shmcast topic socket",
        path.display()
    )
}

/// What is at `path`, not following a symbolic link but saying where it leads: `a regular
/// file`, `a symbolic link to a directory`, `a symbolic link to nothing`.
pub fn describe(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "nothing".into();
    };
    if !meta.file_type().is_symlink() {
        return kind(meta.file_type()).into();
    }
    match std::fs::metadata(path) {
        Ok(target) => format!("a symbolic link to {}", kind(target.file_type())),
        Err(_) => "a symbolic link to nothing".into(),
    }
}

/// `PATH is WHAT, not a topic socket`, as [`describe`] says what.
pub fn not_a_socket(path: &Path) -> String {
    format!(
        "{} is {}, not a topic socket",
        path.display(),
        describe(path)
    )
}

/// A file type in words.
fn kind(t: FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a regular file"
    }
}
