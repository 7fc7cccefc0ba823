//! `list` and `clean` over a topic directory named by `SHMCAST_DIR`: a live topic with its
//! publisher's pid, contract, subscribers and rate; a stale socket shown as stale; other files
//! not shown; `clean` removes the stale socket and nothing else. `list` refuses a directory the
//! other commands refuse, in their words, and asks stopped publishers side by side.

mod common;

use common::{Proc, code, json, run, scratch, stat_with};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
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
    let table = run(in_env(&missing, &["list"]));
    assert_eq!(code(&table), 0);
    assert_eq!(
        String::from_utf8(table.stdout).unwrap(),
        format!(
            "no topics: {} does not exist (a publisher creates it)\n",
            missing.display()
        )
    );
}

/// Publishers that do not answer (stopped) are waited for side by side: four cost about one
/// `--timeout`, not four, and the rows keep the order of the names.
#[test]
fn stopped_publishers_are_asked_side_by_side() {
    let dir = scratch("list-stopped");
    let names = ["a", "b", "c", "d"];
    let publishers: Vec<Proc> = names
        .iter()
        .map(|name| Proc::spawn(in_env(&dir, &["pub", name, "--rate", "10"])))
        .collect();
    for (name, publisher) in names.iter().zip(&publishers) {
        stat_with(&dir, name, 0);
        publisher.signal(libc::SIGSTOP);
    }
    let start = std::time::Instant::now();
    let list = json(&run(in_env(&dir, &["list", "--json", "--timeout", "2000"])));
    let took = start.elapsed();
    for publisher in &publishers {
        publisher.signal(libc::SIGCONT);
    }
    let shown: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["topic"].as_str().unwrap())
        .collect();
    assert_eq!(shown, names, "{list}");
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|e| e["state"] == "stopped"),
        "{list}"
    );
    // One after the other, the four would take 8 s.
    assert!(took < std::time::Duration::from_secs(6), "{took:?}");
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

/// `list` refuses a topic directory that every command naming a topic refuses, in the same
/// words: one others may enter, or (run as another user) one that is not theirs.
#[test]
fn list_and_clean_refuse_a_directory_the_other_commands_refuse() {
    let dir = scratch("open");
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o755)).unwrap();
    let stat = run(in_env(&dir, &["stat", "t"]));
    let said = String::from_utf8(stat.stderr.clone()).unwrap();
    let why = said.strip_prefix("shmcast: t: ").expect(&said);
    assert!(why.starts_with("refusing topic directory "), "{said}");
    let list = run(in_env(&dir, &["list"]));
    assert_eq!(
        code(&list),
        code(&stat),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert_eq!(
        String::from_utf8(list.stderr).unwrap(),
        format!("shmcast: {why}")
    );
    assert!(list.stdout.is_empty());
    // `clean` refuses it the same way, with or without --dry-run.
    for args in [&["clean"][..], &["clean", "--dry-run"]] {
        let clean = run(in_env(&dir, args));
        assert_eq!(code(&clean), code(&stat), "{args:?}");
        assert_eq!(
            String::from_utf8(clean.stderr).unwrap(),
            format!("shmcast: {why}"),
            "{args:?}"
        );
    }

    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        // Root's private directory, listed by another user.
        let dir = scratch("roots");
        let mut cmd = in_env(&dir, &["list"]);
        cmd.uid(65533).gid(65533);
        let list = run(cmd);
        assert_eq!(code(&list), 1);
        assert_eq!(
            String::from_utf8(list.stderr).unwrap(),
            format!(
                "shmcast: refusing topic directory {}: owned by uid 0\n",
                dir.display()
            )
        );
    }
}

/// `clean` in a "directory" that is a file says so, naming the path once.
#[test]
fn clean_names_a_path_that_is_not_a_directory_once() {
    let dir = scratch("not-a-dir");
    let file = dir.join("file");
    std::fs::write(&file, b"").unwrap();
    let out = run(in_env(&file, &["clean"]));
    assert_eq!(code(&out), 1);
    let e = String::from_utf8(out.stderr).unwrap();
    assert_eq!(e.matches(&*file.to_string_lossy()).count(), 1, "{e}");
    assert_eq!(
        e,
        format!(
            "shmcast: refusing topic directory {}: it is a regular file, not a directory\n",
            file.display()
        )
    );
}
