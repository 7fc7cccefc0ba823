//! `pub` reading standard input: a line longer than the largest message is refused by its
//! number without being read whole, `--count` stops early, and the summary it ends with (at
//! the end of input or on a signal) counts in words.

mod common;

use common::{Proc, code, run, scratch, shmcast, wait_for};
use serde_json::Value;
use std::io::Write;
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
