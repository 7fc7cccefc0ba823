//! Each documented exit code, from the condition that causes it, with a one-line error naming
//! the topic: 0, 1 (a topic already published, something else at the topic's path), 2 (a wrong
//! command line or setting: flag values said as typed, a relative `--dir`, a missing one for
//! `list` and `clean`), 3 (no publisher, a missing directory said so), 4 (a stale socket), 5 (a
//! peer that breaks the protocol), 6 (a contract mismatch).

mod common;

use common::{Proc, code, impostor, refusal, run, scratch, serve, shmcast, stat_with};
use std::process::Output;
use std::process::{Command, Stdio};

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

/// A flag's value is refused as the user typed it, saying what is accepted: not a number's 301
/// digits, nor `NaN` for `nan`.
#[test]
fn flag_values_are_refused_as_typed() {
    let dir = scratch("values");
    let too_large = "too large (at most 1e9 seconds: 31.7 years)";
    for (args, says) in [
        (
            &["pub", "t", "--stall-bound", "1e300"][..],
            format!("'1e300' for '--stall-bound <SECS|none>': {too_large}; none means no bound"),
        ),
        (
            &[
                "pub",
                "t",
                "--wait-subscribers",
                "1",
                "--wait-timeout",
                "1e300",
            ],
            format!("'1e300' for '--wait-timeout <SECS>': {too_large}"),
        ),
        (
            &["echo", "t", "--wait", "1e300"],
            format!("'1e300' for '--wait <SECS>': {too_large}"),
        ),
        (
            &["hz", "t", "--duration", "1e300"],
            format!("'1e300' for '--duration <SECS>': {too_large}"),
        ),
        (
            &["pub", "t", "--stall-bound", "inf"],
            "'inf' for '--stall-bound <SECS|none>': for no bound, write none".to_owned(),
        ),
        (
            &["echo", "t", "--wait", "nan"],
            "'nan' for '--wait <SECS>': not a number of seconds".to_owned(),
        ),
        (
            &["echo", "t", "--expect-schema", "app.X@99999999999"],
            "'app.X@99999999999' for '--expect-schema <NAME@VERSION>': version 99999999999 is \
             too large (at most 4294967295)"
                .to_owned(),
        ),
        (
            &["pub", "t", "--schema", "app.X@99999999999"],
            "for '--schema <NAME@VERSION>': version 99999999999 is too large".to_owned(),
        ),
    ] {
        let out = run(shmcast(&dir, args));
        let e = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {e}");
        assert!(e.contains(&says), "{args:?}: {e}");
        assert!(!e.contains("0000000000") && !e.contains("NaN"), "{e}");
    }
    // An empty topic name is said by the error alone, with no empty name before it.
    for command in ["pub", "echo", "hz", "stat"] {
        let out = run(shmcast(&dir, &[command, ""]));
        assert_eq!(code(&out), 2, "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("shmcast: invalid topic name \"\": use A-Z"),
            "{command}: {}",
            stderr(&out)
        );
    }
}

/// `--dir` follows the rule `SHMCAST_DIR` does, for every command: a relative path is a wrong
/// setting, refused before anything is created there.
#[test]
fn a_relative_dir_is_refused_by_every_command() {
    let dir = scratch("relative-dir");
    for args in [
        &["list"][..],
        &["clean"],
        &["stat", "t"],
        &["echo", "t"],
        &["hz", "t"],
        &["pub", "t", "--count", "0"],
        &["bridge", "--export", "t"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_shmcast"))
            .current_dir(&dir)
            .args(["--dir", "rel"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "shmcast: --dir rel is not an absolute path: processes in other working \
             directories would look for topics elsewhere\n",
            "{args:?}"
        );
        assert!(!dir.join("rel").exists(), "{args:?} created it");
    }
}

/// A topic directory that does not exist is said so: where a publisher is looked for (no
/// publisher, exit code 3: `--wait` may see one create it), and by `list` and `clean` when
/// `--dir` names it (a wrong setting, exit code 2).
#[test]
fn a_directory_that_does_not_exist_is_said_so() {
    let dir = scratch("nowhere");
    let missing = dir.join("missing");
    for args in [&["echo", "t"][..], &["hz", "t"], &["stat", "t"]] {
        let out = run(shmcast(&missing, args));
        assert_eq!(code(&out), 3, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "shmcast: t: no publisher on {} (the topic directory given by --dir, which does \
                 not exist)\n",
                missing.join("t").display()
            ),
            "{args:?}"
        );
    }
    for args in [&["list"][..], &["list", "--json"], &["clean"]] {
        let out = run(shmcast(&missing, args));
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!("shmcast: --dir {}: no such directory\n", missing.display())
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Something other than a publisher's socket at a topic's path is said in the same words by
/// every command, never as a bare system error: a socket of another type, a symbolic link and
/// what it leads to (which connecting would follow), a regular file.
#[test]
fn what_occupies_a_topic_path_is_said_the_same_by_every_command() {
    let dir = scratch("occupants");
    let _stream = std::os::unix::net::UnixListener::bind(dir.join("stream")).unwrap();
    std::fs::write(dir.join("file"), b"").unwrap();
    std::os::unix::fs::symlink(dir.join("file"), dir.join("link")).unwrap();
    for (topic, is) in [
        (
            "stream",
            "a socket of another type (stream or datagram), not a shmcast topic socket",
        ),
        (
            "link",
            "a symbolic link to a regular file, not a topic socket",
        ),
        ("file", "a regular file, not a topic socket"),
    ] {
        let says = format!("{} is {is}", dir.join(topic).display());
        for args in [
            &["pub", topic, "--count", "0"][..],
            &["echo", topic],
            &["hz", topic],
            &["stat", topic],
        ] {
            let out = run(shmcast(&dir, args));
            assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
            one_line_about(&out, topic);
            assert!(stderr(&out).contains(&says), "{args:?}: {}", stderr(&out));
            assert!(!stderr(&out).contains("os error"), "{}", stderr(&out));
        }
    }
    let list = common::json(&run(shmcast(&dir, &["list", "--json", "--interval", "0"])));
    assert_eq!(list[0]["topic"], "stream", "{list}");
    assert_eq!(
        list[0]["error"],
        format!(
            "{} is a socket of another type (stream or datagram), not a shmcast topic socket",
            dir.join("stream").display()
        ),
    );
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
    let server = serve(listener, vec![refusal(3, b"unexpected packet kind 4")]);
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
