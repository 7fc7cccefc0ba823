//! Where output goes, and what happens when it cannot: every command that prints, with its
//! standard output a pipe whose reader is gone (a quiet, successful end, as `| head` expects)
//! and a full device (exit code 1, with the cause on one line), never a panic.

mod common;

use common::{Proc, code, run, scratch, shmcast, stat_with};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Output, Stdio};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A pipe whose reading end is already closed: every write to it fails with `EPIPE`.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) writes two descriptors into the live array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are fresh and owned by nothing else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    writer.into()
}

/// `/dev/full`: every write to it fails with `ENOSPC`.
fn full_device() -> Stdio {
    File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
        .into()
}

/// The commands that print something at once about a live topic `t`.
const PRINTING: [&[&str]; 9] = [
    &["list"],
    &["list", "--json"],
    &["stat", "t"],
    &["stat", "t", "--json"],
    &["stat", "t", "--watch", "--interval", "100"],
    &["echo", "t"],
    &["echo", "t", "--json"],
    &["hz", "t", "--interval", "100"],
    &["hz", "t", "--interval", "100", "--json"],
];

fn with_stdout(dir: &Path, args: &[&str], stdout: Stdio) -> Output {
    let mut cmd = shmcast(dir, args);
    cmd.stdout(stdout);
    run(cmd)
}

#[test]
fn a_reader_that_went_away_ends_a_command_quietly() {
    let dir = scratch("epipe");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "100", "--size", "8"]));
    stat_with(&dir, "t", 0);
    for args in PRINTING {
        let out = with_stdout(&dir, args, closed_pipe());
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    // Help, too.
    let out = with_stdout(&dir, &["--help"], closed_pipe());
    assert_eq!((code(&out), stderr(&out)), (0, String::new()));
}

#[test]
fn a_full_device_is_an_error() {
    let dir = scratch("enospc");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "100", "--size", "8"]));
    stat_with(&dir, "t", 0);
    for args in PRINTING {
        let out = with_stdout(&dir, args, full_device());
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.starts_with("shmcast: ") && e.contains("No space left on device"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    let out = with_stdout(&dir, &["clean"], full_device());
    // Nothing to print: nothing lost.
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
