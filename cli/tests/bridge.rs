//! `shmcast bridge` as a user runs it: two topic directories play two hosts, a bridge process
//! on each, connected over Zenoh TCP on 127.0.0.1 with scouting off; `shmcast stat` and
//! `shmcast list` on the importing host show the import and the gaps its bridge counted.

mod common;
#[path = "bridge/start.rs"]
mod start;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

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

    // SIGTERM ends a bridge cleanly: its last counters, its topic removed, and exit code 143
    // (128 + 15), as for every command a signal ends.
    import.signal(libc::SIGTERM);
    export.signal(libc::SIGTERM);
    let (import, export) = (import.finish(), export.finish());
    assert_eq!(code(&import), 143, "{import:?}");
    assert_eq!(code(&export), 143, "{export:?}");
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

/// The words of the counters line of `stat`'s output (`messages 9120  wakes 310 ...`), without
/// the numbers.
fn counter_labels(stat: &str) -> Vec<String> {
    stat.lines()
        .find(|l| l.starts_with("messages "))
        .unwrap_or_else(|| panic!("no counters line in {stat}"))
        .split_whitespace()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// The `shmcast stat ticks` sample of docs/bridge.md.
fn documented_stat() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bridge.md"))
            .unwrap();
    let start = doc.find("$ shmcast stat ticks\n").expect("the stat sample");
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_owned()
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
    // docs/bridge.md shows this output: the same counters, in the same order.
    assert_eq!(
        counter_labels(&text),
        counter_labels(&documented_stat()),
        "docs/bridge.md's `shmcast stat` sample differs from the real output:\n{text}"
    );
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
    assert_eq!(code(&import), 143, "{import:?}");
    let last = counters(&import).pop().expect("counters");
    assert_eq!(last["gaps"], 5, "{last}");
    assert_eq!(last["gap_events"], 1, "{last}");
    drop((lines, publisher, exporter));
}

/// The standard error lines of a running process, as they arrive.
fn stderr_lines(p: &mut Proc) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let err = p.0.stderr.take().unwrap();
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            l.lock().unwrap().push(line);
        }
    });
    lines
}

/// How many of `lines` contain `text`.
fn count(lines: &Mutex<Vec<String>>, text: &str) -> usize {
    lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(text))
        .count()
}

#[test]
fn a_reader_that_goes_away_ends_the_bridge_quietly_and_a_full_disk_fails_it() {
    let dir = scratch("bridge-pipe");
    // `shmcast bridge --export z --stats 0.05 | head -n 1`
    let mut bridge = Proc::spawn(shmcast(
        &dir,
        &["bridge", "--export", "z", "--stats", "0.05"],
    ));
    let mut first = String::new();
    BufReader::new(bridge.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("\"topic\":\"z\""), "{first}");
    // The reader is gone; the next print meets EPIPE.
    let out = bridge.finish();
    assert_eq!(code(&out), 0, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");

    // Any other write error is a failure in one line, exit code 1.
    let mut full = shmcast(&dir, &["bridge", "--export", "z", "--stats", "0.05"]);
    full.stdout(std::fs::File::create("/dev/full").unwrap());
    let out = run(full);
    assert_eq!(code(&out), 1, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("shmcast: bridge: writing standard output: No space left"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_unreachable_connect_endpoint_is_reported_once_per_outage() {
    let (a, b) = (scratch("bridge-reach-a"), scratch("bridge-reach-b"));
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let mut import = Proc::spawn(shmcast(
        &b,
        &["bridge", "--import", "ticks", "--connect", &endpoint],
    ));
    let lines = stderr_lines(&mut import);
    let unreachable = format!("connect {endpoint}: cannot be reached, retrying");
    wait_for("the first report", WATCHDOG, || {
        (count(&lines, &unreachable) > 0).then_some(())
    });
    // Zenoh retries every few seconds; the report is not repeated.
    std::thread::sleep(std::time::Duration::from_secs(8));
    assert_eq!(
        count(&lines, &unreachable),
        1,
        "{:?}",
        lines.lock().unwrap()
    );
    // The endpoint comes up: said once.
    let export = Proc::spawn(shmcast(
        &a,
        &["bridge", "--export", "ticks", "--listen", &endpoint],
    ));
    wait_for("the recovery", WATCHDOG, || {
        (count(&lines, "a Zenoh peer is connected again") > 0).then_some(())
    });
    // It goes away again: a second report.
    drop(export);
    wait_for("the second report", WATCHDOG, || {
        (count(&lines, &unreachable) == 2).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(
        count(&lines, &unreachable),
        2,
        "{:?}",
        lines.lock().unwrap()
    );
    assert_eq!(count(&lines, "connected again"), 1);
    import.signal(libc::SIGTERM);
    let out = import.finish();
    assert_eq!(code(&out), 143, "{out:?}");
}

/// SIGINT, SIGTERM and SIGHUP stop a bridge as cleanly as ever (its last counters printed, its
/// imported topic removed), then end it with 128 + the signal's number, as a signal ends every
/// other command.
#[test]
fn a_signal_stops_the_bridge_cleanly_and_exits_with_128_plus_its_number() {
    let dir = scratch("bridge-signals");
    for (signal, wanted) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let mut bridge = Proc::spawn(shmcast(
            &dir,
            &["bridge", "--import", "t,bytes,max-message=64"],
        ));
        let lines = stderr_lines(&mut bridge);
        wait_for("the bridge to run", WATCHDOG, || {
            (count(&lines, "running as") == 1).then_some(())
        });
        assert!(dir.join("t").exists(), "the import's topic, bound at start");
        bridge.signal(signal);
        let out = bridge.finish();
        assert_eq!(code(&out), wanted, "{signal}: {:?}", lines.lock().unwrap());
        let last = counters(&out).pop().expect("the last counters");
        assert_eq!(last["topic"], "t", "{last}");
        assert!(
            !dir.join("t").exists(),
            "the topic is left behind after {signal}"
        );
    }
}

/// An import given its whole contract, whose local topic a publisher of the host's own serves,
/// is retried as any import is: the bridge says so once, runs on (its other topics with it),
/// and publishes the topic once it is free, about a second later, with no message to trigger
/// it.
#[test]
fn an_import_whose_topic_is_in_use_is_retried_whatever_the_form_of_its_contract() {
    let dir = scratch("bridge-in-use");
    let publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", "orders", "--rate", "10", "--size", "8"],
    ));
    stat_until(&dir, "orders", "the local publisher", |v| {
        v["imported"] == false
    });
    let mut bridge = Proc::spawn(shmcast(
        &dir,
        &[
            "bridge",
            "--export",
            "ticks",
            "--import",
            "orders,schema=app.Order@3,max-message=4096",
        ],
    ));
    let lines = stderr_lines(&mut bridge);
    let failed = "shmcast bridge: import shmcast/orders -> orders: cannot bind the local topic: \
                  topic in use";
    wait_for("the failure to bind, said", WATCHDOG, || {
        (count(&lines, failed) == 1 && count(&lines, "running as") == 1).then_some(())
    });
    assert!(
        bridge.0.try_wait().unwrap().is_none(),
        "the bridge ended: {:?}",
        lines.lock().unwrap()
    );
    publisher.signal(libc::SIGTERM);
    assert_eq!(code(&publisher.finish()), 143);
    let bound = r#"import shmcast/orders -> orders: publishing (schema "app.Order" version 3"#;
    wait_for("the import's own topic", WATCHDOG, || {
        (count(&lines, bound) == 1).then_some(())
    });
    let stat = stat_until(&dir, "orders", "the imported topic", |v| {
        v["imported"] == true
    });
    assert_eq!(stat["contract"]["max_message"], 4096, "{stat}");
    bridge.signal(libc::SIGTERM);
    let out = bridge.finish();
    assert_eq!(code(&out), 143, "{:?}", lines.lock().unwrap());
    assert_eq!(count(&lines, failed), 1, "{:?}", lines.lock().unwrap());
}
