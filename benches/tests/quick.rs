//! Smoke tests through the real binaries: every scenario of `shmcast-bench` in `--quick` mode,
//! with JSON and SVG output, and a short `shmcast-soak`. They check that a run completes and
//! writes what it promises; they assert no timings.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh scratch directory for the test `name` of this process.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shmcast-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Runs `shmcast-bench` with `args`, which must succeed; returns what it printed on stdout.
fn bench(args: &[&OsStr]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_shmcast-bench"))
        .args(args)
        .output()
        .expect("run shmcast-bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "shmcast-bench {args:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

#[test]
fn quick_run_covers_every_scenario() {
    let dir = scratch_dir("quick");
    let json = dir.join("figures.json");
    let svg = dir.join("charts");
    let stdout = bench(&[
        "--quick".as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
        "--svg".as_ref(),
        svg.as_os_str(),
    ]);
    for heading in [
        "== limits",
        "== throughput",
        "== latency",
        "== small",
        "== backpressure",
        "== bridge",
        "vs unix-stream",
    ] {
        assert!(stdout.contains(heading), "no {heading:?} in:\n{stdout}");
    }

    let text = std::fs::read_to_string(&json).expect("read the JSON output");
    let all: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let scenarios = all.as_array().expect("a list of scenarios");
    let find = |name: &str| {
        scenarios
            .iter()
            .find(|s| s["scenario"] == name)
            .unwrap_or_else(|| panic!("no {name} scenario in the JSON"))
    };
    for name in [
        "limits",
        "throughput",
        "latency",
        "small",
        "backpressure",
        "bridge",
    ] {
        let s = find(name);
        assert!(s["params"].is_object(), "{name}: params");
        assert!(
            !s["results"].as_array().expect("results").is_empty(),
            "{name}: results"
        );
    }

    let latency = find("latency")["results"].as_array().unwrap();
    for name in [
        "unix-relay",
        "unix-dgram",
        "udp-multicast",
        "shmcast",
        "shmcast-spin",
        "shmcast-tokio",
        "tokio-unix",
        "tokio-broadcast",
    ] {
        let r = latency
            .iter()
            .find(|r| r["transport"] == name)
            .unwrap_or_else(|| panic!("no latency result for {name}"));
        let listeners = r["listeners"].as_array().expect("listeners");
        assert_eq!(listeners.len(), 3, "{name}: one entry per listener");
        for l in listeners {
            for key in ["p50_us", "p99_us", "p999_us"] {
                assert!(l[key].as_f64().is_some(), "{name}: {key}");
            }
        }
        assert!(r["cpu_us_per_msg"].as_f64().is_some(), "{name}: cpu");
        assert!(
            r["publisher_syscalls_per_msg"].as_f64().is_some(),
            "{name}: syscalls"
        );
    }

    // Every backpressure configuration has its ceiling, and each transport its share of it.
    let backpressure = find("backpressure")["results"].as_array().unwrap();
    let ceilings: Vec<&serde_json::Value> = backpressure
        .iter()
        .filter(|r| r["transport"] == "fill alone")
        .collect();
    assert_eq!(ceilings.len(), 6, "one ceiling per configuration");
    for c in ceilings {
        assert!(
            c["msgs_per_s"].as_f64().is_some_and(|v| v > 0.0),
            "ceiling msgs/s: {c}"
        );
    }
    let gating = backpressure
        .iter()
        .find(|r| r["transport"] == "shmcast-gating")
        .expect("a shmcast-gating backpressure result");
    assert!(
        gating["share_of_ceiling"]["median"]
            .as_f64()
            .is_some_and(|v| v > 0.0),
        "share of the ceiling: {gating}"
    );

    // The tokio transports in the small scenario, with their ratio to the tokio socket fan-out.
    let small = find("small")["results"].as_array().unwrap();
    for name in ["shmcast-tokio", "tokio-unix", "tokio-broadcast"] {
        let r = small
            .iter()
            .find(|r| r["transport"] == name && r["subscribers"] == 3)
            .unwrap_or_else(|| panic!("no small result for {name} with 3 subscribers"));
        assert!(
            r["msgs_per_s"].as_f64().is_some_and(|v| v > 0.0),
            "{name}: msgs/s"
        );
        assert!(
            r["ratio_vs_tokio_unix"]["median"].as_f64().is_some(),
            "{name}: ratio to tokio-unix"
        );
    }
    assert!(
        stdout.contains("shmcast-tokio p50 / shmcast p50") && stdout.contains("x tokio-unix"),
        "no tokio target lines in:\n{stdout}"
    );

    // The bridge's paths, its halves measured for latency only, and what each end costs.
    let bridge = find("bridge");
    for name in [
        "shmcast-zenoh-bridge",
        "zenoh",
        "zenoh-channel",
        "export half",
        "import half",
    ] {
        let r = bridge["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["transport"] == name)
            .unwrap_or_else(|| panic!("no bridge result for {name}"));
        assert!(
            r["p50_us"]["median"].as_f64().is_some_and(|v| v > 0.0),
            "{name}: p50"
        );
        let half = name.ends_with("half");
        assert_eq!(r["msgs_per_s"].is_null(), half, "{name}: msgs/s");
    }
    for key in [
        "p50_bridge_over_zenoh",
        "p50_export_end_us",
        "p50_import_end_us",
    ] {
        assert!(
            bridge["ratios"][key]["median"].as_f64().is_some(),
            "bridge: {key}"
        );
    }

    let throughput = find("throughput")["results"].as_array().unwrap();
    for name in ["memcpy", "unix-stream", "shmcast-gating", "shmcast-lossy"] {
        let r = throughput
            .iter()
            .find(|r| r["transport"] == name)
            .unwrap_or_else(|| panic!("no throughput result for {name}"));
        assert!(r["subscribers"].as_u64().is_some(), "{name}: subscribers");
        assert!(
            r["msgs_per_s"].as_f64().is_some_and(|v| v > 0.0),
            "{name}: msgs/s"
        );
        assert!(
            r["bytes_per_s"].as_f64().is_some_and(|v| v > 0.0),
            "{name}: bytes/s"
        );
    }

    for chart in [
        "throughput.svg",
        "latency-3-listeners.svg",
        "latency-1-listeners.svg",
        "small.svg",
    ] {
        let content =
            std::fs::read_to_string(svg.join(chart)).unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(content.starts_with("<svg") && content.trim_end().ends_with("</svg>"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--pin` with the publisher on the first CPU this process may use and both subscribers on the
/// last: the run succeeds (every process checks that it stayed on its CPU) and says where it ran.
#[test]
fn a_pinned_run_says_where_its_processes_ran() {
    let allowed = rustix::thread::sched_getaffinity(None).expect("sched_getaffinity");
    let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .collect();
    let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
    let pin = format!("{first},{last},{last}");
    let dir = scratch_dir("pinned");
    let json = dir.join("figures.json");
    let stdout = bench(&[
        "backpressure".as_ref(),
        "--quick".as_ref(),
        "--only".as_ref(),
        "shmcast-gating".as_ref(),
        "--pin".as_ref(),
        pin.as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
    ]);
    let heading = format!("pinned to CPUs {pin} (publisher first)");
    assert!(stdout.contains(&heading), "no {heading:?} in:\n{stdout}");
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read the JSON output"))
            .expect("valid JSON");
    assert_eq!(all[0]["params"]["pin"], pin.as_str(), "JSON: {all}");

    let refused = Command::new(env!("CARGO_BIN_EXE_shmcast-bench"))
        .args(["backpressure", "--quick", "--pin", "0,x"])
        .output()
        .expect("run shmcast-bench");
    assert!(!refused.status.success(), "--pin 0,x accepted");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("\"x\" is not a CPU number"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn short_soak_passes() {
    // The soak bounds every wait itself; this watchdog only turns a hang of the whole binary
    // into a clear failure. Its output (a few KiB) fits the pipes until it exits.
    const WATCHDOG: Duration = Duration::from_secs(15 + 120);
    let mut child = Command::new(env!("CARGO_BIN_EXE_shmcast-soak"))
        .args(["--seconds", "15"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run shmcast-soak");
    let started = Instant::now();
    while child.try_wait().expect("wait for the soak").is_none() {
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let output = child.wait_with_output().expect("reap the soak");
            panic!(
                "shmcast-soak --seconds 15 still running after {WATCHDOG:?}; killed.\n\
                 stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("collect the soak's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "shmcast-soak failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    for line in ["== soak", "published", "verified", "descriptors", "memory"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("result") && l.ends_with("PASS")),
        "no PASS in:\n{stdout}"
    );
}
