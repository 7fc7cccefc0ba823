//! Each documented exit code, from the condition that causes it, with a one-line error naming
//! the topic: 0, 1 (a topic already published), 2 (a wrong command line or setting), 3 (no
//! publisher), 4 (a stale socket), 5 (a peer that breaks the protocol), 6 (a contract
//! mismatch).

mod common;

use common::{Proc, code, run, scratch, shmcast, stat_with};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// One line, naming the topic.
fn one_line_about(out: &Output, topic: &str) {
    let e = stderr(out);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with(&format!("shmcast: {topic}: ")), "{e}");
}

/// Every command that reads a topic says the same where it found nothing: where it looked, in
/// the command's own terms, and what removes a stale socket.
#[test]
fn missing_and_stale_topics() {
    let dir = scratch("missing");
    let path = dir.join("t");
    for args in [
        &["stat", "t"][..],
        &["inspect", "t"],
        &["echo", "t"],
        &["hz", "t"],
    ] {
        let out = run(shmcast(&dir, args));
        assert_eq!(code(&out), 3, "{args:?}: {}", stderr(&out));
        one_line_about(&out, "t");
        assert_eq!(
            stderr(&out).trim_end(),
            format!(
                "shmcast: t: no publisher on {} (the topic directory given by --dir)",
                path.display()
            ),
            "{args:?}"
        );
    }
    // Without --dir: where the environment pointed, and how to look elsewhere.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_shmcast"));
    let out = cmd
        .args(["echo", "t"])
        .env("SHMCAST_DIR", &dir)
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "(the topic directory from SHMCAST_DIR; --dir or another SHMCAST_DIR looks elsewhere)"
        ),
        "{}",
        stderr(&out)
    );
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    for args in [&["stat", "t"][..], &["echo", "t"], &["hz", "t"]] {
        let out = run(shmcast(&dir, args));
        assert_eq!(code(&out), 4, "{args:?}: {}", stderr(&out));
        one_line_about(&out, "t");
        assert!(
            stderr(&out)
                .contains("is a stale socket: its publisher is gone (`shmcast clean` removes it)"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn usage_errors() {
    let dir = scratch("usage");
    for args in [
        &["bogus"][..],
        &["echo"],
        &["echo", "t", "--format", "xml"],
        &["pub", "t", "--rate", "fast"],
        &["pub", "t", "--stall-bound", "0"],
        &["pub", "t", "--stall-bound", "never"],
    ] {
        assert_eq!(code(&run(shmcast(&dir, args))), 2, "{args:?}");
    }
    let out = run(shmcast(&dir, &["pub", "t", "--rate", "0"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let help = run(shmcast(&dir, &["--help"]));
    assert_eq!(code(&help), 0);
    let help = String::from_utf8(help.stdout).unwrap();
    for n in 0..=6 {
        assert!(
            help.contains(&format!("\n  {n}  ")),
            "exit code {n} in --help"
        );
    }
}

/// A wrong setting of the ring or the topic is a wrong command line too (exit code 2), said in
/// the command's terms: its flags, not the library's option names.
#[test]
fn wrong_settings_are_usage_errors_named_by_their_flags() {
    let dir = scratch("settings");
    let long = "x".repeat(120);
    for (args, says) in [
        (&["pub", "t", "--capacity", "1000"][..], "--capacity 1000: "),
        (&["pub", "t", "--capacity", "32"], "power of two from 64 B"),
        (
            &["pub", "t", "--max-message", "0"],
            "--max-message: must be at least 1",
        ),
        (
            &["pub", "t", "--max-message", "600000"],
            "--max-message 600000: ",
        ),
        (&["echo", "bad name"], "invalid topic name"),
        (&["hz", "bad name"], "invalid topic name"),
        (&["stat", "bad name"], "invalid topic name"),
        (&["pub", "bad name"], "invalid topic name"),
        (&["pub", &long], "(--dir or SHMCAST_DIR)"),
        (&["echo", &long], "(--dir or SHMCAST_DIR)"),
        (&["pub", "t", "--hex", "--rate", "10"], "--hex"),
        // A rate whose period no clock holds, even for one message.
        (
            &["pub", "t", "--rate", "1e-300", "--count", "1"],
            "--rate 1e-300: too slow: the slowest rate is 1e-9 a second",
        ),
        (&["pub", "t", "--rate", "1e-10"], "--rate 1e-10: too slow"),
    ] {
        let out = run(shmcast(&dir, args));
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("max_message"), "{}", stderr(&out));
        assert!(!stderr(&out).contains("`directory`"), "{}", stderr(&out));
    }
    // The smallest and largest ring the message names are accepted.
    let out = run(shmcast(&dir, &["pub", "t", "--capacity", "64"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A relative SHMCAST_DIR, for a command that names a topic and one that lists them all.
    for args in [&["echo", "t"][..], &["pub", "t"], &["list"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_shmcast"))
            .args(args)
            .env("SHMCAST_DIR", "relative/dir")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not an absolute path"),
            "{}",
            stderr(&out)
        );
    }
    let help = String::from_utf8(run(shmcast(&dir, &["pub", "--help"])).stdout).unwrap();
    assert!(help.contains("power of two"), "{help}");
}

#[test]
fn help_names_the_inspect_alias_once() {
    let dir = scratch("alias");
    let help = String::from_utf8(run(shmcast(&dir, &["--help"])).stdout).unwrap();
    assert_eq!(help.matches("inspect").count(), 1, "{help}");
}

#[test]
fn a_topic_in_use_is_another_error() {
    let dir = scratch("in-use");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "10"]));
    stat_with(&dir, "t", 0);
    let out = run(shmcast(&dir, &["pub", "t", "--rate", "10"]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    one_line_about(&out, "t");
}

#[test]
fn a_contract_mismatch() {
    let dir = scratch("contract");
    let _publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", "t", "--rate", "10", "--schema", "app.A@1"],
    ));
    stat_with(&dir, "t", 0);
    let out = run(shmcast(&dir, &["echo", "t", "--expect-schema", "app.B@1"]));
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    one_line_about(&out, "t");
    assert!(stderr(&out).contains("app.A") && stderr(&out).contains("app.B"));
    let out = run(shmcast(
        &dir,
        &["echo", "t", "--expect-schema", "app.A@1", "--count", "1"],
    ));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `echo` and `hz` end with 0 when the publisher ends the stream, and with 1 and a line saying
/// so when its process is killed, so that a script can tell a crash from an end.
#[test]
fn a_publisher_killed_mid_stream_is_a_failure_an_ended_one_is_not() {
    let dir = scratch("killed");
    for command in ["echo", "hz"] {
        let publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "50"]));
        stat_with(&dir, "t", 0);
        let reader = Proc::spawn(shmcast(&dir, &[command, "t"]));
        stat_with(&dir, "t", 1);
        publisher.signal(libc::SIGKILL);
        let out = reader.finish();
        assert_eq!(code(&out), 1, "{command}: {}", stderr(&out));
        one_line_about(&out, "t");
        assert!(
            stderr(&out).contains("went away without ending the stream"),
            "{command}: {}",
            stderr(&out)
        );
        drop(publisher);
        // The killed publisher's socket is stale: `clean` removes it for the next round.
        assert_eq!(code(&run(shmcast(&dir, &["clean"]))), 0);
    }
    let publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "50"]));
    stat_with(&dir, "t", 0);
    let reader = Proc::spawn(shmcast(&dir, &["echo", "t"]));
    stat_with(&dir, "t", 1);
    publisher.signal(libc::SIGTERM);
    let out = reader.finish();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// A listening SOCK_SEQPACKET socket at `path` that is not a shmcast publisher.
fn impostor(path: &Path) -> OwnedFd {
    // SAFETY: socket(2) with constant arguments; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes, alive for the call.
    let rc = unsafe { libc::bind(fd, (&raw const addr).cast(), len) };
    assert_eq!(rc, 0);
    // SAFETY: listen(2) on a socket we own.
    assert_eq!(unsafe { libc::listen(fd, 8) }, 0);
    sock
}

#[test]
fn a_peer_that_breaks_the_protocol() {
    let dir = scratch("impostor");
    let listener = impostor(&dir.join("t"));
    let server = serve(listener, vec![vec![0x5a; 40]; 2]);
    for args in [&["stat", "t"][..], &["echo", "t"]] {
        let out = run(shmcast(&dir, args));
        assert_eq!(code(&out), 5, "{args:?}: {}", stderr(&out));
        one_line_about(&out, "t");
    }
    server.join().unwrap();
}

#[test]
fn a_publisher_that_predates_introspection() {
    let dir = scratch("old");
    let listener = impostor(&dir.join("t"));
    // What a publisher of protocol version 3 without INSPECT answers: a REFUSE (kind 3) with
    // code 3 (bad request).
    let text = b"unexpected packet kind 4";
    let mut refuse = b"SHMC".to_vec();
    refuse.extend_from_slice(&3u16.to_le_bytes());
    refuse.extend_from_slice(&3u16.to_le_bytes());
    refuse.extend_from_slice(&3u16.to_le_bytes());
    refuse.extend_from_slice(&(text.len() as u16).to_le_bytes());
    refuse.extend_from_slice(text);
    let server = serve(listener, vec![refuse]);
    let out = run(shmcast(&dir, &["stat", "t"]));
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    one_line_about(&out, "t");
    assert!(
        stderr(&out).contains("predates introspection"),
        "{}",
        stderr(&out)
    );
    server.join().unwrap();
}

/// Accepts one connection per reply on `listener`, sends it the reply and closes it.
fn serve(listener: OwnedFd, replies: Vec<Vec<u8>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        for reply in replies {
            // SAFETY: accept(2) on our listening socket; the result is checked.
            let conn = unsafe {
                libc::accept(
                    listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            assert!(conn >= 0);
            // SAFETY: `conn` is a fresh descriptor that nothing else owns.
            let conn = unsafe { OwnedFd::from_raw_fd(conn) };
            // SAFETY: send(2) of a live buffer on a socket we own.
            unsafe {
                libc::send(
                    conn.as_raw_fd(),
                    reply.as_ptr().cast(),
                    reply.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    })
}

#[test]
fn success() {
    let dir = scratch("ok");
    assert_eq!(code(&run(shmcast(&dir, &["list"]))), 0);
    assert_eq!(code(&run(shmcast(&dir, &["clean"]))), 0);
}

#[test]
fn an_interrupted_publisher_leaves_no_stale_socket() {
    let dir = scratch("signals");
    for (signal, wanted) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "50"]));
        let mut echo = shmcast(&dir, &["echo", "t", "--wait", "20", "--format", "hex"]);
        echo.stdout(std::process::Stdio::null());
        let subscriber = Proc::spawn(echo);
        stat_with(&dir, "t", 1);
        publisher.signal(signal);
        assert_eq!(code(&publisher.finish()), wanted);
        assert!(!dir.join("t").exists(), "socket left behind after {signal}");
        // The subscriber sees the end of the stream.
        assert_eq!(code(&subscriber.finish()), 0);
        assert_eq!(code(&run(shmcast(&dir, &["stat", "t"]))), 3);
    }
}
