//! Topics shared between users from the shell: `pub --admit` lets another user's `echo`, `stat`
//! and `list` in, and `--trust` lets each of them believe a publisher of another user; without
//! it, each says how to trust it. Needs root, to run the commands as two users (skipped, saying
//! so, without).

mod common;

use common::{Proc, WATCHDOG, code, run, scratch, shmcast, wait_for};
use std::os::unix::process::CommandExt;
use std::process::Command;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A uid no other process runs as.
const UID: u32 = 65533;

/// `shmcast ARGS...` run as `UID`, with no topic directory of its own (socket paths only).
fn as_other_user(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmcast"));
    cmd.args(args)
        .env_remove("SHMCAST_DIR")
        .env("XDG_RUNTIME_DIR", "/nonexistent")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .uid(UID)
        .gid(UID);
    cmd
}

#[test]
fn another_user_subscribes_when_admitted_and_trusting() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run the command as a user of its own");
        return;
    }
    // A directory both users can enter; the socket in it is what `--admit` opens.
    let dir = scratch("users");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let sock = dir.join("shared.sock");
    let sock = sock.to_str().unwrap();
    let publisher = Proc::spawn(shmcast(
        &dir,
        &[
            "pub", sock, "--rate", "200", "--size", "8", "--admit", "65533",
        ],
    ));
    wait_for("the socket", WATCHDOG, || {
        dir.join("shared.sock").exists().then_some(())
    });
    // Without trusting root, the other user refuses the publisher itself, saying how to trust
    // it.
    let out = run(as_other_user(&["echo", sock, "--count", "1"]));
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("uid 0"), "{}", stderr(&out));
    assert!(
        stderr(&out).ends_with(" (pass --trust 0 to trust it)\n"),
        "{}",
        stderr(&out)
    );
    // Trusting root, it receives.
    let out = run(as_other_user(&[
        "echo", sock, "--count", "2", "--format", "hex", "--trust", "0",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `stat` and `list` trust as `echo` does: a publisher of another user only with `--trust`, and
/// without it they say how.
#[test]
fn another_user_inspects_a_publisher_it_trusts() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run the command as a user of its own");
        return;
    }
    // The other user's own topic directory, where root publishes a topic for it.
    let dir = scratch("users-inspect");
    std::os::unix::fs::chown(&dir, Some(UID), Some(UID)).unwrap();
    let sock = dir.join("t");
    let sock = sock.to_str().unwrap();
    let publisher = Proc::spawn(shmcast(
        &dir,
        &["pub", sock, "--rate", "10", "--admit", "65533"],
    ));
    wait_for("the socket", WATCHDOG, || {
        dir.join("t").exists().then_some(())
    });

    let out = run(as_other_user(&["stat", sock, "--json"]));
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "shmcast: {sock}: {sock} is served by uid 0, which is not trusted (pass --trust 0 \
             to trust it)\n"
        )
    );
    let out = run(as_other_user(&["stat", sock, "--json", "--trust", "0"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stat: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stat["publisher"]["pid"], publisher.pid(), "{stat}");

    let dir_arg = dir.to_str().unwrap();
    let list = |trust: &[&str]| {
        let mut args = vec!["--dir", dir_arg, "list", "--json", "--interval", "0"];
        args.extend_from_slice(trust);
        let out = run(as_other_user(&args));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        list[0].clone()
    };
    let refused = list(&[]);
    assert_eq!(refused["state"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .ends_with("(pass --trust 0 to trust it)"),
        "{refused}"
    );
    let live = list(&["--trust", "0"]);
    assert_eq!(live["state"], "live", "{live}");
    assert_eq!(live["publisher"]["pid"], publisher.pid(), "{live}");
}
