//! `hz` against a paced publisher process: the rate it reports is within 10 % of the
//! publisher's, and bytes/s follow from the message size.

mod common;

use common::{Proc, code, run, scratch, shmcast};
use serde_json::Value;

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
    let reports: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let last = &reports[1];
    let rate = last["rate"].as_f64().unwrap();
    assert!((90.0..=110.0).contains(&rate), "rate {rate} for 100 Hz");
    let bytes = last["bytes_per_s"].as_f64().unwrap();
    assert!((bytes / rate - 64.0).abs() < 1e-6, "{last}");
    let mean = last["mean_interval_s"].as_f64().unwrap();
    assert!((0.009..=0.011).contains(&mean), "{last}");
    assert!(last["min_interval_s"].as_f64().unwrap() <= mean);
    assert!(last["max_interval_s"].as_f64().unwrap() >= mean);
}
