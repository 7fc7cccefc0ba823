//! The examples the README points a new user to, run as that user runs them: each must finish
//! on its own and say that nothing was lost. (`cargo test` builds them beside this binary.)

mod common;

use common::child::WATCHDOG;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The path of an example that `cargo test` built with this test binary.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    // target/<profile>/deps/examples-<hash> -> target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let path = dir.join("examples").join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// Runs an example to its end under the watchdog; returns its standard output.
fn run(name: &str) -> String {
    let mut child = Command::new(example(name))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("waiting for the example").is_none() {
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            panic!("watchdog: example {name} still running after {WATCHDOG:?}; killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the example's output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "example {name} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout.into_owned()
}

#[test]
fn pubsub_example_delivers_every_reading() {
    let out = run("pubsub");
    assert!(out.contains("subscriber: 100000 readings"), "{out}");
}

#[test]
fn poll_loop_example_delivers_every_message() {
    let out = run("poll_loop");
    assert!(
        out.contains("received per topic: [1000, 1000, 1000]"),
        "{out}"
    );
}

#[test]
fn reconnect_example_outlives_three_publishers() {
    let out = run("reconnect");
    assert!(
        out.contains("subscriber: received per publisher [1000, 1000, 1000]"),
        "{out}"
    );
}
