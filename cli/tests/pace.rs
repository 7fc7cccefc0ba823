//! `pub --rate` keeps its pace through a stall: after a gating subscriber held the ring full
//! for seconds, the publisher goes on at its rate instead of sending the missed messages in a
//! burst.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Proc, json, run, scratch, shmcast, stat_with};

fn published(dir: &std::path::Path) -> u64 {
    json(&run(shmcast(
        dir,
        &["stat", "t", "--json", "--timeout", "10000"],
    )))["messages"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_stall_is_not_made_up_with_a_burst() {
    let dir = scratch("pace");
    // 100 messages a second through a ring of a few dozen: a stopped subscriber fills it
    // within a second, and the default stall bound (5 s) leaves it gating for the 3 s stop.
    let _publisher = Proc::spawn(shmcast(
        &dir,
        &[
            "pub",
            "t",
            "--rate",
            "100",
            "--size",
            "8",
            "--capacity",
            "4096",
        ],
    ));
    let mut echo = shmcast(&dir, &["echo", "t", "--wait", "20"]);
    echo.stdout(Stdio::null());
    let subscriber = Proc::spawn(echo);
    stat_with(&dir, "t", 1);
    subscriber.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(3));
    let held = published(&dir);
    subscriber.signal(libc::SIGCONT);
    let resumed = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let after = published(&dir);
    let window = resumed.elapsed().as_secs_f64();
    // At 100/s, about 50 in the half second; the 200 or so missed while the ring was full
    // would come on top in a burst.
    let sent = after - held;
    assert!(
        (sent as f64) < 100.0 * window + 60.0,
        "{sent} messages in {window:.2} s after the stall"
    );
    assert!(sent > 0, "the publisher did not go on");
}
