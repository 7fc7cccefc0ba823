//! A publisher and a subscriber run from an executable whose name holds terminal sequences (a
//! new window title, a clear screen, a C1 CSI): `stat` and `list` show the name with those
//! characters escaped, never a raw control byte.

mod common;

use common::{Proc, json, run, scratch, shmcast, stat_with};
use std::path::Path;
use std::process::{Command, Stdio};

/// The executable's name: what it would do to a terminal shown raw.
const NAME: &str = "shm\x1b]0;owned\x07\x1b[2Jcast\u{9b}2J";
/// The same name as shown.
const SHOWN: &str = r"shm\u{1b}]0;owned\u{7}\u{1b}[2Jcast\u{9b}2J";

/// `BIN --dir DIR ARGS...`, with no input and its output captured.
fn from(bin: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--dir").arg(dir).args(args);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// `out` as text, which must hold no control character but line breaks.
fn printable(what: &str, out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout.clone()).expect("UTF-8");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} printed a control character: {text:?}"
    );
    text
}

#[test]
fn stat_and_list_escape_an_executable_named_with_terminal_sequences() {
    let dir = scratch("hostile-names");
    // A copy, not a link: /proc/PID/exe names the file a link leads to.
    let bins = scratch("hostile-names-bin");
    let bin = bins.join(NAME);
    std::fs::copy(env!("CARGO_BIN_EXE_shmcast"), &bin).unwrap();
    let publisher = Proc::spawn(from(
        &bin,
        &dir,
        &["pub", "t", "--rate", "100", "--size", "8"],
    ));
    let mut echo = from(&bin, &dir, &["echo", "t", "--wait", "20"]);
    echo.stdout(Stdio::null());
    let subscriber = Proc::spawn(echo);
    let stat = stat_with(&dir, "t", 1);
    let exe = |v: &serde_json::Value| v["exe"].as_str().unwrap().to_owned();
    assert_eq!(stat["publisher"]["pid"], publisher.pid());
    assert!(
        exe(&stat["publisher"]).ends_with(&format!("/{SHOWN}")),
        "{stat}"
    );
    assert_eq!(stat["subscribers"][0]["pid"], subscriber.pid());
    assert!(
        exe(&stat["subscribers"][0]).ends_with(&format!("/{SHOWN}")),
        "{stat}"
    );

    let table = printable("stat", &run(shmcast(&dir, &["stat", "t"])));
    // The publisher's path in the heading, the subscriber's name in its row.
    assert_eq!(table.matches(SHOWN).count(), 2, "{table}");
    let table = printable("list", &run(shmcast(&dir, &["list", "--interval", "0"])));
    assert!(table.contains(SHOWN), "{table}");
    let list = json(&run(shmcast(&dir, &["list", "--json", "--interval", "0"])));
    assert_eq!(exe(&list[0]["publisher"]), exe(&stat["publisher"]));
    drop((subscriber, publisher));
    let _ = std::fs::remove_dir_all(&bins);
}
