//! Where topics live, from C: `tests/c/topics.c` run as a separate process under a watchdog,
//! natively and under valgrind memcheck (skipped with a message when valgrind is missing). The
//! program sets `SHMCAST_DIR` and `XDG_RUNTIME_DIR` in its own environment only.

mod support;

use support::{Link, Runner, compile};

/// A publisher refuses to replace a regular file, a FIFO, a symbolic link or a directory
/// (`SHMCAST_EEXIST`); socket paths over the limit and missing directories are `SHMCAST_ETOPIC`
/// naming the path; the `directory` option and `SHMCAST_DIR` choose where both sides look, and
/// `SHMCAST_ENOPUBLISHER` says where and why.
fn topic_paths(r: Runner) {
    let dir = std::env::temp_dir().join(r.topic("topics"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let got = r
        .spawn(&compile("topics", Link::Shared), &[dir.to_str().unwrap()])
        .wait();
    got.assert_success();
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn native() {
    topic_paths(Runner { valgrind: false });
}

#[test]
fn valgrind() {
    if !support::valgrind_available() {
        eprintln!(
            "SKIPPED: valgrind is not installed; the C tests ran natively only \
             (install valgrind to check them with memcheck)"
        );
        return;
    }
    topic_paths(Runner { valgrind: true });
}
