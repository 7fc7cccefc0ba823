//! Topics: a name resolves to a unix socket in a private per-user directory, or a path is used
//! as given.
//!
//! The directory is `$XDG_RUNTIME_DIR/shmcast/`, or `/tmp/shmcast-<uid>/` without it, created
//! with mode 0700 and refused if another user owns it or others may enter it (someone else's
//! directory could hold a hostile socket).

use crate::error::TopicError;
use crate::sys;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The socket path for `topic`. With `create`, makes the topic directory if needed.
pub(crate) fn resolve(topic: &str, create: bool) -> Result<PathBuf, TopicError> {
    if topic.contains('/') {
        return Ok(PathBuf::from(topic));
    }
    let valid = !topic.is_empty()
        && topic.len() <= 100
        && !topic.starts_with('.')
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !valid {
        return Err(TopicError::InvalidName(topic.to_owned()));
    }
    let dir = directory();
    if create {
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(TopicError::Io(e)),
        }
    }
    check_directory(&dir)?;
    Ok(dir.join(topic))
}

/// The per-user topic directory.
pub(crate) fn directory() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() => runtime.join("shmcast"),
        _ => PathBuf::from(format!("/tmp/shmcast-{}", sys::process::getuid())),
    }
}

/// A missing directory is fine (nobody published yet); an existing one must be ours and private.
fn check_directory(dir: &Path) -> Result<(), TopicError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(TopicError::Io(e)),
    };
    let insecure = |reason: String| TopicError::InsecureDirectory {
        path: dir.to_owned(),
        reason,
    };
    if !meta.is_dir() {
        return Err(insecure("not a directory".into()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert!(
            resolve("sensors.imu-1_a", false)
                .unwrap()
                .ends_with("sensors.imu-1_a")
        );
        assert_eq!(
            resolve("/x/y.sock", false).unwrap(),
            PathBuf::from("/x/y.sock")
        );
        for bad in ["", ".hidden", "a b", "a\0b", &"x".repeat(101)] {
            assert!(
                matches!(resolve(bad, false), Err(TopicError::InvalidName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn refuses_an_open_directory() {
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
        std::fs::remove_dir(&dir).unwrap();
    }
}
