//! A publisher stopped with SIGSTOP accepts connections (the kernel queues them) but answers
//! nothing: `list` shows it `stopped` with its pid, and `stat` and `echo` fail within their own
//! bound (`--timeout`, `--wait`) naming the process and saying it is stopped.

mod common;

use common::{Proc, code, json, run, scratch, shmcast, stat_with};
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_stopped_publisher_is_shown_and_reported_as_stopped() {
    let dir = scratch("stopped");
    let publisher = Proc::spawn(shmcast(&dir, &["pub", "st", "--rate", "10"]));
    stat_with(&dir, "st", 0);
    publisher.signal(libc::SIGSTOP);
    let pid = publisher.pid();

    let list = json(&run(shmcast(&dir, &["list", "--json", "--timeout", "300"])));
    let entry = &list[0];
    assert_eq!(entry["topic"], "st", "{list}");
    assert_eq!(entry["state"], "stopped", "{list}");
    assert_eq!(entry["publisher"]["pid"], pid, "{list}");
    assert!(entry["error"].is_string(), "{list}");

    let table = run(shmcast(&dir, &["list", "--timeout", "300"]));
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = String::from_utf8(table.stdout).unwrap();
    let row = text.lines().find(|l| l.starts_with("st ")).expect(&text);
    assert!(
        row.contains(" stopped ") && row.contains(&format!(" {pid} ")),
        "{text}"
    );

    // The handshake is bounded by --wait (the message names the bound it used), and its
    // timeout says who did not answer and why.
    let out = run(shmcast(&dir, &["echo", "st", "--wait", "1"]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let e = stderr(&out);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "shmcast: st: the publisher (pid {pid}) did not answer within 1 s: it is stopped"
        )),
        "{e}"
    );
    let out = run(shmcast(&dir, &["stat", "st", "--timeout", "300"]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "(pid {pid}) did not answer within 300 ms: it is stopped"
        )),
        "{}",
        stderr(&out)
    );
    publisher.signal(libc::SIGCONT);
}

#[test]
fn list_help_says_what_each_state_means() {
    let dir = scratch("states");
    let help = String::from_utf8(run(shmcast(&dir, &["list", "--help"])).stdout).unwrap();
    for state in [
        "`live`",
        "`stale`",
        "`stopped`",
        "`no answer`",
        "`refused`",
        "`error`",
    ] {
        assert!(help.contains(state), "{state} in {help}");
    }
}
