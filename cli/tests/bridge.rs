//! `shmcast bridge` as a user runs it: two topic directories play two hosts, a bridge process
//! on each, connected over Zenoh TCP on 127.0.0.1 with scouting off; `shmcast stat` and
//! `shmcast list` on the importing host show the import and the gaps its bridge counted.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Proc, WATCHDOG, code, json, run, scratch, shmcast, wait_for};
use serde_json::Value;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The JSON counter lines a bridge printed.
fn counters(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn lines_published_on_one_host_are_echoed_on_the_other() {
    let (a, b) = (scratch("bridge-a"), scratch("bridge-b"));
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let import = Proc::spawn(shmcast(
        &b,
        &[
            "bridge", "--import", "ticks", "--listen", &endpoint, "--stats", "0.2",
        ],
    ));
    let echo = Proc::spawn(shmcast(
        &b,
        &[
            "echo", "ticks", "--wait", "50", "--from", "oldest", "--count", "3",
        ],
    ));
    // The export from a file, as a site with several topics would configure it.
    let config = a.join("bridge.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"connect": ["{endpoint}"], "scouting": false,
                 "topics": [{{"topic": "ticks", "direction": "export"}}]}}"#
        ),
    )
    .unwrap();
    let export = Proc::spawn(shmcast(
        &a,
        &["bridge", "--config", config.to_str().unwrap()],
    ));
    let mut publish: Command = shmcast(&a, &["pub", "ticks", "--wait-subscribers", "1"]);
    publish.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(publish);
    publisher
        .0
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\ntwo\nthree\n")
        .unwrap();
    assert!(publisher.finish().status.success());
    let echoed = echo.finish();
    assert!(echoed.status.success(), "{echoed:?}");
    assert_eq!(String::from_utf8_lossy(&echoed.stdout), "one\ntwo\nthree\n");

    // SIGTERM ends a bridge cleanly: its last counters, exit 0, its topic removed.
    import.signal(libc::SIGTERM);
    export.signal(libc::SIGTERM);
    let (import, export) = (import.finish(), export.finish());
    assert!(import.status.success(), "{import:?}");
    assert!(export.status.success(), "{export:?}");
    let last = counters(&import).pop().expect("counters");
    assert_eq!(last["direction"], "import");
    assert_eq!(last["messages"], 3);
    assert_eq!(last["gaps"], 0);
    assert_eq!(counters(&export).pop().unwrap()["messages"], 3);
    assert!(
        !b.join("ticks").exists(),
        "the importer's topic is left behind"
    );
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(
        stderr.contains("import shmcast/ticks -> ticks: publishing"),
        "{stderr}"
    );
}

#[test]
fn configurations_that_could_loop_or_mean_nothing_are_usage_errors() {
    let dir = scratch("bridge-usage");
    let out = run(shmcast(
        &dir,
        &["bridge", "--export", "t", "--import", "t,key=other/t"],
    ));
    assert_eq!(code(&out), 2, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could loop") && err.contains("\"t\""), "{err}");
    let out = run(shmcast(&dir, &["bridge"]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to bridge"));
    let out = run(shmcast(&dir, &["bridge", "--import", "t,flavour=x"]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option"));
}

/// `stat TOPIC --json` once `done` holds for it.
fn stat_until(dir: &Path, topic: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, WATCHDOG, || {
        let out = shmcast(dir, &["stat", topic, "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        done(&v).then_some(v)
    })
}

#[test]
fn stat_on_the_importing_host_shows_the_gaps_the_bridge_counted() {
    let (a, b) = (scratch("bridge-gap-a"), scratch("bridge-gap-b"));
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let import = Proc::spawn(shmcast(
        &b,
        &["bridge", "--import", "ticks", "--listen", &endpoint],
    ));
    let export = || {
        Proc::spawn(shmcast(
            &a,
            &["bridge", "--export", "ticks", "--connect", &endpoint],
        ))
    };
    let mut exporter = export();
    let mut publish: Command = shmcast(&a, &["pub", "ticks", "--wait-subscribers", "1"]);
    publish.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(publish);
    let mut lines = publisher.0.stdin.take().unwrap();
    let messages = |v: &Value| v["messages"].as_u64().unwrap_or(0);
    lines.write_all(b"0\n").unwrap();
    stat_until(&b, "ticks", "host B's first message", |v| messages(v) == 1);
    // Five messages published while host A's bridge is down never reach host B: a gap there.
    exporter.signal(libc::SIGKILL);
    drop(exporter.finish());
    stat_until(&a, "ticks", "the exporter's departure", |v| {
        v["subscriber_count"] == 0
    });
    lines.write_all(b"1\n2\n3\n4\n5\n").unwrap();
    stat_until(&a, "ticks", "five more messages", |v| messages(v) == 6);
    exporter = export();
    stat_until(&a, "ticks", "the exporter's return", |v| {
        v["subscriber_count"] == 1
    });
    lines.write_all(b"6\n").unwrap();
    let stat = stat_until(&b, "ticks", "host B's second message", |v| messages(v) == 2);
    assert_eq!(stat["imported"], true, "{stat}");
    assert_eq!(stat["upstream_lost"], 5, "{stat}");
    let text = String::from_utf8(run(shmcast(&b, &["stat", "ticks"])).stdout).unwrap();
    assert!(text.contains("lost upstream 5"), "{text}");
    assert!(text.contains("imported"), "{text}");
    let list = json(&run(shmcast(&b, &["list", "--json", "--interval", "0"])));
    assert_eq!(list[0]["topic"], "ticks");
    assert_eq!(list[0]["imported"], true, "{list}");
    let table = String::from_utf8(run(shmcast(&b, &["list", "--interval", "0"])).stdout).unwrap();
    assert!(
        table.contains("ORIGIN") && table.contains("imported"),
        "{table}"
    );
    // Host A's own topic is local.
    assert_eq!(
        json(&run(shmcast(&a, &["stat", "ticks", "--json"])))["imported"],
        false
    );

    // The bridge's own count is the same.
    import.signal(libc::SIGTERM);
    let import = import.finish();
    assert!(import.status.success(), "{import:?}");
    let last = counters(&import).pop().expect("counters");
    assert_eq!(last["gaps"], 5, "{last}");
    assert_eq!(last["gap_events"], 1, "{last}");
    drop((lines, publisher, exporter));
}
