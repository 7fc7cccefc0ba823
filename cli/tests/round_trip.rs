//! `echo` and `pub` as separate processes: lines of standard input arrive as messages exactly
//! (empty lines and multi-byte text included), binary payloads round-trip through `--hex`, and
//! `--format json` gives each message's sequence number, size and bytes; on a topic that declares
//! a Pod type, every message prints as binary.

mod common;

use common::{Proc, run, scratch, shmcast};
use std::io::Write;
use std::process::{Command, Stdio};

/// Starts `echo` with `echo_args`, then publishes `input` with `pub` (after the echo
/// subscribed), and returns what `echo` printed.
fn round_trip(name: &str, echo_args: &[&str], pub_args: &[&str], input: &[u8]) -> String {
    let dir = scratch(name);
    let mut args = vec!["echo", "t", "--wait", "20"];
    args.extend_from_slice(echo_args);
    let echo = Proc::spawn(shmcast(&dir, &args));
    let mut args = vec!["pub", "t", "--wait-subscribers", "1"];
    args.extend_from_slice(pub_args);
    let mut publish: Command = shmcast(&dir, &args);
    publish.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(publish);
    publisher.0.stdin.take().unwrap().write_all(input).unwrap();
    let published = publisher.finish();
    assert!(published.status.success(), "{published:?}");
    let echoed = echo.finish();
    assert!(echoed.status.success(), "{echoed:?}");
    String::from_utf8(echoed.stdout).unwrap()
}

#[test]
fn two_lines_are_two_messages() {
    let out = round_trip("lines", &["--count", "2"], &[], b"a\nb\n");
    assert_eq!(out, "a\nb\n");
}

#[test]
fn text_arrives_exactly() {
    let input = "héllo wörld\n\n\tindented  twice\nlast line without feed";
    // The publisher ending ends the echo: no count needed.
    let out = round_trip("text", &["--format", "text"], &[], input.as_bytes());
    assert_eq!(out, format!("{input}\n"));
}

#[test]
fn binary_round_trips_through_hex() {
    let payloads: Vec<Vec<u8>> = vec![
        (0..=255).collect(),
        vec![],
        b"\n\r\0".to_vec(),
        vec![0xff; 1000],
    ];
    let input: String = payloads
        .iter()
        .map(|p| p.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect();
    let out = round_trip("binary", &["--format", "hex"], &["--hex"], input.as_bytes());
    assert_eq!(out, input);
}

#[test]
fn json_lines_carry_sequence_size_and_bytes() {
    let out = round_trip(
        "json",
        &["--format", "json", "--count", "3"],
        &["--hex"],
        b"6869\n00ff\n\n",
    );
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["text"], "hi");
    assert_eq!(lines[0]["len"], 2);
    assert_eq!(lines[1]["hex"], "00ff");
    assert_eq!(lines[2]["text"], "");
    assert_eq!(lines[2]["len"], 0);
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [seqs[0], seqs[0] + 1, seqs[0] + 2]);
}

/// `--json`, which every read command takes, is `--format json` for `echo`.
#[test]
fn json_flag_is_the_json_format() {
    let out = round_trip("json-flag", &["--json", "--count", "1"], &[], b"hi\n");
    let line: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(
        (line["text"].as_str(), line["len"].as_u64()),
        (Some("hi"), Some(2))
    );
}

#[test]
fn history_from_the_oldest() {
    let dir = scratch("oldest");
    // A publisher that keeps running after publishing (its input stays open).
    let mut publish = shmcast(&dir, &["pub", "t"]);
    publish.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(publish);
    let mut input = publisher.0.stdin.take().unwrap();
    input.write_all(b"one\ntwo\n").unwrap();
    input.flush().unwrap();
    common::wait_for("two messages", std::time::Duration::from_secs(20), || {
        let out = shmcast(&dir, &["stat", "t", "--json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (v["messages"] == 2).then_some(())
    });
    let out = run(shmcast(
        &dir,
        &["echo", "t", "--from", "oldest", "--count", "2"],
    ));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "one\ntwo\n");
    drop(input);
    assert!(publisher.finish().status.success());
}

/// On a topic that declares a Pod type every message is binary: `auto` and `json` print each
/// one as hex, also one whose bytes happen to read as text.
#[test]
fn a_pod_topic_prints_every_message_as_binary() {
    let dir = scratch("pod");
    let mut publisher = shmcast::Publisher::builder("t")
        .directory(&dir)
        .pod_named::<[u8; 16]>("app.Pair")
        .bind()
        .unwrap();
    let mut pair = [0u8; 16];
    pair[..8].copy_from_slice(&1u64.to_le_bytes());
    pair[8..].copy_from_slice(&0.5f64.to_le_bytes());
    publisher.send_pod(&pair).unwrap();
    publisher.send_pod(b"ABCDEFGHIJKLMNOP").unwrap();
    let echo = |args: &[&str]| {
        let mut all = vec!["echo", "t", "--from", "oldest", "--count", "2"];
        all.extend_from_slice(args);
        let out = run(shmcast(&dir, &all));
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let hex = [
        "0100000000000000000000000000e03f",
        "4142434445464748494a4b4c4d4e4f50",
    ];
    assert_eq!(echo(&[]), format!("{}\n{}\n", hex[0], hex[1]));
    let lines: Vec<serde_json::Value> = echo(&["--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (line, hex) in lines.iter().zip(hex) {
        assert_eq!(line["hex"], hex, "{line}");
        assert_eq!(line["len"], 16, "{line}");
        assert!(line.get("text").is_none(), "{line}");
    }
    // `text` still prints the bytes as text when asked to.
    assert!(echo(&["--format", "text"]).ends_with("ABCDEFGHIJKLMNOP\n"));
}
