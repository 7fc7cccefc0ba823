//! `pub` reading standard input: a line longer than the largest message is refused by its
//! number without being read whole (and a `--size` larger than it before anything is bound),
//! `--count` stops early, and the summary it ends with (at the end of input or on a signal)
//! counts in words. A signal ends it with its code and the
//! summary even while it waits; one ignored when it started stays ignored; a thread it cannot
//! start is named.

mod common;

use common::{Proc, code, run, scratch, shmcast, wait_for};
use serde_json::Value;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};
use std::time::Duration;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `pub` with `args`, writing `input` to it; returns its output and how many bytes of
/// the input it took before it ended.
fn publish(name: &str, args: &[&str], input: Vec<u8>) -> (Output, usize) {
    let dir = scratch(name);
    let mut all = vec!["pub", "t"];
    all.extend_from_slice(args);
    let mut cmd = shmcast(&dir, &all);
    cmd.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(cmd);
    let mut stdin = publisher.0.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut written = 0;
        for chunk in input.chunks(64 * 1024) {
            // A publisher that stopped reading closes the pipe: EPIPE.
            if stdin.write_all(chunk).is_err() {
                break;
            }
            written += chunk.len();
        }
        written
    });
    let out = publisher.finish();
    (out, writer.join().unwrap())
}

#[test]
fn a_line_longer_than_a_message_is_refused_without_reading_it_whole() {
    let mut input = b"short\n".to_vec();
    input.resize(64 << 20, b'x');
    let (out, taken) = publish("long-line", &["--max-message", "1000"], input);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let e = stderr(&out);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(
            "shmcast: t: line 2 of standard input is longer than the largest message, 1000 bytes"
        ) && e.contains("--max-message"),
        "{e}"
    );
    // What a pipe and a read buffer hold, far from the 64 MiB a whole line would be.
    assert!(
        taken < 8 << 20,
        "{taken} bytes read of a line that was never to be sent"
    );
}

/// A synthetic message larger than the largest message is a wrong setting, refused before the
/// topic is bound or any subscriber waited for.
#[test]
fn a_size_larger_than_a_message_is_refused_before_binding() {
    let dir = scratch("big-size");
    for (args, max) in [
        (&["--size", "300000"][..], "262144 bytes"),
        (&["--size", "1001", "--max-message", "1000"], "1000 bytes"),
    ] {
        let mut all = vec![
            "pub",
            "t",
            "--wait-subscribers",
            "1",
            "--wait-timeout",
            "30",
        ];
        all.extend_from_slice(args);
        let out = run(shmcast(&dir, &all));
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert_eq!(
            e,
            format!(
                "shmcast: --size {}: larger than the largest message, {max} (--max-message \
                 sets it, up to half the --capacity)\n",
                args[1]
            )
        );
        assert!(!dir.join("t").exists(), "bound before refusing");
    }
}

#[test]
fn a_hex_line_longer_than_a_message_is_refused() {
    let (out, _) = publish(
        "long-hex",
        &["--max-message", "2", "--hex"],
        b"0102\n010203\n".to_vec(),
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2 of standard input"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn count_stops_after_that_many_lines() {
    let input: String = (1..=10).map(|i| format!("{i}\n")).collect();
    let (out, _) = publish("count", &["--count", "3"], input.into_bytes());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "shmcast: t: published 3 messages\n");
}

#[test]
fn one_message_is_singular() {
    let (out, _) = publish("one", &[], b"a\n".to_vec());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "shmcast: t: published 1 message\n");
}

#[test]
fn a_wait_for_subscribers_that_times_out_says_so_in_round_numbers() {
    let (out, _) = publish(
        "wait",
        &["--wait-subscribers", "1", "--wait-timeout", "0.3"],
        Vec::new(),
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let e = stderr(&out);
    let rest = e
        .strip_prefix("shmcast: t: timed out after ")
        .unwrap_or_else(|| panic!("{e}"));
    let (ms, rest) = rest.split_once(" ms ").unwrap_or_else(|| panic!("{e}"));
    assert!(ms.parse::<u32>().is_ok(), "{e}");
    assert_eq!(rest, "waiting for 1 subscriber (0 connected)\n");
}

/// Ctrl-C and SIGTERM end `pub` with the same summary as the end of its input.
#[test]
fn a_signal_ends_with_the_summary() {
    for (signal, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = scratch(&format!("summary-{signal}"));
        let mut cmd = shmcast(&dir, &["pub", "t"]);
        cmd.stdin(Stdio::piped());
        let mut publisher = Proc::spawn(cmd);
        let mut stdin = publisher.0.stdin.take().unwrap();
        stdin.write_all(b"one\ntwo\n").unwrap();
        stdin.flush().unwrap();
        wait_for("two messages", Duration::from_secs(20), || {
            let out = shmcast(&dir, &["stat", "t", "--json"]).output().unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).ok()?;
            (v["messages"] == 2).then_some(())
        });
        publisher.signal(signal);
        let out = publisher.finish();
        assert_eq!(code(&out), status, "{}", stderr(&out));
        assert_eq!(stderr(&out), "shmcast: t: published 2 messages\n");
        drop(stdin);
    }
}

#[test]
fn stdin_and_synthetic_messages_do_not_mix() {
    let dir = scratch("hex-rate");
    for args in [
        &["pub", "t", "--hex", "--rate", "10"][..],
        &["pub", "t", "--hex", "--size", "8"],
    ] {
        assert_eq!(code(&run(shmcast(&dir, args))), 2, "{args:?}");
    }
}

/// `shmcast pub TOPIC ARGS...` started with `signal` ignored, as `nohup` (SIGHUP) and a script's
/// `&` jobs (SIGINT) start it.
fn ignoring(dir: &std::path::Path, signal: i32, args: &[&str]) -> Proc {
    let mut all = vec!["pub", "t"];
    all.extend_from_slice(args);
    let mut cmd = shmcast(dir, &all);
    // SAFETY: signal(2) is async-signal-safe, and the closure touches nothing else of the
    // parent's state between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::signal(signal, libc::SIG_IGN) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Proc::spawn(cmd)
}

/// The messages published on `dir`'s topic `t`, once `publisher` is past `at_least`; fails at
/// once if the publisher exited meanwhile.
fn published_past(dir: &std::path::Path, publisher: &mut Proc, at_least: u64) -> u64 {
    wait_for("more messages", Duration::from_secs(20), || {
        if let Some(status) = publisher.0.try_wait().unwrap() {
            panic!("the publisher exited ({status}) while it should publish on");
        }
        let out = shmcast(dir, &["stat", "t", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        let n = v["messages"].as_u64()?;
        (n > at_least).then_some(n)
    })
}

/// A signal ignored when `pub` started stays ignored: it publishes on, and SIGTERM still ends
/// it with the summary.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    for signal in [libc::SIGHUP, libc::SIGINT] {
        let dir = scratch(&format!("ignored-{signal}"));
        let mut publisher = ignoring(&dir, signal, &["--rate", "50"]);
        let before = published_past(&dir, &mut publisher, 0);
        publisher.signal(signal);
        // Long after the signal was delivered: it would have ended the publisher at once.
        published_past(&dir, &mut publisher, before + 10);
        publisher.signal(libc::SIGTERM);
        let out = publisher.finish();
        assert_eq!(code(&out), 143, "{signal}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.starts_with("shmcast: t: published ") && e.lines().count() == 1,
            "{signal}: {e}"
        );
        assert!(!dir.join("t").exists(), "socket left behind");
    }
}

/// A signal that comes while `pub` waits (for space a stopped gating subscriber holds, or for
/// subscribers) ends it with the signal's code and the summary, never with the error of the
/// wait the closed stream cut short.
#[test]
fn a_signal_during_a_wait_ends_with_the_summary() {
    // Rounds enough to lose, at least once, a race the signal thread must always win.
    for round in 0..30 {
        let dir = scratch(&format!("full-{round}"));
        let publisher = Proc::spawn(shmcast(
            &dir,
            &[
                "pub",
                "t",
                "--size",
                "64",
                "--capacity",
                "4096",
                "--stall-bound",
                "none",
            ],
        ));
        let mut echo = shmcast(&dir, &["echo", "t", "--wait", "20"]);
        echo.stdout(Stdio::null());
        let stopped = Proc::spawn(echo);
        common::stat_with(&dir, "t", 1);
        stopped.signal(libc::SIGSTOP);
        // The ring is full: the publisher waits for the stopped subscriber.
        wait_for("a full ring", Duration::from_secs(20), || {
            let out = shmcast(&dir, &["stat", "t", "--json"]).output().unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).ok()?;
            let row = &v["subscribers"][0];
            (row["state"] == "stopped" && row["lag_bytes"].as_u64()? + 128 > 4096).then_some(())
        });
        publisher.signal(libc::SIGTERM);
        let out = publisher.finish();
        assert_eq!(code(&out), 143, "round {round}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.starts_with("shmcast: t: published ") && e.lines().count() == 1,
            "round {round}: {e}"
        );
        stopped.signal(libc::SIGCONT);
    }
    let dir = scratch("wait-subscribers");
    let publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", "t", "--rate", "10", "--wait-subscribers", "1"],
    ));
    common::stat_with(&dir, "t", 0);
    publisher.signal(libc::SIGINT);
    let out = publisher.finish();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    assert_eq!(stderr(&out), "shmcast: t: published 0 messages\n");
}

/// A thread `pub` cannot start is named: with room for one thread besides the main one (the
/// library's server thread), the signal thread is the one that fails. Needs root, to run the
/// command as a user of its own whose processes can be counted.
#[test]
fn a_thread_that_cannot_start_is_named() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run the command as a user of its own");
        return;
    }
    // A uid no other process runs as, so that the limit counts only the command's threads.
    const UID: u32 = 65533;
    let dir = scratch("nproc");
    std::os::unix::fs::chown(&dir, Some(UID), Some(UID)).unwrap();
    let mut cmd = shmcast(&dir, &["pub", "t", "--rate", "10"]);
    cmd.uid(UID).gid(UID);
    // SAFETY: setrlimit(2) is async-signal-safe and reads only the struct on this stack.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2,
                rlim_max: 2,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run(cmd);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.starts_with("shmcast: t: starting the signal thread (shmcast-signals): ")
            && e.lines().count() == 1,
        "{e}"
    );
    assert!(!dir.join("t").exists(), "socket left behind");
}
