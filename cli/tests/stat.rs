//! `stat` against a publisher process and three subscriber processes: the right pid and mode
//! for each, and a gating subscriber stopped with SIGSTOP falling further behind at every look,
//! still gating, until the publisher's stall bound demotes it. A watch asks no faster than a
//! publisher answers, skips a refresh refused as busy and stops after 10 s of refusals, with
//! their exit code; it ends quietly with the topic.

mod common;

use common::{
    Proc, code, impostor, json, refusal, run, scratch, serve, shmcast, stat_with, wait_for,
};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn row(stat: &Value, pid: u32) -> Value {
    stat["subscribers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pid"] == pid)
        .unwrap_or_else(|| panic!("no row for pid {pid} in {stat}"))
        .clone()
}

#[test]
fn stat_shows_each_subscriber_and_a_stopped_one_falling_behind() {
    let dir = scratch("stat");
    // 200 messages of 1000 bytes a second into 1 MiB: the ring fills about 5.2 s after a
    // subscriber stops (the lag is read three times before, at 0.3 s steps, leaving seconds
    // for a slow machine's `stat` runs), then the default stall bound (5 s) demotes it.
    let publisher = Proc::spawn(shmcast(
        &dir,
        &[
            "pub",
            "t",
            "--rate",
            "200",
            "--size",
            "1000",
            "--capacity",
            "1048576",
        ],
    ));
    let subscriber = |extra: &[&str]| {
        let mut args = vec!["echo", "t", "--wait", "20", "--format", "hex"];
        args.extend_from_slice(extra);
        let mut cmd = shmcast(&dir, &args);
        // Output nobody reads must not fill a pipe and stall the subscriber.
        cmd.stdout(Stdio::null());
        Proc::spawn(cmd)
    };
    let gating = subscriber(&[]);
    let lossy = subscriber(&["--lossy"]);
    let stopped = subscriber(&[]);
    let stat = stat_with(&dir, "t", 3);
    assert_eq!(stat["publisher"]["pid"], publisher.pid());
    assert!(
        stat["publisher"]["exe"]
            .as_str()
            .unwrap()
            .ends_with("shmcast")
    );
    assert_eq!(stat["contract"]["message"], "bytes");
    assert_eq!(stat["capacity"], 1_048_576);
    for (proc, mode) in [(&gating, "gating"), (&lossy, "lossy"), (&stopped, "gating")] {
        let r = row(&stat, proc.pid());
        assert_eq!(r["mode"], mode, "{r}");
        assert!(r["exe"].as_str().unwrap().ends_with("shmcast"), "{r}");
    }

    stopped.signal(libc::SIGSTOP);
    let mut lags = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        let r = row(
            &json(&run(shmcast(
                &dir,
                &["stat", "t", "--json", "--timeout", "10000"],
            ))),
            stopped.pid(),
        );
        assert_eq!(r["mode"], "gating", "demoted too early: {r}");
        assert_eq!(r["state"], "stopped", "{r}");
        lags.push((
            r["lag_messages"].as_u64().unwrap(),
            r["lag_bytes"].as_u64().unwrap(),
        ));
    }
    assert!(
        lags.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1),
        "lag not growing: {lags:?}"
    );
    let demoted = wait_for("the demotion", Duration::from_secs(30), || {
        let out = shmcast(&dir, &["stat", "t", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        let r = row(&v, stopped.pid());
        (r["mode"] == "demoted").then_some(v)
    });
    assert!(demoted["demotions"].as_u64().unwrap() >= 1);
    // The others kept up: still in their modes.
    assert_eq!(row(&demoted, gating.pid())["mode"], "gating");
    assert_eq!(row(&demoted, lossy.pid())["mode"], "lossy");
    stopped.signal(libc::SIGCONT);

    // The table shows the same rows.
    let table = run(shmcast(&dir, &["stat", "t"]));
    assert_eq!(code(&table), 0);
    let text = String::from_utf8(table.stdout).unwrap();
    for pid in [gating.pid(), lossy.pid(), stopped.pid()] {
        assert!(text.contains(&format!(" {pid} ")), "{text}");
    }
    assert!(text.contains("demoted"), "{text}");
}

#[test]
fn watch_prints_a_line_per_refresh_when_piped() {
    let dir = scratch("watch");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "100", "--size", "8"]));
    stat_with(&dir, "t", 0);
    let out = run(shmcast(
        &dir,
        &[
            "stat",
            "t",
            "--watch",
            "--json",
            "--interval",
            "100",
            "--count",
            "3",
        ],
    ));
    assert_eq!(code(&out), 0);
    let counts: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["messages"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(counts.len(), 3);
    assert!(counts[2] > counts[0], "{counts:?}");
}

/// `pub --stall-bound` sets how long a stopped gating subscriber may hold the ring full: a
/// third of a second demotes it long before the default 5 s would.
#[test]
fn a_stall_bound_from_the_command_line_demotes_sooner() {
    let dir = scratch("stall-bound");
    let _publisher = Proc::spawn(shmcast(
        &dir,
        &[
            "pub",
            "t",
            "--rate",
            "1000",
            "--size",
            "64",
            "--capacity",
            "4096",
            "--stall-bound",
            "0.3",
        ],
    ));
    let mut echo = shmcast(&dir, &["echo", "t", "--wait", "20"]);
    echo.stdout(Stdio::null());
    let stopped = Proc::spawn(echo);
    stat_with(&dir, "t", 1);
    stopped.signal(libc::SIGSTOP);
    let start = std::time::Instant::now();
    wait_for("the demotion", Duration::from_secs(30), || {
        let out = shmcast(&dir, &["stat", "t", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        (row(&v, stopped.pid())["mode"] == "demoted").then_some(())
    });
    // The ring fills within a few milliseconds; the default bound would take 5 s more.
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

/// A watch asks no more often than a publisher answers (20 times a second): a shorter
/// `--interval` is a wrong command line, naming the shortest.
#[test]
fn an_interval_shorter_than_a_publisher_answers_is_refused() {
    let dir = scratch("watch-fast");
    for interval in ["0", "40", "49"] {
        let out = run(shmcast(
            &dir,
            &["stat", "t", "--watch", "--interval", interval],
        ));
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{interval}: {e}");
        assert!(e.contains("--interval") && e.contains("at least 50"), "{e}");
    }
}

/// Another `stat` that uses up the publisher's answers for a second makes the watch skip
/// refreshes, saying so once, not end: it goes on to the count it was given.
#[test]
fn a_watch_skips_refreshes_the_publisher_is_too_busy_for() {
    let dir = scratch("watch-busy");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "10"]));
    stat_with(&dir, "t", 0);
    let watch = Proc::spawn(shmcast(
        &dir,
        &[
            "stat",
            "t",
            "--watch",
            "--json",
            "--interval",
            "60",
            "--count",
            "40",
        ],
    ));
    // Asked as fast as a process can, for a second and a half: at least one of the publisher's
    // one-second budgets is spent before the watch asks again.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        let _ = shmcast(&dir, &["stat", "t"]).output().unwrap();
    }
    let out = watch.finish();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{e}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 40);
    assert_eq!(
        e.matches("shmcast: t: the publisher refused (busy)")
            .count(),
        e.lines().count(),
        "{e}"
    );
    assert!(
        e.lines().count() >= 1
            && e.lines()
                .all(|l| l.ends_with("; skipping refreshes until it answers")),
        "{e}"
    );
}

/// Only a publisher that refuses as busy for 10 s on ends a watch, with the refusal's exit code
/// (5): here a socket whose server refuses every request so.
#[test]
fn a_watch_refused_as_busy_for_ten_seconds_stops() {
    let dir = scratch("watch-refused");
    let listener = impostor(&dir.join("t"));
    let _server = serve(
        listener,
        vec![refusal(4, b"too many introspection requests"); 1000],
    );
    let start = Instant::now();
    let out = run(shmcast(
        &dir,
        &["stat", "t", "--watch", "--json", "--interval", "100"],
    ));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 5, "{e}");
    assert!(start.elapsed() >= Duration::from_secs(10), "{e}");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert_eq!(
        lines[0],
        "shmcast: t: the publisher refused (busy): too many introspection requests; skipping \
         refreshes until it answers"
    );
    assert!(
        lines[1].starts_with(
            "shmcast: t: the publisher refused (busy): too many introspection requests (for 10"
        ) && lines[1].ends_with(" s); stopped watching"),
        "{e}"
    );
    assert!(out.stdout.is_empty());
}

/// A watch ends quietly when the publisher ends its topic, saying so.
#[test]
fn a_watch_ends_quietly_with_the_topic() {
    let dir = scratch("watch-end");
    let publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", "t", "--rate", "100", "--count", "100"],
    ));
    stat_with(&dir, "t", 0);
    let out = run(shmcast(
        &dir,
        &["stat", "t", "--watch", "--json", "--interval", "100"],
    ));
    assert_eq!(code(&publisher.finish()), 0);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{e}");
    assert_eq!(
        e,
        "shmcast: t: the publisher ended the topic; stopped watching\n"
    );
    assert!(!out.stdout.is_empty());
}
