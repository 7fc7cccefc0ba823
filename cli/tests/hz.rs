//! `hz` against a paced publisher process: the rate it reports is within 10 % of the
//! publisher's, and bytes/s follow from the message size; `--duration` ends with a report, and
//! so does the end of the stream, for what came since the report before (a burst shorter than
//! an interval, the last part of a paced stream). `--window` below 2 (no rate can come of it) is
//! a usage error.

mod common;

use common::{Proc, code, run, scratch, shmcast};
use serde_json::Value;
use std::io::Write;
use std::process::{Output, Stdio};

/// The JSON reports `hz` printed.
fn reports(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `hz t --json` while `pub t ARGS... --wait-subscribers 1` publishes `input` and ends;
/// returns what `hz` did.
fn measure_a_stream_that_ends(name: &str, pub_args: &[&str], input: &[u8]) -> Output {
    let dir = scratch(name);
    let hz = Proc::spawn(shmcast(&dir, &["hz", "t", "--wait", "20", "--json"]));
    let mut args = vec!["pub", "t", "--wait-subscribers", "1"];
    args.extend_from_slice(pub_args);
    let mut publish = shmcast(&dir, &args);
    publish.stdin(Stdio::piped());
    let mut publisher = Proc::spawn(publish);
    publisher.0.stdin.take().unwrap().write_all(input).unwrap();
    let published = publisher.finish();
    assert_eq!(code(&published), 0, "{published:?}");
    let out = hz.finish();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Ten thousand lines published in a burst, all within the first interval: one report when the
/// publisher ends, over the last window of them.
#[test]
fn a_stream_shorter_than_an_interval_is_reported_when_it_ends() {
    let input: String = (1..=10_000).map(|i| format!("{i}\n")).collect();
    let out = measure_a_stream_that_ends("hz-burst", &[], input.as_bytes());
    let reports = reports(&out);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["messages"], 1000, "{reports:?}");
    assert!(reports[0]["rate"].as_f64().unwrap() > 0.0, "{reports:?}");
}

/// 250 messages at 100 a second: a report at each second, and one when the publisher ends that
/// counts the last half second's messages too.
#[test]
fn the_last_part_of_a_stream_is_reported_when_it_ends() {
    let out = measure_a_stream_that_ends(
        "hz-tail",
        &["--rate", "100", "--count", "250", "--size", "8"],
        b"",
    );
    let reports = reports(&out);
    let last = reports.last().expect("a report");
    assert_eq!(last["messages"], 250, "{reports:?}");
    assert_eq!(last["lagged"], 0, "{reports:?}");
}

#[test]
fn hz_measures_a_paced_publisher() {
    let dir = scratch("hz");
    let _publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", "t", "--rate", "100", "--size", "64"],
    ));
    let out = run(shmcast(
        &dir,
        &["hz", "t", "--wait", "20", "--duration", "2.5", "--json"],
    ));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let reports = reports(&out);
    // At 1 s, at 2 s, and at the end of the duration, half an interval later.
    assert_eq!(reports.len(), 3, "{reports:?}");
    let last = &reports[2];
    let rate = last["rate"].as_f64().unwrap();
    assert!((90.0..=110.0).contains(&rate), "rate {rate} for 100 Hz");
    let bytes = last["bytes_per_s"].as_f64().unwrap();
    assert!((bytes / rate - 64.0).abs() < 1e-6, "{last}");
    let mean = last["mean_interval_s"].as_f64().unwrap();
    assert!((0.009..=0.011).contains(&mean), "{last}");
    assert!(last["min_interval_s"].as_f64().unwrap() <= mean);
    assert!(last["max_interval_s"].as_f64().unwrap() >= mean);
}

/// The last interval of a duration is reported at its end: one report for a duration of one
/// interval (there was none).
#[test]
fn a_duration_of_one_interval_gives_one_report() {
    let dir = scratch("hz-one");
    let _publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "50", "--size", "8"]));
    let out = run(shmcast(
        &dir,
        &["hz", "t", "--wait", "20", "--duration", "1", "--json"],
    ));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let report: Value = serde_json::from_str(text.trim_end()).unwrap();
    assert!(report["rate"].as_f64().unwrap() > 0.0, "{report}");
}

#[test]
fn a_window_too_small_for_a_rate_is_refused() {
    let dir = scratch("hz-window");
    for window in ["0", "1"] {
        let out = run(shmcast(&dir, &["hz", "t", "--window", window]));
        assert_eq!(code(&out), 2, "--window {window}");
        let e = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(e.contains("--window") && e.contains("at least 2"), "{e}");
    }
}
