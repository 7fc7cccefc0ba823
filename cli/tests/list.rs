//! `list` and `clean` over a topic directory named by `SHMCAST_DIR`: a live topic with its
//! publisher's pid, contract, subscribers and rate; a stale socket shown as stale; other files
//! not shown; `clean` removes the stale socket and nothing else.

mod common;

use common::{Proc, json, run, scratch, stat_with};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// `shmcast ARGS...` with the topic directory given by the environment.
fn in_env(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmcast"));
    cmd.env("SHMCAST_DIR", dir).args(args);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn entry<'a>(list: &'a Value, topic: &str) -> Option<&'a Value> {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["topic"] == topic)
}

#[test]
fn list_shows_live_and_stale_topics_and_clean_removes_only_the_stale() {
    let dir = scratch("list");
    let publisher = Proc::spawn(in_env(
        &dir,
        &[
            "pub",
            "live",
            "--rate",
            "100",
            "--size",
            "32",
            "--schema",
            "app.Tick@2",
        ],
    ));
    let mut echo = in_env(&dir, &["echo", "live", "--wait", "20"]);
    echo.stdout(Stdio::null());
    let _subscriber = Proc::spawn(echo);
    stat_with(&dir, "live", 1);
    // What a publisher killed by a signal leaves: a socket nobody listens on.
    drop(std::os::unix::net::UnixListener::bind(dir.join("dead")).unwrap());
    std::fs::write(dir.join("notes.txt"), b"not a topic").unwrap();

    let list = json(&run(in_env(&dir, &["list", "--json", "--interval", "500"])));
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let live = entry(&list, "live").unwrap();
    assert_eq!(live["state"], "live");
    assert_eq!(live["publisher"]["pid"], publisher.pid());
    assert_eq!(live["contract"]["message"], "schema");
    assert_eq!(live["contract"]["name"], "app.Tick");
    assert_eq!(live["contract"]["version"], 2);
    assert_eq!(live["subscriber_count"], 1);
    assert!(live["messages"].as_u64().unwrap() > 0);
    let rate = live["rate"].as_f64().unwrap();
    // Of the publisher's order (hz.rs holds the 10 % bound; a loaded machine makes a paced
    // publisher catch up in bursts, which a 0.5 s sample sees).
    assert!((20.0..500.0).contains(&rate), "rate {rate}");
    let dead = entry(&list, "dead").unwrap();
    assert_eq!(dead["state"], "stale");
    assert!(entry(&list, "notes.txt").is_none());

    let table = String::from_utf8(run(in_env(&dir, &["list"])).stdout).unwrap();
    assert!(table.contains("live") && table.contains("stale"), "{table}");

    let cleaned = json(&run(in_env(&dir, &["clean", "--json"])));
    let removed = cleaned["removed"].as_array().unwrap();
    assert_eq!(removed.len(), 1, "{cleaned}");
    assert!(removed[0].as_str().unwrap().ends_with("/dead"));
    assert!(!dir.join("dead").exists());
    assert!(dir.join("live").exists() && dir.join("notes.txt").exists());
    let list = json(&run(in_env(&dir, &["list", "--json"])));
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(entry(&list, "live").unwrap()["state"], "live");
}

#[test]
fn an_empty_or_missing_directory_lists_nothing() {
    let dir = scratch("empty");
    assert_eq!(
        json(&run(in_env(&dir, &["list", "--json"]))),
        Value::Array(vec![])
    );
    let missing = dir.join("never-made");
    assert_eq!(
        json(&run(in_env(&missing, &["list", "--json"]))),
        Value::Array(vec![])
    );
    assert_eq!(
        json(&run(in_env(&missing, &["clean", "--json"]))),
        serde_json::json!({"removed": []})
    );
}

/// A rate needs two snapshots: `--interval 0` takes one and shows no rate, not a rate of 0.
#[test]
fn no_interval_means_no_rate() {
    let dir = scratch("no-rate");
    let _publisher = Proc::spawn(in_env(&dir, &["pub", "t", "--rate", "100", "--size", "8"]));
    stat_with(&dir, "t", 0);
    let list = json(&run(in_env(&dir, &["list", "--json", "--interval", "0"])));
    let t = entry(&list, "t").unwrap();
    assert_eq!(t["state"], "live", "{list}");
    assert!(t["rate"].is_null(), "{list}");
    let table = String::from_utf8(run(in_env(&dir, &["list", "--interval", "0"])).stdout).unwrap();
    let row = table.lines().find(|l| l.starts_with("t ")).expect(&table);
    assert!(row.ends_with(" -"), "{table}");
    assert!(!row.contains("0.0/s"), "{table}");
}
