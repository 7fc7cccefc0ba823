//! Topics shared between users from the shell: `pub --admit` lets another user's `echo` in,
//! and `echo --trust` lets it read a publisher of another user. Needs root, to run the
//! commands as two users (skipped, saying so, without).

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
    // Without trusting root, the other user refuses the publisher itself.
    let out = run(as_other_user(&["echo", sock, "--count", "1"]));
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("uid 0"), "{}", stderr(&out));
    // Trusting root, it receives.
    let out = run(as_other_user(&[
        "echo", sock, "--count", "2", "--format", "hex", "--trust", "0",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
}
