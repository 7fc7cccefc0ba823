//! `shmcast bridge` as a user runs it: two topic directories play two hosts, a bridge process
//! on each, connected over Zenoh TCP on 127.0.0.1 with scouting off; `shmcast stat` and
//! `shmcast list` on the importing host show the import and the gaps its bridge counted.

mod common;

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

/// A topic directory no topic may use (open to others) stops a bridge at start, in the words
/// of every other command, before any Zenoh session opens.
#[test]
fn a_topic_directory_no_topic_may_use_stops_the_bridge_at_start() {
    let dir = scratch("bridge-open-dir");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let out = run(shmcast(
        &dir,
        &["bridge", "--export", "t", "--listen", &listen],
    ));
    assert_eq!(code(&out), 1, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing topic directory") && err.contains("lets others in"),
        "{err}"
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
    assert!(import.status.success(), "{import:?}");
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

/// Runs `shmcast bridge ARGS` and checks that it failed with `want` in one clean line: the
/// flag named, no Zenoh source location and no Debug dump.
fn refused(dir: &Path, args: &[&str], exit: i32, want: &str) {
    let mut all = vec!["bridge"];
    all.extend_from_slice(args);
    let out = run(shmcast(dir, &all));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), exit, "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.contains("running as")).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(want), "{args:?}: {err}");
    for leak in [".rs:", "/.cargo/", "Json5Err", "Location", "Single("] {
        assert!(!err.contains(leak), "{args:?} shows {leak:?}: {err}");
    }
}

#[test]
fn bad_endpoints_modes_and_keys_are_usage_errors_in_one_clean_line() {
    let dir = scratch("bridge-endpoints");
    for (args, want) in [
        (
            &["--export", "a", "--listen", "127.0.0.1:7450"][..],
            "--listen 127.0.0.1:7450: not an endpoint",
        ),
        (
            &["--export", "a", "--listen", "tcp/127.0.0.1:99999"],
            "--listen tcp/127.0.0.1:99999: port \"99999\" is not a number from 1 to 65535",
        ),
        (
            &["--export", "a", "--connect", "udp/127.0.0.1:7450"],
            "--connect udp/127.0.0.1:7450: protocol \"udp\" is not supported",
        ),
        (
            &["--export", "a", "--connect", "tcp/127.0.0.1"],
            "--connect tcp/127.0.0.1: \"127.0.0.1\" has no port",
        ),
        (
            &["--export", "a,key=/x"],
            "--export a,key=/x: key \"/x\": not a Zenoh key expression",
        ),
        (&["--mode", "client", "--export", "a"], "--mode client:"),
    ] {
        refused(&dir, args, 2, want);
    }
    // The same endpoint check for a file.
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"listen": ["127.0.0.1:7450"], "topics": [{"topic": "a", "direction": "export"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", config.to_str().unwrap()],
        2,
        "c.json: listen: \"127.0.0.1:7450\": not an endpoint",
    );
    // A port in use is no usage error, but still one clean line.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp/{}", taken.local_addr().unwrap());
    refused(
        &dir,
        &["--export", "a", "--listen", &endpoint],
        1,
        &format!("cannot listen on {endpoint}: Address already in use"),
    );
    // So is a client whose router does not answer.
    let nobody = format!("tcp/127.0.0.1:{}", free_port());
    refused(
        &dir,
        &["--mode", "client", "--connect", &nobody, "--export", "a"],
        1,
        &format!("no router can be reached at {nobody}"),
    );
}

#[test]
fn invalid_topics_capacities_and_prefixes_are_refused_at_start() {
    let dir = scratch("bridge-specs");
    for (args, want) in [
        (
            &["--export", "bad name"][..],
            "--export bad name: topic: invalid topic name \"bad name\"",
        ),
        (&["--import", ".hidden"], "invalid topic name \".hidden\""),
        (
            &["--import", "a,capacity=1000"],
            "--import a,capacity=1000: capacity: 1000 is not a power of two",
        ),
        (&["--import", "a,capacity=32"], "not a power of two from 64"),
        (
            &["--import", "a,capacity=1024,max-message=1000"],
            "max-message: 1000 is not from 1 to 496",
        ),
        (
            &["--prefix", "", "--export", "a"],
            "--prefix \"\": must not be empty",
        ),
        (&["--prefix", "a*", "--export", "a"], "--prefix \"a*\""),
    ] {
        refused(&dir, args, 2, want);
    }
    // The same checks for a file.
    let config = dir.join("c.json");
    for (json, want) in [
        (
            r#"{"topics": [{"topic": "bad name", "direction": "export"}]}"#,
            "topics[0].topic: invalid topic name",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "import", "capacity": 1000}]}"#,
            "topics[0].capacity: 1000 is not a power of two",
        ),
        (
            r#"{"prefix": "", "topics": [{"topic": "a", "direction": "export"}]}"#,
            "prefix: must not be empty",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        refused(&dir, &["--config", config.to_str().unwrap()], 2, want);
    }
}

#[test]
fn contracts_no_publisher_may_declare_are_refused_at_start() {
    let dir = scratch("bridge-contracts");
    for (args, want) in [
        (
            &["--import", "ticks,pod=T:8:3,max-message=64"][..],
            "--import ticks,pod=T:8:3,max-message=64: pod: pod alignment 3 is not a power of two",
        ),
        (
            &["--import", "ticks,pod=T:8:3"],
            "--import ticks,pod=T:8:3: pod: pod alignment 3",
        ),
        (
            &["--import", "ticks,pod=T:0:1"],
            "--import ticks,pod=T:0:1: pod: a Pod type of 0 bytes",
        ),
        (
            &["--import", "ticks,schema=@1"],
            "--import ticks,schema=@1: schema: contract name \"\" (0 bytes) is empty",
        ),
        (
            &["--import", "ticks,pod=T:128:8,max-message=64"],
            "pod: pod of 128 bytes is larger than the maximum message of 64 bytes",
        ),
    ] {
        refused(&dir, args, 2, want);
    }
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"topics": [{"topic": "a", "direction": "export"},
                       {"topic": "b", "direction": "import", "pod": "T:8:3"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", config.to_str().unwrap()],
        2,
        "c.json: topics[1].pod: pod alignment 3",
    );
}

#[test]
fn option_values_that_would_be_ignored_are_refused() {
    let dir = scratch("bridge-ignored");
    for (args, want) in [
        (
            &["--export", "ticks,lossy=false"][..],
            "--export ticks,lossy=false: lossy: takes no value",
        ),
        (
            &["--export", "ticks,reliable,lossy"],
            "lossy: reliable is given too, and a topic has one reliability",
        ),
        (
            &["--import", "ticks,schema=a@1,pod=T:8:8"],
            "pod: schema is given too, and a topic has one message type",
        ),
        (
            &["--export", "ticks,"],
            "--export ticks,: an empty option (a comma with nothing after it)",
        ),
    ] {
        refused(&dir, args, 2, want);
    }
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    for (json, want) in [
        (
            r#"{"topics": [{"topic": "a", "direction": "import", "bytes": false}]}"#,
            "c.json: topics[0].bytes: false declares nothing",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "export"}],
                "topics": [{"topic": "b", "direction": "export"}]}"#,
            "c.json: topics: given twice",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        refused(&dir, &["--config", c], 2, want);
    }
}

#[test]
fn errors_name_the_files_fields_and_every_flag_involved() {
    let dir = scratch("bridge-naming");
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    let export_a = r#"{"topic": "a", "direction": "export"}"#;
    for (json, extra, want) in [
        (
            format!(r#"{{"mode": "client", "topics": [{export_a}]}}"#),
            &[][..],
            "c.json: mode: \"client\" joins Zenoh through a router: give the router's endpoint \
             in connect",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "export", "schema": "s@1"}]}"#.into(),
            &[],
            "c.json: topics[0].schema: only an import declares",
        ),
        (
            r#"{"topics": ["ticks"]}"#.into(),
            &[],
            "c.json: topics[0]: not an object",
        ),
        (
            format!(r#"{{"topics": [{export_a}, {export_a}]}}"#),
            &[],
            "c.json: topics[0] and topics[1]: topic \"a\" is bridged twice",
        ),
        (
            format!(r#"{{"topics": [{export_a}]}}"#),
            &["--import", "a,key=x/a"],
            "c.json topics[0] and --import a,key=x/a: refused, it could loop",
        ),
        (
            format!(r#"{{"listen": ["tcp/127.0.0.1:7451"], "topics": [{export_a}]}}"#),
            &["--listen", "tcp/127.0.0.1:7451"],
            "--listen tcp/127.0.0.1:7451: already in",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        let mut args = vec!["--config", c];
        args.extend_from_slice(extra);
        refused(&dir, &args, 2, want);
    }
    for (args, exit, want) in [
        (
            &[
                "--export",
                "a",
                "--import",
                "b,key=k/b",
                "--import",
                "c,key=k/b",
            ][..],
            2,
            "--import b,key=k/b and --import c,key=k/b: key k/b is bridged twice",
        ),
        (
            &[
                "--export",
                "a",
                "--listen",
                "tcp/127.0.0.1:7451",
                "--listen",
                "tcp/127.0.0.1:7451",
            ],
            2,
            "--listen tcp/127.0.0.1:7451: given twice",
        ),
        (
            &["--export", "a,key=a/$*"],
            2,
            "key \"a/$*\": wildcards (*, **, $*) are refused",
        ),
        (
            &["--export", "a", "--listen", "tcp/no-such-host.invalid:7451"],
            1,
            "cannot listen on tcp/no-such-host.invalid:7451: ",
        ),
    ] {
        refused(&dir, args, exit, want);
    }
}

#[test]
fn a_misspelt_field_in_a_file_is_named_with_the_files_fields() {
    let dir = scratch("bridge-typo");
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"topics":[{"topic":"a","direction":"export","reliabilty":"lossy"}]}"#,
    )
    .unwrap();
    let c = config.to_str().unwrap();
    refused(
        &dir,
        &["--config", c],
        2,
        "topics[0].reliabilty: unknown field",
    );
    let err = String::from_utf8_lossy(&run(shmcast(&dir, &["bridge", "--config", c])).stderr)
        .into_owned();
    assert!(err.contains("reliability, key, bytes, schema, pod, max_message, capacity"));
    assert!(err.contains("did you mean \"reliability\"?"), "{err}");
    assert!(
        !err.contains("max-message=") && !err.contains("option"),
        "{err}"
    );
    // A value of the wrong form is named by the file's field too.
    std::fs::write(
        &config,
        r#"{"topics":[{"topic":"a","direction":"import","max_message":"lots"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", c],
        2,
        "topics[0].max_message: a number of bytes",
    );
    std::fs::write(&config, r#"{"conect": ["tcp/127.0.0.1:7447"]}"#).unwrap();
    refused(&dir, &["--config", c], 2, "did you mean \"connect\"?");
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
    assert!(out.status.success(), "{out:?}");
}
